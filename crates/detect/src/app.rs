//! Detection on application-layer transactions: rules that inspect sticky
//! buffers (`http.uri`, `dns.query`, `tls.sni` ...) run against the
//! transactions the app-layer parsers build, fire at most once per
//! transaction, and are prefiltered per buffer type.
//!
//! # How a rule becomes a transaction rule
//!
//! A rule with any application-layer buffer (or `urilen`) is a
//! transaction rule: it is kept out of the packet rule groups and only
//! evaluated by [`DetectEngine::inspect_tx`]. Each of its app-layer lists
//! (buffer plus transforms) becomes a [`TxList`]; its packet-buffer
//! keywords (`content` without a sticky buffer, `tcp.hdr` ...) are still
//! matched against the current packet's payload or stream chunk.
//!
//! The direction a rule inspects ([`AppSpec::dir`]), as Suricata decides
//! it per buffer: buffers that only exist in responses (`http.stat_code`,
//! `http.server`, `http.response_body`, `ja3s.*`, ...) make it a
//! to-client rule, request-only buffers (`http.uri`, `http.host`,
//! `dns.query`, `tls.sni`, `ja3.*`, ...) a to-server rule; a rule with
//! both is inspected to the client (the parser returns request buffers
//! whatever the direction). Buffers that exist both ways (`http.header`,
//! `file.data`, `http.content_type`, certificates, `tls.random` ...)
//! follow `flow:to_server` / `flow:to_client`, defaulting to the client
//! for `file.data`, TLS certificate buffers and DNS answer names, to the
//! server otherwise. DNS and TLS rules without a one-sided keyword and
//! without a `flow` direction are inspected in both directions
//! ([`AppSpec::both_dirs`]).
//!
//! # Prefilter
//!
//! Per (protocol, direction), the rules with a fast pattern are grouped by
//! the list of their fast pattern (buffer plus transforms) into one
//! prefilter engine each, built by the same [`vigil_prefilter::Selector`]
//! as the packet groups; rules without one are checked on every
//! transaction of their direction. Rule ports are not used for grouping
//! (header ports and addresses are still verified against the packet).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use vigil_applayer::transforms::{Base64Mode, Base64Options, Pcrexform, Subslice, Transform};
use vigil_applayer::BufferId;
pub use vigil_applayer::{AppLayerState, AppProto, Direction as AppDir, TxId};
use vigil_prefilter::{Pattern, PrefilterEngine, Selector};
use vigil_rules::{FlowOpts, IntCmp, TransformSpec};

use crate::inspect::{
    conclude, packet_checks, packet_payload_of, payload_verdict, push_unique, store_captures,
    var_tests_match, DetectScratch, FlowDetectState, Hit, PacketInput, Verdict,
};
use crate::payload::CompiledPayload;
use crate::rule::{CompiledRule, Skip};
use crate::DetectEngine;

/// What is known of a flow's application protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AppProtoState {
    /// Detection has not decided yet.
    #[default]
    Unknown,
    Detected(AppProto),
    /// Every probe rejected the flow (Suricata's `failed`).
    Failed,
}

impl AppProtoState {
    /// The protocol, when detected.
    pub fn proto(self) -> Option<AppProto> {
        match self {
            AppProtoState::Detected(p) => Some(p),
            _ => None,
        }
    }
}

/// One transaction of a flow, inspected in one direction.
#[derive(Clone, Copy)]
pub struct TxInput<'a> {
    pub app: &'a AppLayerState,
    pub tx: TxId,
    pub dir: AppDir,
}

/// Per-transaction detection state the worker keeps: which rules already
/// fired on it, in which direction (a transaction rule fires once per
/// transaction and direction, as Suricata keeps its detect state per
/// direction; most rules are only inspected in one).
#[derive(Debug, Default, Clone)]
pub struct TxDetectState {
    pub fired: Vec<(u32, AppDir)>,
    /// Per direction (to-server, to-client): the worker already inspected
    /// this side once before it was complete. It is inspected again only
    /// when complete, so a growing body is not rescanned on every packet.
    pub partial: [bool; 2],
    /// A config rule keeps this transaction out of the transaction log.
    pub no_log: bool,
    /// The transaction's `fileinfo` records were written (the worker
    /// writes them once detection is done with it).
    pub files_logged: bool,
}

/// A test on the flow's application protocol: a rule header naming
/// `http`/`dns`/`tls` (packet rules), or `app-layer-protocol:[!]name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppTest {
    /// `Detected(p)` or `Failed`.
    pub want: AppProtoState,
    pub negated: bool,
}

impl AppTest {
    /// While the protocol is not known yet neither form matches (as
    /// Suricata's `app-layer-protocol`, which needs a decided protocol).
    pub fn matches(&self, st: AppProtoState) -> bool {
        if st == AppProtoState::Unknown {
            return false;
        }
        // As Suricata's AppProtoEquals: `dcerpc` also means DCERPC
        // carried over SMB (named pipes).
        let eq = st == self.want
            || (self.want == AppProtoState::Detected(AppProto::Dcerpc)
                && st == AppProtoState::Detected(AppProto::Smb))
            // `http` means either version.
            || (self.want == AppProtoState::Detected(AppProto::Http)
                && st == AppProtoState::Detected(AppProto::Http2));
        eq != self.negated
    }
}

/// One application-layer list of a transaction rule: a buffer, the
/// transforms applied to it, and the payload program run on the result.
#[derive(Debug)]
pub struct TxList {
    pub buffer: BufferId,
    /// The transforms as written (part of the list's identity).
    pub transforms: Vec<TransformSpec>,
    pub xf: Vec<Transform>,
    pub prog: CompiledPayload,
    /// `absent` on the list: `Some(false)` matches only when the buffer
    /// is not there (or empty), `Some(true)` (`or_else`) also when `prog`
    /// matches it.
    pub absent: Option<bool>,
    /// Index of (buffer, transforms) in [`TxGroups::lists`], set when the
    /// engine is built: lists with the same key share their computed
    /// bytes within one inspection.
    pub key: u32,
}

/// What a transaction rule inspects.
#[derive(Debug)]
pub struct AppSpec {
    pub proto: AppProto,
    pub dir: AppDir,
    /// App-layer lists in rule order; all must match (a multi-buffer
    /// list matches when any instance does).
    pub lists: Vec<TxList>,
    /// `urilen`: the comparison and whether it is on the raw URI.
    pub urilen: Option<(IntCmp, bool)>,
    /// Index in `lists` of the list the fast pattern is on.
    pub fast_list: Option<usize>,
    /// Tests on transaction fields (`tls.version`, `dns.opcode` ...).
    pub checks: Vec<TxCheck>,
    /// Also inspected in the other direction than `dir` (see
    /// [`spec_directions`]).
    pub both_dirs: bool,
}

impl AppSpec {
    /// Whether a pcre of the lists stores capture groups in variables.
    pub fn captures(&self) -> bool {
        self.lists.iter().any(|l| l.prog.captures())
    }
}

/// The versions `ssl_version` names, in order.
pub const SSL_VERSIONS: [&str; 6] = ["sslv2", "sslv3", "tls1.0", "tls1.1", "tls1.2", "tls1.3"];

/// The index in [`SSL_VERSIONS`] of a version on the wire (TLS 1.3
/// drafts count as 1.3).
fn ssl_version_index(v: u16) -> Option<usize> {
    Some(match v {
        0x0002 => 0,
        0x0300 => 1,
        0x0301 => 2,
        0x0302 => 3,
        0x0303 => 4,
        0x0304 => 5,
        v if v >> 8 == 0x7f && (v & 0xff) <= 28 => 5,
        _ => return None,
    })
}

fn parse_ssl_version(v: &str) -> Result<TxCheck, String> {
    let t = v.trim_start();
    let (negate, t) = match t.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let mut set = [false; 6];
    let mut any = false;
    for w in t
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
    {
        let i = SSL_VERSIONS
            .iter()
            .position(|k| k.eq_ignore_ascii_case(w))
            .ok_or_else(|| format!("ssl_version: unknown value '{w}'"))?;
        if set[i] {
            return Err(format!("ssl_version: duplicate value '{w}'"));
        }
        set[i] = true;
        any = true;
    }
    if !any {
        return Err("ssl_version: empty value".into());
    }
    Ok(TxCheck::SslVersion { set, negate })
}

/// A test on a transaction field that is not a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxCheck {
    /// `filesize`: a file of the inspected side has this size (smaller
    /// or equal sizes are only known once the file is closed).
    FileSize(IntCmp),
    /// `filemd5` / `filesha1` / `filesha256:[!]list`: a closed file's
    /// hash is (not) in the list.
    FileHash {
        kind: vigil_applayer::files::HashKind,
        list: Arc<std::collections::HashSet<String>>,
        negated: bool,
    },
    /// `filemagic:[!]"text"`: libmagic's type of a file contains (does
    /// not contain) the text, case-insensitively.
    FileMagic { text: String, negated: bool },
    /// `filestore`: the side has a file (the worker stores the files of
    /// the rule's matches).
    FileStore,
    /// `tls.version`: the version of the inspected side's hello.
    TlsVersion(u16),
    /// `ssl_version:[!]v1,v2...`: the inspected side's version is one of
    /// (`negate`: is a known version and none of) `sslv2`, `sslv3`,
    /// `tls1.0` ... `tls1.3`, by index in [`SSL_VERSIONS`].
    SslVersion { set: [bool; 6], negate: bool },
    /// `tls.fingerprint:[!]"xx:xx..."`: the server certificate's SHA-1
    /// fingerprint equals (`negate`: differs from) the value, compared
    /// without case.
    TlsFingerprint { value: String, negate: bool },
    /// `dns.opcode`.
    DnsOpcode(IntCmp),
    /// `dns.rcode`: the header's rcode, in either message.
    DnsRcode(IntCmp),
    /// `dns.rrtype`, a multi-integer: the queries' types in a request,
    /// the answers' types in a response.
    DnsRrtype(MultiUint),
    /// `app-layer-event:<proto>.<name>`: the parser raised this event on
    /// the transaction (Suricata's name, upper case).
    Event(AppProto, &'static str),
    /// `app-layer-state`: the transaction's progress in the state's
    /// direction compares with the state's value (Suricata's numbering,
    /// from [`AppLayerState::state_progress`]).
    AppState {
        proto: AppProto,
        to_server: bool,
        op: vigil_rules::AppStateOp,
        progress: u8,
    },
    /// `ftp.dynamic_port`: the data connection port a `PORT`/`EPRT`
    /// command or a `227`/`229` reply set.
    FtpDynamicPort(IntCmp),
    /// `ftp.mode:active|passive` (true: active), on a transaction whose
    /// command set a data connection port.
    FtpMode(bool),
    /// `ftp.reply_received:yes|no`, on a transaction with a command.
    FtpReplyReceived(bool),
    /// `ftpbounce`: a `PORT` command names an IPv4 address other than
    /// the client's.
    FtpBounce,
    /// `dcerpc.iface:<uuid>[,<op><version>][,any_frag]`: an interface
    /// accepted for the request's context id has this UUID and a major
    /// version the comparison admits.
    DcerpcIface {
        uuid: [u8; 16],
        version: Option<IntCmp>,
        any_frag: bool,
    },
    /// `dcerpc.opnum`: the request's opnum.
    DcerpcOpnum(DceOpnum),
    /// `http2.frametype`: a frame of this type (name or number) in the
    /// inspected direction of the stream.
    Http2FrameType(u8),
    /// `http2.errorcode`: a RST_STREAM or GOAWAY of the direction carries
    /// this error code.
    Http2ErrorCode(u32),
    /// `http2.priority`: a PRIORITY weight (or HEADERS priority) of the
    /// direction.
    Http2Priority(IntCmp),
    /// `http2.window`: a WINDOW_UPDATE increment of the direction.
    Http2Window(IntCmp),
    /// `http2.size_update`: an HPACK dynamic table size update.
    Http2SizeUpdate(IntCmp),
    /// `http2.settings:NAME[CMP VALUE]`: a SETTINGS parameter (whose
    /// value compares) in the direction.
    Http2Settings { id: u16, value: Option<IntCmp> },
    /// An integer field of a transaction (`mqtt.type`, `rfb.sectype`,
    /// `dhcp.leasetime`, `enip_command` ...), as a multi-integer: a
    /// single-valued field is an array of one.
    Uint(vigil_applayer::UintField, MultiUint),
    /// `cip_service`: the CIP service (with class and attribute) of the
    /// ENIP transaction's message in the inspected direction.
    CipService(vigil_applayer::enip::CipServiceSpec),
    /// `modbus`: function, access, address/value or unit of a Modbus
    /// transaction's request (its response when it has none).
    Modbus(vigil_applayer::modbus::ModbusSpec),
    /// `nfs_procedure`: a number compares with the transaction's
    /// procedures whatever its NFS version; a name is the procedure of
    /// that name in the transaction's version (`WRITE`: 8 in v2, 7 in
    /// v3, 38 in v4), as Suricata's `DetectNfsProcedureData`.
    NfsProcedure(NfsProcedureSpec),
    /// `smb.version`: the SMB version of the transaction's request (1,
    /// or 2 for SMB2/3).
    SmbVersion(IntCmp),
    /// An integer keyword of a protocol parsed a message at a time
    /// (`krb5_msg_type`, `krb5_err_code` ...): any of the message's
    /// values under `key` passes the comparison.
    MsgInt {
        proto: AppProto,
        key: String,
        cmp: IntCmp,
    },
    /// `krb5.ticket_encryption:[!]weak` or a list of encryption types
    /// (names or numbers, each `!`-negated or not): the ticket's type is
    /// (not) weak, is one of the listed, or, with negated entries, none of
    /// them.
    Krb5TicketEnc {
        weak: Option<bool>,
        pos: Vec<i64>,
        neg: Vec<i64>,
    },
}

