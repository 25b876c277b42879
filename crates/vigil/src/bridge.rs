//! `vigil run --inline A:B`: the AF_PACKET inline bridge ("bump in the
//! wire", Suricata's af-packet `copy-mode: ips`). Each worker reads one
//! TPACKET_V3 ring on A and one on B; a frame read on one side goes out
//! of the other through a transmit socket when its verdict accepts it,
//! and is not sent at all when a `drop`/`reject` rule (or the flow or
//! host verdict table) drops it. Nothing is forwarded by the kernel: when
//! Vigil is not running, the bridge passes nothing (fail-closed).

use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use vigil_capture::{CaptureError, RingConfig, TxSocket};
use vigil_engine::{InputCounters, InputError, LiveFrame, LiveInput, RejectTo, Verdict};

use crate::live::{input_error, RingInput};

/// Parses one `--inline` argument, `A:B`: two distinct interface names.
pub fn parse_bridge_spec(spec: &str) -> Result<(String, String), String> {
    let (a, b) = spec
        .split_once(':')
        .ok_or_else(|| format!("'{spec}': expected IFACE_A:IFACE_B"))?;
    let (a, b) = (a.trim(), b.trim());
    let ok = |n: &str| {
        !n.is_empty()
            && n.len() < 16
            && n != "."
            && n != ".."
            && !n
                .bytes()
                .any(|c| c == b'/' || c == b':' || c.is_ascii_whitespace())
    };
    if !ok(a) || !ok(b) {
        return Err(format!(
            "'{spec}': expected IFACE_A:IFACE_B (two interface names)"
        ));
    }
    if a == b {
        return Err(format!(
            "'{spec}': an interface cannot be bridged to itself"
        ));
    }
    Ok((a.to_string(), b.to_string()))
}

/// Parses every `--inline` argument; an interface may be in one bridge
/// only.
pub fn parse_bridge_specs(specs: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for s in specs {
        let (a, b) = parse_bridge_spec(s)?;
        for n in [&a, &b] {
            if out.iter().any(|(x, y)| x == n || y == n) {
                return Err(format!("'{s}': {n} is already in another bridge"));
            }
        }
        out.push((a, b));
    }
    Ok(out)
}

/// The ring settings of a bridge, from those of `-i`: outgoing frames
/// ignored (the rings must not read back what Vigil sends), promiscuous
/// (frames for any address pass), no kernel defragmentation (fanout
/// defrag hands over the reassembled datagram, which is larger than the
/// MTU and could not be sent on; the engine reassembles for inspection
/// and the fragments are forwarded as they came), a 1 ms block timeout
/// (a frame waits for its block to be handed over before it can be
/// forwarded).
pub fn bridge_ring_config(base: &RingConfig) -> RingConfig {
    RingConfig {
        ignore_outgoing: true,
        promisc: true,
        defrag: false,
        block_timeout_ms: 1,
        ..base.clone()
    }
}

/// The ring descriptors of one worker's bridge inputs, so that each input
/// waits on all of them: a frame on any side wakes the worker, which then
/// polls the input that has it (the engine polls its inputs one after
/// the other). A slot is -1 while its ring is closed.
#[derive(Debug)]
pub struct WaitSet(Vec<AtomicI32>);

impl WaitSet {
    pub fn new(n: usize) -> Arc<WaitSet> {
        Arc::new(WaitSet((0..n).map(|_| AtomicI32::new(-1)).collect()))
    }
}

/// One worker's side of a bridge: the ring on the interface frames come
/// in on, a transmit socket on the peer interface (accepted frames, and a
/// reject's answer to the receiver) and one on the ingress interface
/// itself (a reject's answer to the sender).
pub struct BridgeInput {
    /// The receiving ring and its capture counters (as for `-i`).
    rx: RingInput,
    peer: String,
    egress: TxSocket,
    back: TxSocket,
    waits: Arc<WaitSet>,
    slot: usize,
    /// The token of the next frame (never 0: the engine measures the hold
    /// time of frames with a token).
    seq: u64,
    /// Frames sent and send errors of sockets closed on a link-down.
    tx_carried: (u64, u64),
    /// Send errors already reported (errno), each said once.
    reported: Vec<i32>,
}

