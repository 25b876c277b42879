//! TCP tracking and reassembly (crates/stream) on sequences of hostile
//! segments, as `arbitrary` structured input: settings (every overlap
//! policy, depth, chunk sizes, midstream, inline, memory cap), then
//! operations: a segment from either side with any flags, window, window
//! scale and payload, its sequence and acknowledgement numbers either
//! absolute or near the current edge (so that overlaps, retransmissions
//! and gaps are common); raw-stream inspection as the engine does it
//! (window, copy out, mark inspected); app-layer consumption; turning
//! reassembly off.
//!
//! Invariants: no panic; per direction, the bytes held never exceed the
//! payload bytes sent; every byte copied out of the stream is a byte that
//! some segment carried at that sequence number; memory use stays within
//! the cap; after the session is released (also when a SYN reuses the
//! ports) the memory counter is back to zero.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use vigil_stream::{InsertScratch, OverlapPolicy, Segment, StreamConfig, StreamMemory, TcpSession};

#[derive(Arbitrary, Debug)]
struct Input {
    policy: u8,
    depth: u16,
    chunk: u16,
    midstream: bool,
    inline: bool,
    memcap_blocks: u8,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Seq {
    /// The sender's next sequence number plus this.
    Near(i16),
    Abs(u32),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Seg {
        from_client: bool,
        seq: Seq,
        ack: Seq,
        flags: u8,
        window: u16,
        wscale: Option<u8>,
        payload: Vec<u8>,
    },
    Raw {
        from_client: bool,
        eof: bool,
    },
    App {
        from_client: bool,
        consume: Option<u16>,
    },
    Disable,
}

/// What was sent per direction: payload bytes, and the byte values seen
/// at each sequence number.
#[derive(Default)]
struct Sent {
    bytes: u64,
    at: HashMap<u32, [u64; 4]>,
}

impl Sent {
    fn add(&mut self, seq: u32, payload: &[u8]) {
        self.bytes += payload.len() as u64;
        for (i, &b) in payload.iter().enumerate() {
            let set = self.at.entry(seq.wrapping_add(i as u32)).or_default();
            set[usize::from(b >> 6)] |= 1 << (b & 63);
        }
    }

    fn carried(&self, seq: u32, b: u8) -> bool {
        self.at
            .get(&seq)
            .is_some_and(|set| set[usize::from(b >> 6)] & (1 << (b & 63)) != 0)
    }
}

fn resolve(s: &Seq, edge: u32) -> u32 {
    match *s {
        Seq::Near(d) => edge.wrapping_add(d as i32 as u32),
        Seq::Abs(v) => v,
    }
}

fuzz_target!(|input: Input| {
    let cfg = StreamConfig {
        depth: u64::from(input.depth),
        toserver_chunk: u64::from(input.chunk),
        toclient_chunk: u64::from(input.chunk / 2),
        policy: OverlapPolicy::ALL[usize::from(input.policy) % OverlapPolicy::ALL.len()],
        midstream: input.midstream,
        inline: input.inline,
    };
    let mut mem = StreamMemory::new((usize::from(input.memcap_blocks) + 1) * 4096);
    let mut scratch = InsertScratch::default();
    let mut s = TcpSession::new();
    // Index 0: client, 1: server.
    let mut sent = [Sent::default(), Sent::default()];
    let mut out = Vec::new();
    for op in input.ops.iter().take(128) {
        match op {
            Op::Seg {
                from_client,
                seq,
                ack,
                flags,
                window,
                wscale,
                payload,
            } => {
                let fc = *from_client;
                let seq = resolve(seq, s.half(fc).next_seq);
                let ack = resolve(ack, s.half(!fc).next_seq);
                let payload = &payload[..payload.len().min(1460)];
                let seg = Segment {
                    seq,
                    ack,
                    flags: *flags,
                    window: *window,
                    wscale: *wscale,
                    payload,
                };
                let o = s.process(&seg, fc, &cfg, &mut mem, &mut scratch);
                if o.reuse {
                    // The caller ends the flow and starts a new one.
                    s.release(&mut mem);
                    assert_eq!(mem.used(), 0, "memory left after a released session");
                    s = TcpSession::new();
                    sent = [Sent::default(), Sent::default()];
                    let _ = s.process(&seg, fc, &cfg, &mut mem, &mut scratch);
                }
                sent[usize::from(!fc)].add(seq, payload);
            }
            Op::Raw { from_client, eof } => {
                let fc = *from_client;
                if let Some(w) = s.raw_window(fc, &cfg, *eof) {
                    assert!(w.from <= w.to, "window {w:?}");
                    let h = s.half(fc);
                    let base = h.isn.wrapping_add(1);
                    let mut end = w.from;
                    for (a, b) in h.buf.ranges_in(w.from, w.to) {
                        out.clear();
                        h.buf.copy_out(a, b, &mut out);
                        assert_eq!(out.len() as u64, b - a);
                        for (i, &byte) in out.iter().enumerate() {
                            let sq = base.wrapping_add((a + i as u64) as u32);
                            assert!(
                                sent[usize::from(!fc)].carried(sq, byte),
                                "byte {byte:#04x} at seq {sq} was never sent"
                            );
                        }
                        end = b;
                    }
                    if cfg.inline {
                        s.raw_inspected_inline(fc, end, u64::from(input.chunk), &mut mem);
                    } else {
                        s.raw_inspected(fc, end, &mut mem);
                    }
                }
            }
            Op::App {
                from_client,
                consume,
            } => {
                let fc = *from_client;
                let h = s.half(fc);
                let p = consume.map(|n| {
                    (h.app_progress.unwrap_or(h.buf.base()) + u64::from(n)).min(h.buf.right_edge())
                });
                s.app_consumed(fc, p, &mut mem);
            }
            Op::Disable => s.disable_reassembly(&mut mem),
        }
        for fc in [true, false] {
            let held: u64 = s.half(fc).buf.ranges().iter().map(|r| r.1 - r.0).sum();
            let sent_bytes = sent[usize::from(!fc)].bytes;
            assert!(held <= sent_bytes, "{held} bytes held, {sent_bytes} sent");
        }
        assert!(
            mem.used() <= mem.cap(),
            "{} used, cap {}",
            mem.used(),
            mem.cap()
        );
    }
    s.release(&mut mem);
    assert_eq!(mem.used(), 0, "memory left after the session was released");
});
