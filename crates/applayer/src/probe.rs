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
    Smb,
    Dcerpc,
    Ftp,
    Smtp,
    Ssh,
    Sip,
    Http2,
    Mqtt,
    Rfb,
    Enip,
    Modbus,
    Dnp3,
    Dhcp,
    Krb5,
    Snmp,
    Ntp,
    Telnet,
    BittorrentDht,
    Ike,
    Pgsql,
    Quic,
    Mdns,
    Llmnr,
    Ldap,
    Pop3,
    Imap,
    Rdp,
    Nfs,
    Tftp,
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
            ProbeResult::Smb => Some(AppProto::Smb),
            ProbeResult::Dcerpc => Some(AppProto::Dcerpc),
            ProbeResult::Ftp => Some(AppProto::Ftp),
            ProbeResult::Smtp => Some(AppProto::Smtp),
            ProbeResult::Ssh => Some(AppProto::Ssh),
            ProbeResult::Sip => Some(AppProto::Sip),
            ProbeResult::Http2 => Some(AppProto::Http2),
            ProbeResult::Mqtt => Some(AppProto::Mqtt),
            ProbeResult::Rfb => Some(AppProto::Rfb),
            ProbeResult::Enip => Some(AppProto::Enip),
            ProbeResult::Modbus => Some(AppProto::Modbus),
            ProbeResult::Dnp3 => Some(AppProto::Dnp3),
            ProbeResult::Dhcp => Some(AppProto::Dhcp),
            ProbeResult::Krb5 => Some(AppProto::Krb5),
            ProbeResult::Snmp => Some(AppProto::Snmp),
            ProbeResult::Ntp => Some(AppProto::Ntp),
            ProbeResult::Telnet => Some(AppProto::Telnet),
            ProbeResult::BittorrentDht => Some(AppProto::BittorrentDht),
            ProbeResult::Ike => Some(AppProto::Ike),
            ProbeResult::Pgsql => Some(AppProto::Pgsql),
            ProbeResult::Quic => Some(AppProto::Quic),
            ProbeResult::Mdns => Some(AppProto::Mdns),
            ProbeResult::Llmnr => Some(AppProto::Llmnr),
            ProbeResult::Ldap => Some(AppProto::Ldap),
            ProbeResult::Pop3 => Some(AppProto::Pop3),
            ProbeResult::Imap => Some(AppProto::Imap),
            ProbeResult::Rdp => Some(AppProto::Rdp),
            ProbeResult::Nfs => Some(AppProto::Nfs),
            ProbeResult::Tftp => Some(AppProto::Tftp),
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

/// SSH: the identification string starts `SSH-` in both directions
/// (Suricata's `SSH-` pattern at offset 0).
fn probe_ssh(data: &[u8]) -> Verdict {
    prefix(data, b"SSH-")
}

