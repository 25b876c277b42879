//! Application-layer frame types for the `frame` keyword (Suricata 7+):
//! the frame names each protocol defines, as Suricata 9 lists them
//! (`suricata --list-app-layer-frames`). A frame type's id is its index
//! in its protocol's list; the app-layer framers use the same ids.

/// `(protocol, transports, frame names)`: `tcp`, `udp` or both. The
/// `stream` frame (the whole stream of a direction) exists for every TCP
/// protocol in Suricata and is listed first where it does.
pub const FRAME_TYPES: &[(&str, Transports, &[&str])] = &[
    ("http1", Transports::Tcp, &["stream", "request", "response"]),
    (
        "smtp",
        Transports::Tcp,
        &["stream", "command_line", "data", "response_line"],
    ),
    (
        "tls",
        Transports::Tcp,
        &[
            "stream",
            "pdu",
            "hdr",
            "data",
            "alert",
            "heartbeat",
            "ssl2.hdr",
            "ssl2.pdu",
        ],
    ),
    (
        "ssh",
        Transports::Tcp,
        &["stream", "record.hdr", "record.data", "record.pdu"],
    ),
    (
        "smb",
        Transports::Tcp,
        &[
            "stream",
            "nbss.pdu",
            "nbss.hdr",
            "nbss.data",
            "smb1.pdu",
            "smb1.hdr",
            "smb1.data",
            "smb2.pdu",
            "smb2.hdr",
            "smb2.data",
            "smb3.pdu",
            "smb3.hdr",
            "smb3.data",
        ],
    ),
    ("dcerpc", Transports::Tcp, &["stream", "pdu", "hdr", "data"]),
    ("dns", Transports::Both, &["stream", "pdu"]),
    (
        "nfs",
        Transports::Both,
        &[
            "stream",
            "rpc.pdu",
            "rpc.hdr",
            "rpc.data",
            "rpc.creds",
            "nfs.pdu",
            "nfs.status",
            "nfs4.pdu",
            "nfs4.hdr",
            "nfs4.ops",
            "nfs4.status",
        ],
    ),
    (
        "sip",
        Transports::Both,
        &[
            "stream",
            "pdu",
            "request.line",
            "response.line",
            "request.headers",
            "response.headers",
            "request.body",
            "response.body",
        ],
    ),
    ("rfb", Transports::Tcp, &["stream", "pdu"]),
    (
        "mqtt",
        Transports::Tcp,
        &["stream", "pdu", "header", "data"],
    ),
    ("telnet", Transports::Tcp, &["stream", "pdu", "ctl", "data"]),
    (
        "websocket",
        Transports::Tcp,
        &["stream", "header", "pdu", "data"],
    ),
    ("ldap", Transports::Both, &["stream", "pdu"]),
    ("doh2", Transports::Tcp, &["stream", "hdr", "data", "pdu"]),
    ("http2", Transports::Tcp, &["stream", "hdr", "data", "pdu"]),
    ("mdns", Transports::Udp, &["pdu"]),
    ("llmnr", Transports::Both, &["stream", "pdu"]),
];

/// Which transports a protocol's frames exist on. `stream` is TCP only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transports {
    Tcp,
    Udp,
    Both,
}

/// The canonical protocol name of a frame protocol as a rule may write
/// it (`ssl` is `tls`). HTTP/1's frames are `http1`'s only: as in
/// Suricata, `http` (either HTTP version) names none.
pub fn frame_proto(name: &str) -> Option<&'static str> {
    let n = match name {
        "ssl" => "tls",
        n => n,
    };
    FRAME_TYPES
        .iter()
        .find(|(p, _, _)| *p == n)
        .map(|(p, _, _)| *p)
}

/// The id of frame `name` of protocol `proto` (canonical), for a rule
/// that may inspect TCP (`tcp`) and / or UDP (`udp`).
pub fn frame_id(proto: &str, name: &str, tcp: bool, udp: bool) -> Option<u8> {
    let (_, tr, names) = FRAME_TYPES.iter().find(|(p, _, _)| *p == proto)?;
    let ok = match tr {
        Transports::Tcp => tcp,
        Transports::Udp => udp && name != "stream",
        Transports::Both => tcp || (udp && name != "stream"),
    };
    if !ok {
        return None;
    }
    names.iter().position(|n| *n == name).map(|i| i as u8)
}