/// `ike.chosen_sa_attribute:<name>=<value>`: the server's chosen
/// transform has that attribute with that value.
fn parse_ike_sa_attribute(v: &str) -> Result<TxCheck, String> {
    let (name, value) = v
        .split_once('=')
        .ok_or_else(|| format!("ike.chosen_sa_attribute: expected <name>=<value>, got '{v}'"))?;
    let kind = vigil_applayer::ike::attribute_by_name(name)
        .ok_or_else(|| format!("ike.chosen_sa_attribute: unknown attribute '{name}'"))?;
    let n: u64 = value
        .trim()
        .parse()
        .map_err(|_| format!("ike.chosen_sa_attribute: invalid value '{value}'"))?;
    Ok(TxCheck::MsgInt {
        proto: AppProto::Ike,
        key: format!("ike.chosen_sa_attribute:{kind}"),
        cmp: vigil_rules::IntCmp::Eq(n),
    })
}

/// An integer keyword whose values also have names (Suricata's enum
/// integers): `[!]name`, or the integer syntax.
fn parse_named_uint(
    v: &str,
    proto: AppProto,
    key: &str,
    max: u64,
    by_name: impl Fn(&str) -> Option<u64>,
) -> Result<TxCheck, String> {
    let t = v.trim();
    let (neg, body) = match t.strip_prefix('!') {
        Some(b) => ("!", b.trim()),
        None => ("", t),
    };
    let num = match by_name(body) {
        Some(n) => format!("{neg}{n}"),
        None => t.to_string(),
    };
    vigil_rules::parse_uint_cmp(&num, max)
        .map(|cmp| TxCheck::MsgInt {
            proto,
            key: key.into(),
            cmp,
        })
        .map_err(|e| format!("invalid {key} '{v}': {e}"))
}

/// `nfs_procedure`'s value: a number (Suricata's integer syntax), or a
/// procedure name (optionally negated) looked up per NFS version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NfsProcedureSpec {
    Num(IntCmp),
    /// The comparison in NFSv2, v3 and v4 (`None`: no such name there).
    Names([Option<IntCmp>; 3]),
}

impl NfsProcedureSpec {
    pub fn parse(v: &str) -> Result<Self, String> {
        let t = unquote(v.trim());
        let max = u64::from(u32::MAX);
        if let Ok(cmp) = vigil_rules::parse_uint_cmp(t, max) {
            return Ok(NfsProcedureSpec::Num(cmp));
        }
        let (neg, name) = match t.strip_prefix('!') {
            Some(n) => ("!", n.trim()),
            None => ("", t),
        };
        let per = [2, 3, 4].map(|ver| {
            vigil_applayer::nfs::procedure_by_name(ver, name)
                .and_then(|n| vigil_rules::parse_uint_cmp(&format!("{neg}{n}"), max).ok())
        });
        if per.iter().all(Option::is_none) {
            return Err(format!("nfs_procedure: invalid value '{v}'"));
        }
        Ok(NfsProcedureSpec::Names(per))
    }

    /// Whether any of a transaction's procedures passes, its version
    /// choosing the table a name is looked up in.
    pub fn matches(&self, version: &[u64], procs: &[u64]) -> bool {
        let cmp = match self {
            NfsProcedureSpec::Num(c) => Some(*c),
            NfsProcedureSpec::Names(per) => match version.first() {
                Some(2) => per[0],
                Some(3) => per[1],
                Some(_) => per[2],
                None => None,
            },
        };
        cmp.is_some_and(|c| procs.iter().any(|&p| c.matches(p)))
    }
}

/// `krb5_msg_type`: a number or a name (`AS_REQ` ...), with Suricata's
/// integer operators.
fn parse_krb5_msg_type(v: &str) -> Result<TxCheck, String> {
    let t = v.trim();
    let (neg, body) = match t.strip_prefix('!') {
        Some(b) => ("!", b.trim()),
        None => ("", t),
    };
    let num = match vigil_applayer::krb5::msg_type_by_name(body) {
        Some(n) => format!("{neg}{n}"),
        None => t.to_string(),
    };
    vigil_rules::parse_uint_cmp(&num, u64::from(u32::MAX))
        .map(|cmp| TxCheck::MsgInt {
            proto: AppProto::Krb5,
            key: "krb5_msg_type".into(),
            cmp,
        })
        .map_err(|e| format!("invalid krb5_msg_type '{v}': {e}"))
}

fn parse_krb5_ticket_enc(v: &str) -> Result<TxCheck, String> {
    let t = v.trim();
    match t {
        "weak" => {
            return Ok(TxCheck::Krb5TicketEnc {
                weak: Some(true),
                pos: Vec::new(),
                neg: Vec::new(),
            })
        }
        "!weak" => {
            return Ok(TxCheck::Krb5TicketEnc {
                weak: Some(false),
                pos: Vec::new(),
                neg: Vec::new(),
            })
        }
        _ => {}
    }
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    for item in t.split(',') {
        let item = item.trim();
        let (list, name) = match item.strip_prefix('!') {
            Some(n) => (&mut neg, n),
            None => (&mut pos, item),
        };
        match vigil_applayer::krb5::etype_by_name(name) {
            Some(e) => list.push(i64::from(e)),
            None => return Err(format!("krb5.ticket_encryption: unknown type '{item}'")),
        }
    }
    Ok(TxCheck::Krb5TicketEnc {
        weak: None,
        pos,
        neg,
    })
}

/// The values `dcerpc.opnum` admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DceOpnum {
    /// `12,24,62-65`: any of these numbers or inclusive ranges.
    Ranges(Vec<(u32, u32)>),
    /// `>10`, `!3` ...: an integer comparison.
    Cmp(IntCmp),
}

impl DceOpnum {
    fn parse(v: &str) -> Result<DceOpnum, String> {
        let ranges: Option<Vec<(u32, u32)>> = v
            .split(',')
            .map(|r| {
                let r = r.trim();
                match r.split_once('-') {
                    Some((a, b)) => {
                        let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                        (a <= b).then_some((a, b))
                    }
                    None => r.parse().ok().map(|a| (a, a)),
                }
            })
            .collect();
        match ranges {
            Some(r) if !r.is_empty() => Ok(DceOpnum::Ranges(r)),
            _ => vigil_rules::parse_uint_cmp(v, 65535)
                .map(DceOpnum::Cmp)
                .map_err(|e| format!("invalid dcerpc.opnum '{v}': {e}")),
        }
    }

    fn matches(&self, opnum: u16) -> bool {
        match self {
            DceOpnum::Ranges(r) => r
                .iter()
                .any(|&(a, b)| a <= u32::from(opnum) && u32::from(opnum) <= b),
            DceOpnum::Cmp(c) => c.matches(u64::from(opnum)),
        }
    }
}

/// `dcerpc.iface`'s value: a UUID, an optional version comparison
/// (`<`, `>`, `=`, `!` and a number up to 65535) and `any_frag`.
fn parse_dce_iface(v: &str) -> Result<TxCheck, String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let bad = || format!("invalid dcerpc.iface '{v}'");
    let uuid = vigil_applayer::dcerpc::parse_uuid(parts[0]).ok_or_else(bad)?;
    let version = |s: &str| {
        let s = s.strip_prefix('=').unwrap_or(s);
        if s.is_empty() || s.starts_with('-') {
            return Err(bad());
        }
        vigil_rules::parse_uint_cmp(s, 65535).map_err(|_| bad())
    };
    let (version, any_frag) = match parts.as_slice() {
        [_] => (None, false),
        [_, "any_frag"] => (None, true),
        [_, v] => (Some(version(v)?), false),
        [_, v, "any_frag"] => (Some(version(v)?), true),
        _ => return Err(bad()),
    };
    Ok(TxCheck::DcerpcIface {
        uuid,
        version,
        any_frag,
    })
}

/// Which elements of an array a multi-integer keyword
/// (`keyword:value[,index[,subslice]]`) requires to match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiIndex {
    /// Any element (the default).
    Any,
    /// Every element, and at least one.
    All,
    /// Every element; no element matches.
    AllOrAbsent,
    /// Any element, or no element at all.
    OrAbsent,
    /// The element at an index, negative counting from the end; `oob`
    /// (`oob_or N`) also matches when there is no such element.
    At { index: i32, oob: bool },
    /// `nb CMP`: the number of matching elements.
    Nb(IntCmp),
    /// `count CMP`: the number of elements, whatever their value.
    Count(IntCmp),
}

/// A multi-integer test (Suricata's `DetectUintArrayData`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiUint {
    pub cmp: IntCmp,
    pub index: MultiIndex,
    /// Subslice `start:end` of the array (negative from the end; an end
    /// of 0 is the array's end).
    pub slice: (i32, i32),
}

impl MultiUint {
    pub fn parse(v: &str, max: u64) -> Result<MultiUint, String> {
        let parts: Vec<&str> = v.split(',').map(str::trim).collect();
        if parts.len() > 3 {
            return Err("too many comma-separated parts in multi-integer".into());
        }
        let int = |s: &str| {
            s.trim()
                .parse::<i32>()
                .map_err(|_| format!("bad multi-integer index '{s}'"))
        };
        if parts.len() == 1 {
            if let Some(c) = parts[0].strip_prefix("count") {
                return Ok(MultiUint {
                    cmp: vigil_rules::parse_uint_cmp("0", max)?,
                    index: MultiIndex::Count(vigil_rules::parse_uint_cmp(
                        c.trim(),
                        u32::MAX as u64,
                    )?),
                    slice: (0, 0),
                });
            }
        }
        let cmp = vigil_rules::parse_uint_cmp(parts[0], max)?;
        let index = match parts.get(1).copied() {
            None | Some("any") => MultiIndex::Any,
            Some("all") => MultiIndex::All,
            Some("all_or_absent") => MultiIndex::AllOrAbsent,
            Some("or_absent") => MultiIndex::OrAbsent,
            Some(x) => {
                if let Some(n) = x.strip_prefix("nb") {
                    MultiIndex::Nb(vigil_rules::parse_uint_cmp(n.trim(), u32::MAX as u64)?)
                } else if let Some(n) = x.strip_prefix("oob_or") {
                    MultiIndex::At {
                        index: int(n)?,
                        oob: true,
                    }
                } else {
                    MultiIndex::At {
                        index: int(x)?,
                        oob: false,
                    }
                }
            }
        };
        let slice = match parts.get(2) {
            None => (0, 0),
            Some(s) => {
                let (a, b) = s
                    .split_once(':')
                    .ok_or_else(|| format!("bad multi-integer subslice '{s}'"))?;
                let (a, b) = (int(a)?, int(b)?);
                if (a > 0 && b > 0 || a < 0 && b < 0) && b <= a {
                    return Err(format!("subslice must end after start {a} {b}"));
                }
                (a, b)
            }
        };
        Ok(MultiUint { cmp, index, slice })
    }

