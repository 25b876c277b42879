//! Classic BPF socket filters, compiled by libpcap.

use crate::error::CaptureError;
use crate::sys;

/// One classic BPF instruction, as `SO_ATTACH_FILTER` takes it.
pub type SockFilter = libc::sock_filter;

/// Compiles a pcap filter expression for `linktype` (a DLT value, e.g. 1
/// for Ethernet) into a program for `SO_ATTACH_FILTER`.
///
/// libpcap does the compiling (through a "dead" handle: no device is
/// opened). Every accepting `ret #k` is rewritten to `ret #snaplen`, so the
/// program also sets the capture length, as libpcap's own Linux capture
/// does. Errors: [`CaptureError::Filter`] with libpcap's message for a bad
/// expression, or when the program is longer than the kernel's 4096
/// instructions; [`CaptureError::Config`] for a zero snaplen.
///
/// Note: the kernel runs the filter on the frame after it has taken the
/// outer VLAN tag out of it, so expressions on VLAN tags (`vlan 100`) do not
/// see the tag the way they would in a pcap file.
pub fn compile_filter(
    expr: &str,
    linktype: u32,
    snaplen: u32,
) -> Result<Vec<SockFilter>, CaptureError> {
    if snaplen == 0 {
        return Err(CaptureError::Config("snaplen must be at least 1".into()));
    }
    let dlt = i32::try_from(linktype)
        .map_err(|_| CaptureError::Filter(format!("link type {linktype} out of range")))?;
    let dead = pcap::Capture::dead(pcap::Linktype(dlt)).map_err(|e| {
        CaptureError::Filter(format!("libpcap handle for link type {linktype}: {e}"))
    })?;
    let program = dead
        .compile(expr, true)
        .map_err(|e| CaptureError::Filter(format!("{expr:?}: {e}")))?;
    let mut out = Vec::with_capacity(program.get_instructions().len());
    for insn in program.get_instructions() {
        // The pcap crate exposes an instruction only through Display
        // ("code jt jf k"); parsing it keeps this code free of layout
        // assumptions about the crate's private type.
        out.push(parse_insn(&insn.to_string()).ok_or_else(|| {
            CaptureError::Filter(format!("{expr:?}: unreadable instruction {insn}"))
        })?);
    }
    finish(out, snaplen).map_err(|m| CaptureError::Filter(format!("{expr:?}: {m}")))
}

/// The program used when no expression is given: accept every packet,
/// keeping `snaplen` bytes.
pub(crate) fn accept_all(snaplen: u32) -> Vec<SockFilter> {
    vec![SockFilter {
        code: sys::BPF_RET_K,
        jt: 0,
        jf: 0,
        k: snaplen,
    }]
}

/// Caps accepting returns at `snaplen` and checks the length.
fn finish(mut prog: Vec<SockFilter>, snaplen: u32) -> Result<Vec<SockFilter>, String> {
    if prog.is_empty() {
        return Err("empty program".into());
    }
    if prog.len() > sys::BPF_MAXINSNS {
        return Err(format!(
            "program has {} instructions, the kernel takes at most {}",
            prog.len(),
            sys::BPF_MAXINSNS
        ));
    }
    for insn in &mut prog {
        if insn.code == sys::BPF_RET_K && insn.k != 0 {
            insn.k = snaplen;
        }
    }
    Ok(prog)
}

fn parse_insn(s: &str) -> Option<SockFilter> {
    let mut it = s.split_ascii_whitespace();
    let code = it.next()?.parse().ok()?;
    let jt = it.next()?.parse().ok()?;
    let jf = it.next()?.parse().ok()?;
    let k = it.next()?.parse().ok()?;
    if it.next().is_some() {
        return None;
    }
    Some(SockFilter { code, jt, jf, k })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_and_caps_returns() {
        let p = compile_filter("udp port 53", 1, 128).unwrap();
        assert!(!p.is_empty());
        let rets: Vec<u32> = p
            .iter()
            .filter(|i| i.code == sys::BPF_RET_K)
            .map(|i| i.k)
            .collect();
        assert!(rets.contains(&0) && rets.contains(&128), "{rets:?}");
        assert!(rets.iter().all(|&k| k == 0 || k == 128));
    }

    #[test]
    fn bad_expression_is_a_filter_error() {
        match compile_filter("udp port banana", 1, 65535) {
            Err(CaptureError::Filter(m)) => assert!(m.contains("banana"), "{m}"),
            other => panic!("expected Filter error, got {other:?}"),
        }
        assert!(matches!(
            compile_filter("tcp", 1, 0),
            Err(CaptureError::Config(_))
        ));
    }

    #[test]
    fn parse_instruction_text() {
        let i = parse_insn("40 0 0 12").unwrap();
        assert_eq!((i.code, i.jt, i.jf, i.k), (40, 0, 0, 12));
        assert!(parse_insn("40 0 0").is_none());
        assert!(parse_insn("40 0 0 12 5").is_none());
        assert!(parse_insn("x 0 0 12").is_none());
    }

    #[test]
    fn accept_all_returns_snaplen() {
        let p = accept_all(96);
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].code, p[0].k), (sys::BPF_RET_K, 96));
    }
}
