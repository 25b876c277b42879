//! Protocol detection by content (Sommer/Paxson: flows avoid well-known
//! ports, so ports are only a hint).
//!
//! [`probe`] looks at the first bytes of one direction of a TCP stream and
//! [`probe_udp`] at one datagram; each says which parser accepts them,
//! that more bytes are needed, or that none does (Suricata's `failed`).
//! [`ProtocolDetector`] combines both directions of a flow the way
//! Suricata does: the first direction to recognise a protocol decides; the
//! flow fails only once both directions have failed (or one has, and the
//! other sent nothing within the probing depth).

use crate::{AppProto, Direction, Transport};

/// What the first bytes of a direction say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeResult {
    Http,
    Dns,
    Tls,
    /// No parser accepts these bytes (Suricata's `failed`).
    Unknown,
    /// A parser could still accept them with more bytes.
    NeedMore,
}

impl ProbeResult {
    pub fn proto(self) -> Option<AppProto> {
        match self {
            ProbeResult::Http => Some(AppProto::Http),
            ProbeResult::Dns => Some(AppProto::Dns),
            ProbeResult::Tls => Some(AppProto::Tls),
            _ => None,
        }
    }
}

/// Bytes per direction after which a probe that still needs more gives up.
pub const PROBE_DEPTH: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Yes,
    No,
    More,
}

const METHODS: &[&[u8]] = &[
    b"GET",
    b"POST",
    b"HEAD",
    b"PUT",
    b"DELETE",
    b"OPTIONS",
    b"CONNECT",
    b"TRACE",
    b"PATCH",
    b"PROPFIND",
    b"PROPPATCH",
    b"MKCOL",
    b"COPY",
    b"MOVE",
    b"LOCK",
    b"UNLOCK",
    b"SEARCH",
    b"CHECKOUT",
    b"CHECKIN",
    b"REPORT",
    b"MKACTIVITY",
    b"MERGE",
    b"VERSION-CONTROL",
    b"BASELINE-CONTROL",
    b"UPDATE",
    b"LABEL",
    b"MKWORKSPACE",
    b"ACL",
    b"SUBSCRIBE",
    b"UNSUBSCRIBE",
    b"NOTIFY",
    b"POLL",
    b"BMOVE",
    b"BDELETE",
    b"BPROPFIND",
    b"BPROPPATCH",
    b"BCOPY",
    b"MKCALENDAR",
    b"PURGE",
];

fn probe_http(dir: Direction, data: &[u8]) -> Verdict {
    match dir {
        Direction::ToServer => {
            let mut more = false;
            for m in METHODS {
                let n = m.len();
                if data.len() > n {
                    if data.starts_with(m) && matches!(data[n], b' ' | b'\t') {
                        return Verdict::Yes;
                    }
                } else if m.starts_with(data) {
                    more = true;
                }
            }
            if more {
                Verdict::More
            } else {
                Verdict::No
            }
        }
        Direction::ToClient => {
            if data.len() >= 5 {
                if data.starts_with(b"HTTP/") {
                    Verdict::Yes
                } else {
                    Verdict::No
                }
            } else if b"HTTP/".starts_with(data) {
                Verdict::More
            } else {
                Verdict::No
            }
        }
    }
}

fn probe_tls(data: &[u8]) -> Verdict {
    let Some(&b0) = data.first() else {
        return Verdict::More;
    };
    if b0 & 0x80 != 0 {
        // SSLv2 client hello: 2-byte length, msg type 1, version 0x0002,
        // 0x0300 or 0x0301..0x0303.
        if data.len() < 5 {
            return Verdict::More;
        }
        let ok = data[2] == 1 && matches!((data[3], data[4]), (0, 2) | (3, 0..=3));
        return if ok { Verdict::Yes } else { Verdict::No };
    }
    if !(0x14..=0x17).contains(&b0) {
        return Verdict::No;
    }
    if data.len() < 3 {
        if data.len() == 2 && data[1] != 3 {
            return Verdict::No;
        }
        return Verdict::More;
    }
    if data[1] == 3 && data[2] <= 4 {
        Verdict::Yes
    } else {
        Verdict::No
    }
}

/// Whether a DNS header (12 bytes at `h`) is sane for the direction.
fn dns_header_ok(h: &[u8], dir: Option<Direction>, strict: bool) -> bool {
    if h.len() < 12 {
        return false;
    }
    let flags = u16::from_be_bytes([h[2], h[3]]);
    let qd = u16::from_be_bytes([h[4], h[5]]);
    let an = u16::from_be_bytes([h[6], h[7]]);
    let ns = u16::from_be_bytes([h[8], h[9]]);
    let qr = flags & 0x8000 != 0;
    let opcode = (flags >> 11) & 0xf;
    if opcode > 6 || qd == 0 {
        return false;
    }
    match dir {
        Some(Direction::ToServer) if qr => return false,
        Some(Direction::ToClient) if !qr => return false,
        _ => {}
    }
    if strict {
        if qd != 1 {
            return false;
        }
        if !qr && (an != 0 || ns != 0) {
            return false;
        }
    }
    true
}

