//! `parse_rule`: one rule's text to a [`Rule`].
//!
//! The option list is split the way Suricata splits it (a `;` ends an
//! option unless a backslash precedes it), keywords are applied in order,
//! and payload keywords are grouped per inspection buffer at the end.
//!
//! Snort 3 rules are recognised by their own syntax (inline content
//! modifiers such as `content:"x",nocase;`, `service:`, header-less
//! service rules, `http_uri;` before any content, ...); in them the
//! `http_*` names are sticky buffers rather than content modifiers.

use std::borrow::Cow;

use crate::ast::*;
use crate::error::{RuleError, RuleErrorKind as K};
use crate::keywords::{self, Kw};
use crate::values::*;
use crate::vars::Vars;

/// Parses one rule (continuation lines already joined).
pub fn parse_rule(text: &str, vars: &Vars, origin: Origin) -> Result<Rule, RuleError> {
    match parse_inner(text, vars) {
        Ok(mut r) => {
            r.origin = origin;
            Ok(r)
        }
        Err(mut e) => {
            e.origin = origin;
            if e.sid.is_none() {
                e.sid = find_sid(text);
            }
            Err(e)
        }
    }
}

/// Finds `sid:N` in a rule's text, for diagnostics of rules that fail to
/// parse.
pub(crate) fn find_sid(text: &str) -> Option<u32> {
    let b = text.as_bytes();
    for (i, _) in text.match_indices("sid") {
        let before = b[..i].iter().rev().find(|c| !c.is_ascii_whitespace());
        if !matches!(before, Some(b';') | Some(b'(')) {
            continue;
        }
        let rest = text[i + 3..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let rest = rest.trim_start().trim_start_matches('"');
        let digits: &str = &rest[..rest.bytes().take_while(|c| c.is_ascii_digit()).count()];
        if let Ok(v) = digits.parse() {
            return Some(v);
        }
    }
    None
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct RawOpt<'a> {
    pub name: &'a str,
    pub value: Option<&'a str>,
}

/// Splits the text between the parentheses into options.
pub(crate) fn split_options(s: &str) -> Result<Vec<RawOpt<'_>>, RuleError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(16);
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        let mut end = b.len();
        let mut j = i;
        while j < b.len() {
            if b[j] == b';' && (j == start || b[j - 1] != b'\\') {
                end = j;
                break;
            }
            j += 1;
        }
        let opt = &s[start..end];
        let (name, value) = match opt.find(':') {
            Some(c) => (opt[..c].trim(), Some(opt[c + 1..].trim())),
            None => (opt.trim(), None),
        };
        if name.is_empty() {
            return Err(RuleError::new(
                K::Syntax,
                format!("option without a keyword: '{opt}'"),
            ));
        }
        if !name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
        {
            return Err(RuleError::new(
                K::Syntax,
                format!("invalid keyword '{}'", truncate(name, 60)),
            ));
        }
        out.push(RawOpt { name, value });
        i = end + 1;
    }
    Ok(out)
}

fn truncate(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut e = n;
    while !s.is_char_boundary(e) {
        e -= 1;
    }
    &s[..e]
}

/// Splits a header at whitespace, keeping `[...]` groups (which may
/// contain spaces) together.
fn header_tokens(h: &str) -> Result<Vec<&str>, RuleError> {
    let mut out = Vec::with_capacity(7);
    let mut depth = 0i32;
    let mut start: Option<usize> = None;
    for (i, c) in h.char_indices() {
        match c {
            '[' => {
                depth += 1;
                start.get_or_insert(i);
            }
            ']' => {
                depth -= 1;
                if depth < 0 {
                    return Err(RuleError::new(K::Header, "unbalanced ']' in rule header"));
                }
                start.get_or_insert(i);
            }
            c if c.is_whitespace() && depth == 0 => {
                if let Some(s) = start.take() {
                    out.push(&h[s..i]);
                }
            }
            _ => {
                start.get_or_insert(i);
            }
        }
    }
    if depth != 0 {
        return Err(RuleError::new(K::Header, "unbalanced '[' in rule header"));
    }
    if let Some(s) = start {
        out.push(&h[s..]);
    }
    Ok(out)
}

fn parse_action(s: &str) -> Result<Action, RuleError> {
    Ok(match s {
        "alert" => Action::Alert,
        "pass" | "accept" => Action::Pass,
        "drop" | "sdrop" | "block" => Action::Drop,
        "reject" | "react" => Action::Reject,
        "rejectsrc" => Action::RejectSrc,
        "rejectdst" => Action::RejectDst,
        "rejectboth" => Action::RejectBoth,
        "log" => Action::Log,
        "config" => Action::Config,
        "rewrite" => Action::Alert,
        _ => {
            return Err(RuleError::new(
                K::Header,
                format!("unknown action '{}'", truncate(s, 40)),
            ))
        }
    })
}

fn parse_proto(s: &str) -> Result<Proto, RuleError> {
    let l = s.to_ascii_lowercase();
    Ok(match l.as_str() {
        "ip" | "ipv4" | "ipv6" | "ip4" | "ip6" => Proto::Ip,
        "tcp" => Proto::Tcp,
        "udp" => Proto::Udp,
        "icmp" | "icmpv4" => Proto::Icmp,
        "icmpv6" | "ipv6-icmp" | "icmp6" => Proto::Icmpv6,
        "sctp" => Proto::Sctp,
        "igmp" => Proto::Igmp,
        "pkthdr" => Proto::PktHdr,
        "tcp-pkt" | "tcp-stream" => Proto::App(l),
        p if keywords::APP_PROTOS.contains(&p) => Proto::App(l),
        _ => {
            return Err(RuleError::new(
                K::Header,
                format!("unknown protocol '{}'", truncate(s, 40)),
            ))
        }
    })
}

fn parse_header(h: &str, vars: &Vars) -> Result<(Action, Header), RuleError> {
    let toks = header_tokens(h)?;
    if toks.len() < 2 {
        return Err(RuleError::new(
            K::Header,
            "rule header needs an action and a protocol",
        ));
    }
    let action = parse_action(toks[0])?;
    let proto = parse_proto(toks[1])?;
    match toks.len() {
        2 => Ok((
            action,
            Header {
                proto,
                src: AddrSpec::any(),
                src_ports: PortSpec::any(),
                direction: Direction::Both,
                dst: AddrSpec::any(),
                dst_ports: PortSpec::any(),
            },
        )),
        7 => {
            let direction = match toks[4] {
                "->" => Direction::Forward,
                "<>" => Direction::Both,
                "<-" => {
                    return Err(RuleError::new(
                        K::Header,
                        "direction '<-' is not supported, use '->' and swap the sides",
                    ))
                }
                d => {
                    return Err(RuleError::new(
                        K::Header,
                        format!("invalid direction '{}'", truncate(d, 40)),
                    ))
                }
            };
            let src = vars.resolve_address(toks[2])?;
            let src_ports = vars.resolve_port(toks[3])?;
            let dst = vars.resolve_address(toks[5])?;
            let dst_ports = vars.resolve_port(toks[6])?;
            Ok((
                action,
                Header {
                    proto,
                    src,
                    src_ports,
                    direction,
                    dst,
                    dst_ports,
                },
            ))
        }
        n => Err(RuleError::new(
            K::Header,
            format!(
                "rule header has {n} fields, expected 7 (action proto src sport dir dst dport)"
            ),
        )),
    }
}

fn parse_inner(text: &str, vars: &Vars) -> Result<Rule, RuleError> {
    let t = text.trim();
    let Some(open) = t.find('(') else {
        return Err(RuleError::new(
            K::Syntax,
            "rule has no option list '( ... )'",
        ));
    };
    let Some(body) = t[open + 1..].trim_end().strip_suffix(')') else {
        return Err(RuleError::new(K::Syntax, "rule does not end with ')'"));
    };
    let (action, header) = parse_header(&t[..open], vars)?;
    let short_header = header_tokens(&t[..open])
        .map(|v| v.len() == 2)
        .unwrap_or(false);
    let opts = split_options(body)?;
    let snort3 = short_header || detect_snort3(&opts);
    let mut p = Parser::new(snort3);
    p.frame_ctx = frame_context(&header.proto);
    for o in &opts {
        let name: Cow<str> = if o.name.bytes().any(|c| c.is_ascii_uppercase()) {
            Cow::Owned(o.name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(o.name)
        };
        p.option(&name, o.value).map_err(|mut e| {
            if e.keyword.is_none() {
                e.keyword = Some(name.to_string());
            }
            e
        })?;
        p.note_match(&name);
    }
    let mut rule = p.finish(action, header)?;
    if rule
        .conditions
        .iter()
        .any(|c| matches!(c, Condition::TcpSession(_)))
        && !matches!(rule.header.proto.transport(), Proto::Tcp | Proto::Ip)
    {
        return Err(
            RuleError::new(K::Validation, "tcp.session requires a TCP rule")
                .with_keyword("tcp.session"),
        );
    }
    rule.text = t.to_string();
    Ok(rule)
}

/// Whether a content value carries Snort 3 inline modifiers
/// (`"abc",nocase,depth 4`).
fn content_has_inline(v: &str) -> bool {
    matches!(split_quoted(v), Ok((_, _, rest)) if rest.starts_with(','))
}

fn detect_snort3(opts: &[RawOpt<'_>]) -> bool {
    let mut seen_content = false;
    for o in opts {
        match o.name {
            "service" | "rem" | "bufferlen" | "raw_data" | "http_raw_body" | "js_data"
            | "vba_data" | "ber_data" | "ber_skip" | "file_meta" | "http_param"
            | "http_true_ip" | "http_raw_request" | "http_raw_status" | "http_version"
            | "http_trailer" | "http_raw_trailer" | "http_raw_cookie" => return true,
            "content" | "uricontent" => {
                seen_content = true;
                if o.value.is_some_and(content_has_inline) {
                    return true;
                }
            }
            n => {
                if !seen_content && matches!(keywords::lookup(n), Some(Kw::Modifier(_))) {
                    return true;
                }
            }
        }
    }
    false
}

/// Splits `[!]"quoted"rest` into (negated, inner, rest). Unquoted values
/// are returned whole as `inner`.
fn split_quoted(v: &str) -> Result<(bool, &str, &str), String> {
    let t = v.trim();
    let (neg, t) = match t.strip_prefix('!') {
        Some(r) => (true, r.trim_start()),
        None => (false, t),
    };
    if !t.starts_with('"') {
        return Ok((neg, t, ""));
    }
    let b = t.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Ok((neg, &t[1..i], t[i + 1..].trim())),
            _ => i += 1,
        }
    }
    Err("unterminated quoted string".into())
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes a content string: `|41 42|` hex, `\"` `\;` `\:` `\\` escapes.
pub(crate) fn decode_content(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut bin = false;
    let mut hi: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'|' {
            if bin && hi.is_some() {
                return Err("incomplete hex byte in content".into());
            }
            bin = !bin;
        } else if bin {
            if let Some(v) = hex_val(c) {
                match hi.take() {
                    Some(h) => out.push(h << 4 | v),
                    None => hi = Some(v),
                }
            } else if c != b' ' && c != b',' && c != b'\t' {
                return Err(format!("invalid hex character '{}' in content", c as char));
            }
        } else if c == b'\\' {
            match b.get(i + 1) {
                Some(&n) if matches!(n, b'"' | b';' | b':' | b'\\') => {
                    out.push(n);
                    i += 1;
                }
                Some(&n) => {
                    return Err(format!(
                        "'\\{}' is not a valid escape in content",
                        n as char
                    ))
                }
                None => return Err("content ends with a lone backslash".into()),
            }
        } else if c == b'"' {
            return Err("unescaped double quote in content".into());
        } else {
            out.push(c);
        }
        i += 1;
    }
    if bin {
        return Err("unterminated hex section '|' in content".into());
    }
    Ok(out)
}

struct Slot {
    buffer: Buffer,
    /// Transforms of the sticky buffer when the item was added (empty for
    /// other buffers).
    xf: Vec<TransformSpec>,
    item: PayloadItem,
    /// Instance of a multi-buffer the item is on (each use of such a
    /// sticky keyword starts a new one); 0 elsewhere.
    inst: u32,
}

/// Multi-buffers whose every use in a rule is an instance of its own,
/// matched on any header independently (Suricata 7's multi-buffer
/// instances: `http.request_header; content:"a"; http.request_header;
/// content:"b"` matches two different headers).
const MULTI_INSTANCE: &[&str] = &[
    "http.request_header",
    "http.response_header",
    "http2.header",
    "http2.header_name",
];

struct Parser {
    snort3: bool,
    items: Vec<Slot>,
    /// The active sticky buffer; `None` means the packet (no sticky).
    sticky: Option<Buffer>,
    /// The multi-buffer instance of the active sticky buffer.
    sticky_inst: u32,
    /// Multi-buffer instances started so far.
    insts: u32,
    /// Transforms given after the active sticky buffer, in order.
    sticky_xf: Vec<TransformSpec>,
    conditions: Vec<Condition>,
    not_eval: Vec<String>,
    byte_vars: Vec<String>,
    fast_pattern_used: bool,
    msg: Option<String>,
    sid: Option<u32>,
    gid: Option<u32>,
    rev: Option<u32>,
    classtype: Option<String>,
    priority: Option<u8>,
    references: Vec<(String, String)>,
    metadata: Vec<(String, String)>,
    noalert: bool,
    force_alert: bool,
    bypass: bool,
    nfq_mark: Option<(u32, u32)>,
    disable_tx_log: bool,
    target: Option<String>,
    tag: Option<TagSpec>,
    flow_seen: bool,
    requires_unmet: Option<String>,
    /// Index in `items` of the rule's `base64_decode`.
    base64_decode: Option<usize>,
    /// The last keyword that adds a match (Suricata's last SigMatch,
    /// `DetectGetLastSM`): what `prefilter` applies to.
    last_match: Option<String>,
    /// For `frame`: the header's application protocol and whether the
    /// header admits TCP and UDP.
    frame_ctx: (Option<String>, bool, bool),
    /// The `frame` the rule inspects (one per rule).
    frame: Option<String>,
}

/// What `frame` needs of the rule header: its application protocol (for
/// the short form) and whether it admits TCP / UDP.
fn frame_context(proto: &Proto) -> (Option<String>, bool, bool) {
    match proto {
        Proto::Ip | Proto::PktHdr => (None, true, true),
        Proto::Tcp => (None, true, false),
        Proto::Udp => (None, false, true),
        Proto::App(n) if n == "tcp-stream" => (None, true, false),
        // Suricata rejects frames on packet-only TCP rules.
        Proto::App(n) if n == "tcp-pkt" => (None, false, false),
        Proto::App(n) => {
            let (tcp, udp) = match n.as_str() {
                "dns" | "sip" | "dcerpc" | "krb5" | "ldap" | "nfs" | "llmnr" => (true, true),
                "dhcp" | "snmp" | "ike" | "ikev2" | "mdns" | "tftp" | "ntp" => (false, true),
                _ => (true, false),
            };
            (Some(n.clone()), tcp, udp)
        }
        _ => (None, false, false),
    }
}

fn err(kind: K, msg: impl Into<String>) -> RuleError {
    RuleError::new(kind, msg)
}

fn inval(msg: impl Into<String>) -> RuleError {
    RuleError::new(K::InvalidValue, msg)
}

/// `nfq_set_mark:<mark>/<mask>`: two 32-bit numbers, decimal, `0x` hex or
/// `0` octal each (C's strtoul base 0, as Suricata's DetectMarkParse);
/// the mask is required.
pub(crate) fn nfq_set_mark(value: &str) -> Result<(u32, u32), RuleError> {
    fn number(s: &str, what: &str) -> Result<u32, RuleError> {
        let s = s.trim();
        let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))
        {
            (h, 16)
        } else if s.len() > 1 && s.starts_with('0') {
            (&s[1..], 8)
        } else {
            (s, 10)
        };
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return Err(inval(format!(
                "nfq_set_mark: invalid {what} '{}' (a 32-bit number: decimal or 0x hex)",
                truncate(s, 40)
            )));
        }
        u32::from_str_radix(digits, radix).map_err(|_| {
            inval(format!(
                "nfq_set_mark: {what} '{}' out of range (32 bits)",
                truncate(s, 40)
            ))
        })
    }
    let (mark, mask) = value
        .split_once('/')
        .ok_or_else(|| inval("nfq_set_mark needs <mark>/<mask>"))?;
    Ok((number(mark, "mark")?, number(mask, "mask")?))
}

/// Longest dataset name (Suricata's DATASET_NAME_MAX_LEN).
const DATASET_NAME_MAX: usize = 63;