    /// Whether the (complete) array `values` matches.
    pub fn matches(&self, values: &[u64]) -> bool {
        let len = values.len() as i64;
        let (s, e) = (self.slice.0 as i64, self.slice.1 as i64);
        let start = if s >= 0 { s } else { len + s };
        let end = if e > 0 { e } else { len + e };
        let sub: &[u64] = if start < 0 || end > len || start >= end {
            &[]
        } else {
            &values[start as usize..end as usize]
        };
        let hit = |v: &u64| self.cmp.matches(*v);
        match &self.index {
            MultiIndex::Any => sub.iter().any(hit),
            MultiIndex::OrAbsent => sub.is_empty() || sub.iter().any(hit),
            MultiIndex::All => !sub.is_empty() && sub.iter().all(hit),
            MultiIndex::AllOrAbsent => sub.iter().all(hit),
            MultiIndex::Nb(c) => c.matches(sub.iter().filter(|v| hit(v)).count() as u64),
            MultiIndex::Count(c) => c.matches(sub.len() as u64),
            MultiIndex::At { index, oob } => {
                let i = if *index < 0 {
                    sub.len() as i64 + *index as i64
                } else {
                    *index as i64
                };
                match usize::try_from(i).ok().and_then(|i| sub.get(i)) {
                    Some(v) => hit(v),
                    None => *oob,
                }
            }
        }
    }
}

/// `http2.settings:NAME[CMP VALUE]` (`SETTINGS_ENABLE_PUSH=0`,
/// `SETTINGS_HEADER_TABLE_SIZE>4096`).
fn parse_http2_settings(v: &str) -> Result<TxCheck, String> {
    let v = v.trim();
    let at = v.find(['<', '>', '=', '!']).unwrap_or(v.len());
    let (name, cmp) = (v[..at].trim(), v[at..].trim());
    let id = vigil_applayer::http2::settings_id(name)
        .or_else(|| name.parse().ok())
        .ok_or_else(|| format!("http2.settings: unknown setting '{name}'"))?;
    let value = if cmp.is_empty() {
        None
    } else {
        let c = cmp.strip_prefix('=').unwrap_or(cmp);
        Some(vigil_rules::parse_uint_cmp(c.trim(), u64::from(u32::MAX))?)
    };
    Ok(TxCheck::Http2Settings { id, value })
}

impl TxCheck {
    /// The check a keyword denotes; `None` when the keyword is not one,
    /// `Some(Err)` for a bad value.
    pub fn parse(keyword: &str, value: &str) -> Option<Result<TxCheck, String>> {
        let v = unquote(value);
        let uint = |max| vigil_rules::parse_uint_cmp(v, max);
        Some(match keyword {
            "filesize" | "file.size" => uint(u64::MAX).map(TxCheck::FileSize),
            "filemagic" => {
                let t = value.trim();
                let (negated, t) = match t.strip_prefix('!') {
                    Some(r) => (true, unquote(r.trim())),
                    None => (false, unquote(t)),
                };
                if t.is_empty() {
                    Err("filemagic: empty value".into())
                } else {
                    vigil_applayer::files::enable(vigil_applayer::files::FILE_MAGIC);
                    Ok(TxCheck::FileMagic {
                        text: t.to_ascii_lowercase(),
                        negated,
                    })
                }
            }
            "filestore" => parse_filestore(v),
            "tls.version" => match v {
                "1.0" => Ok(TxCheck::TlsVersion(0x0301)),
                "1.1" => Ok(TxCheck::TlsVersion(0x0302)),
                "1.2" => Ok(TxCheck::TlsVersion(0x0303)),
                "1.3" => Ok(TxCheck::TlsVersion(0x0304)),
                x => match x.strip_prefix("0x").map(|h| u16::from_str_radix(h, 16)) {
                    Some(Ok(n)) => Ok(TxCheck::TlsVersion(n)),
                    _ => Err(format!("invalid tls.version '{x}'")),
                },
            },
            "ssl_version" => parse_ssl_version(v),
            "tls.fingerprint" => {
                let t = value.trim();
                let (negate, t) = match t.strip_prefix('!') {
                    Some(r) => (true, unquote(r)),
                    None => (false, unquote(t)),
                };
                if t.is_empty() {
                    Err("tls.fingerprint: empty value".into())
                } else {
                    Ok(TxCheck::TlsFingerprint {
                        value: t.to_ascii_lowercase(),
                        negate,
                    })
                }
            }
            "dns.opcode" => uint(15).map(TxCheck::DnsOpcode),
            "dns.rcode" => uint(15).map(TxCheck::DnsRcode),
            "dns.rrtype" => MultiUint::parse(v, 65535).map(TxCheck::DnsRrtype),
            "dcerpc.iface" | "dce_iface" => parse_dce_iface(v),
            "dcerpc.opnum" | "dce_opnum" => DceOpnum::parse(v).map(TxCheck::DcerpcOpnum),
            "smb.version" => uint(255).map(TxCheck::SmbVersion),
            "krb5.msg_type" | "krb5_msg_type" => parse_krb5_msg_type(v),
            "krb5.err_code" | "krb5_err_code" => {
                uint(u64::from(u32::MAX)).map(|cmp| TxCheck::MsgInt {
                    proto: AppProto::Krb5,
                    key: "krb5_err_code".into(),
                    cmp,
                })
            }
            "krb5.ticket_encryption" => parse_krb5_ticket_enc(v),
            "ike.exchtype" => uint(255).map(|cmp| TxCheck::MsgInt {
                proto: AppProto::Ike,
                key: "ike.exchtype".into(),
                cmp,
            }),
            "ike.key_exchange_payload_length" | "ike.nonce_payload_length" => {
                uint(u64::from(u32::MAX)).map(|cmp| TxCheck::MsgInt {
                    proto: AppProto::Ike,
                    key: keyword.into(),
                    cmp,
                })
            }
            "ike.chosen_sa_attribute" => parse_ike_sa_attribute(v),
            "snmp.version" => uint(u64::from(u32::MAX)).map(|cmp| TxCheck::MsgInt {
                proto: AppProto::Snmp,
                key: "snmp.version".into(),
                cmp,
            }),
            "snmp.pdu_type" => parse_named_uint(
                v,
                AppProto::Snmp,
                "snmp.pdu_type",
                u64::from(u32::MAX),
                |n| vigil_applayer::snmp::pdu_type_by_name(n).map(u64::from),
            ),
            "snmp.trap_type" => parse_named_uint(v, AppProto::Snmp, "snmp.trap_type", 255, |n| {
                vigil_applayer::snmp::trap_type_by_name(n).map(u64::from)
            }),
            "ntp.version" | "ntp.stratum" => uint(255).map(|cmp| TxCheck::MsgInt {
                proto: AppProto::Ntp,
                key: keyword.into(),
                cmp,
            }),
            "ntp.mode" => parse_named_uint(v, AppProto::Ntp, "ntp.mode", 255, |n| {
                vigil_applayer::ntp::mode_by_name(n).map(u64::from)
            }),
            "ftp.dynamic_port" => uint(65535).map(TxCheck::FtpDynamicPort),
            "http2.frametype" => vigil_applayer::http2::frame_type_code(v.trim())
                .or_else(|| v.trim().parse().ok())
                .map(TxCheck::Http2FrameType)
                .ok_or_else(|| format!("http2.frametype: invalid value '{v}'")),
            "http2.errorcode" => vigil_applayer::http2::error_code(v.trim())
                .or_else(|| v.trim().parse().ok())
                .map(TxCheck::Http2ErrorCode)
                .ok_or_else(|| format!("http2.errorcode: invalid value '{v}'")),
            "http2.priority" => uint(255).map(TxCheck::Http2Priority),
            "http2.window" => uint(u64::from(u32::MAX)).map(TxCheck::Http2Window),
            "http2.size_update" => uint(u64::MAX).map(TxCheck::Http2SizeUpdate),
            "http2.settings" => parse_http2_settings(v),
            "ftp.mode" => match v.trim() {
                m if m.eq_ignore_ascii_case("active") => Ok(TxCheck::FtpMode(true)),
                m if m.eq_ignore_ascii_case("passive") => Ok(TxCheck::FtpMode(false)),
                m => Err(format!("ftp.mode: invalid value '{m}'")),
            },
            "cip.service" => {
                vigil_applayer::enip::CipServiceSpec::parse(v).map(TxCheck::CipService)
            }
            "modbus" => vigil_applayer::modbus::ModbusSpec::parse(v).map(TxCheck::Modbus),
            // Flag names: any of them set (Suricata 9 and the peer); a
            // number or `&mask=value` is the integer syntax.
            "dnp3.ind"
                if !v.trim().starts_with('&')
                    && !v.trim().starts_with(|c: char| c.is_ascii_digit()) =>
            {
                let mut mask = 0u64;
                for name in v.trim().trim_matches('"').split(',').map(str::trim) {
                    match vigil_applayer::dnp3::IND_NAMES
                        .iter()
                        .find(|(n, _)| *n == name)
                    {
                        Some((_, b)) => mask |= b,
                        None => return Some(Err(format!("dnp3_ind: unknown indicator '{name}'"))),
                    }
                }
                MultiUint::parse(&format!("&{mask}!=0"), 65535)
                    .map(|m| TxCheck::Uint(vigil_applayer::UintField::Dnp3Ind, m))
            }
            // `group,variation`: one of the message's object headers.
            "dnp3.obj" => v
                .trim()
                .split_once(',')
                .and_then(|(g, var)| {
                    Some((g.trim().parse::<u8>().ok()?, var.trim().parse::<u8>().ok()?))
                })
                .ok_or_else(|| format!("dnp3_obj: invalid value '{v}'"))
                .and_then(|(g, var)| {
                    MultiUint::parse(&(u64::from(g) << 8 | u64::from(var)).to_string(), 65535)
                })
                .map(|m| TxCheck::Uint(vigil_applayer::UintField::Dnp3Obj, m)),
            "nfs_procedure" => NfsProcedureSpec::parse(v).map(TxCheck::NfsProcedure),
            "ftp.reply_received" => match v.trim().to_ascii_lowercase().as_str() {
                "yes" | "on" | "true" | "1" => Ok(TxCheck::FtpReplyReceived(true)),
                "no" | "off" | "false" | "0" => Ok(TxCheck::FtpReplyReceived(false)),
                m => Err(format!("ftp.reply_received: invalid value '{m}'")),
            },
            k => {
                let f = vigil_applayer::UintField::from_keyword(k)?;
                f.normalize(value)
                    .and_then(|v| MultiUint::parse(&v, f.max()))
                    .map(|m| TxCheck::Uint(f, m))
            }
        })
    }

