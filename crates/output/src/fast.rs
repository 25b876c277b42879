//! fast.log: Suricata's one-line-per-alert text format (`alert-fastlog.c`).
//!
//! ```text
//! 12/27/2021-17:39:01.666724  [**] [1:2025701:2] ET POLICY ... [**] [Classification: Potential Corporate Privacy Violation] [Priority: 1] {TCP} 192.168.1.161:59120 -> 192.168.1.46:445
//! ```
//!
//! As in Suricata: two spaces after the time, then `[Drop] ` (IPS mode) or
//! `[wDrop] ` (IDS mode) for alerts of dropping rules; `(null)` for a missing
//! classification or message; protocol names from Suricata's table, else
//! `PROTO:NNN`; ICMP and ICMPv6 print type and code where ports go; IPv6
//! addresses in Suricata's uncompressed form. Text is written as is, without
//! escaping, like Suricata.

use std::io::{self, BufWriter, Write};

use crate::alert::{write_ip, AlertEvent, IPPROTO_ICMP, IPPROTO_ICMPV6};
use crate::proto::proto_name;
use crate::time::write_fastlog_time;

/// Appends one fast.log line, with its newline, to `out`.
///
/// `ips_mode` selects `[Drop] ` over `[wDrop] ` for alerts whose rule drops.
pub fn format_fast_alert(out: &mut Vec<u8>, ev: &AlertEvent<'_>, ips_mode: bool) -> io::Result<()> {
    write_fastlog_time(out, ev.ts_secs, ev.ts_nanos)?;
    out.extend_from_slice(b"  ");
    if ev.rule_drop {
        out.extend_from_slice(if ips_mode { b"[Drop] " } else { b"[wDrop] " });
    }
    write!(
        out,
        "[**] [{}:{}:{}] {} [**] [Classification: {}] [Priority: {}] ",
        ev.gid,
        ev.signature_id,
        ev.rev,
        or_null(ev.signature),
        or_null(ev.category),
        ev.severity
    )?;
    if ev.link_only {
        // No IP layer: Suricata prints the packet's first bytes instead
        // of addresses (AlertFastLogDecoderEvent).
        out.extend_from_slice(b"[**] [Raw pkt: ");
        for b in ev.raw_pkt.unwrap_or(&[]).iter().take(32) {
            write!(out, "{b:02X} ")?;
        }
        return match ev.pcap_cnt {
            Some(n) => writeln!(out, "] [pcap file packet: {n}]"),
            None => writeln!(out, "]"),
        };
    }
    out.push(b'{');
    match proto_name(ev.proto) {
        Some(name) => out.extend_from_slice(name.as_bytes()),
        None => write!(out, "PROTO:{:03}", ev.proto)?,
    }
    let (sp, dp) = if ev.proto == IPPROTO_ICMP || ev.proto == IPPROTO_ICMPV6 {
        (
            u16::from(ev.icmp_type.unwrap_or(0)),
            u16::from(ev.icmp_code.unwrap_or(0)),
        )
    } else {
        (ev.src_port.unwrap_or(0), ev.dest_port.unwrap_or(0))
    };
    out.extend_from_slice(b"} ");
    write_ip(out, &ev.src_ip)?;
    write!(out, ":{sp} -> ")?;
    write_ip(out, &ev.dest_ip)?;
    writeln!(out, ":{dp}")
}

/// Suricata prints a NULL `msg` or class with `%s`, which glibc renders as
/// `(null)`; an empty field here stands for NULL.
fn or_null(s: &str) -> &str {
    if s.is_empty() {
        "(null)"
    } else {
        s
    }
}

/// Writes fast.log lines through a `BufWriter`.
#[derive(Debug)]
pub struct FastLogWriter<W: Write> {
    out: BufWriter<W>,
    line: Vec<u8>,
    ips_mode: bool,
}

impl<W: Write> FastLogWriter<W> {
    /// An IDS-mode writer (dropping rules print `[wDrop] `).
    pub fn new(inner: W) -> Self {
        Self::with_ips_mode(inner, false)
    }

    /// `ips_mode`: dropping rules print `[Drop] ` instead of `[wDrop] `.
    pub fn with_ips_mode(inner: W, ips_mode: bool) -> Self {
        FastLogWriter {
            out: BufWriter::with_capacity(64 * 1024, inner),
            line: Vec::with_capacity(256),
            ips_mode,
        }
    }

    pub fn write_alert(&mut self, ev: &AlertEvent<'_>) -> io::Result<()> {
        self.line.clear();
        format_fast_alert(&mut self.line, ev, self.ips_mode)?;
        self.out.write_all(&self.line)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn get_ref(&self) -> &W {
        self.out.get_ref()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}