fn dataset_name(p: Option<&str>) -> Result<String, RuleError> {
    let Some(n) = p else {
        return Err(inval("missing set name"));
    };
    if n.bytes().any(|b| b.is_ascii_whitespace()) {
        return Err(inval(format!(
            "spaces not allowed in set names ('{}')",
            truncate(n, 40)
        )));
    }
    if n.len() > DATASET_NAME_MAX {
        return Err(inval(format!(
            "set name '{}...' longer than {DATASET_NAME_MAX} bytes",
            truncate(n, 40)
        )));
    }
    Ok(n.to_string())
}

/// One `key value` option of `dataset` (`full`) or `datarep`. Returns
/// true for Suricata 8's JSON options (`format json`...), not evaluated.
fn dataset_option(set: &mut DatasetDecl, p: &str, full: bool) -> Result<bool, RuleError> {
    let (key, val) = match p.split_once(char::is_whitespace) {
        Some((k, v)) => (k, v.trim()),
        None if full && p == "remove_key" => return Ok(true),
        None => return Err(inval(format!("option '{}' needs a value", truncate(p, 40)))),
    };
    let dup = |what: &str| inval(format!("'{what}' can only appear once"));
    match key {
        "type" => {
            if set.ty.is_some() {
                return Err(dup("type"));
            }
            set.ty = Some(DatasetType::parse(val).ok_or_else(|| {
                inval(format!(
                    "bad type '{}' (string, md5, sha256, ipv4 or ip)",
                    truncate(val, 20)
                ))
            })?);
        }
        "load" | "save" if set.state => {
            return Err(inval("'state' cannot be mixed with 'load' or 'save'"));
        }
        "load" => {
            if set.load.is_some() {
                return Err(dup("load"));
            }
            set.load = Some(val.to_string());
        }
        "save" if full => {
            if set.save.is_some() {
                return Err(dup("save"));
            }
            set.save = Some(val.to_string());
        }
        "state" if full => {
            if set.load.is_some() || set.save.is_some() {
                return Err(inval("'state' cannot be mixed with 'load' or 'save'"));
            }
            set.state = true;
            set.load = Some(val.to_string());
            set.save = Some(val.to_string());
        }
        "memcap" => {
            set.memcap = Some(parse_size(val).map_err(|e| inval(format!("memcap: {e}")))?);
        }
        "hashsize" => {
            set.hashsize = Some(
                parse_size(val)
                    .ok()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| inval(format!("hashsize: invalid '{}'", truncate(val, 20))))?,
            );
        }
        "format" if full => {
            return match val {
                "csv" => Ok(false),
                "json" | "jsonline" => Ok(true),
                _ => Err(inval(format!(
                    "format: '{}' is not csv, json or jsonline",
                    truncate(val, 20)
                ))),
            }
        }
        "enrichment_key" | "value_key" | "array_key" if full => return Ok(true),
        _ => return Err(inval(format!("unknown option '{}'", truncate(key, 40)))),
    }
    Ok(false)
}

fn need<'a>(name: &str, v: Option<&'a str>) -> Result<&'a str, RuleError> {
    match v {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(inval(format!("'{name}' needs a value"))),
    }
}

fn no_value(name: &str, v: Option<&str>) -> Result<(), RuleError> {
    match v {
        Some(s) if !s.is_empty() => Err(inval(format!("'{name}' takes no value"))),
        _ => Ok(()),
    }
}

/// `rpc:<program>[, <version|*>[, <procedure|*>]]` (Suricata's
/// detect-rpc.c: the program is required and numeric, `*` skips the
/// version or procedure check).
pub(crate) fn parse_rpc(v: &str) -> Result<RpcMatch, String> {
    let t = strip_quotes(v);
    let parts: Vec<&str> = t.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "rpc takes at most 3 values, got '{}'",
            truncate(t, 60)
        ));
    }
    let num = |what: &str, s: &str| -> Result<u32, String> {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return Err(format!("invalid rpc {what} '{}'", truncate(s, 40)));
        }
        s.parse::<u32>()
            .map_err(|_| format!("rpc {what} '{}' out of range", truncate(s, 40)))
    };
    let opt = |what: &str, s: Option<&&str>| -> Result<Option<u32>, String> {
        match s {
            None => Ok(None),
            Some(&"*") => Ok(None),
            Some(s) => num(what, s).map(Some),
        }
    };
    Ok(RpcMatch {
        program: num("program", parts[0])?,
        version: opt("version", parts.get(1))?,
        procedure: opt("procedure", parts.get(2))?,
    })
}