    /// The check for an `app-layer-event` value (`http.request_field_too_long`),
    /// when it names an event of a protocol Vigil parses.
    pub fn app_event(value: &str) -> Option<TxCheck> {
        let (proto, name) = unquote(value.trim()).split_once('.')?;
        Some(match proto {
            "http" | "http1" => TxCheck::Event(
                AppProto::Http,
                vigil_applayer::HttpEvent::from_name(name)?.name(),
            ),
            "dns" => TxCheck::Event(
                AppProto::Dns,
                vigil_applayer::DnsEvent::from_name(name)?.name(),
            ),
            "tls" | "ssl" => TxCheck::Event(
                AppProto::Tls,
                vigil_applayer::TlsEvent::from_name(name)?.name(),
            ),
            "dcerpc" => TxCheck::Event(
                AppProto::Dcerpc,
                vigil_applayer::DcerpcEvent::from_name(name)?.name(),
            ),
            "ftp" => TxCheck::Event(
                AppProto::Ftp,
                vigil_applayer::FtpEvent::from_name(name)?.name(),
            ),
            "sip" => TxCheck::Event(
                AppProto::Sip,
                vigil_applayer::SipEvent::from_name(name)?.name(),
            ),
            "http2" => TxCheck::Event(
                AppProto::Http2,
                vigil_applayer::Http2Event::from_name(name)?.name(),
            ),
            "mqtt" => TxCheck::Event(
                AppProto::Mqtt,
                vigil_applayer::MqttEvent::from_name(name)?.name(),
            ),
            "dhcp" => TxCheck::Event(
                AppProto::Dhcp,
                vigil_applayer::DhcpEvent::from_name(name)?.name(),
            ),
            "rfb" => TxCheck::Event(
                AppProto::Rfb,
                vigil_applayer::RfbEvent::from_name(name)?.name(),
            ),
            "smb" => TxCheck::Event(
                AppProto::Smb,
                vigil_applayer::SmbEvent::from_name(name)?.name(),
            ),
            "krb5" => TxCheck::Event(
                AppProto::Krb5,
                vigil_applayer::Krb5Event::from_name(name)?.name(),
            ),
            "ike" | "ikev2" => TxCheck::Event(
                AppProto::Ike,
                vigil_applayer::IkeEvent::from_name(name)?.name(),
            ),
            "snmp" => TxCheck::Event(
                AppProto::Snmp,
                vigil_applayer::SnmpEvent::from_name(name)?.name(),
            ),
            "websocket" => TxCheck::Event(
                AppProto::WebSocket,
                vigil_applayer::WebSocketEvent::from_name(name)?.name(),
            ),
            "pgsql" => TxCheck::Event(
                AppProto::Pgsql,
                vigil_applayer::PgsqlEvent::from_name(name)?.name(),
            ),
            "mdns" => TxCheck::Event(
                AppProto::Mdns,
                vigil_applayer::DnsEvent::from_name(name)?.name(),
            ),
            "llmnr" => TxCheck::Event(
                AppProto::Llmnr,
                vigil_applayer::LlmnrEvent::from_name(name)?.name(),
            ),
            "ldap" => TxCheck::Event(
                AppProto::Ldap,
                vigil_applayer::LdapEvent::from_name(name)?.name(),
            ),
            "ntp" => TxCheck::Event(
                AppProto::Ntp,
                vigil_applayer::NtpEvent::from_name(name)?.name(),
            ),
            "bittorrent-dht" => TxCheck::Event(
                AppProto::BittorrentDht,
                vigil_applayer::BittorrentDhtEvent::from_name(name)?.name(),
            ),
            "pop3" => TxCheck::Event(
                AppProto::Pop3,
                vigil_applayer::Pop3Event::from_name(name)?.name(),
            ),
            "nfs" => TxCheck::Event(
                AppProto::Nfs,
                vigil_applayer::NfsEvent::from_name(name)?.name(),
            ),
            "smtp" => TxCheck::Event(
                AppProto::Smtp,
                vigil_applayer::SmtpEvent::from_name(name)?.name(),
            ),
            "enip" => TxCheck::Event(
                AppProto::Enip,
                vigil_applayer::EnipEvent::from_name(name)?.name(),
            ),
            "modbus" => TxCheck::Event(
                AppProto::Modbus,
                vigil_applayer::ModbusEvent::from_name(name)?.name(),
            ),
            "dnp3" => TxCheck::Event(
                AppProto::Dnp3,
                vigil_applayer::Dnp3Event::from_name(name)?.name(),
            ),
            "quic" => TxCheck::Event(
                AppProto::Quic,
                vigil_applayer::QuicEvent::from_name(name)?.name(),
            ),
            _ => return None,
        })
    }

    /// A file keyword (`filesize`, `filemd5`, `filemagic`, `filestore`):
    /// it tests the files of any protocol that carries them, as
    /// `file.data` does.
    pub fn is_file(&self) -> bool {
        matches!(
            self,
            TxCheck::FileSize(_)
                | TxCheck::FileHash { .. }
                | TxCheck::FileMagic { .. }
                | TxCheck::FileStore
        )
    }

    pub fn proto(&self) -> AppProto {
        match self {
            TxCheck::FileSize(_)
            | TxCheck::FileHash { .. }
            | TxCheck::FileMagic { .. }
            | TxCheck::FileStore => AppProto::Http,
            TxCheck::Event(p, _)
            | TxCheck::MsgInt { proto: p, .. }
            | TxCheck::AppState { proto: p, .. } => *p,
            TxCheck::Krb5TicketEnc { .. } => AppProto::Krb5,
            TxCheck::TlsVersion(_)
            | TxCheck::SslVersion { .. }
            | TxCheck::TlsFingerprint { .. } => AppProto::Tls,
            TxCheck::DcerpcIface { .. } | TxCheck::DcerpcOpnum(_) => AppProto::Dcerpc,
            TxCheck::Http2FrameType(_)
            | TxCheck::Http2ErrorCode(_)
            | TxCheck::Http2Priority(_)
            | TxCheck::Http2Window(_)
            | TxCheck::Http2SizeUpdate(_)
            | TxCheck::Http2Settings { .. } => AppProto::Http2,
            TxCheck::Uint(f, _) => f.proto(),
            TxCheck::CipService(_) => AppProto::Enip,
            TxCheck::Modbus(_) => AppProto::Modbus,
            TxCheck::NfsProcedure(_) => AppProto::Nfs,
            TxCheck::SmbVersion(_) => AppProto::Smb,
            TxCheck::FtpDynamicPort(_)
            | TxCheck::FtpMode(_)
            | TxCheck::FtpReplyReceived(_)
            | TxCheck::FtpBounce => AppProto::Ftp,
            _ => AppProto::Dns,
        }
    }

    fn side(&self) -> Side {
        match self {
            c if c.is_file() => Side::Both(AppDir::ToClient),
            TxCheck::TlsFingerprint { .. } | TxCheck::FtpReplyReceived(_) => Side::Response,
            TxCheck::FtpBounce => Side::Request,
            // Suricata registers `modbus` to the server only.
            TxCheck::Modbus(_) => Side::Request,
            TxCheck::AppState { to_server, .. } => {
                if *to_server {
                    Side::Request
                } else {
                    Side::Response
                }
            }
            TxCheck::NfsProcedure(_) => Side::Request,
            TxCheck::Uint(f, _) => match f.direction() {
                Some(AppDir::ToServer) => Side::Request,
                Some(AppDir::ToClient) => Side::Response,
                None => Side::Both(AppDir::ToServer),
            },
            _ => Side::Both(AppDir::ToServer),
        }
    }

    /// The side of the HTTP/2 stream an `http2.*` integer check looks at
    /// (`None` for other checks).
    fn http2_side<'a>(&self, tx: &TxInput<'a>) -> Option<&'a vigil_applayer::http2::Http2Side> {
        if self.proto() != AppProto::Http2 || matches!(self, TxCheck::Event(..)) {
            return None;
        }
        let t = tx.app.as_http2()?.tx(tx.tx)?;
        Some(t.side(tx.dir))
    }

    /// Whether the check holds on `tx`; `client` is the flow's client
    /// address (`ftpbounce`).
    fn matches(&self, tx: &TxInput<'_>, client: Option<std::net::IpAddr>) -> bool {
        if self.is_file() {
            return self.file_matches(tx);
        }
        if let TxCheck::FtpDynamicPort(_)
        | TxCheck::FtpMode(_)
        | TxCheck::FtpReplyReceived(_)
        | TxCheck::FtpBounce = self
        {
            let Some(t) = tx.app.as_ftp().and_then(|s| s.tx(tx.tx)) else {
                return false;
            };
            return match self {
                TxCheck::FtpDynamicPort(c) => t.dynamic_port().is_some_and(|p| c.matches(p.into())),
                TxCheck::FtpMode(active) => {
                    t.command().is_some() && t.dynamic_port().is_some() && t.active() == *active
                }
                TxCheck::FtpReplyReceived(want) => {
                    t.command().is_some() && t.reply_received() == *want
                }
                _ => match (t.port_addr(), client) {
                    (Some(a), Some(std::net::IpAddr::V4(c))) => a != c,
                    _ => false,
                },
            };
        }
        if let Some(side) = self.http2_side(tx) {
            return match self {
                TxCheck::Http2FrameType(t) => side.frames.contains(t),
                TxCheck::Http2ErrorCode(c) => side.error_codes.contains(c),
                TxCheck::Http2Priority(c) => side.priorities.iter().any(|&p| c.matches(p.into())),
                TxCheck::Http2Window(c) => side.windows.iter().any(|&w| c.matches(w.into())),
                TxCheck::Http2SizeUpdate(c) => side.size_updates.iter().any(|&u| c.matches(u)),
                TxCheck::Http2Settings { id, value } => side
                    .settings
                    .iter()
                    .any(|&(i, v)| i == *id && value.is_none_or(|c| c.matches(v.into()))),
                _ => false,
            };
        }
        match self {
            TxCheck::DcerpcIface {
                uuid,
                version,
                any_frag,
            } => tx.app.dcerpc_view(tx.tx).is_some_and(|(s, id)| {
                s.iface_matches(
                    id,
                    uuid,
                    |v| version.is_none_or(|c| c.matches(u64::from(v))),
                    *any_frag,
                )
            }),
            TxCheck::Uint(f, m) => m.matches(&tx.app.uints(tx.tx, *f, tx.dir)),
            TxCheck::CipService(spec) => tx.app.cip_service(tx.tx, tx.dir, spec),
            TxCheck::Modbus(spec) => tx.app.modbus_match(tx.tx, spec),
            TxCheck::NfsProcedure(spec) => spec.matches(
                &tx.app
                    .uints(tx.tx, vigil_applayer::UintField::NfsVersion, tx.dir),
                &tx.app
                    .uints(tx.tx, vigil_applayer::UintField::NfsProcedure, tx.dir),
            ),
            TxCheck::DcerpcOpnum(o) => tx
                .app
                .dcerpc_view(tx.tx)
                .and_then(|(s, id)| s.opnum(id))
                .is_some_and(|n| o.matches(n)),
            TxCheck::MsgInt { key, cmp, .. } => tx
                .app
                .tx_ints(tx.tx, key, tx.dir)
                .into_iter()
                .any(|n| u64::try_from(n).is_ok_and(|n| cmp.matches(n))),
            TxCheck::Krb5TicketEnc { weak, pos, neg } => tx
                .app
                .tx_ints(tx.tx, "krb5.ticket_encryption", tx.dir)
                .into_iter()
                .any(|e| match weak {
                    Some(w) => {
                        i32::try_from(e).is_ok_and(vigil_applayer::krb5::weak_encryption) == *w
                    }
                    None => pos.contains(&e) || (!neg.is_empty() && !neg.contains(&e)),
                }),
            TxCheck::SmbVersion(c) => tx
                .app
                .as_smb()
                .and_then(|s| s.tx(tx.tx))
                .is_some_and(|t| c.matches(u64::from(t.version))),
            // SMB, ENIP, LDAP, Modbus and POP3 events belong to the
            // transaction whatever the direction inspected (Suricata
            // alerts both ways).
            TxCheck::Event(p, name) => tx.app.tx_events(tx.tx).iter().any(|(e, d)| {
                (*d == tx.dir
                    || matches!(
                        p,
                        AppProto::Smb
                            | AppProto::Enip
                            | AppProto::Ldap
                            | AppProto::Modbus
                            | AppProto::Pop3
                    ))
                    && e.name() == *name
            }),
            TxCheck::AppState {
                to_server,
                op,
                progress,
                ..
            } => {
                let dir = if *to_server {
                    AppDir::ToServer
                } else {
                    AppDir::ToClient
                };
                tx.dir == dir
                    && tx
                        .app
                        .state_progress(tx.tx, dir)
                        .is_some_and(|p| op.matches(p, *progress))
            }
            TxCheck::TlsVersion(want) => tx
                .app
                .as_tls()
                .and_then(|s| s.tx())
                .is_some_and(|t| t.id() == tx.tx && t.version(tx.dir) == *want),
            TxCheck::SslVersion { set, negate } => {
                let Some(t) = tx.app.as_tls().and_then(|s| s.tx()) else {
                    return false;
                };
                if t.id() != tx.tx {
                    return false;
                }
                match ssl_version_index(t.version(tx.dir)) {
                    Some(i) => set[i] != *negate,
                    None => false,
                }
            }
            TxCheck::TlsFingerprint { value, negate } => {
                let Some(t) = tx.app.as_tls().and_then(|s| s.tx()) else {
                    return false;
                };
                if t.id() != tx.tx {
                    return false;
                }
                match t.buffer(BufferId::TlsCertFingerprint, AppDir::ToClient) {
                    Some(f) => f.eq_ignore_ascii_case(value.as_bytes()) != *negate,
                    None => false,
                }
            }
            TxCheck::DnsOpcode(_) | TxCheck::DnsRcode(_) | TxCheck::DnsRrtype(_) => {
                let Some(t) = tx.app.as_dns().and_then(|s| s.tx(tx.tx)) else {
                    return false;
                };
                if t.dir != tx.dir {
                    return false;
                }
                match self {
                    TxCheck::DnsOpcode(c) => c.matches(t.opcode() as u64),
                    TxCheck::DnsRcode(c) => c.matches(t.rcode() as u64),
                    TxCheck::DnsRrtype(m) => {
                        let types: Vec<u64> = if t.is_request() {
                            t.query_rrtypes().map(u64::from).collect()
                        } else {
                            t.answer_rrtypes().map(u64::from).collect()
                        };
                        m.matches(&types)
                    }
                    _ => false,
                }
            }
            TxCheck::FtpDynamicPort(_)
            | TxCheck::FtpMode(_)
            | TxCheck::FtpReplyReceived(_)
            | TxCheck::FtpBounce => false,
            TxCheck::FileSize(_)
            | TxCheck::FileHash { .. }
            | TxCheck::FileMagic { .. }
            | TxCheck::FileStore => false,
            // Not an HTTP/2 flow.
            TxCheck::Http2FrameType(_)
            | TxCheck::Http2ErrorCode(_)
            | TxCheck::Http2Priority(_)
            | TxCheck::Http2Window(_)
            | TxCheck::Http2SizeUpdate(_)
            | TxCheck::Http2Settings { .. } => false,
        }
    }
}