/// The name of frame type `id` of protocol `proto`.
pub fn frame_name(proto: &str, id: u8) -> Option<&'static str> {
    let (_, _, names) = FRAME_TYPES.iter().find(|(p, _, _)| *p == proto)?;
    names.get(usize::from(id)).copied()
}

/// Application protocol names a `frame` value may start with that are
/// not frame protocols (`frame:ftp.pdu` names FTP, which has no frames,
/// rather than a frame `ftp.pdu` of the rule's protocol).
const OTHER_APP_PROTOS: &[&str] = &[
    "http",
    "ftp",
    "ftp-data",
    "tftp",
    "ikev2",
    "ike",
    "krb5",
    "dhcp",
    "snmp",
    "modbus",
    "dnp3",
    "enip",
    "rdp",
    "pgsql",
    "imap",
    "pop3",
    "bittorrent-dht",
    "quic",
    "pop",
    "sdp",
    "ntp",
    "failed",
];

/// A `frame` value resolved: canonical protocol, frame name, type id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRef {
    pub proto: &'static str,
    pub name: &'static str,
    pub id: u8,
}

impl FrameRef {
    /// The sticky buffer's canonical name: `frame:<proto>.<name>`.
    pub fn buffer_name(&self) -> String {
        format!("frame:{}.{}", self.proto, self.name)
    }

    /// Parses a buffer name made by [`FrameRef::buffer_name`].
    pub fn from_buffer_name(b: &str) -> Option<FrameRef> {
        let full = b.strip_prefix("frame:")?;
        let (p, n) = full.split_once('.')?;
        let proto = frame_proto(p)?;
        let id = frame_id(proto, n, true, true)?;
        Some(FrameRef {
            proto,
            name: frame_name(proto, id)?,
            id,
        })
    }
}

/// Resolves `frame:<value>` as Suricata's `DetectFrameSetup`: the long
/// form `<proto>.<frame>`, or the short form `<frame>` when the rule
/// header names the protocol (`rule_proto`). `tcp` / `udp`: the rule's
/// header admits that transport.
pub fn resolve_frame(
    value: &str,
    rule_proto: Option<&str>,
    tcp: bool,
    udp: bool,
) -> Result<FrameRef, String> {
    let v = value.trim();
    if v.is_empty() {
        return Err("frame needs a frame name ('<proto>.<frame>' or '<frame>')".into());
    }
    if !(tcp || udp) {
        return Err("frame is only supported for TCP and UDP rules".into());
    }
    let rule = rule_proto.and_then(frame_proto);
    let (kw_proto, name): (Option<&str>, &str) = match v.split_once('.') {
        Some((p, rest)) if frame_proto(p).is_some() => (frame_proto(p), rest),
        Some((p, _)) if OTHER_APP_PROTOS.contains(&p) => {
            return Err(format!("frame: protocol '{}' has no frames", short(p)))
        }
        _ => (None, v),
    };
    let proto = match (kw_proto, rule_proto) {
        (Some(k), None) => k,
        // `alert http` rules may name HTTP/1 frames in full.
        (Some(k), Some(r)) if rule == Some(k) || (r == "http" && k == "http1") => k,
        (Some(k), Some(r)) => {
            return Err(format!(
                "frame '{}' protocol '{k}' mismatch with rule protocol '{}'",
                short(v),
                short(r)
            ))
        }
        (None, Some(_)) => match rule {
            Some(r) => r,
            None => {
                return Err(format!(
                    "frame: rule protocol '{}' has no frames",
                    short(rule_proto.unwrap_or(""))
                ))
            }
        },
        (None, None) => {
            return Err(format!(
                "frame: rule protocol unknown, can't use shorthand notation for frame '{}'",
                short(v)
            ))
        }
    };
    let id = frame_id(proto, name, tcp, udp).ok_or_else(|| {
        format!(
            "frame: unknown frame '{}' for protocol '{proto}'",
            short(name)
        )
    })?;
    Ok(FrameRef {
        proto,
        name: frame_name(proto, id).unwrap_or(""),
        id,
    })
}