/// `iprep:<any|src|dst|both>,<category>,<op>,<score>` with op one of
/// `<`, `<=`, `>`, `>=`, `=`, `!=` (or `!`, as Suricata's integer
/// modes) and a score 0..255, or
/// `iprep:<side>,<category>,isset|isnotset` (Suricata 8). The category
/// name is checked against the loaded categories when the rule is
/// compiled.
/// Resolves an `app-layer-state` name against the rule header's
/// protocol, as Suricata does (the rule fails to load when the protocol
/// has no such state, or no named states at all).
fn resolve_app_state(st: &mut crate::ast::AppLayerState, proto: &Proto) -> Result<(), String> {
    let Proto::App(p) = proto else {
        return Err(format!(
            "app-layer-state needs an application protocol in the rule header ({})",
            crate::ast::app_state_protocols()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let p = if p == "ssl" { "tls" } else { p.as_str() };
    if !crate::ast::app_state_protocols().any(|x| x == p) {
        return Err(format!(
            "app-layer-state: protocol '{}' has no named progress states ({}{})",
            truncate(p, 20),
            crate::ast::app_state_protocols()
                .collect::<Vec<_>>()
                .join(", "),
            if p == "http" {
                "; 'http' covers HTTP/1 and HTTP/2, name http1"
            } else {
                ""
            }
        ));
    }
    let Some((to_server, progress)) = crate::ast::app_state_id(p, &st.name) else {
        return Err(format!(
            "app-layer-state: '{}' is not a {p} state",
            truncate(&st.name, 40)
        ));
    };
    st.proto = p.to_string();
    st.to_server = to_server;
    st.progress = progress;
    Ok(())
}

/// `app-layer-state:[<|>]<state>`: the operator and the state name
/// (resolved against the header's protocol when the rule is finished).
/// Suricata has no `<=` / `>=` and no space after the operator.
pub(crate) fn parse_app_layer_state(v: &str) -> Result<(AppStateOp, String), String> {
    let t = v.trim();
    let (op, name) = if let Some(r) = t.strip_prefix('<') {
        (AppStateOp::Lt, r)
    } else if let Some(r) = t.strip_prefix('>') {
        (AppStateOp::Gt, r)
    } else {
        (AppStateOp::AtLeast, t)
    };
    if name.starts_with(['=', '<', '>']) {
        return Err(format!(
            "invalid app-layer-state operator in '{}' (only < and > are allowed)",
            truncate(t, 40)
        ));
    }
    if name.is_empty() {
        return Err("app-layer-state needs a state name".into());
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
    {
        return Err(format!(
            "invalid app-layer-state name '{}'",
            truncate(name, 40)
        ));
    }
    Ok((op, name.to_string()))
}

/// `geoip:[<any|src|dst|both>,][!]<cc>[,<cc>...]` (Suricata's
/// detect-geoip.c): the side defaults to `any`; a `!` on any country
/// negates the whole list; each code is cut to its first 2 characters;
/// at most [`crate::ast::GEOIP_MAX_COUNTRIES`] codes. Unlike Suricata, a
/// side name must be written in full (Suricata also takes a prefix such
/// as `s`), empty codes and codes with spaces or non-ASCII characters
/// are errors, and a lone side name (`geoip:src`, which Suricata reads
/// as the country `sr`) is an error.
pub(crate) fn parse_geoip(v: &str) -> Result<crate::ast::GeoIp, String> {
    let t = strip_quotes(v).trim();
    if t.is_empty() {
        return Err("geoip needs '[<side>,]<country>[,<country>...]'".into());
    }
    let parts: Vec<&str> = t.split(',').map(str::trim).collect();
    let side = match parts[0] {
        "any" => Some(IpRepSide::Any),
        "src" => Some(IpRepSide::Src),
        "dst" => Some(IpRepSide::Dst),
        "both" => Some(IpRepSide::Both),
        _ => None,
    };
    let codes = if side.is_some() {
        &parts[1..]
    } else {
        &parts[..]
    };
    if codes.is_empty() {
        return Err(format!("geoip needs a country code after '{}'", parts[0]));
    }
    if codes.len() > crate::ast::GEOIP_MAX_COUNTRIES {
        return Err(format!(
            "geoip has too many countries ({}, at most {})",
            codes.len(),
            crate::ast::GEOIP_MAX_COUNTRIES
        ));
    }
    let mut negated = false;
    let mut countries = Vec::with_capacity(codes.len());
    for c in codes {
        let c = match c.strip_prefix('!') {
            Some(r) => {
                negated = true;
                r
            }
            None => c,
        };
        if c.is_empty() {
            return Err("geoip: empty country code".into());
        }
        if !c.bytes().all(|b| b.is_ascii_graphic() && b != b'!') {
            return Err(format!("invalid geoip country code '{}'", truncate(c, 40)));
        }
        countries.push(c[..c.len().min(2)].to_string());
    }
    Ok(crate::ast::GeoIp {
        side: side.unwrap_or(IpRepSide::Any),
        negated,
        countries,
    })
}

pub(crate) fn parse_iprep(v: &str) -> Result<IpRep, String> {
    let t = strip_quotes(v);
    let parts: Vec<&str> = t.split(',').map(str::trim).collect();
    if parts.len() < 3 {
        return Err("iprep needs '<side>,<category>,<op>,<score>'".into());
    }
    if parts.len() > 4 {
        return Err("iprep has too many values".into());
    }
    let side = match parts[0] {
        "any" => IpRepSide::Any,
        "src" => IpRepSide::Src,
        "dst" => IpRepSide::Dst,
        "both" => IpRepSide::Both,
        s => {
            return Err(format!(
                "invalid iprep side '{}' (any, src, dst or both)",
                truncate(s, 40)
            ))
        }
    };
    let category = parts[1];
    if category.is_empty() {
        return Err("iprep needs a category".into());
    }
    let (op, value) = if parts.len() == 3 {
        match parts[2] {
            "isset" => (IpRepOp::IsSet, 0),
            "isnotset" => (IpRepOp::IsNotSet, 0),
            s => {
                return Err(format!(
                    "invalid iprep operator '{}' (isset or isnotset without a score)",
                    truncate(s, 40)
                ))
            }
        }
    } else {
        let op = match parts[2] {
            "<" => IpRepOp::Lt,
            "<=" => IpRepOp::Le,
            ">" => IpRepOp::Gt,
            ">=" => IpRepOp::Ge,
            "=" => IpRepOp::Eq,
            "!=" | "!" => IpRepOp::Ne,
            s => {
                return Err(format!(
                    "invalid iprep operator '{}' (<, <=, >, >=, =, !=)",
                    truncate(s, 40)
                ))
            }
        };
        let s = parts[3];
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return Err(format!("invalid iprep score '{}'", truncate(s, 40)));
        }
        let value = s
            .parse::<u8>()
            .map_err(|_| format!("iprep score '{}' out of range (0..255)", truncate(s, 40)))?;
        (op, value)
    };
    Ok(IpRep {
        side,
        category: category.to_string(),
        op,
        value,
    })
}

impl Parser {
    fn new(snort3: bool) -> Self {
        Parser {
            snort3,
            items: Vec::with_capacity(8),
            sticky: None,
            sticky_inst: 0,
            insts: 0,
            sticky_xf: Vec::new(),
            conditions: Vec::new(),
            not_eval: Vec::new(),
            byte_vars: Vec::new(),
            fast_pattern_used: false,
            msg: None,
            sid: None,
            gid: None,
            rev: None,
            classtype: None,
            priority: None,
            references: Vec::new(),
            metadata: Vec::new(),
            noalert: false,
            force_alert: false,
            bypass: false,
            nfq_mark: None,
            disable_tx_log: false,
            target: None,
            tag: None,
            flow_seen: false,
            requires_unmet: None,
            last_match: None,
            base64_decode: None,
            frame_ctx: (None, false, false),
            frame: None,
        }
    }

    fn note(&mut self, name: &str) {
        if !self.not_eval.iter().any(|n| n == name) {
            self.not_eval.push(name.to_string());
        }
    }

    fn note_buffer(&mut self, b: &Buffer) {
        if let Buffer::Named(n) = b {
            if !self.not_eval.iter().any(|x| x == n) {
                self.not_eval.push(n.clone());
            }
        }
    }

    /// Adds a payload item; items on the active sticky buffer carry its
    /// transforms.
    fn push_slot(&mut self, mut slot: Slot) {
        if self.sticky.as_ref() == Some(&slot.buffer) {
            slot.xf = self.sticky_xf.clone();
            slot.inst = self.sticky_inst;
        }
        self.items.push(slot);
    }

    fn cur_buffer(&self) -> Buffer {
        self.sticky.clone().unwrap_or(Buffer::Packet)
    }

    /// Buffer for byte_*/isdataat: the sticky buffer, else the buffer of
    /// the previous payload keyword when relative, else the packet.
    fn aux_buffer(&mut self, relative: bool, dce: bool) -> Buffer {
        if let Some(s) = &self.sticky {
            return s.clone();
        }
        if dce {
            let b = Buffer::Named("dcerpc.stub_data".into());
            self.note_buffer(&b);
            return b;
        }
        if relative {
            if let Some(s) = self
                .items
                .iter()
                .rev()
                .find(|s| !matches!(s.item, PayloadItem::Bsize(_)))
            {
                return s.buffer.clone();
            }
        }
        Buffer::Packet
    }

    /// Records `name` as the last match keyword unless it adds no
    /// match of its own: rule metadata, content modifiers, sticky
    /// buffers and transforms (Suricata creates no SigMatch for them).
    fn note_match(&mut self, name: &str) {
        const NO_MATCH: &[&str] = &[
            "msg",
            "sid",
            "rev",
            "gid",
            "classtype",
            "priority",
            "reference",
            "metadata",
            "noalert",
            "alert",
            "target",
            "requires",
            "prefilter",
            "file_data",
            "base64_data",
            "pkt_data",
            "nocase",
            "rawbytes",
            "startswith",
            "endswith",
            "fast_pattern",
            "depth",
            "offset",
            "distance",
            "within",
        ];
        if NO_MATCH.contains(&name) {
            return;
        }
        if let Some(kw) = keywords::lookup(name) {
            match kw {
                // A content modifier moves the content: still the content.
                Kw::Modifier(_) => return,
                Kw::Sticky(_) | Kw::Transform(_) | Kw::Info => return,
                Kw::Other(_) => {}
            }
        }
        let canon = match name {
            "uricontent" => "content",
            "ack" => "tcp.ack",
            "seq" => "tcp.seq",
            "flags" => "tcp.flags",
            "window" => "tcp.window",
            n => n,
        };
        self.last_match = Some(canon.to_string());
    }

    /// `prefilter` (Suricata's detect-prefilter.c): no value; applies to
    /// the preceding match keyword. On a content it acts as
    /// `fast_pattern` without options (Vigil makes it the rule's fast
    /// pattern unless one was chosen already); otherwise the keyword must
    /// be one Suricata can prefilter on. Given twice is accepted, as the
    /// Suricata 9 peer does (`flags:S; prefilter; ttl:64; prefilter;`).
    fn prefilter(&mut self, value: Option<&str>) -> Result<(), RuleError> {
        if value.is_some_and(|v| !v.trim().is_empty()) {
            return Err(err(K::InvalidValue, "prefilter takes no value"));
        }
        let Some(last) = self.last_match.clone() else {
            return Err(err(K::Validation, "prefilter needs a preceding match"));
        };
        if last == "content" {
            let Some(idx) = self
                .items
                .iter()
                .rposition(|s| matches!(s.item, PayloadItem::Content(_)))
            else {
                return Err(err(K::Validation, "prefilter needs a preceding match"));
            };
            let fp_used = self.fast_pattern_used;
            let Slot {
                item: PayloadItem::Content(c),
                ..
            } = &mut self.items[idx]
            else {
                unreachable!("rposition found a content")
            };
            let relative = c.distance.is_some()
                || c.within.is_some()
                || c.offset.is_some()
                || c.depth.is_some();
            if c.negated && relative {
                return Err(err(
                    K::Validation,
                    "prefilter cannot be used on a negated content with relative or absolute modifiers",
                ));
            }
            if c.fast_pattern.is_none() && !fp_used {
                c.fast_pattern = Some(FastPattern {
                    only: false,
                    chop: None,
                });
                self.fast_pattern_used = true;
            }
            return Ok(());
        }
        if !keywords::PREFILTER_CAPABLE.contains(&last.as_str()) {
            return Err(err(
                K::Validation,
                format!("prefilter is not supported for {}", truncate(&last, 40)),
            ));
        }
        Ok(())
    }

    fn last_content(&self) -> Option<usize> {
        match &self.sticky {
            Some(b) => self
                .items
                .iter()
                .rposition(|s| matches!(s.item, PayloadItem::Content(_)) && s.buffer == *b),
            None => self
                .items
                .iter()
                .rposition(|s| matches!(s.item, PayloadItem::Content(_))),
        }
    }

    fn check_var(&self, name: &str) -> Result<(), RuleError> {
        if self.byte_vars.iter().any(|v| v == name) {
            Ok(())
        } else {
            Err(inval(format!(
                "unknown variable '{name}' (not set by a preceding byte_extract or byte_math)"
            )))
        }
    }

    fn num_or_var(&self, s: &str) -> Result<NumOrVar, RuleError> {
        let t = strip_quotes(s);
        if t.bytes()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == b'-' || c == b'+')
        {
            let v = parse_i64(t).map_err(inval)?;
            let v = u32::try_from(v).map_err(|_| inval(format!("value {v} out of range")))?;
            Ok(NumOrVar::Num(v))
        } else {
            self.check_var(t)?;
            Ok(NumOrVar::Var(t.to_string()))
        }
    }

    fn num_or_var_signed(&self, s: &str) -> Result<NumOrVarSigned, RuleError> {
        let t = strip_quotes(s);
        if t.bytes()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == b'-' || c == b'+')
        {
            Ok(NumOrVarSigned::Num(parse_i32(t).map_err(inval)?))
        } else {
            self.check_var(t)?;
            Ok(NumOrVarSigned::Var(t.to_string()))
        }
    }

    fn num_or_var64(&self, s: &str) -> Result<NumOrVar64, RuleError> {
        let t = strip_quotes(s);
        if t.bytes().next().is_some_and(|c| c.is_ascii_digit()) {
            Ok(NumOrVar64::Num(parse_u64(t).map_err(inval)?))
        } else {
            self.check_var(t)?;
            Ok(NumOrVar64::Var(t.to_string()))
        }
    }

    /// A byte count, or a byte_extract/byte_math variable holding one.
    fn nbytes_or_var(&self, s: &str) -> Result<(u8, Option<String>), RuleError> {
        let t = strip_quotes(s);
        if t.bytes().next().is_some_and(|c| c.is_ascii_digit()) {
            Ok((parse_uint_max(t, 255).map_err(inval)? as u8, None))
        } else {
            self.check_var(t)?;
            Ok((0, Some(t.to_string())))
        }
    }

    fn option(&mut self, name: &str, value: Option<&str>) -> Result<(), RuleError> {
        match name {
            "msg" => {
                if self.msg.is_some() {
                    return Err(err(K::Validation, "duplicate 'msg'"));
                }
                let v = value.unwrap_or("");
                self.msg = Some(unescape(strip_quotes(v)));
            }
            "sid" => {
                if self.sid.is_some() {
                    return Err(err(K::Validation, "duplicate 'sid'"));
                }
                let v = parse_u32(need(name, value)?).map_err(inval)?;
                if v == 0 {
                    return Err(inval("sid 0 is not valid"));
                }
                self.sid = Some(v);
            }
            "rev" => {
                if self.rev.is_some() {
                    return Err(err(K::Validation, "duplicate 'rev'"));
                }
                self.rev = Some(parse_u32(need(name, value)?).map_err(inval)?);
            }
            "gid" => {
                if self.gid.is_some() {
                    return Err(err(K::Validation, "duplicate 'gid'"));
                }
                self.gid = Some(parse_u32(need(name, value)?).map_err(inval)?);
            }
            "classtype" => {
                if self.classtype.is_some() {
                    return Err(err(K::Validation, "duplicate 'classtype'"));
                }
                let v = strip_quotes(need(name, value)?);
                if !v
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
                {
                    return Err(inval(format!("invalid classtype '{v}'")));
                }
                self.classtype = Some(v.to_string());
            }
            "priority" => {
                let v = parse_uint_max(need(name, value)?, 255).map_err(inval)?;
                if v == 0 {
                    return Err(inval("priority must be 1..255"));
                }
                self.priority = Some(v as u8);
            }
            "reference" => {
                let v = need(name, value)?;
                let (t, val) = v
                    .split_once(',')
                    .ok_or_else(|| inval("reference needs 'type,value'"))?;
                let (t, val) = (strip_quotes(t), strip_quotes(val));
                if t.is_empty() || val.is_empty() {
                    return Err(inval("reference needs 'type,value'"));
                }
                self.references.push((t.to_string(), val.to_string()));
            }
            "metadata" => {
                let v = need(name, value)?;
                for part in split_commas(v) {
                    if part.is_empty() {
                        continue;
                    }
                    let (k, val) = match part.split_once(char::is_whitespace) {
                        Some((k, val)) => (k, val.trim()),
                        None => (part, ""),
                    };
                    self.metadata.push((k.to_string(), val.to_string()));
                }
            }
            "target" => {
                let v = strip_quotes(need(name, value)?);
                if v != "src_ip" && v != "dest_ip" {
                    return Err(inval("target must be 'src_ip' or 'dest_ip'"));
                }
                self.target = Some(v.to_string());
            }
            "alert" => {
                no_value(name, value)?;
                self.force_alert = true;
            }
            "noalert" => {
                no_value(name, value)?;
                self.noalert = true;
            }
            "bypass" => {
                // Post-match: once the rule matches, the rest of the flow
                // is accepted without inspection.
                no_value(name, value)?;
                self.bypass = true;
            }
            "nfq_set_mark" => {
                // Post-match, as Suricata: the last one of a rule counts.
                self.nfq_mark = Some(nfq_set_mark(need(name, value)?)?);
            }
            "config" => self.config(need(name, value)?)?,
            "prefilter" => self.prefilter(value)?,
            "frame" => self.frame(need(name, value)?)?,
            "content" => self.content(need(name, value)?, None)?,
            "uricontent" => self.content(need(name, value)?, Some("http.uri"))?,
            "nocase" | "rawbytes" | "startswith" | "endswith" | "fast_pattern" | "depth"
            | "offset" | "distance" | "within" => {
                let idx = self.last_content().ok_or_else(|| {
                    err(
                        K::Validation,
                        format!("'{name}' needs a preceding content in the same buffer"),
                    )
                })?;
                self.content_modifier(idx, name, value)?;
            }
            "replace" => self.replace(need(name, value)?)?,
            "pcre" => self.pcre(need(name, value)?)?,
            "byte_test" => self.byte_test(need(name, value)?)?,
            "byte_jump" => self.byte_jump(need(name, value)?)?,
            "byte_extract" => self.byte_extract(need(name, value)?)?,
            "byte_math" => self.byte_math(need(name, value)?)?,
            "isdataat" => self.isdataat(need(name, value)?)?,
            "bsize" => {
                let Some(b) = self.sticky.clone() else {
                    return Err(err(K::Validation, "'bsize' needs a sticky buffer"));
                };
                let c = parse_uint_cmp(need(name, value)?, u64::MAX).map_err(inval)?;
                self.push_slot(Slot {
                    inst: 0,
                    xf: Vec::new(),
                    buffer: b,
                    item: PayloadItem::Bsize(c),
                });
            }
            "bufferlen" => self.bufferlen(need(name, value)?)?,
            "entropy" => {
                let e = parse_entropy(need(name, value)?).map_err(inval)?;
                let buffer = self.cur_buffer();
                self.push_slot(Slot {
                    inst: 0,
                    xf: Vec::new(),
                    buffer,
                    item: PayloadItem::Entropy(e),
                });
            }
            "asn1" => {
                let a = parse_asn1(need(name, value)?).map_err(inval)?;
                let buffer = self.cur_buffer();
                self.push_slot(Slot {
                    inst: 0,
                    xf: Vec::new(),
                    buffer,
                    item: PayloadItem::Asn1(a),
                });
            }
            "base64_decode" => self.base64_decode(value)?,
            "base64_data" => {
                no_value(name, value)?;
                if self.base64_decode.is_none() {
                    return Err(err(
                        K::Validation,
                        "'base64_data' needs a preceding base64_decode",
                    ));
                }
                self.sticky = Some(Buffer::Named("base64_data".into()));
                self.sticky_xf.clear();
            }
            // Suricata's legacy file keywords: `filename:"x"` is
            // `file.name; content:"x"; nocase;`, `fileext:"x"` is
            // `file.name; content:".x"; endswith; nocase;`.
            "filename" | "fileext" => {
                let v = need(name, value)?;
                self.content(v, Some("file.name"))?;
                if let Some(Slot {
                    item: PayloadItem::Content(c),
                    ..
                }) = self.items.last_mut()
                {
                    c.nocase = true;
                    if name == "fileext" {
                        c.pattern.insert(0, b'.');
                        c.endswith = true;
                    }
                }
            }
            "absent" => {
                let Some(b) = self.sticky.clone() else {
                    return Err(err(K::Validation, "'absent' needs a sticky buffer"));
                };
                let or_else = match value.map(str::trim) {
                    None | Some("") => false,
                    Some("or_else") => true,
                    Some(v) => {
                        return Err(err(K::Validation, format!("absent: unknown option '{v}'")))
                    }
                };
                self.push_slot(Slot {
                    inst: 0,
                    xf: Vec::new(),
                    buffer: b,
                    item: PayloadItem::Absent { or_else },
                });
            }
            "dataset" => self.dataset(need(name, value)?)?,
            "datarep" => self.datarep(need(name, value)?)?,
            "dsize" => {
                let c = parse_uint_cmp(need(name, value)?, 65535).map_err(inval)?;
                self.conditions.push(Condition::Dsize(c));
            }
            "ttl" => {
                let c = parse_uint_cmp(need(name, value)?, 255).map_err(inval)?;
                self.conditions.push(Condition::Ttl(c));
            }
            "itype" => {
                let c = parse_uint_cmp(need(name, value)?, 255).map_err(inval)?;
                self.conditions.push(Condition::Itype(c));
            }
            "icode" => {
                let c = parse_uint_cmp(need(name, value)?, 255).map_err(inval)?;
                self.conditions.push(Condition::Icode(c));
            }
            "icmp_id" => {
                let v = parse_u16(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::IcmpId(v));
            }
            "icmp_seq" => {
                let v = parse_u16(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::IcmpSeq(v));
            }
            "igmp.type" => {
                let c = parse_uint_cmp(need(name, value)?, 255).map_err(inval)?;
                self.conditions.push(Condition::IgmpType(c));
            }
            "l3_proto" => {
                let v = match strip_quotes(need(name, value)?) {
                    "ipv4" | "ip4" => 4,
                    "ipv6" | "ip6" => 6,
                    v => {
                        return Err(inval(format!(
                            "expected 'ipv4' or 'ipv6', got '{}'",
                            truncate(v, 20)
                        )))
                    }
                };
                self.conditions.push(Condition::L3Proto(v));
            }
            "ipv4-csum" | "tcpv4-csum" | "tcpv6-csum" | "udpv4-csum" | "udpv6-csum"
            | "icmpv4-csum" | "icmpv6-csum" | "igmp-csum" => {
                let layer = match name {
                    "ipv4-csum" => CsumLayer::Ipv4,
                    "igmp-csum" => CsumLayer::Igmp,
                    "tcpv4-csum" => CsumLayer::Tcpv4,
                    "tcpv6-csum" => CsumLayer::Tcpv6,
                    "udpv4-csum" => CsumLayer::Udpv4,
                    "udpv6-csum" => CsumLayer::Udpv6,
                    "icmpv4-csum" => CsumLayer::Icmpv4,
                    _ => CsumLayer::Icmpv6,
                };
                let valid = match strip_quotes(need(name, value)?) {
                    "valid" => true,
                    "invalid" => false,
                    v => {
                        return Err(inval(format!(
                            "expected 'valid' or 'invalid', got '{}'",
                            truncate(v, 20)
                        )))
                    }
                };
                self.conditions.push(Condition::Checksum { layer, valid });
            }
            "sctp.vtag" => {
                let c = parse_uint_cmp(need(name, value)?, u32::MAX as u64).map_err(inval)?;
                self.conditions.push(Condition::SctpVtag(c));
            }
            "sctp.chunk_cnt" => {
                let c = parse_uint_cmp(need(name, value)?, 65535).map_err(inval)?;
                self.conditions.push(Condition::SctpChunkCnt(c));
            }
            "sctp.chunk_type" => {
                let c = parse_sctp_chunk_type(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::SctpChunkType(c));
            }
            "tcp.mss" => {
                let c = parse_uint_cmp(need(name, value)?, 65535).map_err(inval)?;
                self.conditions.push(Condition::TcpMss(c));
            }
            "tos" => {
                let c = parse_tos(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::Tos(c));
            }
            "id" => {
                let v = parse_u16(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::IpId(v));
            }
            "seq" | "tcp.seq" => {
                let v = parse_u32(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::TcpSeq(v));
            }
            "ack" | "tcp.ack" => {
                let v = parse_u32(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::TcpAck(v));
            }
            "window" | "tcp.window" => {
                let v = strip_quotes(need(name, value)?);
                let (negated, v) = match v.strip_prefix('!') {
                    Some(r) => (true, r),
                    None => (false, v),
                };
                let value = parse_u16(v).map_err(inval)?;
                self.conditions
                    .push(Condition::TcpWindow { negated, value });
            }
            "sameip" => {
                no_value(name, value)?;
                self.conditions.push(Condition::SameIp);
            }
            "flags" | "tcp.flags" => {
                let f = parse_flags(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::Flags(f));
            }
            "fragbits" => {
                let (modifier, bits) = parse_fragbits(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::Fragbits { modifier, bits });
            }
            "fragoffset" => {
                let v = strip_quotes(need(name, value)?);
                let (negated, op) = if let Some(r) = v.strip_prefix('!') {
                    (true, IntCmp::Eq(parse_uint_max(r, 8191).map_err(inval)?))
                } else if let Some(r) = v.strip_prefix('<') {
                    (false, IntCmp::Lt(parse_uint_max(r, 8191).map_err(inval)?))
                } else if let Some(r) = v.strip_prefix('>') {
                    (false, IntCmp::Gt(parse_uint_max(r, 8191).map_err(inval)?))
                } else {
                    (false, IntCmp::Eq(parse_uint_max(v, 8191).map_err(inval)?))
                };
                self.conditions.push(Condition::Fragoffset { negated, op });
            }
            "ipopts" => {
                let v = strip_quotes(need(name, value)?);
                const OPTS: &[&str] = &[
                    "rr", "eol", "nop", "ts", "sec", "esec", "lsrr", "lsrre", "ssrr", "satid",
                    "any",
                ];
                if !OPTS.contains(&v) {
                    return Err(inval(format!("unknown ip option '{v}'")));
                }
                self.conditions.push(Condition::IpOpts(v.to_string()));
            }
            "ip_proto" => {
                let c = parse_ip_proto(need(name, value)?).map_err(inval)?;
                self.conditions.push(c);
            }
            "flow" => {
                if self.flow_seen {
                    return Err(err(K::Validation, "duplicate 'flow'"));
                }
                self.flow_seen = true;
                let f = parse_flow(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::Flow(f));
            }
            "flowbits" => self.flowbits(need(name, value)?)?,
            "threshold" | "detection_filter" => {
                let t = parse_threshold(need(name, value)?, name == "detection_filter")
                    .map_err(inval)?;
                let dup = self.conditions.iter().any(|c| {
                    matches!(c, Condition::Threshold(o)
                        if (o.kind == ThresholdKind::DetectionFilter)
                            == (t.kind == ThresholdKind::DetectionFilter))
                });
                if dup {
                    return Err(err(K::Validation, format!("duplicate '{name}'")));
                }
                self.conditions.push(Condition::Threshold(t));
            }
            "decode-event" | "stream-event" | "app-layer-event" | "engine-event" => {
                let v = strip_quotes(need(name, value)?);
                if v.is_empty()
                    || !v
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
                {
                    return Err(inval(format!("invalid event name '{}'", truncate(v, 60))));
                }
                let kind = match name {
                    "decode-event" => EventKind::Decode,
                    "stream-event" => EventKind::Stream,
                    // Suricata's engine-event takes the full name of a
                    // decoder or stream event (`decoder.ipv4.trunc_pkt`,
                    // `stream.pkt_invalid_ack`); the family is checked here,
                    // the event itself when detection compiles the rule.
                    "engine-event" => {
                        let lower = v.to_ascii_lowercase();
                        if !(lower.starts_with("decoder.") || lower.starts_with("stream.")) {
                            return Err(inval(format!(
                                "unknown event '{}': expected decoder.<event> or stream.<event>",
                                truncate(v, 60)
                            )));
                        }
                        EventKind::Engine
                    }
                    _ => EventKind::AppLayer,
                };
                self.conditions.push(Condition::Event {
                    kind,
                    name: v.to_string(),
                });
            }
            "icmpv6.mtu" => {
                let c = parse_uint_cmp(need(name, value)?, u32::MAX as u64).map_err(inval)?;
                self.conditions.push(Condition::Icmpv6Mtu(c));
            }
            "vlan.id" => {
                let v = strip_quotes(need(name, value)?);
                let (c, layer) = match v.split_once(',') {
                    Some((c, l)) => (c.trim(), l.trim()),
                    None => (v, "any"),
                };
                let layer = match layer {
                    "any" => VlanLayer::Any,
                    "all" => VlanLayer::All,
                    l => match l.parse::<i8>() {
                        Ok(i) if (-3..=2).contains(&i) => VlanLayer::Index(i),
                        _ => {
                            return Err(inval(format!(
                                "vlan.id: invalid layer '{}' (0..2, -3..-1, any or all)",
                                truncate(l, 20)
                            )))
                        }
                    },
                };
                let cmp = parse_uint_cmp(c, 4095).map_err(inval)?;
                self.conditions.push(Condition::VlanId { cmp, layer });
            }
            "flow.elephant" => {
                let v = need(name, value)?;
                let dir = match strip_quotes(v) {
                    "toserver" => ElephantDir::ToServer,
                    "toclient" => ElephantDir::ToClient,
                    "either" => ElephantDir::Either,
                    "both" => ElephantDir::Both,
                    o => {
                        return Err(inval(format!(
                            "invalid direction '{}': toserver, toclient, either or both",
                            truncate(o, 40)
                        )))
                    }
                };
                self.conditions.push(Condition::FlowElephant(dir));
            }
            "tcp.session" => {
                let v = need(name, value)?;
                let bits = parse_tcp_session(v).map_err(inval)?;
                self.conditions.push(Condition::TcpSession(bits));
            }
            "flow.age" => {
                let c = parse_uint_cmp(need(name, value)?, u32::MAX as u64).map_err(inval)?;
                self.conditions.push(Condition::FlowAge(c));
            }
            "vlan.layers" => {
                let c = parse_uint_cmp(need(name, value)?, 255).map_err(inval)?;
                self.conditions.push(Condition::VlanLayers(c));
            }
            "tcp.wscale" => {
                let c = parse_uint_cmp(need(name, value)?, 255).map_err(inval)?;
                self.conditions.push(Condition::TcpWscale(c));
            }
            "flow.pkts" | "flow.bytes" => {
                let counter = if name == "flow.pkts" {
                    FlowCounter::Pkts
                } else {
                    FlowCounter::Bytes
                };
                let v = strip_quotes(need(name, value)?);
                let (d, c) = v.split_once(',').ok_or_else(|| {
                    inval(format!(
                        "'{name}' needs 'toserver|toclient|either,[op]N' (or use {name}_toserver)"
                    ))
                })?;
                let dir = match d.trim() {
                    "toserver" | "to_server" => FlowCountDir::ToServer,
                    "toclient" | "to_client" => FlowCountDir::ToClient,
                    "either" => FlowCountDir::Either,
                    o => {
                        return Err(inval(format!(
                            "invalid direction '{o}' (toserver, toclient or either)"
                        )))
                    }
                };
                let cmp = parse_uint_cmp(c, u64::MAX).map_err(inval)?;
                self.conditions
                    .push(Condition::FlowCount { counter, dir, cmp });
            }
            "flow.pkts_toserver"
            | "flow.pkts_toclient"
            | "flow.bytes_toserver"
            | "flow.bytes_toclient" => {
                let counter = if name.starts_with("flow.pkts") {
                    FlowCounter::Pkts
                } else {
                    FlowCounter::Bytes
                };
                let dir = if name.ends_with("toserver") {
                    FlowCountDir::ToServer
                } else {
                    FlowCountDir::ToClient
                };
                let cmp = parse_uint_cmp(need(name, value)?, u64::MAX).map_err(inval)?;
                self.conditions
                    .push(Condition::FlowCount { counter, dir, cmp });
            }
            "flowint" => {
                let f = parse_flowint(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::Flowint(f));
            }
            "flowvar" => {
                let m = parse_var_match(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::Flowvar(m));
            }
            "pktvar" => {
                let m = parse_var_match(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::Pktvar(m));
            }
            "xbits" => self.xbits(need(name, value)?)?,
            "hostbits" => self.hostbits(need(name, value)?)?,
            "requires" => {
                let v = need(name, value)?;
                if let Some(why) = check_requires(v).map_err(inval)? {
                    self.requires_unmet.get_or_insert(why);
                }
            }
            "tag" => {
                let t = parse_tag(need(name, value)?).map_err(inval)?;
                if self.tag.is_some() {
                    return Err(inval("only one tag per rule"));
                }
                self.tag = Some(t);
            }
            "urilen" => {
                let v = need(name, value)?;
                let t = strip_quotes(v);
                let (cmp, mode) = match t.rsplit_once(',') {
                    Some((c, m)) => (c, Some(m.trim())),
                    None => (t, None),
                };
                if let Some(m) = mode {
                    if m != "raw" && m != "norm" {
                        return Err(inval(format!("invalid urilen mode '{m}' (raw or norm)")));
                    }
                }
                parse_uint_cmp(cmp, 65535).map_err(inval)?;
                self.not_evaluable_kw("urilen", v);
            }
            "rpc" => {
                let r = parse_rpc(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::Rpc(r));
            }
            "app-layer-state" => {
                let (op, state) = parse_app_layer_state(need(name, value)?).map_err(inval)?;
                self.conditions
                    .push(Condition::AppLayerState(crate::ast::AppLayerState {
                        op,
                        name: state,
                        proto: String::new(),
                        to_server: true,
                        progress: 0,
                    }));
            }
            "iprep" => {
                let r = parse_iprep(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::IpRep(r));
            }
            "geoip" => {
                let g = parse_geoip(need(name, value)?).map_err(inval)?;
                self.conditions.push(Condition::GeoIp(g));
            }
            "stream_size" => {
                let v = need(name, value)?;
                validate_stream_size(v).map_err(inval)?;
                self.not_evaluable_kw("stream_size", v);
            }
            _ => self.table_keyword(name, value)?,
        }
        Ok(())
    }

    /// `base64_decode:[bytes N][, offset N][, relative]` on the current
    /// buffer (the sticky buffer, else the packet payload).
    fn base64_decode(&mut self, value: Option<&str>) -> Result<(), RuleError> {
        if self.base64_decode.is_some() {
            return Err(err(
                K::Validation,
                "only one base64_decode per rule (there is one base64_data buffer)",
            ));
        }
        let mut d = Base64Decode {
            bytes: None,
            offset: 0,
            relative: false,
            data: Vec::new(),
        };
        for part in split_commas(strip_quotes(value.unwrap_or(""))) {
            let (k, v) = match part.split_once(char::is_whitespace) {
                Some((k, v)) => (k, v.trim()),
                None => (part, ""),
            };
            match k {
                "" => {}
                "relative" if v.is_empty() => d.relative = true,
                "bytes" => {
                    let n = parse_u32(v).map_err(inval)?;
                    if n == 0 {
                        return Err(inval("base64_decode: bytes must be > 0"));
                    }
                    d.bytes = Some(n);
                }
                "offset" => d.offset = parse_u32(v).map_err(inval)?,
                _ => {
                    return Err(inval(format!(
                        "base64_decode: unknown option '{}' (bytes N, offset N, relative)",
                        truncate(part, 40)
                    )))
                }
            }
        }
        let buffer = self.cur_buffer();
        if matches!(&buffer, Buffer::Named(n) if n == "base64_data") {
            return Err(err(
                K::Validation,
                "base64_decode cannot inspect base64_data",
            ));
        }
        self.base64_decode = Some(self.items.len());
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::Base64Decode(d),
        });
        Ok(())
    }

    /// Records a keyword that parsed and validated but is not evaluated.
    fn not_evaluable_kw(&mut self, name: &str, value: &str) {
        self.conditions.push(Condition::NotEvaluable {
            keyword: name.to_string(),
            value: Some(value.to_string()),
        });
        self.note(name);
    }

    /// The command and bit name of `xbits` / `hostbits` (`kw`); `None`
    /// for `noalert` (which it applies).
    fn bits_cmd_name<'a>(
        &mut self,
        kw: &str,
        parts: &[&'a str],
    ) -> Result<Option<(FlowbitsCmd, &'a str)>, RuleError> {
        let cmd = match parts.first().copied().unwrap_or("") {
            "set" => FlowbitsCmd::Set,
            "unset" => FlowbitsCmd::Unset,
            "toggle" => FlowbitsCmd::Toggle,
            "isset" => FlowbitsCmd::IsSet,
            "isnotset" => FlowbitsCmd::IsNotSet,
            "noalert" => {
                if parts.len() > 1 {
                    return Err(inval(format!("{kw}:noalert takes no other option")));
                }
                self.noalert = true;
                return Ok(None);
            }
            c => return Err(inval(format!("unknown {kw} command '{c}'"))),
        };
        let name = parts.get(1).copied().unwrap_or("");
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(inval(format!("invalid {kw} name '{name}'")));
        }
        Ok(Some((cmd, name)))
    }

    /// `xbits:<cmd>,<name>,track <ip_src|ip_dst|ip_pair|tx>[,expire N]`
    /// or `xbits:noalert`.
    fn xbits(&mut self, v: &str) -> Result<(), RuleError> {
        let t = strip_quotes(v);
        let parts: Vec<&str> = split_commas(t).collect();
        let Some((cmd, name)) = self.bits_cmd_name("xbits", &parts)? else {
            return Ok(());
        };
        let mut track = None;
        let mut expire = None;
        for p in &parts[2..] {
            let (k, a) = match p.split_once(char::is_whitespace) {
                Some((k, a)) => (k, a.trim()),
                None => (*p, ""),
            };
            match k {
                "track" => match a {
                    "ip_src" | "ip_dst" | "ip_pair" | "tx" => track = Some(a.to_string()),
                    o => {
                        return Err(inval(format!(
                            "invalid xbits track '{o}' (ip_src, ip_dst, ip_pair or tx)"
                        )))
                    }
                },
                "expire" => {
                    let e = parse_u32(a).map_err(inval)?;
                    if e == 0 {
                        return Err(inval("xbits expire must be > 0"));
                    }
                    expire = Some(e);
                }
                "" => {}
                o => return Err(inval(format!("unknown xbits option '{o}'"))),
            }
        }
        let Some(track) = track else {
            return Err(inval("xbits needs 'track ip_src|ip_dst|ip_pair|tx'"));
        };
        self.conditions.push(Condition::Xbits(Xbits {
            cmd,
            name: name.to_string(),
            track,
            expire,
        }));
        Ok(())
    }

    /// `hostbits:<cmd>,<name>[,src|dst|both]` (Suricata's host bits: the
    /// same state as `xbits` with `track ip_src` / `ip_dst`; `src` when no
    /// direction is given, `both` sets or tests the bit on both hosts) or
    /// `hostbits:noalert`.
    fn hostbits(&mut self, v: &str) -> Result<(), RuleError> {
        let t = strip_quotes(v);
        let parts: Vec<&str> = split_commas(t).collect();
        let Some((cmd, name)) = self.bits_cmd_name("hostbits", &parts)? else {
            return Ok(());
        };
        let tracks: &[&str] = match parts.get(2).copied().unwrap_or("src") {
            "src" | "to_src" => &["ip_src"],
            "dst" | "to_dst" => &["ip_dst"],
            "both" => &["ip_src", "ip_dst"],
            o => {
                return Err(inval(format!(
                    "invalid hostbits direction '{o}' (src, dst or both)"
                )))
            }
        };
        if parts.len() > 3 {
            return Err(inval(
                "hostbits takes at most a command, a name and a direction",
            ));
        }
        for track in tracks {
            self.conditions.push(Condition::Xbits(Xbits {
                cmd,
                name: name.to_string(),
                track: track.to_string(),
                expire: None,
            }));
        }
        Ok(())
    }

    /// `dataset:<set|unset|isset|isnotset>,<name>[, type T, load F, save F,
    /// state F, memcap N, hashsize N]` on the sticky buffer (Suricata's
    /// DetectDatasetParse, stricter: unknown or valueless options are
    /// errors).
    fn dataset(&mut self, value: &str) -> Result<(), RuleError> {
        let v = strip_quotes(value);
        let mut parts = v.split(',').map(str::trim).filter(|p| !p.is_empty());
        let cmd = match parts.next().unwrap_or("") {
            "set" => DatasetCmd::Set,
            "unset" => DatasetCmd::Unset,
            "isset" => DatasetCmd::IsSet,
            "isnotset" => DatasetCmd::IsNotSet,
            o => {
                return Err(inval(format!(
                    "dataset: unknown command '{}' (set, unset, isset or isnotset)",
                    truncate(o, 40)
                )))
            }
        };
        let name = dataset_name(parts.next())?;
        let mut set = DatasetDecl {
            name,
            ..DatasetDecl::default()
        };
        let mut json = false;
        for p in parts {
            json |= dataset_option(&mut set, p, true)?;
        }
        let Some(buffer) = self.sticky.clone() else {
            return Err(err(K::Validation, "'dataset' needs a sticky buffer"));
        };
        if json {
            self.conditions.push(Condition::NotEvaluable {
                keyword: "dataset".to_string(),
                value: Some(v.to_string()),
            });
            self.note("dataset");
            return Ok(());
        }
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::Dataset(Dataset { cmd, set }),
        });
        Ok(())
    }

    /// `datarep:<name>,<op>,<value>[, type T, load F, memcap N, hashsize N]`
    /// on the sticky buffer (Suricata's DetectDatarepParse; `>=`, `<=` and
    /// `!=` besides its `>`, `<` and `==`).
    fn datarep(&mut self, value: &str) -> Result<(), RuleError> {
        let v = strip_quotes(value);
        let mut parts = v.split(',').map(str::trim).filter(|p| !p.is_empty());
        let name = dataset_name(parts.next())?;
        let op = match parts.next().unwrap_or("") {
            ">" => RepOp::Gt,
            "<" => RepOp::Lt,
            ">=" => RepOp::Ge,
            "<=" => RepOp::Le,
            "==" => RepOp::Eq,
            "!=" => RepOp::Ne,
            o => {
                return Err(inval(format!(
                    "datarep: unknown operator '{}' (>, <, >=, <=, ==, !=)",
                    truncate(o, 20)
                )))
            }
        };
        let value = match parts.next() {
            Some(n) if n.bytes().all(|b| b.is_ascii_digit()) => n.parse::<u16>().map_err(|_| {
                inval(format!(
                    "datarep: value '{}' is not 0..65535",
                    truncate(n, 20)
                ))
            })?,
            Some(n) => {
                return Err(inval(format!(
                    "datarep: value '{}' is not 0..65535",
                    truncate(n, 20)
                )))
            }
            None => return Err(inval("datarep needs '<name>, <op>, <value>'")),
        };
        let mut set = DatasetDecl {
            name,
            ..DatasetDecl::default()
        };
        for p in parts {
            dataset_option(&mut set, p, false)?;
        }
        let Some(buffer) = self.sticky.clone() else {
            return Err(err(K::Validation, "'datarep' needs a sticky buffer"));
        };
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::Datarep(Datarep { op, value, set }),
        });
        Ok(())
    }

    /// `config:<subsys> <action>, type <type>, scope <scope>`. Suricata 7's
    /// one setting, `logging disable, type tx, scope tx`, is applied; the
    /// later `tracking disable, type flow, scope packet` (firewall hooks)
    /// is valid but not evaluable yet.
    fn config(&mut self, value: &str) -> Result<(), RuleError> {
        let v = strip_quotes(value);
        let mut parts = v.split(',').map(str::trim);
        let setting: Vec<&str> = parts.next().unwrap_or("").split_whitespace().collect();
        let mut kind = None;
        let mut scope = None;
        for p in parts {
            match p
                .split_once(char::is_whitespace)
                .map(|(k, v)| (k, v.trim()))
            {
                Some(("type", t)) if kind.is_none() => kind = Some(t),
                Some(("scope", s)) if scope.is_none() => scope = Some(s),
                _ => return Err(inval(format!("config: unexpected '{}'", truncate(p, 40)))),
            }
        }
        let (Some(kind), Some(scope)) = (kind, scope) else {
            return Err(inval(
                "config needs '<subsys> <action>, type <type>, scope <scope>'",
            ));
        };
        match (setting.as_slice(), kind, scope) {
            (["logging", "disable"], "tx", "tx") => self.disable_tx_log = true,
            (["logging" | "tracking", "disable"], "tx" | "flow", "tx" | "packet") => {
                self.conditions.push(Condition::NotEvaluable {
                    keyword: "config".to_string(),
                    value: Some(v.to_string()),
                });
                self.note("config");
            }
            _ => {
                return Err(inval(format!(
                    "config: '{}' is not a setting (logging|tracking disable, type tx|flow, scope tx|packet)",
                    truncate(v, 60)
                )))
            }
        }
        Ok(())
    }

    /// `frame:[<proto>.]<frame>`: a sticky buffer over each frame of
    /// that type (see [`crate::frames`]). One frame type per rule.
    fn frame(&mut self, value: &str) -> Result<(), RuleError> {
        let (proto, tcp, udp) = &self.frame_ctx;
        let f = crate::frames::resolve_frame(strip_quotes(value), proto.as_deref(), *tcp, *udp)
            .map_err(inval)?;
        let name = f.buffer_name();
        if let Some(prev) = &self.frame {
            if *prev != name {
                return Err(inval("frame: a rule inspects one frame type"));
            }
        }
        self.frame = Some(name.clone());
        self.set_sticky(&name);
        Ok(())
    }

    fn table_keyword(&mut self, name: &str, value: Option<&str>) -> Result<(), RuleError> {
        let Some(kw) = keywords::lookup(name) else {
            return Err(err(
                K::UnknownKeyword,
                format!("unknown keyword '{}'", truncate(name, 60)),
            ));
        };
        match kw {
            Kw::Sticky(canon) => self.set_sticky(canon),
            Kw::Modifier(canon) => {
                if self.snort3 {
                    self.set_sticky(canon);
                } else {
                    no_value(name, value)?;
                    self.http_modifier(name, canon)?;
                }
            }
            Kw::Transform(canon) => {
                // Suricata's domain and tld take no option.
                if matches!(canon, "domain" | "tld") {
                    no_value(name, value)?;
                }
                if self.sticky.is_none() {
                    return Err(err(
                        K::Validation,
                        format!("transform '{name}' needs a preceding sticky buffer"),
                    ));
                }
                self.sticky_xf.push(TransformSpec {
                    name: canon.to_string(),
                    arg: value
                        .map(|v| v.trim().to_string())
                        .filter(|v| !v.is_empty()),
                });
                self.note(canon);
            }
            Kw::Other(canon) => {
                self.conditions.push(Condition::NotEvaluable {
                    keyword: canon.to_string(),
                    value: value.map(str::to_string),
                });
                self.note(canon);
            }
            Kw::Info => {}
        }
        Ok(())
    }

    fn set_sticky(&mut self, canon: &str) {
        let b = keywords::buffer_for(canon);
        self.note_buffer(&b);
        self.sticky_inst = match &b {
            Buffer::Named(n) if MULTI_INSTANCE.contains(&n.as_str()) => {
                self.insts += 1;
                self.insts
            }
            _ => 0,
        };
        self.sticky = if b == Buffer::Packet { None } else { Some(b) };
        self.sticky_xf.clear();
    }

    /// Snort 2 / Suricata `http_uri`-style modifier: moves the last
    /// content of the packet buffer into the named buffer.
    fn http_modifier(&mut self, name: &str, canon: &str) -> Result<(), RuleError> {
        // Snort 2 lets an http modifier override `file_data` for the
        // content it follows; Suricata rejects modifiers under any other
        // sticky buffer.
        let from = match &self.sticky {
            None => Buffer::Packet,
            Some(b @ Buffer::Named(n)) if n == "file.data" => b.clone(),
            Some(_) => {
                return Err(err(
                    K::Validation,
                    format!(
                    "'{name}' modifier seen while a sticky buffer is set (reset it with pkt_data)"
                ),
                ))
            }
        };
        let idx = self
            .items
            .iter()
            .rposition(|s| matches!(s.item, PayloadItem::Content(_)) && s.buffer == from)
            .ok_or_else(|| err(K::Validation, format!("'{name}' needs a preceding content")))?;
        if let PayloadItem::Content(c) = &self.items[idx].item {
            if c.rawbytes {
                return Err(err(
                    K::Validation,
                    format!("'{name}' cannot be used with 'rawbytes'"),
                ));
            }
        }
        let b = Buffer::Named(canon.to_string());
        self.note_buffer(&b);
        self.items[idx].buffer = b;
        Ok(())
    }

    fn content(&mut self, v: &str, forced: Option<&str>) -> Result<(), RuleError> {
        let (negated, inner, rest) = split_quoted(v).map_err(inval)?;
        let pattern = decode_content(inner).map_err(inval)?;
        if pattern.is_empty() {
            return Err(inval("empty content"));
        }
        let buffer = match forced {
            Some(canon) => {
                let b = Buffer::Named(canon.to_string());
                self.note_buffer(&b);
                b
            }
            None => self.cur_buffer(),
        };
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::Content(Content {
                pattern,
                negated,
                nocase: false,
                offset: None,
                depth: None,
                distance: None,
                within: None,
                startswith: false,
                endswith: false,
                rawbytes: false,
                replace: None,
                fast_pattern: None,
            }),
        });
        if !rest.is_empty() {
            let Some(mods) = rest.strip_prefix(',') else {
                return Err(inval(format!(
                    "unexpected text after content string: '{}'",
                    truncate(rest, 40)
                )));
            };
            let idx = self.items.len() - 1;
            for m in split_commas(mods) {
                if m.is_empty() {
                    continue;
                }
                let (mname, mval) = match m.split_once(char::is_whitespace) {
                    Some((a, b)) => (a, Some(b.trim())),
                    None => (m, None),
                };
                match mname {
                    "nocase" | "rawbytes" | "fast_pattern" | "depth" | "offset" | "distance"
                    | "within" | "startswith" | "endswith" => {
                        self.content_modifier(idx, mname, mval)?
                    }
                    "fast_pattern_offset" | "fast_pattern_length" => {
                        let n = parse_u16(need(mname, mval)?).map_err(inval)?;
                        let Slot {
                            item: PayloadItem::Content(c),
                            ..
                        } = &mut self.items[idx]
                        else {
                            unreachable!()
                        };
                        let len = c.pattern.len().min(u16::MAX as usize) as u16;
                        if c.fast_pattern.is_none() {
                            if self.fast_pattern_used {
                                return Err(err(
                                    K::Validation,
                                    "fast_pattern can be used on only one content in a rule",
                                ));
                            }
                            self.fast_pattern_used = true;
                            c.fast_pattern = Some(FastPattern {
                                only: false,
                                chop: None,
                            });
                        }
                        let fp = c.fast_pattern.as_mut().expect("set above");
                        let (mut o, mut l) = fp.chop.unwrap_or((0, len));
                        if mname == "fast_pattern_offset" {
                            o = n;
                            l = l.min(len.saturating_sub(n));
                        } else {
                            l = n;
                        }
                        if o as usize + l as usize > c.pattern.len() || l == 0 {
                            return Err(inval("fast_pattern offset/length exceed the content"));
                        }
                        fp.chop = Some((o, l));
                    }
                    _ => {
                        return Err(err(
                            K::UnknownKeyword,
                            format!("unknown content modifier '{}'", truncate(mname, 40)),
                        )
                        .with_keyword("content"))
                    }
                }
            }
        }
        Ok(())
    }

    /// `replace:"..."` on the last content of the packet payload (same
    /// length, not negated), as Suricata's DetectReplaceSetup.
    fn replace(&mut self, value: &str) -> Result<(), RuleError> {
        let v = value.trim();
        let inner = v
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .filter(|_| v.len() >= 2)
            .ok_or_else(|| inval("replace needs a quoted string"))?;
        let bytes = decode_content(inner).map_err(inval)?;
        let idx = self
            .last_content()
            .filter(|_| self.sticky.is_none())
            .filter(|&i| self.items[i].buffer == Buffer::Packet)
            .ok_or_else(|| inval("replace needs a preceding content on the packet payload"))?;
        let Slot {
            item: PayloadItem::Content(c),
            ..
        } = &mut self.items[idx]
        else {
            return Err(inval("replace needs a preceding content"));
        };
        if c.negated {
            return Err(inval("replace cannot follow a negated content"));
        }
        if c.replace.is_some() {
            return Err(inval("replace used twice on one content"));
        }
        if bytes.len() != c.pattern.len() {
            return Err(inval(format!(
                "replace is {} bytes, its content {}: they must be the same length",
                bytes.len(),
                c.pattern.len()
            )));
        }
        c.replace = Some(bytes);
        Ok(())
    }

    fn content_modifier(
        &mut self,
        idx: usize,
        name: &str,
        value: Option<&str>,
    ) -> Result<(), RuleError> {
        // Values are parsed before borrowing the content mutably.
        let parsed_nv = match name {
            "depth" | "offset" | "within" => Some(self.num_or_var(need(name, value)?)?),
            _ => None,
        };
        let parsed_sv = match name {
            "distance" => Some(self.num_or_var_signed(need(name, value)?)?),
            _ => None,
        };
        let fp_used = self.fast_pattern_used;
        let Slot {
            item: PayloadItem::Content(c),
            ..
        } = &mut self.items[idx]
        else {
            return Err(err(
                K::Validation,
                format!("'{name}' needs a preceding content"),
            ));
        };
        let len = c.pattern.len() as u64;
        let relative = c.distance.is_some() || c.within.is_some();
        let absolute = c.offset.is_some() || c.depth.is_some();
        let mixed = || {
            err(
                K::Validation,
                format!(
                    "'{name}': relative (distance/within) and absolute (offset/depth) modifiers cannot be mixed on one content"
                ),
            )
        };
        let dup = || err(K::Validation, format!("'{name}' used twice on one content"));
        let sw = || {
            err(
                K::Validation,
                format!("'{name}' cannot be combined with 'startswith'"),
            )
        };
        match name {
            "nocase" => c.nocase = true,
            "rawbytes" => c.rawbytes = true,
            "endswith" => c.endswith = true,
            "startswith" => {
                if c.startswith {
                    return Err(dup());
                }
                if relative || absolute {
                    return Err(err(
                        K::Validation,
                        "'startswith' cannot be combined with offset/depth/distance/within",
                    ));
                }
                c.startswith = true;
            }
            "fast_pattern" => {
                if fp_used {
                    return Err(err(
                        K::Validation,
                        "fast_pattern can be used on only one content in a rule",
                    ));
                }
                let fp = match value.map(strip_quotes) {
                    None | Some("") => FastPattern {
                        only: false,
                        chop: None,
                    },
                    Some("only") => {
                        if c.negated {
                            return Err(err(
                                K::Validation,
                                "fast_pattern:only cannot be used on a negated content",
                            ));
                        }
                        FastPattern {
                            only: true,
                            chop: None,
                        }
                    }
                    Some(v) => {
                        let (a, b) = v
                            .split_once(',')
                            .ok_or_else(|| inval(format!("invalid fast_pattern value '{v}'")))?;
                        let o = parse_u16(a).map_err(inval)?;
                        let l = parse_u16(b).map_err(inval)?;
                        if l == 0 || o as u64 + l as u64 > len {
                            return Err(inval(format!(
                                "fast_pattern {o},{l} exceeds the content length {len}"
                            )));
                        }
                        FastPattern {
                            only: false,
                            chop: Some((o, l)),
                        }
                    }
                };
                c.fast_pattern = Some(fp);
                self.fast_pattern_used = true;
            }
            "depth" => {
                if c.depth.is_some() {
                    return Err(dup());
                }
                if relative {
                    return Err(mixed());
                }
                if c.startswith {
                    return Err(sw());
                }
                let nv = parsed_nv.expect("parsed");
                if let NumOrVar::Num(d) = nv {
                    if (d as u64) < len {
                        return Err(err(
                            K::Validation,
                            format!("depth {d} is smaller than the content length {len}"),
                        ));
                    }
                }
                c.depth = Some(nv);
            }
            "offset" => {
                if c.offset.is_some() {
                    return Err(dup());
                }
                if relative {
                    return Err(mixed());
                }
                if c.startswith {
                    return Err(sw());
                }
                c.offset = parsed_nv;
            }
            "distance" => {
                if c.distance.is_some() {
                    return Err(dup());
                }
                if absolute {
                    return Err(mixed());
                }
                if c.startswith {
                    return Err(sw());
                }
                c.distance = parsed_sv;
            }
            "within" => {
                if c.within.is_some() {
                    return Err(dup());
                }
                if absolute {
                    return Err(mixed());
                }
                if c.startswith {
                    return Err(sw());
                }
                let nv = parsed_nv.expect("parsed");
                if let NumOrVar::Num(w) = nv {
                    if (w as u64) < len {
                        return Err(err(
                            K::Validation,
                            format!("within {w} is smaller than the content length {len}"),
                        ));
                    }
                }
                c.within = Some(nv);
            }
            _ => unreachable!("not a content modifier: {name}"),
        }
        Ok(())
    }

    fn pcre(&mut self, v: &str) -> Result<(), RuleError> {
        // The expression runs from the first to the last double quote; it
        // may contain unescaped quotes itself.
        let t = v.trim();
        let (negated, t) = match t.strip_prefix('!') {
            Some(r) => (true, r.trim_start()),
            None => (false, t),
        };
        let inner = if t.len() >= 2 && t.starts_with('"') && t.ends_with('"') {
            &t[1..t.len() - 1]
        } else if t.starts_with('"') {
            return Err(inval("pcre string is not terminated by '\"'"));
        } else {
            t
        };
        let body = inner
            .strip_prefix('/')
            .ok_or_else(|| inval("pcre must be written as \"/regex/flags\""))?;
        let last = body
            .rfind('/')
            .ok_or_else(|| inval("pcre has no closing '/'"))?;
        let pattern = &body[..last];
        // `/re/flags,flow:name,pkt:name`: the capture groups, in order,
        // go to flow or packet variables; then the named groups
        // `(?P<flow_name>...)` (Suricata's `DetectPcreParseCapture`).
        let (flags, names) = match body[last + 1..].split_once(',') {
            Some((f, c)) => (f, Some(c)),
            None => (&body[last + 1..], None),
        };
        let mut captures = Vec::new();
        let mut kv = false;
        for c in names.into_iter().flat_map(|c| c.split([',', ' '])) {
            let c = c.trim();
            if c.is_empty() {
                continue;
            }
            if c == "pkt:key" || c == "pkt:value" {
                // Key/value packet variables: not implemented.
                kv = true;
                continue;
            }
            let scope = match c.split_once(':') {
                Some(("flow", n)) if !n.is_empty() => Some((VarScope::Flow, n)),
                Some(("pkt", n)) if !n.is_empty() => Some((VarScope::Pkt, n)),
                Some(("alert", n)) if !n.is_empty() => Some((VarScope::Alert, n)),
                _ => None,
            };
            let Some((scope, name)) = scope else {
                return Err(inval(format!("invalid pcre capture variable '{c}'")));
            };
            if captures.len() < PCRE_CAPTURE_MAX {
                captures.push(PcreCapture {
                    scope,
                    name: name.to_string(),
                });
            }
        }
        named_captures(pattern, &mut captures)?;
        if kv {
            self.conditions.push(Condition::NotEvaluable {
                keyword: "pcre".into(),
                value: Some("pkt:key/pkt:value capture".into()),
            });
        }
        let mut p = Pcre {
            negated,
            pattern: pattern.to_string(),
            caseless: false,
            dotall: false,
            multiline: false,
            extended: false,
            anchored: false,
            dollar_endonly: false,
            ungreedy: false,
            relative: false,
            rawbytes: false,
            buffer_flag: None,
            captures,
        };
        for f in flags.chars() {
            match f {
                'i' => p.caseless = true,
                's' => p.dotall = true,
                'm' => p.multiline = true,
                'x' => p.extended = true,
                'A' => p.anchored = true,
                'E' => p.dollar_endonly = true,
                'G' => p.ungreedy = true,
                'R' => p.relative = true,
                'B' => p.rawbytes = true,
                'O' => {}
                c if keywords::pcre_flag_buffer(c).is_some() => {
                    if let Some(prev) = p.buffer_flag {
                        if prev != c {
                            return Err(inval(format!(
                                "pcre buffer flags '{prev}' and '{c}' conflict"
                            )));
                        }
                    }
                    p.buffer_flag = Some(c);
                }
                c => return Err(inval(format!("unknown pcre flag '{c}'"))),
            }
        }
        let buffer = match p.buffer_flag {
            Some(f) => {
                let b = Buffer::Named(keywords::pcre_flag_buffer(f).expect("checked").to_string());
                match &self.sticky {
                    // Suricata keeps http.response_body in the file_data
                    // buffer, so `/Q` fits either sticky buffer.
                    Some(s) if *s == b || (f == 'Q' && is_response_body(s)) => s.clone(),
                    Some(_) => {
                        return Err(err(
                            K::Validation,
                            format!("pcre flag '{f}' conflicts with the active sticky buffer"),
                        ));
                    }
                    None => {
                        self.note_buffer(&b);
                        b
                    }
                }
            }
            None => self.cur_buffer(),
        };
        if p.relative
            && self.sticky.is_none()
            && !self.items.iter().any(|s| {
                s.buffer == buffer
                    && matches!(s.item, PayloadItem::Content(_) | PayloadItem::Pcre(_))
            })
        {
            return Err(err(
                K::Validation,
                "pcre with /R (relative) needs a preceding content or pcre in the same buffer",
            ));
        }
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::Pcre(p),
        });
        Ok(())
    }

    fn byte_test(&mut self, v: &str) -> Result<(), RuleError> {
        let parts: Vec<&str> = split_commas(strip_quotes(v)).collect();
        if parts.len() < 4 {
            return Err(inval(
                "byte_test needs at least 'nbytes, operator, value, offset'",
            ));
        }
        let (nbytes, nbytes_var) = self.nbytes_or_var(parts[0])?;
        let opstr = parts[1].replace(' ', "");
        let (negated, op) = parse_cmp_op(&opstr)
            .ok_or_else(|| inval(format!("invalid byte_test operator '{}'", parts[1])))?;
        let value = self.num_or_var64(parts[2])?;
        let offset = self.num_or_var_signed(parts[3])?;
        let mut bt = ByteTest {
            nbytes,
            nbytes_var,
            negated,
            op,
            value,
            offset,
            relative: false,
            endian: Endian::Big,
            base: NumBase::Binary,
            bitmask: None,
            dce: false,
        };
        let mut endian_set = false;
        let mut string = false;
        for f in &parts[4..] {
            let (k, arg) = match f.split_once(char::is_whitespace) {
                Some((a, b)) => (a, Some(b.trim())),
                None => (*f, None),
            };
            match k {
                "relative" => bt.relative = true,
                "big" | "little" => {
                    if endian_set {
                        return Err(inval("byte_test endianness given twice"));
                    }
                    endian_set = true;
                    bt.endian = if k == "big" {
                        Endian::Big
                    } else {
                        Endian::Little
                    };
                }
                "string" => string = true,
                "dec" => bt.base = NumBase::Dec,
                "hex" => bt.base = NumBase::Hex,
                "oct" => bt.base = NumBase::Oct,
                "dce" => bt.dce = true,
                "bitmask" => {
                    bt.bitmask = Some(parse_u64(need("bitmask", arg)?).map_err(inval)?);
                }
                "" => {}
                _ => return Err(inval(format!("unknown byte_test option '{f}'"))),
            }
        }
        if string && bt.base == NumBase::Binary {
            bt.base = NumBase::Dec;
        }
        if bt.nbytes_var.is_none() {
            check_nbytes("byte_test", nbytes, bt.base)?;
        }
        let buffer = self.aux_buffer(bt.relative, bt.dce);
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::ByteTest(bt),
        });
        Ok(())
    }

    fn byte_jump(&mut self, v: &str) -> Result<(), RuleError> {
        let parts: Vec<&str> = split_commas(strip_quotes(v)).collect();
        if parts.len() < 2 {
            return Err(inval("byte_jump needs at least 'nbytes, offset'"));
        }
        let (nbytes, nbytes_var) = self.nbytes_or_var(parts[0])?;
        let offset = self.num_or_var_signed(parts[1])?;
        let mut bj = ByteJump {
            nbytes,
            nbytes_var,
            offset,
            relative: false,
            multiplier: 1,
            endian: Endian::Big,
            base: NumBase::Binary,
            align: false,
            from_beginning: false,
            from_end: false,
            post_offset: 0,
            bitmask: None,
            dce: false,
        };
        let mut string = false;
        let mut endian_set = false;
        for f in &parts[2..] {
            let (k, arg) = match f.split_once(char::is_whitespace) {
                Some((a, b)) => (a, Some(b.trim())),
                None => (*f, None),
            };
            match k {
                "relative" => bj.relative = true,
                "big" | "little" => {
                    if endian_set {
                        return Err(inval("byte_jump endianness given twice"));
                    }
                    endian_set = true;
                    bj.endian = if k == "big" {
                        Endian::Big
                    } else {
                        Endian::Little
                    };
                }
                "string" => string = true,
                "dec" => bj.base = NumBase::Dec,
                "hex" => bj.base = NumBase::Hex,
                "oct" => bj.base = NumBase::Oct,
                "align" => bj.align = true,
                "from_beginning" => bj.from_beginning = true,
                "from_end" => bj.from_end = true,
                "dce" => bj.dce = true,
                "multiplier" => {
                    let m = parse_u32(need("multiplier", arg)?).map_err(inval)?;
                    if m == 0 {
                        return Err(inval("byte_jump multiplier must be > 0"));
                    }
                    bj.multiplier = m;
                }
                "post_offset" => {
                    bj.post_offset = parse_i32(need("post_offset", arg)?).map_err(inval)?;
                }
                "bitmask" => {
                    bj.bitmask = Some(parse_u64(need("bitmask", arg)?).map_err(inval)?);
                }
                "" => {}
                _ => return Err(inval(format!("unknown byte_jump option '{f}'"))),
            }
        }
        if bj.from_beginning && bj.from_end {
            return Err(inval(
                "byte_jump: from_beginning and from_end exclude each other",
            ));
        }
        if string && bj.base == NumBase::Binary {
            bj.base = NumBase::Dec;
        }
        if bj.nbytes_var.is_none() {
            check_nbytes("byte_jump", nbytes, bj.base)?;
        }
        let buffer = self.aux_buffer(bj.relative, bj.dce);
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::ByteJump(bj),
        });
        Ok(())
    }

    fn byte_extract(&mut self, v: &str) -> Result<(), RuleError> {
        let parts: Vec<&str> = split_commas(strip_quotes(v)).collect();
        if parts.len() < 3 {
            return Err(inval("byte_extract needs at least 'nbytes, offset, name'"));
        }
        let nbytes = parse_uint_max(parts[0], 255).map_err(inval)? as u8;
        let offset = parse_i32(parts[1]).map_err(inval)?;
        let name = parts[2];
        if !is_var_name(name) {
            return Err(inval(format!(
                "invalid byte_extract variable name '{name}'"
            )));
        }
        let mut be = ByteExtract {
            nbytes,
            offset,
            name: name.to_string(),
            relative: false,
            multiplier: 1,
            endian: Endian::Big,
            base: NumBase::Binary,
            align: 0,
            bitmask: None,
            dce: false,
        };
        let mut string = false;
        let mut endian_set = false;
        for f in &parts[3..] {
            let (k, arg) = match f.split_once(char::is_whitespace) {
                Some((a, b)) => (a, Some(b.trim())),
                None => (*f, None),
            };
            match k {
                "relative" => be.relative = true,
                "big" | "little" => {
                    if endian_set {
                        return Err(inval("byte_extract endianness given twice"));
                    }
                    endian_set = true;
                    be.endian = if k == "big" {
                        Endian::Big
                    } else {
                        Endian::Little
                    };
                }
                "string" => string = true,
                "dec" => be.base = NumBase::Dec,
                "hex" => be.base = NumBase::Hex,
                "oct" => be.base = NumBase::Oct,
                "dce" => be.dce = true,
                "multiplier" => {
                    let m = parse_u32(need("multiplier", arg)?).map_err(inval)?;
                    if m == 0 {
                        return Err(inval("byte_extract multiplier must be > 0"));
                    }
                    be.multiplier = m;
                }
                "align" => {
                    let a = parse_uint_max(need("align", arg)?, 255).map_err(inval)? as u8;
                    if a != 2 && a != 4 {
                        return Err(inval("byte_extract align must be 2 or 4"));
                    }
                    be.align = a;
                }
                "bitmask" => {
                    be.bitmask = Some(parse_u64(need("bitmask", arg)?).map_err(inval)?);
                }
                "" => {}
                _ => return Err(inval(format!("unknown byte_extract option '{f}'"))),
            }
        }
        if string && be.base == NumBase::Binary {
            be.base = NumBase::Dec;
        }
        check_nbytes("byte_extract", nbytes, be.base)?;
        let buffer = self.aux_buffer(be.relative, be.dce);
        self.byte_vars.push(be.name.clone());
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::ByteExtract(be),
        });
        Ok(())
    }

    fn byte_math(&mut self, v: &str) -> Result<(), RuleError> {
        let mut nbytes: Option<(u8, Option<String>)> = None;
        let mut offset = None;
        let mut op = None;
        let mut rvalue = None;
        let mut result = None;
        let mut relative = false;
        let mut endian = Endian::Big;
        let mut dce = false;
        let mut base = NumBase::Binary;
        let mut bitmask = None;
        for f in split_commas(strip_quotes(v)) {
            let (k, arg) = match f.split_once(char::is_whitespace) {
                Some((a, b)) => (a, Some(b.trim())),
                None => (f, None),
            };
            match k {
                "bytes" => nbytes = Some(self.nbytes_or_var(need(k, arg)?)?),
                "offset" => offset = Some(parse_i32(need(k, arg)?).map_err(inval)?),
                "oper" => {
                    op = Some(match need(k, arg)? {
                        "+" => MathOp::Add,
                        "-" => MathOp::Sub,
                        "*" => MathOp::Mul,
                        "/" => MathOp::Div,
                        "<<" => MathOp::Shl,
                        ">>" => MathOp::Shr,
                        o => return Err(inval(format!("invalid byte_math operator '{o}'"))),
                    })
                }
                "rvalue" => rvalue = Some(self.num_or_var64(need(k, arg)?)?),
                "result" => {
                    let n = need(k, arg)?;
                    if !is_var_name(n) {
                        return Err(inval(format!("invalid byte_math result name '{n}'")));
                    }
                    result = Some(n.to_string());
                }
                "relative" => relative = true,
                "endian" => match need(k, arg)? {
                    "big" => endian = Endian::Big,
                    "little" => endian = Endian::Little,
                    "dce" => dce = true,
                    e => return Err(inval(format!("invalid byte_math endian '{e}'"))),
                },
                "dce" => dce = true,
                "string" => {
                    base = match need(k, arg)? {
                        "dec" => NumBase::Dec,
                        "hex" => NumBase::Hex,
                        "oct" => NumBase::Oct,
                        b => return Err(inval(format!("invalid byte_math string base '{b}'"))),
                    }
                }
                "bitmask" => bitmask = Some(parse_u64(need(k, arg)?).map_err(inval)?),
                "" => {}
                _ => return Err(inval(format!("unknown byte_math option '{f}'"))),
            }
        }
        let (Some(nbytes), Some(offset), Some(op), Some(rvalue), Some(result)) =
            (nbytes, offset, op, rvalue, result)
        else {
            return Err(inval(
                "byte_math needs bytes, offset, oper, rvalue and result",
            ));
        };
        let (nbytes, nbytes_var) = nbytes;
        if nbytes_var.is_none() && (nbytes == 0 || nbytes > 10) {
            return Err(inval("byte_math bytes must be 1..10"));
        }
        let bm = ByteMath {
            nbytes,
            nbytes_var,
            offset,
            op,
            rvalue,
            result,
            relative,
            endian,
            base,
            bitmask,
            dce,
        };
        let buffer = self.aux_buffer(relative, dce);
        self.byte_vars.push(bm.result.clone());
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::ByteMath(bm),
        });
        Ok(())
    }

    fn isdataat(&mut self, v: &str) -> Result<(), RuleError> {
        let mut parts = split_commas(strip_quotes(v));
        let first = parts.next().unwrap_or("");
        let (negated, first) = match first.strip_prefix('!') {
            Some(r) => (true, r.trim()),
            None => (false, first),
        };
        let offset = self.num_or_var(first)?;
        let mut relative = false;
        let mut rawbytes = false;
        for f in parts {
            match f {
                "relative" => relative = true,
                "rawbytes" => rawbytes = true,
                "" => {}
                _ => return Err(inval(format!("unknown isdataat option '{f}'"))),
            }
        }
        let buffer = self.aux_buffer(relative, false);
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::IsDataAt(IsDataAt {
                negated,
                offset,
                relative,
                rawbytes,
            }),
        });
        Ok(())
    }

    /// Snort 3 `bufferlen:[<|>|=]N | A<>B | A<=>B [,relative]`.
    fn bufferlen(&mut self, v: &str) -> Result<(), RuleError> {
        let mut parts = split_commas(strip_quotes(v));
        let spec = parts.next().unwrap_or("");
        let mut relative = false;
        for f in parts {
            match f {
                "relative" => relative = true,
                "" => {}
                _ => return Err(inval(format!("unknown bufferlen option '{f}'"))),
            }
        }
        let cmp = if let Some((a, b)) = spec.split_once("<=>") {
            let lo = parse_uint_max(a, u32::MAX as u64).map_err(inval)?;
            let hi = parse_uint_max(b, u32::MAX as u64).map_err(inval)?;
            if hi < lo {
                return Err(inval(format!("bufferlen range '{spec}' is empty")));
            }
            if lo == 0 {
                IntCmp::Le(hi)
            } else {
                IntCmp::RangeEx(lo - 1, hi + 1)
            }
        } else {
            parse_uint_cmp(spec, u32::MAX as u64).map_err(inval)?
        };
        self.push_bufferlen(cmp, relative, v)
    }

    fn push_bufferlen(&mut self, cmp: IntCmp, relative: bool, v: &str) -> Result<(), RuleError> {
        if relative {
            self.conditions.push(Condition::NotEvaluable {
                keyword: "bufferlen".into(),
                value: Some(v.to_string()),
            });
            self.note("bufferlen");
            return Ok(());
        }
        let buffer = self.cur_buffer();
        self.push_slot(Slot {
            inst: 0,
            xf: Vec::new(),
            buffer,
            item: PayloadItem::Bsize(cmp),
        });
        Ok(())
    }

    fn flowbits(&mut self, v: &str) -> Result<(), RuleError> {
        let v = strip_quotes(v);
        let (cmd, rest) = match v.split_once(',') {
            Some((c, r)) => (c.trim(), Some(r.trim())),
            None => (v.trim(), None),
        };
        let cmd = match cmd {
            "set" => FlowbitsCmd::Set,
            "unset" => FlowbitsCmd::Unset,
            "toggle" => FlowbitsCmd::Toggle,
            "isset" => FlowbitsCmd::IsSet,
            "isnotset" => FlowbitsCmd::IsNotSet,
            "noalert" => FlowbitsCmd::NoAlert,
            "reset" | "setx" => {
                // Snort 2 group operations.
                self.conditions.push(Condition::NotEvaluable {
                    keyword: "flowbits".into(),
                    value: Some(v.to_string()),
                });
                self.note("flowbits");
                return Ok(());
            }
            c => return Err(inval(format!("unknown flowbits command '{c}'"))),
        };
        if cmd == FlowbitsCmd::NoAlert {
            if rest.is_some_and(|r| !r.is_empty()) {
                return Err(inval("flowbits:noalert takes no name"));
            }
            self.noalert = true;
            return Ok(());
        }
        let Some(rest) = rest.filter(|r| !r.is_empty()) else {
            return Err(inval("flowbits needs a name"));
        };
        // Snort 2 allows a trailing group name: `set,name,group`.
        let names_part = rest.split(',').next().unwrap_or("").trim();
        let has_or = names_part.contains('|');
        let has_and = names_part.contains('&');
        if has_or && has_and {
            return Err(inval("flowbits names cannot mix '|' and '&'"));
        }
        let sep = if has_or { '|' } else { '&' };
        let mut names = Vec::new();
        for n in names_part.split(sep) {
            let n = n.trim();
            if n.is_empty() || n.contains(char::is_whitespace) {
                return Err(inval(format!("invalid flowbit name '{n}'")));
            }
            names.push(n.to_string());
        }
        if has_or && !matches!(cmd, FlowbitsCmd::IsSet | FlowbitsCmd::IsNotSet) {
            return Err(inval("flowbits 'a|b' is only valid with isset/isnotset"));
        }
        self.conditions.push(Condition::Flowbits(Flowbits {
            cmd,
            names,
            any: has_or,
        }));
        Ok(())
    }

    fn finish(self, action: Action, header: Header) -> Result<Rule, RuleError> {
        let Some(sid) = self.sid else {
            return Err(err(K::MissingSid, "rule has no sid"));
        };
        let ported = matches!(
            header.proto.transport(),
            Proto::Tcp | Proto::Udp | Proto::Sctp
        );
        if !ported
            && self
                .conditions
                .iter()
                .any(|c| matches!(c, Condition::Threshold(t) if t.unique_on.is_some()))
        {
            return Err(err(
                K::Validation,
                "'unique_on' needs a protocol with ports (tcp, udp or sctp)",
            )
            .with_keyword("detection_filter"));
        }
        let mut conditions = self.conditions;
        for c in conditions.iter_mut() {
            if let Condition::AppLayerState(st) = c {
                resolve_app_state(st, &header.proto)
                    .map_err(|m| err(K::InvalidValue, m).with_keyword("app-layer-state"))?;
            }
        }
        let mut items = self.items;
        // The base64_data keywords belong to the base64_decode that
        // produces their buffer.
        if let Some(at) = self.base64_decode {
            let mut data = Vec::new();
            let mut rest = Vec::with_capacity(items.len());
            for s in items {
                if matches!(&s.buffer, Buffer::Named(n) if n == "base64_data") {
                    data.push(s.item);
                } else {
                    rest.push(s);
                }
            }
            items = rest;
            if let Some(Slot {
                item: PayloadItem::Base64Decode(d),
                ..
            }) = items.get_mut(at)
            {
                d.data = data;
            }
        }
        let mut buffers: Vec<BufferMatch> = Vec::new();
        let mut insts: Vec<u32> = Vec::new();
        for s in items {
            match buffers
                .iter_mut()
                .zip(&insts)
                .find(|(b, i)| b.buffer == s.buffer && b.transforms == s.xf && **i == s.inst)
            {
                Some((b, _)) => b.items.push(s.item),
                None => {
                    insts.push(s.inst);
                    buffers.push(BufferMatch {
                        buffer: s.buffer,
                        transforms: s.xf,
                        items: vec![s.item],
                    })
                }
            }
        }
        Ok(Rule {
            action,
            header,
            gid: self.gid.unwrap_or(1),
            sid,
            rev: self.rev.unwrap_or(0),
            msg: self.msg.unwrap_or_default(),
            classtype: self.classtype,
            priority: self.priority,
            references: self.references,
            metadata: self.metadata,
            buffers,
            conditions,
            noalert: self.noalert,
            force_alert: self.force_alert,
            bypass: self.bypass,
            nfq_mark: self.nfq_mark,
            disable_tx_log: self.disable_tx_log,
            target: self.target,
            tag: self.tag,
            not_evaluable: self.not_eval,
            requires_unmet: self.requires_unmet,
            origin: Origin::default(),
            text: String::new(),
        })
    }
}