impl BridgeInput {
    /// Opens worker `slot`'s input on `iface` forwarding to `peer`. The
    /// ring joins `cfg`'s fanout group: open the inputs of every worker
    /// in worker order on each interface (see `live::run`).
    pub fn open(
        iface: &str,
        peer: &str,
        cfg: &RingConfig,
        waits: Arc<WaitSet>,
        slot: usize,
    ) -> Result<BridgeInput, CaptureError> {
        let rx = RingInput::open(iface, cfg)?;
        let egress = TxSocket::open(peer)?;
        let back = TxSocket::open(iface)?;
        waits.0[slot].store(rx.ring.as_fd().as_raw_fd(), Ordering::Relaxed);
        Ok(BridgeInput {
            rx,
            peer: peer.to_string(),
            egress,
            back,
            waits,
            slot,
            seq: 0,
            tx_carried: (0, 0),
            reported: Vec::new(),
        })
    }

    fn send(&mut self, to_peer: bool, frame: &[u8]) {
        let sock = if to_peer {
            &mut self.egress
        } else {
            &mut self.back
        };
        if let Err(e) = sock.send(frame) {
            let code = e.raw_os_error().unwrap_or(0);
            if !self.reported.contains(&code) {
                self.reported.push(code);
                let hint = if code == libc::EMSGSIZE {
                    format!(
                        " (a {}-byte frame over the MTU: turn receive offloads off on both \
                         bridge interfaces, `ethtool -K {} gro off lro off tso off gso off`, \
                         and give them the same MTU; counted in capture.tx_errors, said once)",
                        frame.len(),
                        self.rx.iface
                    )
                } else {
                    " (counted in capture.tx_errors, said once)".to_string()
                };
                eprintln!(
                    "vigil: bridge {} -> {}: send: {e}{hint}",
                    self.rx.iface,
                    sock.iface()
                );
            }
        }
    }

    /// A reject: the IP answers of `reject_answers`, framed from the
    /// rejected frame; the sender's goes back out of the ingress
    /// interface, the receiver's on out of the peer.
    fn answer(&mut self, frame: &[u8], to: RejectTo) {
        let (src, dst) = to.sides();
        let Some(l2) = vigil_inline::ethernet_ip_offset(frame) else {
            return;
        };
        let Some(info) = crate::live::reject_info(&frame[l2..]) else {
            return;
        };
        for (to, ip) in vigil_inline::reject_answers(&info, src, dst) {
            let to_src = to == info.src;
            if let Some(f) = vigil_inline::ethernet_answer(frame, to_src, &ip) {
                self.send(!to_src, &f);
            }
        }
    }

    /// Waits up to `timeout` until any ring of the worker's bridges is
    /// readable (or has an error to report).
    fn wait_any(&self, timeout: Duration) {
        let mut fds: Vec<libc::pollfd> = self
            .waits
            .0
            .iter()
            .map(|f| f.load(Ordering::Relaxed))
            .filter(|&fd| fd >= 0)
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ts = libc::timespec {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: timeout.subsec_nanos() as _,
        };
        // SAFETY: `fds` is a live array of `fds.len()` pollfds that the
        // kernel writes `revents` into; `ts` is a valid timespec; no signal
        // mask. The descriptors are the rings of this worker's inputs, all
        // owned by this thread's inputs and open for the call (a slot is
        // updated when its ring is reopened, and reset when it closes);
        // a stale one would only give POLLNVAL.
        unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            );
        }
    }

    fn poll_ring(&mut self, f: &mut dyn FnMut(LiveFrame<'_>)) -> Result<usize, InputError> {
        let linktype = self.rx.ring.linktype();
        let seq = &mut self.seq;
        self.rx
            .ring
            .poll_blocks(Duration::ZERO, 4, &mut |p| {
                *seq = seq.wrapping_add(1).max(1);
                f(LiveFrame {
                    ts_ns: p.ts_ns,
                    linktype,
                    data: p.data,
                    orig_len: p.orig_len,
                    token: *seq,
                })
            })
            .map_err(input_error)
    }

    fn tx_counters(&self) -> (u64, u64) {
        let (e, b) = (self.egress.stats(), self.back.stats());
        (
            self.tx_carried.0 + e.sent + b.sent,
            self.tx_carried.1 + e.errors + b.errors,
        )
    }
}

