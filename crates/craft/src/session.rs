//! [`TcpSession`]: the frames of a whole TCP conversation, with sequence
//! and acknowledgement numbers tracked and timestamps advancing.

use std::net::SocketAddr;

use crate::packet::{PacketBuilder, ACK, FIN, PSH, RST, SYN};
use crate::pcap::Ts;

/// A timestamped Ethernet frame (microsecond timestamp).
pub type TimedFrame = (Ts, Vec<u8>);

/// Direction of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    ToServer,
    ToClient,
}

/// Builds the frames of one TCP connection between a client and a server
/// (IPv4 or IPv6, by the address family of the endpoints).
///
/// Every emitted frame is stamped with the current time, which then moves on
/// by `step_us`. Each side's next sequence number advances by the payload
/// length, plus one for SYN and FIN; the ACK field carries the peer's next
/// sequence number (everything sent so far is taken as received).
///
/// ```
/// use vigil_craft::TcpSession;
/// let mut s = TcpSession::new("10.0.0.1:40000".parse().unwrap(), "10.0.0.2:80".parse().unwrap());
/// s.handshake().client_send(b"GET / HTTP/1.0\r\n\r\n").server_send(b"HTTP/1.0 200 OK\r\n\r\n").close();
/// assert_eq!(s.frames().len(), 3 + 2 + 2 + 3);
/// ```
#[derive(Clone, Debug)]
pub struct TcpSession {
    /// Header template (TTL, window, VLANs...). Its MACs are the client's
    /// (src) and the server's (dst); they are swapped for server frames.
    pub builder: PacketBuilder,
    client: SocketAddr,
    server: SocketAddr,
    client_seq: u32,
    server_seq: u32,
    now: Ts,
    step_us: u32,
    mss: usize,
    ack_data: bool,
    frames: Vec<TimedFrame>,
}

impl TcpSession {
    /// A session with initial sequence numbers 1000 (client) and 5000
    /// (server), starting at time (0, 0), stepping 1 ms per frame.
    pub fn new(client: SocketAddr, server: SocketAddr) -> Self {
        assert_eq!(
            client.is_ipv4(),
            server.is_ipv4(),
            "client and server must be the same address family"
        );
        TcpSession {
            builder: PacketBuilder::default(),
            client,
            server,
            client_seq: 1000,
            server_seq: 5000,
            now: (0, 0),
            step_us: 1000,
            mss: 1460,
            ack_data: true,
            frames: Vec::new(),
        }
    }

    pub fn with_builder(mut self, builder: PacketBuilder) -> Self {
        self.builder = builder;
        self
    }

    /// Initial sequence numbers (the SYN's sequence number of each side).
    pub fn with_isn(mut self, client: u32, server: u32) -> Self {
        self.client_seq = client;
        self.server_seq = server;
        self
    }

    pub fn start_at(mut self, ts: Ts) -> Self {
        self.now = ts;
        self
    }

    /// Microseconds between consecutive frames.
    pub fn with_step(mut self, step_us: u32) -> Self {
        self.step_us = step_us;
        self
    }

    /// Largest payload per data segment (and the MSS option of the SYNs).
    pub fn with_mss(mut self, mss: u16) -> Self {
        self.mss = usize::from(mss.max(1));
        self
    }

    /// Whether `send` follows the data with a pure ACK from the receiver
    /// (default true).
    pub fn with_data_acks(mut self, on: bool) -> Self {
        self.ack_data = on;
        self
    }

    pub fn client(&self) -> SocketAddr {
        self.client
    }
    pub fn server(&self) -> SocketAddr {
        self.server
    }
    /// Next sequence number the client will send.
    pub fn client_next_seq(&self) -> u32 {
        self.client_seq
    }
    /// Next sequence number the server will send.
    pub fn server_next_seq(&self) -> u32 {
        self.server_seq
    }
    /// Timestamp the next frame will get.
    pub fn now(&self) -> Ts {
        self.now
    }
    pub fn set_time(&mut self, ts: Ts) -> &mut Self {
        self.now = ts;
        self
    }
    /// Moves the clock on by `us` microseconds.
    pub fn advance(&mut self, us: u64) -> &mut Self {
        self.now = add_us(self.now, us);
        self
    }

    pub fn frames(&self) -> &[TimedFrame] {
        &self.frames
    }
    pub fn take_frames(&mut self) -> Vec<TimedFrame> {
        std::mem::take(&mut self.frames)
    }
    pub fn into_frames(self) -> Vec<TimedFrame> {
        self.frames
    }

    /// Emits one segment from `dir`'s sender with the given flags and
    /// payload, and advances that side's sequence number.
    pub fn segment(&mut self, dir: Dir, flags: u8, payload: &[u8]) -> &mut Self {
        let b = self.builder.clone();
        self.segment_with(&b, dir, flags, payload)
    }

    fn segment_with(
        &mut self,
        b: &PacketBuilder,
        dir: Dir,
        flags: u8,
        payload: &[u8],
    ) -> &mut Self {
        let (src, dst, seq, peer) = match dir {
            Dir::ToServer => (self.client, self.server, self.client_seq, self.server_seq),
            Dir::ToClient => (self.server, self.client, self.server_seq, self.client_seq),
        };
        let ack = if flags & ACK != 0 { peer } else { 0 };
        let mut b = b.clone();
        if dir == Dir::ToClient {
            std::mem::swap(&mut b.src_mac, &mut b.dst_mac);
        }
        let frame = b.tcp(
            src.ip(),
            src.port(),
            dst.ip(),
            dst.port(),
            seq,
            ack,
            flags,
            payload,
        );
        let adv = payload.len() as u32 + u32::from(flags & SYN != 0) + u32::from(flags & FIN != 0);
        match dir {
            Dir::ToServer => self.client_seq = self.client_seq.wrapping_add(adv),
            Dir::ToClient => self.server_seq = self.server_seq.wrapping_add(adv),
        }
        self.frames.push((self.now, frame));
        self.now = add_us(self.now, u64::from(self.step_us));
        self
    }