fn short(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_and_short_forms() {
        let f = resolve_frame("tls.pdu", None, true, false).unwrap();
        assert_eq!((f.proto, f.name, f.id), ("tls", "pdu", 1));
        assert_eq!(f.buffer_name(), "frame:tls.pdu");
        assert_eq!(FrameRef::from_buffer_name("frame:tls.pdu"), Some(f));
        let f = resolve_frame("tls.ssl2.hdr", Some("tls"), true, false).unwrap();
        assert_eq!(f.name, "ssl2.hdr");
        let f = resolve_frame("nbss.pdu", Some("smb"), true, false).unwrap();
        assert_eq!((f.proto, f.name), ("smb", "nbss.pdu"));
        let f = resolve_frame("request", Some("http1"), true, false).unwrap();
        assert_eq!((f.proto, f.name), ("http1", "request"));
        let f = resolve_frame("http1.response", Some("http"), true, false).unwrap();
        assert_eq!((f.proto, f.name), ("http1", "response"));
        let f = resolve_frame("dns.pdu", None, false, true).unwrap();
        assert_eq!(f.name, "pdu");
    }

    #[test]
    fn bad_frames_are_errors() {
        // As Suricata's DetectFrameTestBadRules.
        assert!(resolve_frame("tls.pdu", None, false, true).is_err());
        assert!(resolve_frame("tls.pdu", Some("smb"), true, false).is_err());
        assert!(resolve_frame("tls", None, true, false).is_err());
        assert!(resolve_frame("smb1.pdu", Some("tls"), true, false).is_err());
        assert!(resolve_frame("pdu", None, true, true).is_err());
        assert!(resolve_frame("tls.nope", None, true, false).is_err());
        assert!(resolve_frame("dns.stream", None, false, true).is_err());
        assert!(resolve_frame("", Some("tls"), true, false).is_err());
        assert!(resolve_frame("ftp.pdu", None, true, false).is_err());
        assert!(resolve_frame("pdu", Some("ftp"), true, false).is_err());
        // Suricata 9 knows HTTP/1 frames as `http1.*` only.
        assert!(resolve_frame("request", Some("http"), true, false).is_err());
        assert!(resolve_frame("http.response", Some("http"), true, false).is_err());
    }
}

#[cfg(test)]
mod parse_tests {
    use crate::{parse_rule, Buffer, Origin, Vars};

    fn buffers(text: &str) -> Result<Vec<Buffer>, String> {
        parse_rule(text, &Vars::default(), Origin::default())
            .map(|r| r.buffers.iter().map(|b| b.buffer.clone()).collect())
            .map_err(|e| {
                assert_eq!(e.keyword.as_deref(), Some("frame"), "{text}: {e}");
                e.to_string()
            })
    }

    #[test]
    fn frame_is_a_sticky_buffer() {
        let b =
            buffers(r#"alert tls any any -> any any (frame:pdu; content:"x"; sid:1;)"#).unwrap();
        assert_eq!(b, vec![Buffer::Named("frame:tls.pdu".into())]);
        let b = buffers(
            r#"alert tcp any any -> any any (flow:to_server; frame:smb.nbss.hdr; content:"x"; sid:1;)"#,
        )
        .unwrap();
        assert_eq!(b, vec![Buffer::Named("frame:smb.nbss.hdr".into())]);
        let b = buffers(r#"alert ssl any any -> any any (frame:tls.hdr; content:"x"; sid:1;)"#)
            .unwrap();
        assert_eq!(b, vec![Buffer::Named("frame:tls.hdr".into())]);
    }

    #[test]
    fn bad_frames_name_the_keyword() {
        for r in [
            r#"alert tcp-pkt any any -> any any (frame:tls.pdu; content:"a"; sid:1;)"#,
            r#"alert udp any any -> any any (frame:tls.pdu; content:"a"; sid:2;)"#,
            r#"alert smb any any -> any any (frame:tls.pdu; content:"a"; sid:3;)"#,
            r#"alert tcp any any -> any any (frame:tls; content:"a"; sid:4;)"#,
            r#"alert tls any any -> any any (frame:smb1.pdu; content:"a"; sid:7;)"#,
            r#"alert tls any any -> any any (frame:pdu; content:"a"; frame:hdr; content:"b"; sid:8;)"#,
            r#"alert icmp any any -> any any (frame:tls.pdu; content:"a"; sid:9;)"#,
        ] {
            assert!(buffers(r).is_err(), "{r}");
        }
    }
}