impl LiveInput for BridgeInput {
    fn name(&self) -> &str {
        &self.rx.iface
    }

    fn poll(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(LiveFrame<'_>),
    ) -> Result<usize, InputError> {
        let n = self.poll_ring(f)?;
        if n > 0 || timeout.is_zero() {
            return Ok(n);
        }
        // Nothing here: wait for any side, then take what came here (a
        // frame on another ring is taken when the worker polls that one).
        self.wait_any(timeout);
        self.poll_ring(f)
    }

    fn verdict(&mut self, _token: u64, v: Verdict, frame: &[u8]) -> Result<(), InputError> {
        match v {
            Verdict::Accept => self.send(true, frame),
            Verdict::Reject(to) => self.answer(frame, to),
            Verdict::Drop | Verdict::FlowDropped | Verdict::HostBlocked | Verdict::Exception(_) => {
            }
        }
        Ok(())
    }

    fn counters(&mut self) -> InputCounters {
        let (tx_packets, tx_errors) = self.tx_counters();
        InputCounters {
            tx_packets,
            tx_errors,
            ..self.rx.counters()
        }
    }

    fn close_intake(&mut self) {
        self.rx.close_intake();
    }

    fn reopen(&mut self) -> Result<(), InputError> {
        self.waits.0[self.slot].store(-1, Ordering::Relaxed);
        // The ring rejoins its fanout group as its last member, so until
        // a restart this worker may no longer see both directions of the
        // flows it had (see docs/inline.md).
        self.rx.reopen()?;
        let egress = TxSocket::open(&self.peer).map_err(input_error)?;
        let back = TxSocket::open(&self.rx.iface).map_err(input_error)?;
        self.tx_carried = self.tx_counters();
        self.egress = egress;
        self.back = back;
        self.waits.0[self.slot].store(self.rx.ring.as_fd().as_raw_fd(), Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridge_specs_parse() {
        assert_eq!(
            parse_bridge_spec("r0:r1"),
            Ok(("r0".to_string(), "r1".to_string()))
        );
        assert_eq!(
            parse_bridge_spec(" eth0 : eth1.20 "),
            Ok(("eth0".to_string(), "eth1.20".to_string()))
        );
        for bad in ["r0", "r0:", ":r1", "r0:r0", "a:b:c", "r0:a2345678901234567"] {
            assert!(parse_bridge_spec(bad).is_err(), "{bad}");
        }
        let two = ["a:b".to_string(), "c:d".to_string()];
        assert_eq!(parse_bridge_specs(&two).unwrap().len(), 2);
        let e = parse_bridge_specs(&["a:b".to_string(), "b:c".to_string()]).unwrap_err();
        assert!(e.contains("already"), "{e}");
    }

    #[test]
    fn a_bridge_ring_ignores_outgoing_frames_and_does_not_defragment() {
        let base = RingConfig {
            promisc: false,
            ..RingConfig::default()
        };
        let c = bridge_ring_config(&base);
        assert!(c.ignore_outgoing && c.promisc && !c.defrag);
        assert_eq!(c.block_timeout_ms, 1);
        assert_eq!(c.block_size, base.block_size);
    }
}