impl TxCheck {
    /// A file keyword on the files of the inspected side. Hashes are
    /// only known once a file is closed (Suricata matches `filemd5` at
    /// the file's close); the type once libmagic has enough of the
    /// file ([`vigil_applayer::files::MAGIC_HEAD`] bytes) or it closed.
    fn file_matches(&self, tx: &TxInput<'_>) -> bool {
        use vigil_applayer::files;
        let list = files::tx_files(tx.app, tx.tx, tx.dir);
        if list.is_empty() {
            return false;
        }
        let complete = files::side_complete(tx.app, tx.tx, tx.dir);
        match self {
            TxCheck::FileSize(c) => list.iter().any(|f| {
                let n = f.data.len() as u64;
                c.matches(n) && (complete || matches!(c, IntCmp::Gt(_) | IntCmp::Ge(_)))
            }),
            TxCheck::FileHash {
                kind,
                list: hashes,
                negated,
            } => {
                complete
                    && list
                        .iter()
                        .any(|f| hashes.contains(&kind.digest(&f.data)) != *negated)
            }
            TxCheck::FileMagic { text, negated } => list.iter().any(|f| {
                if !complete && f.data.len() < files::MAGIC_HEAD {
                    return false;
                }
                files::magic(&f.data)
                    .is_some_and(|m| m.to_ascii_lowercase().contains(text.as_str()) != *negated)
            }),
            TxCheck::FileStore => true,
            _ => false,
        }
    }
}

/// `filemd5` / `filesha1` / `filesha256:[!]file`: the hash list, read
/// from the file (relative to the rule file's folder, else to the
/// working folder, as Suricata resolves rule-relative files).
pub fn file_hash_check(
    keyword: &str,
    value: Option<&str>,
    rule_file: &str,
) -> Result<TxCheck, String> {
    use vigil_applayer::files::{self, HashKind};
    let kind = match keyword {
        "filemd5" => HashKind::Md5,
        "filesha1" => HashKind::Sha1,
        _ => HashKind::Sha256,
    };
    let v = value.map(str::trim).unwrap_or_default();
    let (negated, name) = match v.strip_prefix('!') {
        Some(r) => (true, unquote(r.trim())),
        None => (false, unquote(v)),
    };
    if name.is_empty() {
        return Err(format!("{keyword}: needs a hash list file"));
    }
    let path = std::path::Path::new(name);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::path::Path::new(rule_file)
            .parent()
            .map(|d| d.join(path))
            .filter(|p| p.exists())
            .unwrap_or_else(|| path.to_path_buf())
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{keyword}: cannot read {}: {e}", path.display()))?;
    let list = files::parse_hash_list(&text, kind).map_err(|e| format!("{keyword}: {e}"))?;
    files::enable(kind.flag());
    Ok(TxCheck::FileHash {
        kind,
        list: Arc::new(list),
        negated,
    })
}

/// `filestore[:direction[,scope]]`: direction `request`/`to_server`,
/// `response`/`to_client` or `both`, scope `file`, `tx`, `ssn`/`flow`
/// (Suricata's options; Vigil stores the files of the matching
/// transaction's side).
fn parse_filestore(v: &str) -> Result<TxCheck, String> {
    let v = v.trim();
    if v.is_empty() {
        return Ok(TxCheck::FileStore);
    }
    let mut it = v.split(',').map(str::trim);
    let dir = it.next().unwrap_or_default();
    if !matches!(
        dir,
        "" | "request" | "to_server" | "response" | "to_client" | "both"
    ) {
        return Err(format!("filestore: unknown direction '{dir}'"));
    }
    if let Some(scope) = it.next() {
        if !matches!(scope, "file" | "tx" | "ssn" | "flow") {
            return Err(format!("filestore: unknown scope '{scope}'"));
        }
    }
    if it.next().is_some() {
        return Err("filestore: too many options".into());
    }
    Ok(TxCheck::FileStore)
}

/// Which side of a transaction a buffer belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Request,
    Response,
    /// Both; the direction used when the rule does not say.
    Both(AppDir),
}

fn side(b: BufferId) -> Side {
    use BufferId::*;
    match b {
        HttpMethod | HttpUri | HttpUriRaw | HttpRequestLine | HttpHost | HttpHostRaw
        | HttpUserAgent | HttpReferer | HttpAccept | HttpAcceptEnc | HttpAcceptLang
        | HttpRequestBody | HttpRequestHeader | DnsQuery | TlsSni | Ja3Hash | Ja3String
        | Ja4Hash | FtpCommand | FtpCommandData | SipMethod | SipUri | SipRequestLine
        | SmbShare | SmbNamedPipe | SmbNtlmsspUser | SmbNtlmsspDomain => Side::Request,
        HttpStatCode | HttpStatMsg | HttpResponseLine | HttpResponseBody | HttpServer
        | HttpLocation | HttpResponseHeader | Ja3sHash | Ja3sString | FtpReply
        | FtpCompletionCode | SipStatCode | SipStatMsg | SipResponseLine => Side::Response,
        FileData | FileName | TlsCertSubject | TlsCertIssuer | TlsCertSerial
        | TlsCertFingerprint | TlsCerts | DnsAnswersRrname | DnsResponseRrname => {
            Side::Both(AppDir::ToClient)
        }
        HttpHeader | HttpHeaderRaw | HttpHeaderNames | HttpCookie | HttpContentType
        | HttpContentLen | HttpConnection | HttpProtocol | HttpStart | DnsQueriesRrname
        | TlsRandom | TlsRandomTime | TlsRandomBytes | SshProto | SshSoftware | DcerpcStubData => {
            Side::Both(AppDir::ToServer)
        }
        // SIP: the version and header buffers exist in both directions.
        SipProtocol | SipFrom | SipTo | SipVia | SipUserAgent | SipContentType
        | SipContentLength => Side::Both(AppDir::ToServer),
        // HTTP/2: the header buffers exist in both directions.
        Http2HeaderName | Http2Header => Side::Both(AppDir::ToServer),
        MqttConnectClientId
        | MqttConnectUsername
        | MqttConnectPassword
        | MqttConnectWillTopic
        | MqttConnectWillMessage
        | MqttConnectProtocolString
        | MqttPublishTopic
        | MqttPublishMessage
        | MqttSubscribeTopic
        | MqttUnsubscribeTopic => Side::Both(AppDir::ToServer),
        RfbName => Side::Response,
        DhcpVendorClassId => Side::Both(AppDir::ToServer),
        // A message protocol's buffers exist in the message's direction.
        Krb5Cname | Krb5Sname | SnmpCommunity | SnmpUsm | SnmpTrapOid | SnmpTrapAddress => {
            Side::Both(AppDir::ToServer)
        }
        IkeInitSpi | IkeVendor => Side::Request,
        IkeRespSpi => Side::Response,
        IkeKeyExchange | IkeNonce => Side::Both(AppDir::ToServer),
        // SMTP: the client's commands and mail.
        SmtpHelo | SmtpMailFrom | SmtpRcptTo | EmailFrom | EmailTo | EmailCc | EmailSubject
        | EmailDate | EmailMessageId | EmailXMailer | EmailReceived | EmailUrl | EmailBodyMd5 => {
            Side::Request
        }
        // A frame of either side.
        WebsocketPayload => Side::Both(AppDir::ToServer),
        PgsqlQuery => Side::Request,
        EnipProductName | EnipServiceName => Side::Both(AppDir::ToServer),
        // DNP3: each message in its own direction.
        Dnp3Data => Side::Both(AppDir::ToServer),
        // QUIC: a packet's buffers, in its own direction.
        QuicSni | QuicVersion => Side::Both(AppDir::ToServer),
        QuicUa | QuicCyuHash | QuicCyuString => Side::Request,
        // mDNS and LLMNR: every buffer in the message's own direction.
        MdnsQueriesRrname
        | MdnsAnswersRrname
        | MdnsAuthoritiesRrname
        | MdnsAdditionalsRrname
        | MdnsResponseRrname
        | LlmnrQueriesRrname
        | LlmnrAnswersRrname
        | LlmnrAuthoritiesRrname
        | LlmnrAdditionalsRrname
        | LlmnrResponseRrname => Side::Both(AppDir::ToServer),
        // LDAP: the request's, then the responses'.
        LdapRequestDn | LdapRequestAttributeType => Side::Request,
        LdapResponsesDn | LdapResponsesMessage | LdapResponsesAttributeType => Side::Response,
        NtpReferenceId => Side::Both(AppDir::ToServer),
    }
}

/// The direction a transaction rule is inspected in (see the module
/// documentation).
pub fn rule_direction(buffers: &[BufferId], flow: &FlowOpts) -> AppDir {
    let sides: Vec<Side> = buffers.iter().map(|&b| side(b)).collect();
    direction_of(&sides, flow)
}

/// [`rule_direction`] for a rule's buffers and transaction checks, and
/// whether the rule is also inspected in the other direction. DNS
/// transactions are single messages (as in Suricata 8), and every DNS
/// keyword but `dns.query` is registered in both directions: a DNS rule
/// with no such keyword and no `flow` direction is inspected on requests
/// and responses alike. The same holds for TLS, whose keywords all exist
/// in both directions but `tls.sni`/`ja3`/`ja3s`/`ja4` and the legacy
/// `tls.fingerprint`.
pub(crate) fn spec_directions(
    proto: AppProto,
    buffers: &[BufferId],
    checks: &[TxCheck],
    flow: &FlowOpts,
) -> (AppDir, bool) {
    let mut sides: Vec<Side> = buffers
        .iter()
        .map(|&b| match (proto, b) {
            // SMTP's files are the mail's parts, sent to the server.
            (AppProto::Smtp, BufferId::FileData | BufferId::FileName) => Side::Request,
            // POP3's mail (RETR) comes from the server.
            (AppProto::Pop3, _) => Side::Response,
            _ => side(b),
        })
        .collect();
    sides.extend(checks.iter().map(TxCheck::side));
    let both = matches!(
        proto,
        AppProto::Dns
            | AppProto::Tls
            | AppProto::Ssh
            | AppProto::Dcerpc
            | AppProto::Ftp
            | AppProto::Sip
            | AppProto::Http
            | AppProto::Http2
            | AppProto::Dhcp
            | AppProto::Smb
            | AppProto::Krb5
            | AppProto::Snmp
            | AppProto::Ike
            | AppProto::Quic
            | AppProto::FtpData
            | AppProto::WebSocket
            | AppProto::Enip
            | AppProto::Mdns
            | AppProto::Llmnr
            | AppProto::Ntp
            | AppProto::BittorrentDht
            | AppProto::Modbus
            | AppProto::Dnp3
            | AppProto::Pop3
            | AppProto::Nfs
            | AppProto::Tftp
    ) && flow.to_client == flow.to_server
        && sides.iter().all(|s| matches!(s, Side::Both(_)));
    (direction_of(&sides, flow), both)
}

fn direction_of(sides: &[Side], flow: &FlowOpts) -> AppDir {
    if sides.contains(&Side::Response) {
        return AppDir::ToClient;
    }
    if sides.contains(&Side::Request) {
        return AppDir::ToServer;
    }
    if flow.to_client && !flow.to_server {
        return AppDir::ToClient;
    }
    if flow.to_server && !flow.to_client {
        return AppDir::ToServer;
    }
    if sides.contains(&Side::Both(AppDir::ToClient)) {
        AppDir::ToClient
    } else {
        AppDir::ToServer
    }
}