/// Byte counts Suricata accepts: up to 8 (binary) or 23 (string). Zero is
/// accepted too, as Suricata does (ET ships such rules).
fn is_response_body(b: &Buffer) -> bool {
    matches!(b, Buffer::Named(n) if n == "file.data" || n == "http.response_body")
}

fn check_nbytes(kw: &str, n: u8, base: NumBase) -> Result<(), RuleError> {
    let max = if base == NumBase::Binary { 8 } else { 23 };
    if n > max {
        return Err(inval(format!(
            "{kw}: cannot read {n} bytes (0..{max} allowed{})",
            if base == NumBase::Binary {
                " without 'string'"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

/// byte_test operator: `[!]<|>|=|<=|>=|&|^`, also `!=` and a lone `!`.
fn parse_cmp_op(s: &str) -> Option<(bool, CmpOp)> {
    let (neg, rest) = match s.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let op = match rest {
        "<" => CmpOp::Lt,
        ">" => CmpOp::Gt,
        "=" => CmpOp::Eq,
        "<=" => CmpOp::Le,
        ">=" => CmpOp::Ge,
        "&" => CmpOp::And,
        "^" => CmpOp::Xor,
        "" if neg => return Some((false, CmpOp::Ne)),
        _ => return None,
    };
    if neg && op == CmpOp::Eq {
        return Some((false, CmpOp::Ne));
    }
    Some((neg, op))
}

/// `tos:[!]N` with N decimal, `xHH` or `0xHH`, or an integer comparison.
fn parse_tos(v: &str) -> Result<IntCmp, String> {
    let t = strip_quotes(v);
    let (neg, body) = match t.strip_prefix('!') {
        Some(r) => (true, r.trim()),
        None => (false, t),
    };
    let num = if let Some(h) = body.strip_prefix('x').or_else(|| body.strip_prefix('X')) {
        u8::from_str_radix(h, 16).map_err(|_| format!("invalid tos '{t}'"))?
    } else if let Ok(n) = parse_uint_max(body, 255) {
        n as u8
    } else {
        return parse_uint_cmp(t, 255);
    };
    Ok(if neg {
        IntCmp::Ne(num as u64)
    } else {
        IntCmp::Eq(num as u64)
    })
}

/// `entropy:[bytes N,] [offset N,] value [op]X` (options in any order,
/// `value` required; no `relative`, as in Suricata).
/// `asn1` options as Suricata's: `bitstring_overflow`, `double_overflow`,
/// `oversize_length N`, `absolute_offset N` (0..=65535) or
/// `relative_offset N` (-65535..=65535), comma-separated, at least one
/// check.
fn parse_asn1(v: &str) -> Result<Asn1, String> {
    let mut a = Asn1::default();
    for part in strip_quotes(v).split(',') {
        let part = part.trim();
        let (k, rest) = part.split_once(char::is_whitespace).unwrap_or((part, ""));
        let rest = rest.trim();
        let bad = |what: &str| format!("invalid {what} '{}'", truncate(rest, 20));
        match k {
            "bitstring_overflow" if rest.is_empty() => a.bitstring_overflow = true,
            "double_overflow" if rest.is_empty() => a.double_overflow = true,
            "oversize_length" if a.oversize_length.is_none() => {
                a.oversize_length = Some(rest.parse().map_err(|_| bad("oversize_length"))?)
            }
            "absolute_offset" if a.absolute_offset.is_none() => {
                a.absolute_offset = Some(rest.parse().map_err(|_| bad("absolute_offset"))?)
            }
            "relative_offset" if a.relative_offset.is_none() => {
                let n: i32 = rest.parse().map_err(|_| bad("relative_offset"))?;
                if !(-65535..=65535).contains(&n) {
                    return Err(bad("relative_offset"));
                }
                a.relative_offset = Some(n);
            }
            _ => {
                return Err(format!(
                    "unexpected '{}' (bitstring_overflow, double_overflow, oversize_length N, \
                     absolute_offset N, relative_offset N)",
                    truncate(part, 20)
                ))
            }
        }
    }
    if a.absolute_offset.is_some() && a.relative_offset.is_some() {
        return Err("absolute_offset and relative_offset together".into());
    }
    if !a.bitstring_overflow && !a.double_overflow && a.oversize_length.is_none() {
        return Err("no check (bitstring_overflow, double_overflow, oversize_length)".into());
    }
    Ok(a)
}

fn parse_entropy(v: &str) -> Result<Entropy, String> {
    let mut bytes = None;
    let mut offset = 0u32;
    let mut value = None;
    for part in strip_quotes(v).split(',') {
        let part = part.trim();
        let (k, rest) = part.split_once(char::is_whitespace).unwrap_or((part, ""));
        let rest = rest.trim();
        let num = |what: &str| -> Result<u32, String> {
            rest.parse::<u32>()
                .map_err(|_| format!("invalid {what} '{}'", truncate(rest, 20)))
        };
        match k {
            "bytes" if bytes.is_none() => bytes = Some(num("bytes")?).filter(|b| *b > 0),
            "offset" => offset = num("offset")?,
            "value" if value.is_none() => value = Some(parse_float_cmp(rest)?),
            _ => {
                return Err(format!(
                    "unexpected '{}' (bytes N, offset N, value [op]X)",
                    truncate(part, 20)
                ))
            }
        }
    }
    let value = value.ok_or("missing 'value'")?;
    Ok(Entropy {
        bytes,
        offset,
        value,
    })
}

/// `X`, `=X`, `<X`, `<=X`, `>X`, `>=X` or `A-B` with X, A, B decimal
/// numbers.
fn parse_float_cmp(s: &str) -> Result<FloatCmp, String> {
    let num = |t: &str| -> Result<f64, String> {
        let t = t.trim();
        match t.parse::<f64>() {
            Ok(x) if x.is_finite() && !t.is_empty() && !t.starts_with(['+', '-']) => Ok(x),
            _ => Err(format!("invalid number '{}'", truncate(t, 20))),
        }
    };
    let s = s.trim();
    Ok(if let Some(r) = s.strip_prefix(">=") {
        FloatCmp::Ge(num(r)?)
    } else if let Some(r) = s.strip_prefix("<=") {
        FloatCmp::Le(num(r)?)
    } else if let Some(r) = s.strip_prefix('>') {
        FloatCmp::Gt(num(r)?)
    } else if let Some(r) = s.strip_prefix('<') {
        FloatCmp::Lt(num(r)?)
    } else if let Some(r) = s.strip_prefix('=') {
        FloatCmp::Eq(num(r)?)
    } else if let Some((a, b)) = s.split_once('-') {
        let (a, b) = (num(a)?, num(b)?);
        if a >= b {
            return Err(format!("range '{}' can never match", truncate(s, 20)));
        }
        FloatCmp::RangeEx(a, b)
    } else {
        FloatCmp::Eq(num(s)?)
    })
}

/// `sctp.chunk_type:[op]T` with T a number or one of Suricata's chunk
/// type names (`data`, `init`, `init_ack`, `sack`, `heartbeat`,
/// `hb_ack`, `abort`, ... `forward_tsn`).
fn parse_sctp_chunk_type(v: &str) -> Result<IntCmp, String> {
    let t = strip_quotes(v);
    let Some(at) = t.find(|c: char| c.is_ascii_alphabetic()) else {
        return parse_uint_cmp(t, 255);
    };
    let (op, word) = t.split_at(at);
    let n = vigil_wire::sctp_chunk::from_name(word.trim())
        .ok_or_else(|| format!("unknown SCTP chunk type '{}'", truncate(word, 20)))?;
    parse_uint_cmp(&format!("{op}{n}"), 255)
}

fn parse_flags(v: &str) -> Result<TcpFlags, String> {
    let t = strip_quotes(v);
    let (flags_part, mask_part) = match t.split_once(',') {
        Some((a, b)) => (a.trim(), Some(b.trim())),
        None => (t, None),
    };
    let mut modifier = None;
    let mut flags = 0u8;
    let mut any_flag = false;
    for c in flags_part.chars() {
        let m = match c {
            '!' => Some(FlagsModifier::Not),
            '+' => Some(FlagsModifier::Plus),
            '*' => Some(FlagsModifier::Any),
            _ => None,
        };
        if let Some(m) = m {
            if modifier.is_some() {
                return Err(format!("flags '{t}' has more than one modifier"));
            }
            modifier = Some(m);
            continue;
        }
        if c.is_whitespace() {
            continue;
        }
        any_flag = true;
        flags |= flag_bit(c).ok_or_else(|| format!("invalid tcp flag '{c}'"))?;
    }
    if !any_flag {
        return Err(format!("flags '{t}' names no flag"));
    }
    let mut mask = 0u8;
    if let Some(m) = mask_part {
        for c in m.chars() {
            if c.is_whitespace() {
                continue;
            }
            mask |= flag_bit(c).ok_or_else(|| format!("invalid tcp flag '{c}' in mask"))?;
        }
    }
    Ok(TcpFlags {
        flags,
        mask,
        modifier: modifier.unwrap_or(FlagsModifier::Exact),
    })
}

fn flag_bit(c: char) -> Option<u8> {
    Some(match c.to_ascii_uppercase() {
        'F' => 0x01,
        'S' => 0x02,
        'R' => 0x04,
        'P' => 0x08,
        'A' => 0x10,
        'U' => 0x20,
        'E' | '2' => 0x40,
        'C' | '1' => 0x80,
        '0' => 0,
        _ => return None,
    })
}

fn parse_fragbits(v: &str) -> Result<(FlagsModifier, u8), String> {
    let t = strip_quotes(v);
    let mut modifier = None;
    let mut bits = 0u8;
    for c in t.chars() {
        match c {
            '!' | '+' | '*' => {
                if modifier.is_some() {
                    return Err(format!("fragbits '{t}' has more than one modifier"));
                }
                modifier = Some(match c {
                    '!' => FlagsModifier::Not,
                    '+' => FlagsModifier::Plus,
                    _ => FlagsModifier::Any,
                });
            }
            'M' | 'm' => bits |= 1,
            'D' | 'd' => bits |= 2,
            'R' | 'r' => bits |= 4,
            c if c.is_whitespace() => {}
            c => return Err(format!("invalid fragbit '{c}'")),
        }
    }
    if bits == 0 {
        return Err(format!("fragbits '{t}' names no bit"));
    }
    Ok((modifier.unwrap_or(FlagsModifier::Exact), bits))
}

fn proto_number(name: &str) -> Option<u8> {
    Some(match name.to_ascii_lowercase().as_str() {
        "ip" | "hopopt" => 0,
        "icmp" => 1,
        "igmp" => 2,
        "ggp" => 3,
        "ipencap" | "ipip" | "ipv4" => 4,
        "st" => 5,
        "tcp" => 6,
        "egp" => 8,
        "igp" => 9,
        "pup" => 12,
        "udp" => 17,
        "hmp" => 20,
        "xns-idp" => 22,
        "rdp" => 27,
        "iso-tp4" => 29,
        "dccp" => 33,
        "xtp" => 36,
        "ddp" => 37,
        "idpr-cmtp" => 38,
        "ipv6" => 41,
        "ipv6-route" => 43,
        "ipv6-frag" => 44,
        "idrp" => 45,
        "rsvp" => 46,
        "gre" => 47,
        "esp" => 50,
        "ah" => 51,
        "skip" => 57,
        "ipv6-icmp" | "icmpv6" => 58,
        "ipv6-nonxt" => 59,
        "ipv6-opts" => 60,
        "rspf" => 73,
        "vmtp" => 81,
        "eigrp" => 88,
        "ospf" | "ospfigp" => 89,
        "ax.25" => 93,
        "ipip-old" => 94,
        "etherip" => 97,
        "encap" => 98,
        "pim" => 103,
        "ipcomp" => 108,
        "vrrp" => 112,
        "l2tp" => 115,
        "isis" => 124,
        "sctp" => 132,
        "fc" => 133,
        "mobility-header" => 135,
        "udplite" => 136,
        "mpls-in-ip" => 137,
        "manet" => 138,
        "hip" => 139,
        "shim6" => 140,
        "wesp" => 141,
        "rohc" => 142,
        "ethernet" => 143,
        _ => return None,
    })
}

fn parse_ip_proto(v: &str) -> Result<Condition, String> {
    let t = strip_quotes(v);
    let (kind, rest) = if let Some(r) = t.strip_prefix('!') {
        ('!', r)
    } else if let Some(r) = t.strip_prefix('<') {
        ('<', r)
    } else if let Some(r) = t.strip_prefix('>') {
        ('>', r)
    } else if let Some(r) = t.strip_prefix('=') {
        ('=', r)
    } else {
        ('=', t)
    };
    let rest = rest.trim();
    let proto = if rest.bytes().all(|c| c.is_ascii_digit()) && !rest.is_empty() {
        parse_uint_max(rest, 255)? as u8
    } else {
        proto_number(rest).ok_or_else(|| format!("unknown protocol '{rest}'"))?
    };
    let p = proto as u64;
    let (negated, op) = match kind {
        '!' => (true, IntCmp::Ne(p)),
        '<' => {
            if p == 0 {
                return Err("ip_proto:<0 can never match".into());
            }
            (false, IntCmp::Lt(p))
        }
        '>' => {
            if p == 255 {
                return Err("ip_proto:>255 can never match".into());
            }
            (false, IntCmp::Gt(p))
        }
        _ => (false, IntCmp::Eq(p)),
    };
    Ok(Condition::IpProto { proto, negated, op })
}

fn parse_flow(v: &str) -> Result<FlowOpts, String> {
    let mut f = FlowOpts::default();
    for o in split_commas(strip_quotes(v)) {
        match o {
            "to_server" | "from_client" => f.to_server = true,
            "to_client" | "from_server" => f.to_client = true,
            "established" => f.established = true,
            "not_established" => f.not_established = true,
            "stateless" => f.stateless = true,
            "only_stream" | "stream_only" => f.only_stream = true,
            "no_stream" => f.no_stream = true,
            "only_frag" => f.only_frag = true,
            "no_frag" => f.no_frag = true,
            "" => {}
            o => return Err(format!("unknown flow option '{o}'")),
        }
    }
    if f.to_server && f.to_client {
        return Err("flow: to_server and to_client exclude each other".into());
    }
    if f.established && (f.not_established || f.stateless) {
        return Err("flow: established excludes not_established and stateless".into());
    }
    if f.only_stream && f.no_stream {
        return Err("flow: only_stream and no_stream exclude each other".into());
    }
    if f.only_frag && f.no_frag {
        return Err("flow: only_frag and no_frag exclude each other".into());
    }
    Ok(f)
}

/// `threshold:` / `detection_filter:` (also used for `threshold.config`
/// entries, whose options are the same).
pub(crate) fn parse_threshold(v: &str, detection_filter: bool) -> Result<Threshold, String> {
    let mut kind = None;
    let mut track = None;
    let mut count = None;
    let mut seconds = None;
    let mut multiplier = None;
    let mut unique_on = None;
    for part in split_commas(strip_quotes(v)) {
        if part.is_empty() {
            continue;
        }
        let (k, val) = part
            .split_once(char::is_whitespace)
            .map(|(a, b)| (a, b.trim()))
            .ok_or_else(|| format!("'{part}' needs a value"))?;
        let dup = |set: bool| {
            if set {
                Err(format!("threshold option '{k}' given twice"))
            } else {
                Ok(())
            }
        };
        match k {
            "type" if !detection_filter => {
                dup(kind.is_some())?;
                kind = Some(match val {
                    "limit" => ThresholdKind::Limit,
                    "threshold" => ThresholdKind::Threshold,
                    "both" => ThresholdKind::Both,
                    "backoff" => ThresholdKind::Backoff,
                    t => return Err(format!("unknown threshold type '{t}'")),
                })
            }
            "track" => {
                dup(track.is_some())?;
                track = Some(match val {
                    "by_src" => Track::BySrc,
                    "by_dst" => Track::ByDst,
                    "by_rule" => Track::ByRule,
                    "by_both" => Track::ByBoth,
                    "by_flow" => Track::ByFlow,
                    t => return Err(format!("unknown track '{t}'")),
                })
            }
            "count" => {
                dup(count.is_some())?;
                count = Some(parse_u32(val)?)
            }
            "seconds" => {
                dup(seconds.is_some())?;
                seconds = Some(parse_u32(val)?)
            }
            "multiplier" if !detection_filter => {
                dup(multiplier.is_some())?;
                multiplier = Some(parse_u32(val)?)
            }
            "unique_on" if detection_filter => {
                dup(unique_on.is_some())?;
                unique_on = Some(match val {
                    "src_port" => UniqueOn::SrcPort,
                    "dst_port" => UniqueOn::DstPort,
                    u => return Err(format!("unique_on must be src_port or dst_port, not '{u}'")),
                })
            }
            k => return Err(format!("unknown threshold option '{k}'")),
        }
    }
    let kind = if detection_filter {
        ThresholdKind::DetectionFilter
    } else {
        kind.ok_or("threshold needs 'type'")?
    };
    let track = track.ok_or("threshold needs 'track'")?;
    let count = count.ok_or("threshold needs 'count'")?;
    if kind == ThresholdKind::Backoff {
        if track != Track::ByFlow {
            return Err("threshold type backoff needs 'track by_flow'".into());
        }
        if seconds.is_some() {
            return Err("threshold type backoff takes 'multiplier', not 'seconds'".into());
        }
        let m = multiplier.ok_or("threshold type backoff needs 'multiplier'")?;
        if m < 2 {
            return Err("threshold multiplier must be at least 2".into());
        }
        if count == 0 {
            return Err("threshold count must be > 0".into());
        }
        return Ok(Threshold {
            kind,
            track,
            count,
            seconds: 0,
            multiplier: m,
            unique_on: None,
        });
    }
    if multiplier.is_some() {
        return Err("'multiplier' is only valid with type backoff".into());
    }
    let seconds = seconds.ok_or("threshold needs 'seconds'")?;
    if count == 0 && !detection_filter {
        return Err("threshold count must be > 0".into());
    }
    Ok(Threshold {
        kind,
        track,
        count,
        seconds,
        multiplier: 0,
        unique_on,
    })
}

/// The named groups of a pcre pattern that store variables, appended to
/// `out` in pattern order: `(?P<TYPE_NAME>`, TYPE the shortest run of
/// `[A-z]` before an underscore (`pkt`, `flow` or `alert`; other types
/// are plain groups), NAME `[A-z0-9_]+` (Suricata's capture regex
/// `\(\?P\<([A-z]+)\_([A-z0-9_]+)\>`, ungreedy).
fn named_captures(pattern: &str, out: &mut Vec<PcreCapture>) -> Result<(), RuleError> {
    let in_az = |b: u8| (b'A'..=b'z').contains(&b);
    let name_ok = |b: u8| in_az(b) || b.is_ascii_digit();
    let mut rest = pattern.as_bytes();
    while let Some(i) = find_bytes(rest, b"(?P<") {
        rest = &rest[i + 4..];
        // The first underscore after at least one type byte such that a
        // name and '>' follow.
        let mut found = None;
        for k in 1..rest.len() {
            if !in_az(rest[k - 1]) {
                break;
            }
            if rest[k] != b'_' {
                continue;
            }
            let name_len = rest[k + 1..].iter().take_while(|&&b| name_ok(b)).count();
            if name_len > 0 && rest.get(k + 1 + name_len) == Some(&b'>') {
                found = Some((k, name_len));
                break;
            }
        }
        let Some((k, name_len)) = found else { continue };
        let ty = &rest[..k];
        // Suricata copies the type into a 16-byte buffer.
        if ty.len() >= 16 {
            return Err(inval("pcre capture group type is too long"));
        }
        let name = String::from_utf8_lossy(&rest[k + 1..k + 1 + name_len]).into_owned();
        let scope = match ty {
            b"pkt" => VarScope::Pkt,
            b"flow" => VarScope::Flow,
            b"alert" => VarScope::Alert,
            _ => continue,
        };
        if out.len() >= PCRE_CAPTURE_MAX {
            return Err(inval(format!(
                "a pcre can have at most {PCRE_CAPTURE_MAX} variable captures"
            )));
        }
        out.push(PcreCapture { scope, name });
        rest = &rest[k + 1 + name_len..];
    }
    Ok(())
}

fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `flowvar:name,"content"` / `pktvar:name,"content"` (Suricata's
/// `(.*),(.*)`: the name runs to the last comma; the content, its double
/// quotes stripped, is parsed as a `content` string).
fn parse_var_match(v: &str) -> Result<VarMatch, String> {
    let (name, content) = v
        .rsplit_once(',')
        .ok_or_else(|| "needs 'name,\"content\"'".to_string())?;
    let name = name.trim();
    if name.is_empty() {
        return Err("needs a variable name".into());
    }
    let c = content.trim();
    let c = if c.len() >= 2 && c.starts_with('"') && c.ends_with('"') {
        &c[1..c.len() - 1]
    } else {
        c
    };
    if c.is_empty() {
        return Err("needs a content to match".into());
    }
    let content = decode_content(c)?;
    if content.is_empty() {
        return Err("needs a content to match".into());
    }
    Ok(VarMatch {
        name: name.to_string(),
        content,
    })
}

/// `flowint:name,op[,value]`.
fn parse_flowint(v: &str) -> Result<Flowint, String> {
    let t = strip_quotes(v);
    let parts: Vec<&str> = split_commas(t).collect();
    let name = parts[0];
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("invalid flowint name '{name}'"));
    }
    let op = match parts.get(1).copied().unwrap_or("") {
        "=" => FlowintOp::Set,
        "+" => FlowintOp::Add,
        "-" => FlowintOp::Sub,
        "isset" => FlowintOp::IsSet,
        "notset" | "isnotset" => FlowintOp::NotSet,
        "==" => FlowintOp::Eq,
        "!=" => FlowintOp::Ne,
        "<" => FlowintOp::Lt,
        "<=" => FlowintOp::Le,
        ">" => FlowintOp::Gt,
        ">=" => FlowintOp::Ge,
        "" => return Err("flowint needs 'name,operator[,value]'".into()),
        o => return Err(format!("unknown flowint operator '{o}'")),
    };
    let value = match (op, parts.get(2).copied()) {
        (FlowintOp::IsSet | FlowintOp::NotSet, None) => None,
        (FlowintOp::IsSet | FlowintOp::NotSet, Some(_)) => {
            return Err("flowint isset/notset take no value".into())
        }
        (_, None) | (_, Some("")) => return Err("flowint needs a value".into()),
        (_, Some(x)) => {
            if x.bytes().next().is_some_and(|c| c.is_ascii_digit()) {
                Some(FlowintValue::Num(parse_u32(x)?))
            } else if is_var_name(x) {
                Some(FlowintValue::Var(x.to_string()))
            } else {
                return Err(format!("invalid flowint value '{x}'"));
            }
        }
    };
    if parts.len() > 3 {
        return Err("flowint takes at most 'name,operator,value'".into());
    }
    Ok(Flowint {
        name: name.to_string(),
        op,
        value,
    })
}

/// The Suricata version whose rule language Vigil implements, for
/// `requires: version ...`.
pub const COMPAT_VERSION: (u32, u32, u32) = (8, 0, 0);

/// Features Vigil provides, for `requires: feature ...` (none of
/// Suricata's optional build features yet).
const FEATURES: &[&str] = &[];

fn parse_version(s: &str) -> Result<(u32, u32, u32), String> {
    let mut it = s.split('.');
    let mut part = |req: bool| -> Result<u32, String> {
        match it.next() {
            Some(p) if !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()) => {
                p.parse().map_err(|_| format!("invalid version '{s}'"))
            }
            None if !req => Ok(0),
            _ => Err(format!("invalid version '{s}'")),
        }
    };
    let v = (part(true)?, part(false)?, part(false)?);
    if it.next().is_some() {
        return Err(format!("invalid version '{s}'"));
    }
    Ok(v)
}

/// Checks a `requires:` value. `Ok(None)`: met; `Ok(Some(why))`: well
/// formed but not met; `Err`: malformed.
fn check_requires(v: &str) -> Result<Option<String>, String> {
    let mut unmet = None;
    for req in split_commas(strip_quotes(v)) {
        if req.is_empty() {
            continue;
        }
        let (k, rest) = match req.split_once(char::is_whitespace) {
            Some((k, r)) => (k, r.trim()),
            None => return Err(format!("requirement '{req}' needs a value")),
        };
        match k {
            "feature" => {
                if rest.is_empty() || rest.contains(char::is_whitespace) {
                    return Err(format!("invalid feature '{rest}'"));
                }
                if !FEATURES.contains(&rest) && unmet.is_none() {
                    unmet = Some(format!("feature '{rest}' is not available"));
                }
            }
            "version" => {
                // Alternatives separated by '|', each a list of
                // `<op> <version>` that must all hold.
                let mut any = false;
                for alt in rest.split('|') {
                    let toks: Vec<&str> = alt.split_whitespace().collect();
                    if toks.is_empty() {
                        return Err(format!("empty version requirement in '{rest}'"));
                    }
                    let mut ok = true;
                    let mut i = 0;
                    while i < toks.len() {
                        // `>=7` or `>= 7`.
                        let t = toks[i];
                        let split = t.find(|c: char| c.is_ascii_digit()).unwrap_or(t.len());
                        let (op, mut ver) = (&t[..split], &t[split..]);
                        if ver.is_empty() {
                            i += 1;
                            ver = toks.get(i).copied().ok_or_else(|| {
                                format!("version requirement '{alt}' lacks a version")
                            })?;
                        }
                        let want = parse_version(ver)?;
                        let have = COMPAT_VERSION;
                        ok &= match op {
                            ">=" => have >= want,
                            ">" => have > want,
                            "<=" => have <= want,
                            "<" => have < want,
                            "=" | "==" => have == want,
                            "!=" => have != want,
                            o => return Err(format!("invalid version operator '{o}'")),
                        };
                        i += 1;
                    }
                    any |= ok;
                }
                if !any && unmet.is_none() {
                    let (a, b, c) = COMPAT_VERSION;
                    unmet = Some(format!(
                        "version requirement '{rest}' not met by {a}.{b}.{c}"
                    ));
                }
            }
            other => {
                if unmet.is_none() {
                    unmet = Some(format!("unknown requirement '{other}'"));
                }
            }
        }
    }
    Ok(unmet)
}

/// `tag:session[,count,metric]`, `tag:host,count,metric,src|dst` (and the
/// Snort 3 `tag:session,packets 5` form). Accepted; tagging is not done.
fn parse_tag(v: &str) -> Result<TagSpec, String> {
    let parts: Vec<&str> = strip_quotes(v).split(',').map(str::trim).collect();
    if parts[1..].iter().any(|p| p.contains(char::is_whitespace))
        || matches!(parts[0], "host_src" | "host_dst")
    {
        return parse_snort3_tag(&parts);
    }
    let host = match parts[0] {
        "session" => false,
        "host" => true,
        o => return Err(format!("tag type must be session or host, not '{o}'")),
    };
    let mut t = TagSpec {
        scope: if host {
            TagScope::Host { src: false }
        } else {
            TagScope::Session
        },
        count: TAG_MAX_PACKETS,
        metric: TagMetric::Packets,
    };
    match parts.len() {
        1 => return Ok(t),
        3 | 4 => {}
        _ => return Err("tag needs 'session|host[,count,packets|seconds|bytes[,src|dst]]'".into()),
    }
    if parts[1].is_empty() || !parts[1].bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("invalid tag count '{}'", parts[1]));
    }
    t.count = parts[1]
        .parse()
        .map_err(|_| format!("tag count '{}' out of range", parts[1]))?;
    t.metric = match parts[2] {
        "packets" => TagMetric::Packets,
        "seconds" => TagMetric::Seconds,
        "bytes" => TagMetric::Bytes,
        o => {
            return Err(format!(
                "invalid tag metric '{o}' (packets, seconds or bytes)"
            ))
        }
    };
    if t.metric == TagMetric::Packets {
        t.count = t.count.min(TAG_MAX_PACKETS);
    }
    if let Some(d) = parts.get(3) {
        let src = match *d {
            "src" => true,
            "dst" => false,
            o => return Err(format!("invalid tag direction '{o}' (src or dst)")),
        };
        // Suricata accepts (and ignores, with a warning) a direction on
        // a session tag.
        if host {
            t.scope = TagScope::Host { src };
        }
    }
    Ok(t)
}

/// Snort 3's `tag: session|host_src|host_dst, packets N|seconds N|bytes N`
/// (several limits: the first is used).
fn parse_snort3_tag(parts: &[&str]) -> Result<TagSpec, String> {
    let scope = match parts[0] {
        "session" => TagScope::Session,
        "host_src" => TagScope::Host { src: true },
        "host_dst" | "host" => TagScope::Host { src: false },
        o => {
            return Err(format!(
                "tag type must be session, host_src or host_dst, not '{o}'"
            ))
        }
    };
    let mut limit = None;
    for p in &parts[1..] {
        let (m, n) = p
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("invalid tag option '{p}' (packets|seconds|bytes N)"))?;
        let metric = match m {
            "packets" => TagMetric::Packets,
            "seconds" => TagMetric::Seconds,
            "bytes" => TagMetric::Bytes,
            o => {
                return Err(format!(
                    "invalid tag metric '{o}' (packets, seconds or bytes)"
                ))
            }
        };
        let n = n.trim();
        if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) {
            return Err(format!("invalid tag count '{n}'"));
        }
        let count: u32 = n
            .parse()
            .map_err(|_| format!("tag count '{n}' out of range"))?;
        limit.get_or_insert((metric, count));
    }
    let (metric, count) = limit.unwrap_or((TagMetric::Packets, TAG_MAX_PACKETS));
    Ok(TagSpec {
        scope,
        count: if metric == TagMetric::Packets {
            count.min(TAG_MAX_PACKETS)
        } else {
            count
        },
        metric,
    })
}