/// A plausible DNS-over-TCP message start: length prefix and header.
pub(crate) fn dns_tcp_plausible(data: &[u8]) -> bool {
    if data.len() < 14 {
        return false;
    }
    let len = usize::from(u16::from_be_bytes([data[0], data[1]]));
    len >= 12 && dns_header_ok(&data[2..], None, false)
}

fn probe_dns_tcp(dir: Direction, data: &[u8], port_hint: u16) -> Verdict {
    if data.len() < 14 {
        return Verdict::More;
    }
    let len = usize::from(u16::from_be_bytes([data[0], data[1]]));
    if len < 12 {
        return Verdict::No;
    }
    let strict = port_hint != 53;
    if !dns_header_ok(&data[2..], Some(dir), strict) {
        return Verdict::No;
    }
    if strict {
        // Away from port 53 the whole first message must parse.
        if data.len() < 2 + len {
            return Verdict::More;
        }
        return match crate::dns::parse_message(&data[2..2 + len], 1025) {
            Ok((_, ev)) if ev.is_empty() => Verdict::Yes,
            _ => Verdict::No,
        };
    }
    Verdict::Yes
}

/// Probes the first bytes of one direction of a TCP stream.
pub fn probe(dir: Direction, first_bytes: &[u8], dst_port_hint: u16) -> ProbeResult {
    let candidates = [
        (ProbeResult::Tls, probe_tls(first_bytes), 443),
        (ProbeResult::Http, probe_http(dir, first_bytes), 80),
        (
            ProbeResult::Dns,
            probe_dns_tcp(dir, first_bytes, dst_port_hint),
            53,
        ),
    ];
    // The protocol the port suggests wins when it accepts.
    if let Some(c) = candidates
        .iter()
        .find(|c| c.1 == Verdict::Yes && c.2 == dst_port_hint)
    {
        return c.0;
    }
    if let Some(c) = candidates.iter().find(|c| c.1 == Verdict::Yes) {
        return c.0;
    }
    if candidates.iter().any(|c| c.1 == Verdict::More) && first_bytes.len() < PROBE_DEPTH {
        return ProbeResult::NeedMore;
    }
    ProbeResult::Unknown
}

/// Probes one UDP datagram (DNS is the only UDP protocol parsed here).
pub fn probe_udp(dir: Direction, datagram: &[u8], port_hint: u16) -> ProbeResult {
    let strict = port_hint != 53;
    if !dns_header_ok(datagram, Some(dir), strict) {
        return ProbeResult::Unknown;
    }
    match crate::dns::parse_message(datagram, 1025) {
        Ok((m, ev)) if !m.queries.is_empty() && (!strict || ev.is_empty()) => ProbeResult::Dns,
        _ => ProbeResult::Unknown,
    }
}

/// The outcome of detection for a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detection {
    Detected(AppProto),
    /// Suricata's `failed`: nothing will parse this flow.
    Failed,
    /// Waiting for more bytes in some direction.
    Pending,
}

/// Per-flow protocol detection over both directions.
pub struct ProtocolDetector {
    transport: Transport,
    port_hint: u16,
    buf: [Vec<u8>; 2],
    failed: [bool; 2],
    result: Option<Detection>,
}

impl ProtocolDetector {
    /// `dst_port_hint` is the server port.
    pub fn new(transport: Transport, dst_port_hint: u16) -> Self {
        ProtocolDetector {
            transport,
            port_hint: dst_port_hint,
            buf: [Vec::new(), Vec::new()],
            failed: [false, false],
            result: None,
        }
    }

    /// The decision so far.
    pub fn result(&self) -> Detection {
        self.result.unwrap_or(Detection::Pending)
    }

    /// Feeds the next bytes (a datagram for UDP) of one direction.
    pub fn feed(&mut self, dir: Direction, data: &[u8]) -> Detection {
        if let Some(r) = self.result {
            return r;
        }
        let d = dir.index();
        if self.failed[d] {
            return Detection::Pending;
        }
        let r = match self.transport {
            Transport::Udp => probe_udp(dir, data, self.port_hint),
            Transport::Tcp => {
                let room = PROBE_DEPTH.saturating_sub(self.buf[d].len());
                self.buf[d].extend_from_slice(&data[..data.len().min(room)]);
                probe(dir, &self.buf[d], self.port_hint)
            }
        };
        match r.proto() {
            Some(p) => {
                self.result = Some(Detection::Detected(p));
                self.buf = [Vec::new(), Vec::new()];
            }
            None if r == ProbeResult::Unknown => {
                self.failed[d] = true;
                self.buf[d] = Vec::new();
                if self.failed == [true, true] {
                    self.result = Some(Detection::Failed);
                }
            }
            None => {}
        }
        self.result()
    }

    /// The flow ended or the engine gives up waiting: what is not detected
    /// now has failed.
    pub fn finish(&mut self) -> Detection {
        if self.result.is_none() {
            self.result = Some(Detection::Failed);
        }
        self.result()
    }
}