/// Whether detection implements a transform (by canonical name).
pub fn transform_supported(name: &str) -> bool {
    matches!(
        name,
        "dotprefix"
            | "domain"
            | "tld"
            | "strip_whitespace"
            | "compress_whitespace"
            | "to_lowercase"
            | "to_uppercase"
            | "url_decode"
            | "to_md5"
            | "to_sha1"
            | "to_sha256"
            | "xor"
            | "from_base64"
            | "header_lowercase"
            | "strip_pseudo_headers"
            | "pcrexform"
            | "subslice"
            | "gunzip"
            | "zlib_deflate"
    )
}

fn unquote(v: &str) -> &str {
    let t = v.trim();
    t.strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .unwrap_or(t)
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if s.is_empty() || !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// `xor: [offset O,] extract N K` (the key is `N` bytes of the buffer at
/// `K`, applied from `O`).
fn parse_xor_extract(v: Option<&str>) -> Option<Transform> {
    let (mut offset, mut extract) = (0usize, None);
    for part in v?.split(',') {
        let mut words = part.split_whitespace();
        match words.next()? {
            "offset" => offset = words.next()?.parse().ok()?,
            "extract" => {
                let n: usize = words.next()?.parse().ok()?;
                let k: usize = words.next()?.parse().ok()?;
                if n == 0 {
                    return None;
                }
                extract = Some((n, k));
            }
            _ => return None,
        }
        if words.next().is_some() {
            return None;
        }
    }
    let (n, k) = extract?;
    Some(Transform::XorExtract(offset, n, k))
}

/// `subslice: offset[, nbytes][, truncate]`.
fn parse_subslice(v: Option<&str>) -> Result<Subslice, String> {
    let v = v.ok_or("subslice needs an offset")?;
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let mut s = Subslice {
        offset: 0,
        nbytes: None,
        truncate: false,
    };
    let bad = || format!("subslice: invalid value '{v}'");
    let mut nums = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if *p == "truncate" && i == parts.len() - 1 && i > 0 {
            s.truncate = true;
        } else {
            nums.push(p.parse::<i64>().map_err(|_| bad())?);
        }
    }
    match nums[..] {
        [o] => s.offset = o,
        [o, n] if n != 0 => {
            s.offset = o;
            s.nbytes = Some(n);
        }
        _ => return Err(bad()),
    }
    Ok(s)
}

/// `gunzip` / `zlib_deflate` option `max-size N` (unit suffixes kb, mb,
/// gb); 1024 bytes by default.
fn parse_max_size(v: Option<&str>) -> Result<usize, String> {
    let Some(v) = v else { return Ok(1024) };
    let rest = v
        .trim()
        .strip_prefix("max-size")
        .ok_or_else(|| format!("unknown option '{v}'"))?
        .trim()
        .to_ascii_lowercase();
    let digits = rest.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let mult: usize = match rest[digits.len()..].trim() {
        "" | "b" => 1,
        "kb" | "kib" => 1 << 10,
        "mb" | "mib" => 1 << 20,
        "gb" | "gib" => 1 << 30,
        u => return Err(format!("unknown unit '{u}'")),
    };
    let n: usize = digits
        .trim()
        .parse()
        .map_err(|_| format!("invalid max-size '{v}'"))?;
    if n == 0 {
        return Err("max-size must be positive".into());
    }
    Ok(n.saturating_mul(mult))
}

/// `from_base64: bytes N, offset N, mode rfc4648|rfc2045|strict`.
fn parse_base64_opts(v: Option<&str>) -> Result<Base64Options, String> {
    let mut o = Base64Options::default();
    let Some(v) = v else { return Ok(o) };
    for part in unquote(v)
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let (k, val) = part
            .split_once(char::is_whitespace)
            .map(|(k, v)| (k, v.trim()))
            .ok_or_else(|| format!("from_base64: bad option '{part}'"))?;
        match k {
            "bytes" => {
                o.bytes = Some(
                    val.parse()
                        .map_err(|_| format!("from_base64: bad bytes '{val}'"))?,
                )
            }
            "offset" => {
                o.offset = val
                    .parse()
                    .map_err(|_| format!("from_base64: bad offset '{val}'"))?
            }
            "mode" => {
                o.mode = match val.to_ascii_lowercase().as_str() {
                    "rfc4648" => Base64Mode::Rfc4648,
                    "rfc2045" => Base64Mode::Rfc2045,
                    "strict" => Base64Mode::Strict,
                    m => return Err(format!("from_base64: unknown mode '{m}'")),
                }
            }
            _ => return Err(format!("from_base64: unknown option '{k}'")),
        }
    }
    Ok(o)
}

/// Builds the transforms of a list. Unknown names are not evaluable; bad
/// arguments make the rule invalid.
pub fn compile_transforms(specs: &[TransformSpec]) -> Result<Vec<Transform>, Skip> {
    let invalid = |name: &str, message: String| Skip::Invalid {
        keyword: name.to_string(),
        message,
    };
    specs
        .iter()
        .map(|t| {
            let arg = t.arg.as_deref();
            Ok(match t.name.as_str() {
                "dotprefix" => Transform::DotPrefix,
                "domain" => Transform::Domain,
                "tld" => Transform::Tld,
                "strip_whitespace" => Transform::StripWhitespace,
                "compress_whitespace" => Transform::CompressWhitespace,
                "to_lowercase" => Transform::ToLowercase,
                "to_uppercase" => Transform::ToUppercase,
                "url_decode" => Transform::UrlDecode,
                "to_md5" => Transform::ToMd5,
                "to_sha1" => Transform::ToSha1,
                "to_sha256" => Transform::ToSha256,
                "header_lowercase" => Transform::HeaderLowercase,
                "strip_pseudo_headers" => Transform::StripPseudoHeaders,
                "xor" => match arg.map(unquote).and_then(parse_hex) {
                    Some(key) => Transform::Xor(key),
                    None => parse_xor_extract(arg).ok_or_else(|| {
                        invalid(
                            "xor",
                            format!("xor needs a hex key or 'extract N K', got {arg:?}"),
                        )
                    })?,
                },
                "subslice" => {
                    Transform::Subslice(parse_subslice(arg).map_err(|m| invalid("subslice", m))?)
                }
                "gunzip" | "zlib_deflate" => {
                    let max = parse_max_size(arg).map_err(|m| invalid(&t.name, m))?;
                    if t.name == "gunzip" {
                        Transform::Gunzip(max)
                    } else {
                        Transform::ZlibDeflate(max)
                    }
                }
                "from_base64" => Transform::FromBase64(
                    parse_base64_opts(arg).map_err(|m| invalid("from_base64", m))?,
                ),
                "pcrexform" => {
                    let re = arg
                        .map(unquote)
                        .ok_or_else(|| invalid("pcrexform", "pcrexform needs a regex".into()))?;
                    Transform::Pcrexform(
                        Pcrexform::new(re).map_err(|e| invalid("pcrexform", e.to_string()))?,
                    )
                }
                other => return Err(Skip::NotEvaluable(other.to_string())),
            })
        })
        .collect()
}

/// Rules sharing one fast-pattern list within a (protocol, direction).
#[derive(Debug)]
pub struct TxPrefilter {
    /// The list (index in [`TxGroups::lists`]) the patterns are matched on.
    pub key: u32,
    pub engine: Arc<dyn PrefilterEngine>,
    /// Rule index per pattern id.
    pub rules: Vec<u32>,
}

/// Two prefilters of a group whose lists are, on most transactions,
/// the same bytes (HTTP's `file.data` and its body buffers): one engine
/// holds both pattern sets, so a buffer both ask for is scanned once.
/// Used only when the two lists' buffers turn out identical (the same
/// slices) on the transaction at hand; otherwise each list is scanned
/// with its own engine, so candidates are the same either way.
#[derive(Debug)]
pub struct TxMergedPrefilter {
    /// Indices in [`TxGroup::prefilters`]: the first pattern ids are
    /// `a`'s, the rest `b`'s.
    pub a: usize,
    pub b: usize,
    pub engine: Arc<dyn PrefilterEngine>,
    /// Rule index per pattern id: `a`'s rules, then `b`'s.
    pub rules: Vec<u32>,
}

/// Buffer pairs that hold the same bytes when neither has transforms:
/// an HTTP/1 body is the direction's `file.data`.
const SAME_BYTES: [(BufferId, BufferId); 2] = [
    (BufferId::FileData, BufferId::HttpResponseBody),
    (BufferId::FileData, BufferId::HttpRequestBody),
];

/// The transaction rules of one protocol and direction.
#[derive(Debug, Default)]
pub struct TxGroup {
    pub prefilters: Vec<TxPrefilter>,
    /// Pairs of `prefilters` scanned together when their buffers agree.
    pub merged: Vec<TxMergedPrefilter>,
    /// Rules without a usable fast pattern, checked on every transaction.
    pub always: Vec<u32>,
}

impl TxGroup {
    pub fn rule_count(&self) -> usize {
        self.always.len() + self.prefilters.iter().map(|p| p.rules.len()).sum::<usize>()
    }
}

/// A distinct (buffer, transforms) pair used by some rule.
#[derive(Debug)]
pub struct TxListKey {
    pub buffer: BufferId,
    pub transforms: Vec<TransformSpec>,
    pub xf: Vec<Transform>,
}

/// Transaction rule groups of a ruleset.
#[derive(Debug, Default)]
pub struct TxGroups {
    pub lists: Vec<TxListKey>,
    /// By [`group_index`].
    pub groups: Vec<TxGroup>,
}

/// A fast-pattern list's key, its patterns and their rules, until the
/// engine is built.
type PendingList = (u32, Vec<Pattern>, Vec<u32>);

/// Every application protocol, in [`proto_index`] order.
pub(crate) const PROTOS: [AppProto; 34] = [
    AppProto::Http,
    AppProto::Dns,
    AppProto::Tls,
    AppProto::Ssh,
    AppProto::Smb,
    AppProto::Dcerpc,
    AppProto::Ftp,
    AppProto::Smtp,
    AppProto::Sip,
    AppProto::Http2,
    AppProto::Mqtt,
    AppProto::Rfb,
    AppProto::Dhcp,
    AppProto::Krb5,
    AppProto::Snmp,
    AppProto::Ike,
    AppProto::FtpData,
    AppProto::WebSocket,
    AppProto::Pgsql,
    AppProto::Enip,
    AppProto::Quic,
    AppProto::Mdns,
    AppProto::Llmnr,
    AppProto::Ldap,
    AppProto::Ntp,
    AppProto::Telnet,
    AppProto::BittorrentDht,
    AppProto::Modbus,
    AppProto::Dnp3,
    AppProto::Pop3,
    AppProto::Imap,
    AppProto::Rdp,
    AppProto::Nfs,
    AppProto::Tftp,
];

fn group_index(proto: AppProto, dir: AppDir) -> usize {
    proto_index(proto) * 2 + usize::from(dir == AppDir::ToClient)
}

/// The protocol's position in [`PROTOS`] (the match is exhaustive: a new
/// protocol does not compile until it has its place).
pub(crate) fn proto_index(proto: AppProto) -> usize {
    match proto {
        AppProto::Http => 0,
        AppProto::Dns => 1,
        AppProto::Tls => 2,
        AppProto::Ssh => 3,
        AppProto::Smb => 4,
        AppProto::Dcerpc => 5,
        AppProto::Ftp => 6,
        AppProto::Smtp => 7,
        AppProto::Sip => 8,
        AppProto::Http2 => 9,
        AppProto::Mqtt => 10,
        AppProto::Rfb => 11,
        AppProto::Dhcp => 12,
        AppProto::Krb5 => 13,
        AppProto::Snmp => 14,
        AppProto::Ike => 15,
        AppProto::FtpData => 16,
        AppProto::WebSocket => 17,
        AppProto::Pgsql => 18,
        AppProto::Enip => 19,
        AppProto::Quic => 20,
        AppProto::Mdns => 21,
        AppProto::Llmnr => 22,
        AppProto::Ldap => 23,
        AppProto::Ntp => 24,
        AppProto::Telnet => 25,
        AppProto::BittorrentDht => 26,
        AppProto::Modbus => 27,
        AppProto::Dnp3 => 28,
        AppProto::Pop3 => 29,
        AppProto::Imap => 30,
        AppProto::Rdp => 31,
        AppProto::Nfs => 32,
        AppProto::Tftp => 33,
    }
}