/// Suricata's DETECT_TAG_MAX_PKTS: the default and largest packet count.
const TAG_MAX_PACKETS: u32 = 256;

/// `stream_size:<server|client|both|either>,<op>,<N>`.
fn validate_stream_size(v: &str) -> Result<(), String> {
    let parts: Vec<&str> = split_commas(strip_quotes(v)).collect();
    if parts.len() != 3 {
        return Err("stream_size needs 'server|client|both|either,operator,number'".into());
    }
    if !matches!(parts[0], "server" | "client" | "both" | "either") {
        return Err(format!("invalid stream_size direction '{}'", parts[0]));
    }
    if !matches!(parts[1], "<" | "<=" | ">" | ">=" | "=" | "!=") {
        return Err(format!("invalid stream_size operator '{}'", parts[1]));
    }
    parse_u32(parts[2])?;
    Ok(())
}

/// `tcp.session:` value (Suricata 9's detect-tcp-session.c): a
/// comma-separated set of `setup`, `established`, `closing`, each once,
/// no spaces, at most 32 characters.
fn parse_tcp_session(v: &str) -> Result<u8, String> {
    const ACCEPTED: &str = "accepted tokens are {setup, established, closing}";
    if v.is_empty() {
        return Err(
            "tcp.session requires a value: comma-separated subset of {setup, established, closing}"
                .to_string(),
        );
    }
    if v.len() > 32 {
        return Err(format!(
            "tcp.session argument too long ({} > 32): {ACCEPTED}",
            v.len()
        ));
    }
    let mut bits = 0u8;
    for tok in v.split(',') {
        let b = match tok {
            "setup" => TCP_SESSION_SETUP,
            "established" => TCP_SESSION_ESTABLISHED,
            "closing" => TCP_SESSION_CLOSING,
            "" => return Err(format!("tcp.session: empty token in '{v}'; {ACCEPTED}")),
            t => {
                return Err(format!(
                    "tcp.session: unknown token '{t}' in '{v}'; {ACCEPTED}"
                ))
            }
        };
        if bits & b != 0 {
            return Err(format!(
                "tcp.session: duplicate token '{tok}' in '{v}'; {ACCEPTED}"
            ));
        }
        bits |= b;
    }
    Ok(bits)
}