/// SIP (Suricata's patterns): a request method followed by a space at
/// the start of the client's data, `SIP/2.0` at the start of the
/// server's.
fn probe_sip(dir: Direction, data: &[u8]) -> Verdict {
    match dir {
        Direction::ToServer => {
            let mut more = false;
            for m in crate::sip::METHODS {
                let n = m.len();
                if data.len() > n {
                    if data.starts_with(m) && data[n] == b' ' {
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
        Direction::ToClient => prefix(data, b"SIP/2.0"),
    }
}

/// Whether the first line of `data` (complete) ends with a SIP version:
/// a request line of a method HTTP shares with SIP (`OPTIONS`,
/// `NOTIFY` ...) that is SIP's.
fn sip_request_line(data: &[u8]) -> bool {
    let Some(eol) = memchr::memchr(b'\n', data) else {
        return false;
    };
    let line = data[..eol].strip_suffix(b"\r").unwrap_or(&data[..eol]);
    line.ends_with(b" SIP/2.0")
}

/// MQTT (Suricata's probe, which runs on its port only, 1883): the
/// client's CONNECT. On dev-mix, by content on any port found 23 MQTT
/// transactions on port 17501 that the peer does not parse.
fn probe_mqtt(dir: Direction, data: &[u8], port: u16) -> Verdict {
    if dir != Direction::ToServer || port != 1883 {
        return Verdict::No;
    }
    match crate::mqtt::probe_connect(data) {
        Some(true) => Verdict::Yes,
        Some(false) => Verdict::No,
        None => Verdict::More,
    }
}

/// RFB: a version line `RFB xxx.yyy\n` either way.
fn probe_rfb(data: &[u8]) -> Verdict {
    match crate::rfb::probe_version(data) {
        Some(true) => Verdict::Yes,
        Some(false) => Verdict::No,
        None => Verdict::More,
    }
}

/// A probe answer of the message protocols (`None`: more bytes needed),
/// heard only on the protocol's port(s), as Suricata registers them.
fn on_port(ok: bool, v: Option<bool>) -> Verdict {
    match (ok, v) {
        (false, _) | (true, Some(false)) => Verdict::No,
        (true, Some(true)) => Verdict::Yes,
        (true, None) => Verdict::More,
    }
}

/// ENIP: a plausible encapsulation header (24 bytes).
fn probe_enip(data: &[u8]) -> Option<bool> {
    (data.len() >= crate::enip::HEADER_LEN).then(|| crate::enip::probe(data))
}

/// LLMNR over TCP: a length-prefixed DNS message (`None` until it is
/// all there).
fn probe_llmnr_tcp(data: &[u8]) -> Option<bool> {
    if data.len() < 2 {
        return None;
    }
    let len = usize::from(u16::from_be_bytes([data[0], data[1]]));
    if len < 12 {
        return Some(false);
    }
    if data.len() < 2 + len {
        // Longer than the probing depth: the header alone decides, as
        // Suricata's probe does on a partial message.
        if data.len() < PROBE_DEPTH {
            return None;
        }
        return Some(
            crate::mdns::header(&data[2..]).is_some_and(|h| crate::mdns::header_plausible(&h, len)),
        );
    }
    Some(crate::mdns::probe(&data[2..2 + len]))
}

/// `Yes` when `data` starts with `p`, `More` while it is a prefix of `p`.
fn prefix(data: &[u8], p: &[u8]) -> Verdict {
    if data.len() >= p.len() {
        if data.starts_with(p) {
            Verdict::Yes
        } else {
            Verdict::No
        }
    } else if p.starts_with(data) {
        Verdict::More
    } else {
        Verdict::No
    }
}

/// SMB 1/2/3 over TCP: a NetBIOS session message (type 0, 17-bit
/// length) whose payload starts `\xffSMB`, `\xfeSMB` or the SMB3
/// transform header `\xfdSMB` (Suricata's SMB probe on the NBSS record).
fn probe_smb(data: &[u8]) -> Verdict {
    if data.is_empty() {
        return Verdict::More;
    }
    // As Suricata: one small NBSS record other than a session message
    // (port 139's session request, positive response ...) may come
    // before the first SMB message.
    if matches!(data[0], 0x81..=0x85) {
        if data.len() < 4 {
            return Verdict::More;
        }
        let len =
            (usize::from(data[1] & 1) << 16) | usize::from(u16::from_be_bytes([data[2], data[3]]));
        if data[1] > 1 || len >= 256 {
            return Verdict::No;
        }
        // A session request (two encoded NetBIOS names: a 0x20 length
        // and 32 letters 'A'..'P' each) is NetBIOS's session service,
        // SMB's transport on port 139: the SMB message follows only after
        // the server's answer, beyond the bytes the detector looks at.
        if data[0] == 0x81 && len >= 68 {
            let name = &data[4..data.len().min(37)];
            if name.first().is_some_and(|&b| b != 0x20)
                || name.iter().skip(1).any(|b| !(b'A'..=b'P').contains(b))
            {
                return Verdict::No;
            }
            return if name.len() == 33 {
                Verdict::Yes
            } else {
                Verdict::More
            };
        }
        return match data.get(4 + len..) {
            Some(rest) if !rest.is_empty() && rest[0] == 0 => probe_smb(rest),
            Some(rest) if !rest.is_empty() => Verdict::No,
            _ => Verdict::More,
        };
    }
    if data[0] != 0 || data.get(1).is_some_and(|&b| b > 1) {
        return Verdict::No;
    }
    if data.len() < 8 {
        let have = &data[4.min(data.len())..];
        let ok = [b"\xffSMB", b"\xfeSMB", b"\xfdSMB"]
            .iter()
            .any(|m| m.starts_with(have));
        return if ok { Verdict::More } else { Verdict::No };
    }
    let len =
        (usize::from(data[1] & 1) << 16) | usize::from(u16::from_be_bytes([data[2], data[3]]));
    if len < 4 || !matches!(data[4], 0xfd..=0xff) || &data[5..8] != b"SMB" {
        return Verdict::No;
    }
    Verdict::Yes
}

/// DCERPC connection-oriented PDU header (16 bytes): version 5.0 or 5.1,
/// a known PDU type, a sane data representation and fragment length, as
/// Suricata's DCERPC/TCP probe checks.
fn probe_dcerpc(data: &[u8]) -> Verdict {
    if data.is_empty() {
        return Verdict::More;
    }
    if data[0] != 5 {
        return Verdict::No;
    }
    if data.len() < 16 {
        if data.len() >= 2 && data[1] > 1 {
            return Verdict::No;
        }
        if data.len() >= 3 && data[2] > 20 {
            return Verdict::No;
        }
        return Verdict::More;
    }
    let frag_len = if data[4] & 0x10 != 0 {
        u16::from_le_bytes([data[8], data[9]])
    } else {
        u16::from_be_bytes([data[8], data[9]])
    };
    let ok = data[1] <= 1 && data[2] <= 20 && data[4] & 0xee == 0 && data[5] <= 3 && frag_len >= 16;
    if ok {
        Verdict::Yes
    } else {
        Verdict::No
    }
}

/// Case-insensitive `starts_with` over the bytes there are: `Some(true)`
/// on a full match, `Some(false)` while a prefix, `None` on a mismatch.
fn word(data: &[u8], w: &[u8]) -> Option<bool> {
    let n = data.len().min(w.len());
    if data[..n].eq_ignore_ascii_case(&w[..n]) {
        Some(n == w.len())
    } else {
        None
    }
}

/// Client commands that open an FTP session (Suricata's to-server FTP
/// patterns).
const FTP_CMDS: &[&[u8]] = &[b"USER ", b"PASS ", b"PORT ", b"AUTH ", b"FEAT", b"SYST"];
/// Client commands that open an SMTP session.
const SMTP_CMDS: &[&[u8]] = &[b"EHLO", b"HELO", b"STARTTLS"];

/// FTP or SMTP from the client's first line, or from the server's
/// greeting: `220` followed by the line naming FTP or (E)SMTP, or the
/// port saying which. Returns the verdicts for (FTP, SMTP).
fn probe_ftp_smtp(dir: Direction, data: &[u8], port_hint: u16) -> (Verdict, Verdict) {
    if data.is_empty() {
        return (Verdict::More, Verdict::More);
    }
    let cmd = |cmds: &[&[u8]]| {
        let mut v = Verdict::No;
        for c in cmds {
            match word(data, c) {
                Some(true) => return Verdict::Yes,
                Some(false) => v = Verdict::More,
                None => {}
            }
        }
        v
    };
    match dir {
        Direction::ToServer => (cmd(FTP_CMDS), cmd(SMTP_CMDS)),
        Direction::ToClient => {
            match word(data, b"220") {
                None => return (Verdict::No, Verdict::No),
                Some(false) => return (Verdict::More, Verdict::More),
                Some(true) => {}
            }
            if data.len() > 3 && !matches!(data[3], b' ' | b'-') {
                return (Verdict::No, Verdict::No);
            }
            // A greeting longer than the detector looks at is judged on
            // what it saw.
            let line = match memchr::memchr(b'\n', data) {
                Some(eol) => &data[..eol],
                None if data.len() >= PROBE_DEPTH => data,
                None => return (Verdict::More, Verdict::More),
            };
            let has = |w: &[u8]| line.windows(w.len()).any(|x| x.eq_ignore_ascii_case(w));
            if has(b"FTP") {
                (Verdict::Yes, Verdict::No)
            } else if has(b"SMTP") || has(b"Postfix") || has(b"Exim") || has(b"Sendmail") {
                (Verdict::No, Verdict::Yes)
            } else if port_hint == 21 {
                (Verdict::Yes, Verdict::No)
            } else if SMTP_PORTS.contains(&port_hint) {
                (Verdict::No, Verdict::Yes)
            } else {
                // A bare greeting: the client's first command decides.
                (Verdict::No, Verdict::No)
            }
        }
    }
}

const SMTP_PORTS: [u16; 3] = [25, 587, 465];
/// SIP's registered ports (Suricata's default `detection-ports`).
const SIP_PORTS: [u16; 2] = [5060, 5061];

/// Probes the first bytes of one direction of a TCP stream.
///
/// Cheap tests only, each on the first bytes: no probe runs once a flow's
/// protocol is known.
pub fn probe(dir: Direction, first_bytes: &[u8], dst_port_hint: u16) -> ProbeResult {
    let (ftp, smtp) = probe_ftp_smtp(dir, first_bytes, dst_port_hint);
    let sip = probe_sip(dir, first_bytes);
    if sip == Verdict::Yes && (dir == Direction::ToClient || sip_request_line(first_bytes)) {
        return ProbeResult::Sip;
    }
    let candidates = [
        (ProbeResult::Tls, probe_tls(first_bytes), &[443][..]),
        (ProbeResult::Http, probe_http(dir, first_bytes), &[80]),
        (
            ProbeResult::Dns,
            probe_dns_tcp(dir, first_bytes, dst_port_hint),
            &[53],
        ),
        (ProbeResult::Smb, probe_smb(first_bytes), &[445, 139]),
        (ProbeResult::Dcerpc, probe_dcerpc(first_bytes), &[135]),
        (ProbeResult::Ssh, probe_ssh(first_bytes), &[22]),
        (ProbeResult::Ftp, ftp, &[21]),
        (ProbeResult::Smtp, smtp, &SMTP_PORTS[..]),
        (ProbeResult::Sip, sip, &SIP_PORTS[..]),
        // HTTP/2 with prior knowledge: the client preface, on any port.
        (
            ProbeResult::Http2,
            match dir {
                Direction::ToServer => prefix(first_bytes, crate::http2::PREFACE),
                Direction::ToClient => Verdict::No,
            },
            &[],
        ),
        (
            ProbeResult::Mqtt,
            probe_mqtt(dir, first_bytes, dst_port_hint),
            &[1883],
        ),
        (ProbeResult::Rfb, probe_rfb(first_bytes), &[5900]),
        (
            ProbeResult::Krb5,
            on_port(
                dst_port_hint == crate::krb5::PORT,
                crate::krb5::probe_tcp(first_bytes),
            ),
            &[crate::krb5::PORT],
        ),
        // PostgreSQL on its port only (Suricata registers its probing
        // parsers there).
        (
            ProbeResult::Pgsql,
            on_port(
                dst_port_hint == crate::pgsql::PORT,
                crate::pgsql::probe(dir, first_bytes),
            ),
            &[crate::pgsql::PORT],
        ),
        // ENIP on its port (Suricata's `detection-ports`), a whole header.
        (
            ProbeResult::Enip,
            on_port(dst_port_hint == crate::enip::PORT, probe_enip(first_bytes)),
            &[crate::enip::PORT],
        ),
        (
            ProbeResult::Llmnr,
            on_port(
                dst_port_hint == crate::mdns::LLMNR_PORT,
                probe_llmnr_tcp(first_bytes),
            ),
            &[crate::mdns::LLMNR_PORT],
        ),
        // LDAP on its ports (Suricata's `detection-ports`): a message
        // that decodes, or the start of one.
        (
            ProbeResult::Ldap,
            on_port(
                crate::ldap::PORTS.contains(&dst_port_hint),
                crate::ldap::probe(first_bytes),
            ),
            &crate::ldap::PORTS[..],
        ),
        // Modbus on its port (Suricata's `detection-ports`), a whole
        // message without error flags either way.
        (
            ProbeResult::Modbus,
            on_port(
                dst_port_hint == crate::modbus::PORT,
                crate::modbus::probe(first_bytes),
            ),
            &[crate::modbus::PORT],
        ),
        // DNP3 on its port (Suricata's `detection-ports`): a link header
        // (start bytes, length of at least 5) or a banner.
        (
            ProbeResult::Dnp3,
            on_port(
                dst_port_hint == crate::dnp3::PORT,
                crate::dnp3::probe(first_bytes),
            ),
            &[crate::dnp3::PORT],
        ),
        // POP3 on its port (Suricata's probing parser is registered there).
        (
            ProbeResult::Pop3,
            on_port(
                dst_port_hint == crate::pop3::PORT,
                crate::pop3::probe(dir, first_bytes),
            ),
            &[crate::pop3::PORT],
        ),
        // RDP on its port (Suricata's probing parser is registered there).
        (
            ProbeResult::Rdp,
            on_port(
                dst_port_hint == crate::rdp::PORT,
                crate::rdp::probe(dir, first_bytes),
            ),
            &[crate::rdp::PORT],
        ),
        // IMAP by Suricata's patterns, on any port.
        (
            ProbeResult::Imap,
            on_port(true, crate::imap::probe(dir, first_bytes)),
            &[crate::imap::PORT],
        ),
        // NFS: a call to program 100003 on any port, a reply on 2049.
        (
            ProbeResult::Nfs,
            match crate::nfs::probe_tcp(dir, first_bytes, dst_port_hint) {
                Some(true) => Verdict::Yes,
                Some(false) => Verdict::No,
                None => Verdict::More,
            },
            &[crate::nfs::PORT],
        ),
    ];
    // The protocol the port suggests wins when it accepts.
    if let Some(c) = candidates
        .iter()
        .find(|c| c.1 == Verdict::Yes && c.2.contains(&dst_port_hint))
    {
        return c.0;
    }
    if let Some(c) = candidates.iter().find(|c| c.1 == Verdict::Yes) {
        return c.0;
    }
    // Telnet: Suricata's probing parser on port 23 takes any two bytes,
    // once no protocol recognised by its content has claimed them.
    if dst_port_hint == crate::telnet::PORT && crate::telnet::probe(first_bytes) == Some(true) {
        return ProbeResult::Telnet;
    }
    if candidates.iter().any(|c| c.1 == Verdict::More) && first_bytes.len() < PROBE_DEPTH {
        return ProbeResult::NeedMore;
    }
    ProbeResult::Unknown
}

/// Probes one UDP datagram: SIP (a request line of a SIP method ending
/// in `SIP/2.0`, or a `SIP/2.0` status line: the whole first line is
/// there, which keeps SSDP's `NOTIFY * HTTP/1.1` out), else DNS.
pub fn probe_udp(dir: Direction, datagram: &[u8], port_hint: u16) -> ProbeResult {
    if probe_sip(dir, datagram) == Verdict::Yes
        && (dir == Direction::ToClient || sip_request_line(datagram))
    {
        return ProbeResult::Sip;
    }
    // DHCP (Suricata's ports 67/68): a BOOTP header with the cookie.
    if matches!(port_hint, 67 | 68) && crate::dhcp::probe(datagram) {
        return ProbeResult::Dhcp;
    }
    if port_hint == crate::krb5::PORT && crate::krb5::probe(datagram) == Some(true) {
        return ProbeResult::Krb5;
    }
    if crate::snmp::PORTS.contains(&port_hint) && crate::snmp::probe(datagram) {
        return ProbeResult::Snmp;
    }
    if crate::ike::PORTS.contains(&port_hint) && crate::ike::probe(datagram) {
        return ProbeResult::Ike;
    }
    if port_hint == crate::enip::PORT && crate::enip::probe(datagram) {
        return ProbeResult::Enip;
    }
    // QUIC on Suricata's ports (443, 80): any datagram whose header parses.
    if crate::quic::PORTS.contains(&port_hint) && crate::quic::probe(datagram) {
        return ProbeResult::Quic;
    }
    // mDNS and LLMNR on their ports (Suricata's defaults), either kind
    // of message.
    if port_hint == crate::mdns::MDNS_PORT && crate::mdns::probe(datagram) {
        return ProbeResult::Mdns;
    }
    if port_hint == crate::mdns::LLMNR_PORT && crate::mdns::probe(datagram) {
        return ProbeResult::Llmnr;
    }
    // CLDAP on LDAP's ports: a whole message that decodes.
    if crate::ldap::PORTS.contains(&port_hint) && crate::ldap::probe_datagram(datagram) {
        return ProbeResult::Ldap;
    }
    // BitTorrent DHT on ports 1024-65535 (Suricata's probing ports): a
    // query's prefix.
    if port_hint >= 1024 && crate::bittorrent_dht::probe(datagram) {
        return ProbeResult::BittorrentDht;
    }
    // NTP on its port (Suricata's probing parser): a v3 or v4 message.
    if port_hint == crate::ntp::PORT && crate::ntp::probe(datagram) {
        return ProbeResult::Ntp;
    }
    if crate::nfs::probe_udp(dir, datagram, port_hint) {
        return ProbeResult::Nfs;
    }
    // TFTP: a read or write request to port 69.
    if port_hint == crate::tftp::PORT && dir == Direction::ToServer && crate::tftp::probe(datagram)
    {
        return ProbeResult::Tftp;
    }
    // DNS on its port only, as Suricata's probing parser (its default
    // `dns.udp.detection-ports`): by content on any port, dev-mix's
    // DNSCrypt certificate queries on UDP 443 would be DNS here and not
    // there.
    if port_hint != 53 || !dns_header_ok(datagram, Some(dir), false) {
        return ProbeResult::Unknown;
    }
    match crate::dns::parse_message(datagram, 1025) {
        Ok((m, _)) if !m.queries.is_empty() => ProbeResult::Dns,
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
    /// UDP: the client's port, tried as mDNS's and LLMNR's when the
    /// server port says nothing (a responder's unicast answer opens a
    /// flow of its own, from port 5353/5355).
    client_port: u16,
    /// Detected by the client's port: the first packet was the
    /// server's (Suricata reverses such a flow).
    reversed: bool,
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
            client_port: 0,
            reversed: false,
        }
    }

    /// The UDP client's port (see [`ProtocolDetector::reversed`]).
    pub fn set_client_port(&mut self, port: u16) {
        self.client_port = port;
    }

    /// Whether the protocol was found on the client's port (mDNS, LLMNR):
    /// the flow's first packet came from the server.
    pub fn reversed(&self) -> bool {
        self.reversed
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
            Transport::Udp => {
                let r = probe_udp(dir, data, self.port_hint);
                let by_client = matches!(
                    self.client_port,
                    crate::mdns::MDNS_PORT | crate::mdns::LLMNR_PORT
                ) && self.client_port != self.port_hint;
                match probe_udp(dir, data, self.client_port) {
                    r2 @ (ProbeResult::Mdns | ProbeResult::Llmnr)
                        if r.proto().is_none() && by_client =>
                    {
                        self.reversed = true;
                        r2
                    }
                    _ => r,
                }
            }
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