impl TxGroups {
    /// Interns the rules' lists (setting [`TxList::key`]) and builds the
    /// groups and their prefilter engines with `selector`.
    pub fn build(rules: &mut [CompiledRule], selector: &mut Selector) -> TxGroups {
        let mut lists: Vec<TxListKey> = Vec::new();
        let mut index: HashMap<(BufferId, Vec<TransformSpec>), u32> = HashMap::new();
        for r in rules.iter_mut() {
            let Some(app) = r.app.as_mut() else { continue };
            for l in &mut app.lists {
                let k = (l.buffer, l.transforms.clone());
                l.key = *index.entry(k).or_insert_with(|| {
                    lists.push(TxListKey {
                        buffer: l.buffer,
                        transforms: l.transforms.clone(),
                        xf: l.xf.clone(),
                    });
                    (lists.len() - 1) as u32
                });
            }
        }
        let mut groups: Vec<TxGroup> = (0..PROTOS.len() * 2).map(|_| TxGroup::default()).collect();
        // Per group: fast-pattern list key -> (patterns, rules).
        let mut pending: Vec<Vec<PendingList>> = (0..groups.len()).map(|_| Vec::new()).collect();
        let placements = rules.iter().enumerate().flat_map(|(i, r)| {
            let app = r.app.as_ref();
            let dirs = match app {
                Some(a) if a.both_dirs => vec![a.dir, a.dir.reverse()],
                Some(a) => vec![a.dir],
                None => Vec::new(),
            };
            dirs.into_iter().map(move |d| (i, r, d))
        });
        for (i, r, dir) in placements {
            let Some(app) = &r.app else { continue };
            // DCERPC rules also inspect DCERPC over SMB named pipes.
            let mut gs = vec![group_index(app.proto, dir)];
            if app.proto == AppProto::Dcerpc {
                gs.push(group_index(AppProto::Smb, dir));
            }
            for g in gs {
                match (&r.fast_pattern, app.fast_list) {
                    (Some(fp), Some(li)) => {
                        let key = app.lists[li].key;
                        let slot = match pending[g].iter().position(|(k, _, _)| *k == key) {
                            Some(s) => s,
                            None => {
                                pending[g].push((key, Vec::new(), Vec::new()));
                                pending[g].len() - 1
                            }
                        };
                        let (_, pats, rs) = &mut pending[g][slot];
                        pats.push(Pattern {
                            id: rs.len() as u32,
                            bytes: fp.bytes.clone(),
                            nocase: fp.nocase,
                        });
                        rs.push(i as u32);
                    }
                    _ => groups[g].always.push(i as u32),
                }
            }
        }
        // Per group: (slot a, slot b, the two sets' patterns) of each pair
        // of lists that usually hold the same bytes.
        let mut merges: Vec<Vec<(usize, usize, Vec<Pattern>)>> =
            (0..groups.len()).map(|_| Vec::new()).collect();
        for (g, items) in pending.iter().enumerate() {
            for (i, (ka, pa, _)) in items.iter().enumerate() {
                for (j, (kb, pb, _)) in items.iter().enumerate().skip(i + 1) {
                    let (la, lb) = (&lists[*ka as usize], &lists[*kb as usize]);
                    let pair = (la.buffer, lb.buffer);
                    if !la.xf.is_empty()
                        || !lb.xf.is_empty()
                        || !SAME_BYTES
                            .iter()
                            .any(|&(x, y)| pair == (x, y) || pair == (y, x))
                    {
                        continue;
                    }
                    let n = pa.len() as u32;
                    let pats = pa
                        .iter()
                        .cloned()
                        .chain(pb.iter().map(|p| Pattern {
                            id: p.id + n,
                            ..p.clone()
                        }))
                        .collect();
                    merges[g].push((i, j, pats));
                }
            }
        }
        let sets: Vec<&[Pattern]> = pending
            .iter()
            .flatten()
            .map(|(_, pats, _)| &pats[..])
            .chain(merges.iter().flatten().map(|(_, _, pats)| &pats[..]))
            .collect();
        selector.prebuild(&sets);
        let mut samples = buffer_samples(&lists, selector.sampled_packets());
        for (g, items) in pending.into_iter().enumerate() {
            // Where each pending list went: its prefilter's index.
            let mut built: Vec<Option<usize>> = Vec::with_capacity(items.len());
            for (key, pats, rs) in items {
                // Application buffers are a part of the traffic of their
                // own; `auto` weighs them as the whole volume, and measures
                // on the buffers of the sampled packets where it has some.
                let sample = samples.remove(&(g, key)).unwrap_or_default();
                let tag = sample_tag(g, &lists[key as usize]);
                match selector.build_on(&pats, tag, &sample) {
                    Ok(engine) => {
                        built.push(Some(groups[g].prefilters.len()));
                        groups[g].prefilters.push(TxPrefilter {
                            key,
                            engine,
                            rules: rs,
                        })
                    }
                    Err(_) => {
                        built.push(None);
                        groups[g].always.extend(rs)
                    }
                }
            }
            for (i, j, pats) in std::mem::take(&mut merges[g]) {
                let (Some(a), Some(b)) = (built[i], built[j]) else {
                    continue;
                };
                // A list is merged once at most (the first pair found).
                if groups[g]
                    .merged
                    .iter()
                    .any(|m| [m.a, m.b].iter().any(|x| *x == a || *x == b))
                {
                    continue;
                }
                if let Ok(engine) = selector.build_for(&pats, None) {
                    let pfs = &groups[g].prefilters;
                    let rules = [&pfs[a].rules[..], &pfs[b].rules[..]].concat();
                    groups[g].merged.push(TxMergedPrefilter {
                        a,
                        b,
                        engine,
                        rules,
                    });
                }
            }
            groups[g].always.sort_unstable();
        }
        TxGroups { lists, groups }
    }

    pub fn group(&self, proto: AppProto, dir: AppDir) -> Option<&TxGroup> {
        self.groups.get(group_index(proto, dir))
    }

    /// Number of transaction rules.
    pub fn rule_count(&self) -> usize {
        self.groups.iter().map(TxGroup::rule_count).sum()
    }
}

/// Largest sample of one buffer list (bytes).
const BUFFER_SAMPLE_BYTES: usize = 64 << 10;

/// Samples of the application-layer buffers, per (transaction group,
/// list key), from sampled packets: each packet whose payload the
/// protocol probes recognise as the start of an HTTP, DNS or TLS message
/// is parsed alone by a fresh parser, and the buffers of the transactions
/// it yields (transforms applied) are kept, up to
/// [`BUFFER_SAMPLE_BYTES`] per list. Packets that continue a message
/// (the middle of a body, a later TLS record) yield nothing, so the
/// sample holds what starts in one packet: request and response lines
/// and headers, DNS names, TLS hellos.
pub(crate) fn buffer_samples<'a>(
    lists: &[TxListKey],
    packets: impl Iterator<Item = (&'a vigil_prefilter::TrafficSample, &'a [u8])>,
) -> HashMap<(usize, u32), Vec<Vec<u8>>> {
    /// Bytes kept so far, and the buffers.
    type Kept = (usize, Vec<Vec<u8>>);
    use vigil_applayer::probe::{probe, probe_udp};
    use vigil_applayer::Transport;
    let mut out: HashMap<(usize, u32), Kept> = HashMap::new();
    for (t, payload) in packets {
        // The probe of the packet's transport, tried as the start of the
        // client's side (server port: destination), then of the server's.
        let (transport, probe): (_, fn(AppDir, &[u8], u16) -> _) = match t.proto {
            6 => (Transport::Tcp, probe),
            17 => (Transport::Udp, probe_udp),
            _ => continue,
        };
        let found = [(AppDir::ToServer, t.dp), (AppDir::ToClient, t.sp)]
            .into_iter()
            .find_map(|(dir, port)| probe(dir, payload, port).proto().map(|p| (p, dir)));
        let Some((proto, mut dir)) = found else {
            continue;
        };
        if proto == AppProto::Tls {
            // TLS records look alike both ways: a client hello goes to the
            // server, any other handshake to the client.
            dir = if payload.get(5) == Some(&1) {
                AppDir::ToServer
            } else {
                AppDir::ToClient
            };
        } else if proto == AppProto::Dns && transport == Transport::Udp {
            // The QR bit tells a response.
            dir = if payload.get(2).is_some_and(|b| b & 0x80 != 0) {
                AppDir::ToClient
            } else {
                AppDir::ToServer
            };
        }
        let mut state = AppLayerState::new(proto, transport);
        state.feed(dir, payload, 0);
        let g = group_index(proto, dir);
        for tx in state.transactions() {
            for (key, l) in lists.iter().enumerate() {
                if l.buffer.proto() != proto {
                    continue;
                }
                let (bytes, bufs) = out.entry((g, key as u32)).or_default();
                for b in state.buffers(tx.id, l.buffer, dir) {
                    if *bytes >= BUFFER_SAMPLE_BYTES || b.is_empty() {
                        continue;
                    }
                    let b = if l.xf.is_empty() {
                        b.to_vec()
                    } else {
                        vigil_applayer::transforms::apply_all(&l.xf, b)
                    };
                    let b = b[..b.len().min(BUFFER_SAMPLE_BYTES - *bytes)].to_vec();
                    *bytes += b.len();
                    bufs.push(b);
                }
            }
        }
    }
    out.into_iter()
        .filter(|(_, (_, v))| !v.is_empty())
        .map(|(k, (_, v))| (k, v))
        .collect()
}

/// Names the data a transaction list's sample is made of (its group and
/// buffer with transforms), for [`Selector::build_on`]'s cache.
fn sample_tag(group: usize, list: &TxListKey) -> u64 {
    let text = format!("{group}/{:?}/{:?}", list.buffer, list.transforms);
    vigil_prefilter::select::fnv1a(vigil_prefilter::select::FNV_OFFSET, text.as_bytes()) | 1
}

/// Scans a list's buffers with a prefilter engine and adds the rules of
/// the patterns found (`rules`: rule index per pattern id) to `cands`,
/// each once.
fn scan_candidates(
    engine: &dyn PrefilterEngine,
    rules: &[u32],
    bufs: &[Cow<'_, [u8]>],
    scratch: &mut DetectScratch,
    cands: &mut Vec<u32>,
) {
    for b in bufs.iter().filter(|b| !b.is_empty()) {
        let seen = &mut scratch.seen;
        let hits = &mut scratch.prefilter_hits;
        engine.scan_ids(b, &mut |id| {
            *hits += 1;
            if let Some(&r) = rules.get(id as usize) {
                push_unique(seen, cands, r);
            }
        });
    }
}

/// The bytes of each list of one transaction direction, computed on
/// first use within one inspection.
struct BufCache<'a> {
    tx: TxInput<'a>,
    slots: Vec<Option<Vec<Cow<'a, [u8]>>>>,
}

impl<'a> BufCache<'a> {
    fn new(tx: TxInput<'a>, n: usize) -> Self {
        BufCache {
            tx,
            slots: (0..n).map(|_| None).collect(),
        }
    }

    /// Whether lists `a` and `b` are the same slices (empty buffers, never
    /// scanned, left out): then they are the same bytes.
    fn same_slices(&mut self, lists: &[TxListKey], a: u32, b: u32) -> bool {
        self.get(lists, a);
        self.get(lists, b);
        let lens = |k: u32| {
            self.slots[k as usize]
                .iter()
                .flatten()
                .filter(|b| !b.is_empty())
                .map(|b| (b.as_ptr(), b.len()))
        };
        lens(a).eq(lens(b))
    }

    fn get(&mut self, lists: &[TxListKey], key: u32) -> &[Cow<'a, [u8]>] {
        let tx = self.tx;
        self.slots[key as usize].get_or_insert_with(|| {
            let l = &lists[key as usize];
            tx.app
                .buffers(tx.tx, l.buffer, tx.dir)
                .map(|b| {
                    if l.xf.is_empty() {
                        Cow::Borrowed(b)
                    } else {
                        Cow::Owned(vigil_applayer::transforms::apply_all(&l.xf, b))
                    }
                })
                .collect()
        })
    }
}