    /// SYN, SYN/ACK, ACK. The SYNs carry an MSS option.
    pub fn handshake(&mut self) -> &mut Self {
        let syn_b = self.builder.clone().mss(self.mss.min(65535) as u16);
        self.segment_with(&syn_b, Dir::ToServer, SYN, &[]);
        self.segment_with(&syn_b, Dir::ToClient, SYN | ACK, &[]);
        self.segment(Dir::ToServer, ACK, &[])
    }

    /// Sends `data` in segments of at most MSS bytes (PSH|ACK), then, unless
    /// disabled, a pure ACK from the receiver.
    pub fn send(&mut self, dir: Dir, data: &[u8]) -> &mut Self {
        for chunk in data.chunks(self.mss) {
            self.segment(dir, PSH | ACK, chunk);
        }
        if self.ack_data && !data.is_empty() {
            let back = match dir {
                Dir::ToServer => Dir::ToClient,
                Dir::ToClient => Dir::ToServer,
            };
            self.segment(back, ACK, &[]);
        }
        self
    }

    pub fn client_send(&mut self, data: &[u8]) -> &mut Self {
        self.send(Dir::ToServer, data)
    }

    pub fn server_send(&mut self, data: &[u8]) -> &mut Self {
        self.send(Dir::ToClient, data)
    }

    /// FIN/ACK from the client, FIN/ACK from the server, final ACK.
    pub fn close(&mut self) -> &mut Self {
        self.close_from(Dir::ToServer)
    }

    /// Teardown initiated by `dir`'s sender.
    pub fn close_from(&mut self, dir: Dir) -> &mut Self {
        let back = match dir {
            Dir::ToServer => Dir::ToClient,
            Dir::ToClient => Dir::ToServer,
        };
        self.segment(dir, FIN | ACK, &[]);
        self.segment(back, FIN | ACK, &[]);
        self.segment(dir, ACK, &[])
    }

    /// RST/ACK from `dir`'s sender.
    pub fn reset(&mut self, dir: Dir) -> &mut Self {
        self.segment(dir, RST | ACK, &[])
    }
}

/// Adds microseconds to a (seconds, microseconds) timestamp.
pub fn add_us(ts: Ts, us: u64) -> Ts {
    let total = u64::from(ts.1) + us;
    (
        ts.0 + (total / 1_000_000) as i64,
        (total % 1_000_000) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp_fields(f: &[u8]) -> (u32, u32, u8, usize) {
        let ihl = usize::from(f[14] & 0x0f) * 4;
        let t = &f[14 + ihl..];
        let seq = u32::from_be_bytes([t[4], t[5], t[6], t[7]]);
        let ack = u32::from_be_bytes([t[8], t[9], t[10], t[11]]);
        let doff = usize::from(t[12] >> 4) * 4;
        (seq, ack, t[13], t.len() - doff)
    }

    #[test]
    fn seq_ack_bookkeeping() {
        let mut s = TcpSession::new(
            "10.0.0.1:40000".parse().unwrap(),
            "10.0.0.2:80".parse().unwrap(),
        )
        .with_isn(100, 900)
        .start_at((10, 999_500))
        .with_step(250);
        s.handshake()
            .client_send(b"hello")
            .server_send(b"world!")
            .close();
        let got: Vec<_> = s.frames().iter().map(|(_, f)| tcp_fields(f)).collect();
        assert_eq!(
            got,
            vec![
                (100, 0, SYN, 0),
                (900, 101, SYN | ACK, 0),
                (101, 901, ACK, 0),
                (101, 901, PSH | ACK, 5),
                (901, 106, ACK, 0),
                (901, 106, PSH | ACK, 6),
                (106, 907, ACK, 0),
                (106, 907, FIN | ACK, 0),
                (907, 107, FIN | ACK, 0),
                (107, 908, ACK, 0),
            ]
        );
        assert_eq!(s.client_next_seq(), 107);
        assert_eq!(s.server_next_seq(), 908);
        let ts: Vec<Ts> = s.frames().iter().map(|(t, _)| *t).collect();
        assert_eq!(ts[0], (10, 999_500));
        assert_eq!(ts[1], (10, 999_750));
        assert_eq!(ts[2], (11, 0));
        assert!(ts.windows(2).all(|w| w[0] < w[1]));
        // Server frames have swapped MACs.
        assert_eq!(&s.frames()[1].1[..6], &crate::packet::DEFAULT_SRC_MAC);
    }

    #[test]
    fn segmentation_and_wraparound() {
        let mut s = TcpSession::new(
            "[2001:db8::1]:1".parse().unwrap(),
            "[2001:db8::2]:2".parse().unwrap(),
        )
        .with_isn(u32::MAX - 1, 0)
        .with_mss(4)
        .with_data_acks(false);
        s.handshake().client_send(b"0123456789");
        let frames = s.take_frames();
        assert_eq!(frames.len(), 3 + 3);
        assert_eq!(&frames[0].1[12..14], &[0x86, 0xdd]);
        assert_eq!(s.client_next_seq(), 9); // (2^32 - 2) + SYN + 10 bytes, mod 2^32
        let seqs: Vec<u32> = frames[3..]
            .iter()
            .map(|(_, f)| u32::from_be_bytes(f[58..62].try_into().unwrap()))
            .collect();
        assert_eq!(seqs, vec![u32::MAX, 3, 7]);
        assert!(s.frames().is_empty());
    }
}