/// The transaction groups inspected on a flow of `proto`: its own; on
/// HTTP/2 also the `http.*` rules (Suricata's `http` means either
/// version) and the `dns.*` rules (DNS over HTTP/2).
fn tx_group_protos(proto: AppProto) -> &'static [AppProto] {
    match proto {
        AppProto::Http2 => &[AppProto::Http2, AppProto::Http, AppProto::Dns],
        AppProto::Http => &[AppProto::Http],
        AppProto::Dns => &[AppProto::Dns],
        AppProto::Tls => &[AppProto::Tls],
        AppProto::Ssh => &[AppProto::Ssh],
        AppProto::Smb => &[AppProto::Smb],
        AppProto::Dcerpc => &[AppProto::Dcerpc],
        AppProto::Ftp => &[AppProto::Ftp],
        AppProto::Smtp => &[AppProto::Smtp],
        AppProto::Sip => &[AppProto::Sip],
        AppProto::Mqtt => &[AppProto::Mqtt],
        AppProto::Rfb => &[AppProto::Rfb],
        AppProto::Dhcp => &[AppProto::Dhcp],
        AppProto::Krb5 => &[AppProto::Krb5],
        AppProto::Snmp => &[AppProto::Snmp],
        AppProto::Ike => &[AppProto::Ike],
        AppProto::FtpData => &[AppProto::FtpData],
        AppProto::WebSocket => &[AppProto::WebSocket],
        AppProto::Pgsql => &[AppProto::Pgsql],
        AppProto::Enip => &[AppProto::Enip],
        AppProto::Quic => &[AppProto::Quic],
        AppProto::Mdns => &[AppProto::Mdns],
        AppProto::Llmnr => &[AppProto::Llmnr],
        AppProto::Ldap => &[AppProto::Ldap],
        AppProto::Ntp => &[AppProto::Ntp],
        AppProto::Telnet => &[AppProto::Telnet],
        AppProto::BittorrentDht => &[AppProto::BittorrentDht],
        AppProto::Modbus => &[AppProto::Modbus],
        AppProto::Dnp3 => &[AppProto::Dnp3],
        AppProto::Pop3 => &[AppProto::Pop3],
        AppProto::Imap => &[AppProto::Imap],
        AppProto::Rdp => &[AppProto::Rdp],
        AppProto::Nfs => &[AppProto::Nfs],
        AppProto::Tftp => &[AppProto::Tftp],
    }
}

impl DetectEngine {
    /// Whether any loaded rule inspects transactions of `proto`.
    pub fn has_tx_rules(&self, proto: AppProto) -> bool {
        [AppDir::ToServer, AppDir::ToClient].iter().any(|&d| {
            tx_group_protos(proto)
                .iter()
                .any(|&p| self.tx.group(p, d).is_some_and(|g| g.rule_count() > 0))
        })
    }

    /// Inspects one direction of a transaction on the current packet
    /// (`input`): prefilter over the transaction's buffers, then full
    /// verification of each candidate rule in rule order. Rules that
    /// match and alert are appended to `alerts` with `tx` set; rules
    /// already in `txst.fired` are skipped and new matches are added to
    /// it. Updates flowbits in `state`. Returns true when a `pass` rule
    /// matched.
    pub fn inspect_tx(
        &self,
        input: PacketInput<'_, '_>,
        tx: TxInput<'_>,
        txst: &mut TxDetectState,
        mut state: Option<&mut FlowDetectState>,
        scratch: &mut DetectScratch,
        alerts: &mut Vec<Hit>,
    ) -> bool {
        let groups: Vec<&TxGroup> = tx_group_protos(tx.app.proto())
            .iter()
            .filter_map(|&p| self.tx.group(p, tx.dir))
            .filter(|g| g.rule_count() > 0)
            .collect();
        if groups.is_empty() || input.packet.ip.is_none() {
            return false;
        }
        let mut cache = BufCache::new(tx, self.tx.lists.len());
        // Candidates: every always-checked rule, plus the rules whose
        // fast pattern occurs in any instance of its list.
        let words = self.rules.len().div_ceil(64);
        if scratch.seen.len() < words {
            scratch.seen.resize(words, 0);
        }
        let mut cands: Vec<u32> = Vec::new();
        for &r in groups.iter().flat_map(|g| &g.always) {
            push_unique(&mut scratch.seen, &mut cands, r);
        }
        // Lists scanned together with another, per group (bit i: the
        // group's prefilter i), when both lists' buffers are the same
        // slices.
        let mut done: Vec<u64> = vec![0; groups.len()];
        for (gi, g) in groups.iter().enumerate() {
            for m in &g.merged {
                if m.a >= 64 || m.b >= 64 {
                    continue;
                }
                let (ka, kb) = (g.prefilters[m.a].key, g.prefilters[m.b].key);
                if !cache.same_slices(&self.tx.lists, ka, kb) {
                    continue;
                }
                done[gi] |= (1 << m.a) | (1 << m.b);
                let bufs = cache.get(&self.tx.lists, ka);
                scan_candidates(&*m.engine, &m.rules, bufs, scratch, &mut cands);
            }
        }
        for (gi, g) in groups.iter().enumerate() {
            for (pi, pf) in g.prefilters.iter().enumerate() {
                if pi < 64 && done[gi] & (1 << pi) != 0 {
                    continue;
                }
                let bufs = cache.get(&self.tx.lists, pf.key);
                scan_candidates(&*pf.engine, &pf.rules, bufs, scratch, &mut cands);
            }
        }
        for &r in &cands {
            scratch.seen[r as usize / 64] &= !(1 << (r % 64));
        }
        cands.sort_unstable();

        let pkt_payload = packet_payload_of(&input);
        for ri in cands {
            if txst.fired.contains(&(ri, tx.dir)) {
                continue;
            }
            let r = &self.rules[ri as usize];
            let Some(spec) = &r.app else { continue };
            scratch.rules_checked += 1;
            let mut timer = crate::profile::CheckTimer::start(&mut scratch.profile, ri);
            if !packet_checks(r, &input, state.as_deref()) {
                continue;
            }
            if let Some((cmp, raw)) = spec.urilen {
                let id = if raw {
                    BufferId::HttpUriRaw
                } else {
                    BufferId::HttpUri
                };
                match tx.app.buffer(tx.tx, id, tx.dir) {
                    Some(u) if cmp.matches(u.len() as u64) => {}
                    _ => continue,
                }
            }
            // The flow's client: the packet's source to the server.
            let client = input.packet.ip.as_ref().map(|ip| match tx.dir {
                AppDir::ToServer => ip.src,
                AppDir::ToClient => ip.dst,
            });
            if !spec.checks.iter().all(|c| c.matches(&tx, client)) {
                continue;
            }
            if r.captures {
                crate::payload::pending_vars_clear();
            }
            if payload_verdict(r, &input, pkt_payload, &mut scratch.vars).is_none() {
                continue;
            }
            let vars = &mut scratch.vars;
            let lists_ok = spec.lists.iter().all(|l| {
                let bufs = cache.get(&self.tx.lists, l.key);
                match l.absent {
                    None => bufs.iter().any(|b| l.prog.matches(b, vars)),
                    Some(or_else) => {
                        bufs.iter().all(|b| b.is_empty())
                            || (or_else && bufs.iter().any(|b| l.prog.matches(b, vars)))
                    }
                }
            });
            if !lists_ok || !var_tests_match(r, state.as_deref(), &scratch.captured) {
                continue;
            }
            let v = conclude(r, &input, state.as_deref_mut());
            timer.matched = !matches!(v, Verdict::NoMatch);
            if r.captures && timer.matched {
                store_captures(ri, true, state.as_deref_mut(), &mut scratch.captured);
            }
            if r.disable_tx_log && !matches!(v, Verdict::NoMatch) {
                txst.no_log = true;
            }
            match v {
                Verdict::NoMatch => continue,
                Verdict::Pass => {
                    txst.fired.push((ri, tx.dir));
                    return true;
                }
                Verdict::PassAlert => {
                    txst.fired.push((ri, tx.dir));
                    alerts.push(Hit {
                        rule: ri,
                        stream: false,
                        tx: Some(tx.tx),
                        deferred: false,
                        datasets: None,
                    });
                    return true;
                }
                Verdict::Alert | Verdict::Deferred => {
                    txst.fired.push((ri, tx.dir));
                    let datasets =
                        (matches!(v, Verdict::Deferred) && !r.datasets.is_empty()).then(|| {
                            r.datasets
                                .iter()
                                .map(|op| match op.src {
                                    crate::dataset::DsSource::Tx(li) => {
                                        match spec.lists.get(li as usize) {
                                            Some(l) => cache
                                                .get(&self.tx.lists, l.key)
                                                .iter()
                                                .filter(|b| l.prog.matches(b, vars))
                                                .map(|b| Box::from(&b[..]))
                                                .collect(),
                                            None => Box::default(),
                                        }
                                    }
                                    crate::dataset::DsSource::Packet(i) => {
                                        crate::inspect::packet_dataset_values_one(
                                            r,
                                            i,
                                            input.packet,
                                            vars,
                                        )
                                    }
                                })
                                .collect()
                        });
                    alerts.push(Hit {
                        rule: ri,
                        stream: false,
                        tx: Some(tx.tx),
                        deferred: matches!(v, Verdict::Deferred),
                        datasets,
                    });
                }
                Verdict::Silent => txst.fired.push((ri, tx.dir)),
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_prefilter::TrafficSample;

    #[test]
    fn every_protocol_has_its_place_in_protos() {
        for (i, &p) in PROTOS.iter().enumerate() {
            assert_eq!(proto_index(p), i, "{p:?}");
        }
    }

    fn list(buffer: BufferId) -> TxListKey {
        TxListKey {
            buffer,
            transforms: Vec::new(),
            xf: Vec::new(),
        }
    }

    fn pkt(proto: u8, sp: u16, dp: u16, payload: &[u8]) -> (TrafficSample, Vec<u8>) {
        let t = TrafficSample {
            proto,
            sp,
            dp,
            bytes: payload.len() as u32,
        };
        (t, payload.to_vec())
    }

    #[test]
    fn buffer_samples_come_from_the_messages_starting_in_sampled_packets() {
        let lists = [
            list(BufferId::HttpUri),
            list(BufferId::HttpHost),
            list(BufferId::HttpStatCode),
            list(BufferId::DnsQuery),
            list(BufferId::TlsSni),
        ];
        let packets = [
            pkt(
                6,
                40000,
                80,
                b"GET /a/index.html HTTP/1.1\r\nHost: example.org\r\n\r\n",
            ),
            pkt(
                6,
                80,
                40000,
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            ),
            // The middle of a body, and bytes that are no protocol at all.
            pkt(6, 80, 40000, b"function(x) { return x + 1; }"),
            pkt(17, 5000, 9999, &[0xde, 0xad, 0xbe, 0xef]),
            pkt(
                17,
                40000,
                53,
                &vigil_craft::demo::dns_query(7, "www.vigil.test", 1),
            ),
        ];
        let s = buffer_samples(&lists, packets.iter().map(|(t, p)| (t, p.as_slice())));
        let req = group_index(AppProto::Http, AppDir::ToServer);
        let resp = group_index(AppProto::Http, AppDir::ToClient);
        let dns = group_index(AppProto::Dns, AppDir::ToServer);
        assert_eq!(s[&(req, 0)], vec![b"/a/index.html".to_vec()]);
        assert_eq!(s[&(req, 1)], vec![b"example.org".to_vec()]);
        assert_eq!(s[&(resp, 2)], vec![b"404".to_vec()]);
        assert_eq!(s[&(dns, 3)], vec![b"www.vigil.test".to_vec()]);
        // Nothing for the lists no sampled message has, nor from the
        // packets that start none.
        assert!(!s.keys().any(|k| k.1 == 4));
        assert_eq!(s.len(), 4, "{:?}", s.keys().collect::<Vec<_>>());
    }

    #[test]
    fn buffer_samples_are_bounded_per_list() {
        let lists = [list(BufferId::HttpUri)];
        let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(3000));
        let packets: Vec<_> = (0..100)
            .map(|_| pkt(6, 40000, 80, long.as_bytes()))
            .collect();
        let s = buffer_samples(&lists, packets.iter().map(|(t, p)| (t, p.as_slice())));
        let total: usize = s.values().flatten().map(|b| b.len()).sum();
        assert_eq!(total, BUFFER_SAMPLE_BYTES);
    }

    #[test]
    fn sample_tags_tell_lists_and_groups_apart() {
        let a = sample_tag(0, &list(BufferId::HttpUri));
        assert_eq!(a, sample_tag(0, &list(BufferId::HttpUri)));
        assert_ne!(a, sample_tag(1, &list(BufferId::HttpUri)));
        assert_ne!(a, sample_tag(0, &list(BufferId::HttpHost)));
        assert_ne!(a, 0, "0 is the payload sample's tag");
    }
}
