//! The typed form of a rule: what the parser produces and what detection
//! compiles. Nothing here knows about packets; it is the rule language only.
//!
//! Ordering matters: payload keywords are kept in rule order per inspection
//! buffer, because relative keywords (`distance`, `within`, `pcre/R`,
//! `byte_jump ... relative`) refer to the item before them *in the same
//! buffer*.

use std::net::IpAddr;

/// What a rule does when it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Alert,
    Pass,
    Drop,
    Reject,
    RejectSrc,
    RejectDst,
    RejectBoth,
    Log,
    /// A config rule: its `config` keyword applies when it matches; it
    /// does not alert (as `alert ... noalert`).
    Config,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Alert => "alert",
            Action::Pass => "pass",
            Action::Drop => "drop",
            Action::Reject => "reject",
            Action::RejectSrc => "rejectsrc",
            Action::RejectDst => "rejectdst",
            Action::RejectBoth => "rejectboth",
            Action::Log => "log",
            Action::Config => "config",
        }
    }
}

/// Header protocol. Application protocols are recorded so that later work
/// can bind them to parsers; for now they imply their transport (see
/// [`Proto::transport`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Proto {
    Ip,
    Tcp,
    Udp,
    Icmp,
    /// `icmpv6` / `ipv6-icmp`.
    Icmpv6,
    Sctp,
    Igmp,
    /// `pkthdr`: matches even undecodable packets.
    PktHdr,
    /// An application protocol (`http`, `dns`, `tls`, `smb`, ...), lower case.
    /// Also used for the Suricata pseudo protocols `tcp-pkt` and `tcp-stream`
    /// (TCP rules restricted to packets or to the reassembled stream).
    App(String),
}

impl Proto {
    /// The transport this protocol implies: `Tcp`, `Udp`, `Icmp`, `Icmpv6`,
    /// `Sctp`, or `Ip` when it may run over several (e.g. `dns`) or is not
    /// bound to one (`ip`, `pkthdr`).
    pub fn transport(&self) -> Proto {
        match self {
            Proto::App(name) => match name.as_str() {
                "ntp" | "tftp" | "dhcp" | "quic" | "ike" | "ikev2" | "bittorrent-dht" | "mdns" => {
                    Proto::Udp
                }
                "dns" | "dcerpc" | "nfs" | "krb5" | "snmp" | "sip" | "enip" | "ldap"
                | "netbios" | "file" | "arp" | "ether" | "llmnr" => Proto::Ip,
                _ => Proto::Tcp,
            },
            other => other.clone(),
        }
    }

    /// The name as written in a rule header (`tcp`, `icmp`, `http`, ...).
    pub fn as_str(&self) -> &str {
        match self {
            Proto::Ip => "ip",
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
            Proto::Icmp => "icmp",
            Proto::Icmpv6 => "icmpv6",
            Proto::Sctp => "sctp",
            Proto::Igmp => "igmp",
            Proto::PktHdr => "pkthdr",
            Proto::App(name) => name,
        }
    }
}

/// One element of an address list, before negation is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddrItem {
    Any,
    /// A network: address and prefix length (32/128 for a single host).
    Cidr(IpAddr, u8),
    /// An inclusive range `a-b` (rare, Snort-only).
    Range(IpAddr, IpAddr),
}

/// A resolved address specification: every variable substituted, groups
/// flattened. A packet address matches when it is inside some `include`
/// entry (or `include` is `[Any]`) and inside no `exclude` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AddrSpec {
    pub include: Vec<AddrItem>,
    pub exclude: Vec<AddrItem>,
}

/// A resolved port specification with the same include/exclude meaning as
/// [`AddrSpec`]. Ranges are inclusive; `any` is `include == [(0, 65535)]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortSpec {
    pub include: Vec<(u16, u16)>,
    pub exclude: Vec<(u16, u16)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `->`
    Forward,
    /// `<>`: either direction.
    Both,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub proto: Proto,
    pub src: AddrSpec,
    pub src_ports: PortSpec,
    pub direction: Direction,
    pub dst: AddrSpec,
    pub dst_ports: PortSpec,
}

/// The buffer a payload keyword inspects. `Packet` is the default (packet
/// payload and, once stream reassembly lands, the reassembled stream).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Buffer {
    /// Packet payload (and stream, later). `rawbytes` is a no-op on it.
    Packet,
    Ipv4Hdr,
    Ipv6Hdr,
    TcpHdr,
    UdpHdr,
    Icmpv4Hdr,
    Icmpv6Hdr,
    /// `sctp.hdr`: the SCTP common header and every chunk.
    SctpHdr,
    /// `sctp.chunk_data`: each DATA chunk's user data (a multi-buffer).
    SctpChunkData,
    /// `ether.hdr`: the Ethernet header of the frame.
    EtherHdr,
    /// `igmp.hdr`: the IGMP header (v3: with its sources or records).
    IgmpHdr,
    /// `ip.src` / `ip.dst`: the address bytes (4 or 16) of the IP header.
    IpSrc,
    IpDst,
    /// Any other sticky buffer or Snort modifier (`http.uri`, `dns.query`,
    /// ...), by its canonical Suricata name. Not evaluable yet.
    Named(String),
}

/// `content` and its modifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// Decoded bytes (hex `|..|` and escapes resolved).
    pub pattern: Vec<u8>,
    pub negated: bool,
    pub nocase: bool,
    /// Absolute position modifiers (`offset`, `depth`); may name a
    /// `byte_extract` variable.
    pub offset: Option<NumOrVar>,
    pub depth: Option<NumOrVar>,
    /// Relative modifiers; `distance` may be negative.
    pub distance: Option<NumOrVarSigned>,
    pub within: Option<NumOrVar>,
    pub startswith: bool,
    pub endswith: bool,
    /// `rawbytes` (accepted, no effect on the packet buffer).
    pub rawbytes: bool,
    pub fast_pattern: Option<FastPattern>,
    /// `replace:` (IPS mode): the matched bytes are replaced with these
    /// (same length as the pattern; packet payload contents only).
    pub replace: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NumOrVar {
    Num(u32),
    Var(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NumOrVarSigned {
    Num(i32),
    Var(String),
}

/// `fast_pattern`, `fast_pattern:only`, `fast_pattern:offset,length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastPattern {
    pub only: bool,
    /// `(offset, length)` of the chopped part of the pattern.
    pub chop: Option<(u16, u16)>,
}

/// `pcre:"/.../flags"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pcre {
    pub negated: bool,
    /// The expression between the slashes, unchanged.
    pub pattern: String,
    /// PCRE flags: i s m x (and A E G, which Suricata also accepts).
    pub caseless: bool,
    pub dotall: bool,
    pub multiline: bool,
    pub extended: bool,
    pub anchored: bool,
    pub dollar_endonly: bool,
    pub ungreedy: bool,
    /// `R`: relative to the end of the previous match in this buffer.
    pub relative: bool,
    /// `B`: rawbytes (no effect on the packet buffer).
    pub rawbytes: bool,
    /// Snort/Suricata buffer flags (U, H, P, ...) moved the pcre into a
    /// named buffer; the parser already applied that to the buffer list.
    pub buffer_flag: Option<char>,
    /// Variables the capture groups are stored in: the `n`-th entry takes
    /// group `n + 1` (Suricata's `DetectPcreParseCapture`: the names after
    /// the flags, `,flow:name`, first, then the named groups
    /// `(?P<flow_name>...)` in pattern order). At most
    /// [`PCRE_CAPTURE_MAX`].
    pub captures: Vec<PcreCapture>,
}

/// Most variables one pcre captures (Suricata's `DETECT_PCRE_CAPTURE_MAX`).
pub const PCRE_CAPTURE_MAX: usize = 8;

/// Most bytes a captured variable keeps (Suricata stores at most 64 KiB
/// less one byte of a capture group).
pub const VAR_VALUE_MAX: usize = 0xffff;

/// Where a pcre capture group's value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VarScope {
    /// A packet variable (`pkt_name`, `pkt:name`): lives until the packet
    /// is done, read by `pktvar` and logged in the EVE `metadata.pktvars`.
    Pkt,
    /// A flow variable (`flow_name`, `flow:name`): read by `flowvar` on
    /// later packets, logged in `metadata.flowvars`.
    Flow,
    /// An alert variable (`alert_name`, Suricata 8+): logged in the
    /// rule's own alert as `alert.context`.
    Alert,
}

/// One pcre capture group stored in a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcreCapture {
    pub scope: VarScope,
    pub name: String,
}

/// `flowvar:name,"content"` / `pktvar:name,"content"`: the variable is set
/// and contains `content` (Suricata's `SpmSearch`: anywhere in the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarMatch {
    pub name: String,
    pub content: Vec<u8>,
}

/// Endianness for byte_* keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Big,
    Little,
}

/// How byte_* keywords read the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumBase {
    /// Binary, `nbytes` in 0..=8 (0 is accepted, as Suricata does; it
    /// reads nothing and yields 0). String bases allow up to 23 bytes.
    Binary,
    /// `string,dec|hex|oct`.
    Dec,
    Hex,
    Oct,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    /// `&`: bitwise and is non-zero.
    And,
    /// `^`: bitwise xor is non-zero.
    Xor,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteTest {
    pub nbytes: u8,
    /// `nbytes` given as a byte_extract/byte_math variable (Suricata 7+);
    /// `nbytes` is then 0 and the value is checked at match time.
    pub nbytes_var: Option<String>,
    pub negated: bool,
    pub op: CmpOp,
    pub value: NumOrVar64,
    pub offset: NumOrVarSigned,
    pub relative: bool,
    pub endian: Endian,
    pub base: NumBase,
    pub bitmask: Option<u64>,
    /// Suricata `dce` flag: endianness from DCE/RPC (not evaluable).
    pub dce: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NumOrVar64 {
    Num(u64),
    Var(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteJump {
    pub nbytes: u8,
    /// `nbytes` given as a variable (see [`ByteTest::nbytes_var`]).
    pub nbytes_var: Option<String>,
    pub offset: NumOrVarSigned,
    pub relative: bool,
    pub multiplier: u32,
    pub endian: Endian,
    pub base: NumBase,
    pub align: bool,
    pub from_beginning: bool,
    pub from_end: bool,
    pub post_offset: i32,
    pub bitmask: Option<u64>,
    pub dce: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteExtract {
    pub nbytes: u8,
    pub offset: i32,
    pub name: String,
    pub relative: bool,
    pub multiplier: u32,
    pub endian: Endian,
    pub base: NumBase,
    pub align: u8,
    pub bitmask: Option<u64>,
    pub dce: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathOp {
    Add,
    Sub,
    Mul,
    Div,
    Shl,
    Shr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteMath {
    pub nbytes: u8,
    /// `bytes` given as a variable (see [`ByteTest::nbytes_var`]).
    pub nbytes_var: Option<String>,
    pub offset: i32,
    pub op: MathOp,
    pub rvalue: NumOrVar64,
    pub result: String,
    pub relative: bool,
    pub endian: Endian,
    pub base: NumBase,
    pub bitmask: Option<u64>,
    pub dce: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsDataAt {
    pub negated: bool,
    pub offset: NumOrVar,
    pub relative: bool,
    pub rawbytes: bool,
}

/// `base64_decode:[bytes N][, offset N][, relative]` with the keywords
/// of the `base64_data` buffer that follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base64Decode {
    /// Most bytes of input to decode (`None`: to the end of the buffer).
    pub bytes: Option<u32>,
    /// Bytes skipped before decoding, from the start of the buffer or,
    /// with `relative`, from the previous match.
    pub offset: u32,
    pub relative: bool,
    /// The `base64_data` keywords, evaluated on the decoded bytes.
    pub data: Vec<PayloadItem>,
}

/// `entropy:[bytes N,][offset N,]value [op]X`: the Shannon entropy, in
/// bits per byte, of `bytes` bytes (default: the rest of the buffer) from
/// `offset` (default 0), compared with `value`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entropy {
    pub bytes: Option<u32>,
    pub offset: u32,
    pub value: FloatCmp,
}

// Values are parsed from text, never NaN: equality is reflexive.
impl Eq for Entropy {}

/// `asn1` (Suricata's options): decode the buffer as a sequence of BER
/// objects from `absolute_offset`, or `relative_offset` from the end of
/// the previous match, or the start, and match when an object (at any
/// depth) is one the options look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Asn1 {
    /// A BIT STRING whose unused-bits count exceeds its length in bits.
    pub bitstring_overflow: bool,
    /// A REAL in decimal (ASCII) encoding longer than 256 bytes.
    pub double_overflow: bool,
    /// An object whose length is greater than this.
    pub oversize_length: Option<u32>,
    pub absolute_offset: Option<u16>,
    /// -65535..=65535.
    pub relative_offset: Option<i32>,
}

/// A comparison with a floating-point value (`X`, `<X`, `<=X`, `>X`,
/// `>=X`, and `A-B` for A < value < B).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloatCmp {
    Eq(f64),
    Lt(f64),
    Le(f64),
    Gt(f64),
    Ge(f64),
    RangeEx(f64, f64),
}

impl FloatCmp {
    pub fn matches(&self, v: f64) -> bool {
        match *self {
            FloatCmp::Eq(x) => v == x,
            FloatCmp::Lt(x) => v < x,
            FloatCmp::Le(x) => v <= x,
            FloatCmp::Gt(x) => v > x,
            FloatCmp::Ge(x) => v >= x,
            FloatCmp::RangeEx(a, b) => a < v && v < b,
        }
    }
}

/// The checksum a `*-csum` keyword checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsumLayer {
    Ipv4,
    Igmp,
    Tcpv4,
    Tcpv6,
    Udpv4,
    Udpv6,
    Icmpv4,
    Icmpv6,
}

/// The layer `vlan.id` looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VlanLayer {
    /// Any layer matches (the default).
    Any,
    /// Every layer matches (and there is at least one).
    All,
    /// One layer: 0..2 outermost first, -1..-3 innermost first.
    Index(i8),
}

/// One keyword that inspects bytes of a buffer, in rule order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadItem {
    Content(Content),
    Pcre(Pcre),
    ByteTest(ByteTest),
    ByteJump(ByteJump),
    ByteExtract(ByteExtract),
    ByteMath(ByteMath),
    IsDataAt(IsDataAt),
    /// `bsize` on a sticky buffer (size of the whole buffer).
    Bsize(IntCmp),
    /// `entropy`: Shannon entropy (bits per byte) of part of the buffer.
    Entropy(Entropy),
    /// `absent` on a sticky buffer: the buffer must not be there; with
    /// `or_else`, either it is not there or the other items match.
    Absent {
        or_else: bool,
    },
    /// `asn1`: BER-decode the buffer from an offset and look for the
    /// malformed encodings it names.
    Asn1(Asn1),
    /// `base64_decode` (Suricata: a terminal keyword of its list; the
    /// list matches when the `base64_data` keywords match the decoded
    /// bytes).
    Base64Decode(Base64Decode),
    /// `dataset`: the whole buffer looked up in (or added to, removed
    /// from) a named set.
    Dataset(Dataset),
    /// `datarep`: the whole buffer's reputation in a named set compared
    /// with a value.
    Datarep(Datarep),
}

/// The kind of value a dataset holds (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatasetType {
    /// Any bytes (base64 in files).
    String,
    /// 16-byte digests (hex in files).
    Md5,
    /// 32-byte digests (hex in files).
    Sha256,
    /// IPv4 addresses.
    Ipv4,
    /// IPv4 and IPv6 addresses (`ip`, also `ipv6`).
    Ip,
}

impl DatasetType {
    pub fn parse(s: &str) -> Option<DatasetType> {
        Some(match s {
            "string" => DatasetType::String,
            "md5" => DatasetType::Md5,
            "sha256" => DatasetType::Sha256,
            "ipv4" => DatasetType::Ipv4,
            "ip" | "ipv6" => DatasetType::Ip,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DatasetType::String => "string",
            DatasetType::Md5 => "md5",
            DatasetType::Sha256 => "sha256",
            DatasetType::Ipv4 => "ipv4",
            DatasetType::Ip => "ip",
        }
    }
}

/// `dataset` commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatasetCmd {
    /// Adds the value; matches when it was not there yet.
    Set,
    /// Removes the value; matches when it was there.
    Unset,
    IsSet,
    IsNotSet,
}

/// `datarep` comparisons of the stored reputation with the rule's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RepOp {
    Gt,
    Lt,
    Ge,
    Le,
    Eq,
    Ne,
}

impl RepOp {
    pub fn matches(self, stored: u16, value: u16) -> bool {
        match self {
            RepOp::Gt => stored > value,
            RepOp::Lt => stored < value,
            RepOp::Ge => stored >= value,
            RepOp::Le => stored <= value,
            RepOp::Eq => stored == value,
            RepOp::Ne => stored != value,
        }
    }
}

/// The set a `dataset` / `datarep` keyword names, with the options that
/// declare it (all optional when the set is declared elsewhere: in the
/// config's `datasets:` or by another rule).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DatasetDecl {
    pub name: String,
    pub ty: Option<DatasetType>,
    /// `load` (or `state`) file, as written.
    pub load: Option<String>,
    /// `save` (or `state`) file, as written.
    pub save: Option<String>,
    /// `state <file>`: `load` and `save` are both this file.
    pub state: bool,
    pub memcap: Option<u64>,
    pub hashsize: Option<u32>,
}

/// `dataset:<cmd>,<name>[, options]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    pub cmd: DatasetCmd,
    pub set: DatasetDecl,
}

/// `datarep:<name>,<op>,<value>[, options]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datarep {
    pub op: RepOp,
    pub value: u16,
    pub set: DatasetDecl,
}

/// A transform applied to a sticky buffer (`dotprefix`, `pcrexform:"..."`),
/// by canonical name with its value as written (quotes kept).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransformSpec {
    pub name: String,
    pub arg: Option<String>,
}

/// The payload keywords that apply to one buffer, in rule order. The same
/// sticky buffer with different transforms is a different list (as in
/// Suricata): `http.uri; content:"a"; http.uri; to_lowercase; content:"b";`
/// gives two lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferMatch {
    pub buffer: Buffer,
    /// Transforms applied to the buffer before the items, in order.
    pub transforms: Vec<TransformSpec>,
    pub items: Vec<PayloadItem>,
}

/// An integer comparison as used by dsize, ttl, itype, icode, bsize,
/// stream_size...: `N`, `<N`, `<=N`, `>N`, `>=N`, `!N`, `A<>B`
/// (exclusive range as in Suricata), `A-B` (inclusive for some keywords).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntCmp {
    Eq(u64),
    Ne(u64),
    Lt(u64),
    Le(u64),
    Gt(u64),
    Ge(u64),
    /// Exclusive range: `lo < x < hi`.
    RangeEx(u64, u64),
    /// Negated exclusive range.
    NotRangeEx(u64, u64),
    /// Suricata `&mask=value`: `x & mask == value`.
    Bitmask {
        mask: u64,
        value: u64,
    },
    /// Suricata `&mask!=value`: `x & mask != value`.
    NotBitmask {
        mask: u64,
        value: u64,
    },
}

impl IntCmp {
    pub fn matches(self, x: u64) -> bool {
        match self {
            IntCmp::Eq(v) => x == v,
            IntCmp::Ne(v) => x != v,
            IntCmp::Lt(v) => x < v,
            IntCmp::Le(v) => x <= v,
            IntCmp::Gt(v) => x > v,
            IntCmp::Ge(v) => x >= v,
            IntCmp::RangeEx(lo, hi) => lo < x && x < hi,
            IntCmp::NotRangeEx(lo, hi) => !(lo < x && x < hi),
            IntCmp::Bitmask { mask, value } => x & mask == value,
            IntCmp::NotBitmask { mask, value } => x & mask != value,
        }
    }
}

/// `flow:` options, combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowOpts {
    /// `to_server` / `from_client`.
    pub to_server: bool,
    /// `to_client` / `from_server`.
    pub to_client: bool,
    pub established: bool,
    pub not_established: bool,
    pub stateless: bool,
    pub only_stream: bool,
    pub no_stream: bool,
    pub only_frag: bool,
    pub no_frag: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowbitsCmd {
    Set,
    Unset,
    Toggle,
    IsSet,
    IsNotSet,
    NoAlert,
}

/// `flowbits:cmd[,name]`; `name` may hold several bits joined by `|`
/// (any of, for isset) or `&` (all of).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flowbits {
    pub cmd: FlowbitsCmd,
    pub names: Vec<String>,
    /// true when the names were joined with `|` (isset: any of them).
    pub any: bool,
}

/// TCP `flags:` keyword: `[modifier]flags[,mask]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpFlags {
    /// Bits that must be set (FIN=0x01 SYN=0x02 RST=0x04 PSH=0x08 ACK=0x10
    /// URG=0x20 ECE(`E` or `2`)=0x40 CWR(`C` or `1`)=0x80), as in Suricata.
    pub flags: u8,
    /// Bits ignored before comparing.
    pub mask: u8,
    pub modifier: FlagsModifier,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagsModifier {
    /// Exactly these flags (after mask).
    Exact,
    /// `+`: these and possibly others.
    Plus,
    /// `*`: any of these.
    Any,
    /// `!`: not these.
    Not,
}

/// `threshold:` / `detection_filter:` (and `threshold.config` entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold {
    pub kind: ThresholdKind,
    pub track: Track,
    pub count: u32,
    /// Window length; 0 for `backoff` (which has none).
    pub seconds: u32,
    /// `backoff` only: alerts at match `count`, `count*m`, `count*m^2`...
    pub multiplier: u32,
    /// `detection_filter ... unique_on src_port|dst_port`: count distinct
    /// ports instead of matches.
    pub unique_on: Option<UniqueOn>,
}

/// What `unique_on` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniqueOn {
    SrcPort,
    DstPort,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdKind {
    Limit,
    Threshold,
    Both,
    /// `backoff`: alert on match `count`, then each time the match count
    /// reaches the next power of `multiplier` times `count`.
    Backoff,
    /// `detection_filter`.
    DetectionFilter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Track {
    BySrc,
    ByDst,
    ByRule,
    ByBoth,
    ByFlow,
}

/// A keyword that tests the packet or the flow rather than buffer bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    Flow(FlowOpts),
    Flowbits(Flowbits),
    Dsize(IntCmp),
    Ttl(IntCmp),
    Itype(IntCmp),
    Icode(IntCmp),
    IcmpId(u16),
    IcmpSeq(u16),
    Flags(TcpFlags),
    /// `ip_proto:` (already resolved to a number; `!` -> negated).
    IpProto {
        proto: u8,
        negated: bool,
        op: IntCmp,
    },
    /// `decode-event:` / `stream-event:` / `app-layer-event:` by full
    /// name, e.g. `ipv6.frag_overlap`; `engine-event:` keeps its family
    /// prefix (`decoder.ipv4.trunc_pkt`, `stream.pkt_invalid_ack`).
    Event {
        kind: EventKind,
        name: String,
    },
    Threshold(Threshold),
    /// `tcp.mss`.
    TcpMss(IntCmp),
    Tos(IntCmp),
    IpId(u16),
    TcpSeq(u32),
    TcpAck(u32),
    TcpWindow {
        negated: bool,
        value: u16,
    },
    /// `sameip`.
    SameIp,
    /// `fragbits:` as (modifier, bits: M=1 D=2 R=4, mask).
    Fragbits {
        modifier: FlagsModifier,
        bits: u8,
    },
    Fragoffset {
        negated: bool,
        op: IntCmp,
    },
    IpOpts(String),
    /// `icmpv6.mtu`: the MTU of an ICMPv6 packet-too-big message.
    Icmpv6Mtu(IntCmp),
    /// `tcp.wscale`: the window scale option value.
    TcpWscale(IntCmp),
    /// `ipv4-csum`, `tcpv4-csum`, ... `icmpv6-csum`: whether the packet
    /// has that layer with a valid (or invalid) checksum.
    Checksum {
        layer: CsumLayer,
        valid: bool,
    },
    /// `igmp.type`: the IGMP message type.
    IgmpType(IntCmp),
    /// `l3_proto:ipv4|ipv6`: the packet's IP version (4 or 6).
    L3Proto(u8),
    /// `sctp.vtag`: the SCTP verification tag.
    SctpVtag(IntCmp),
    /// `sctp.chunk_cnt`: the number of chunks in the SCTP packet.
    SctpChunkCnt(IntCmp),
    /// `sctp.chunk_type`: the type of one of the first 16 chunks (names
    /// resolved to numbers).
    SctpChunkType(IntCmp),
    /// `vlan.id:[op]id[,layer]`: the VLAN id of a layer (0..2 outermost
    /// first, -1..-3 innermost first), of any layer or of all layers.
    VlanId {
        cmp: IntCmp,
        layer: VlanLayer,
    },
    /// `vlan.layers:[op]n`: the number of VLAN layers.
    VlanLayers(IntCmp),
    /// `flow.age:[op]n`: whole seconds between the flow's first packet
    /// and this one.
    FlowAge(IntCmp),
    /// `tcp.session:<phase>[,<phase>...]` (Suricata 9): a set of
    /// [`TCP_SESSION_SETUP`] / [`TCP_SESSION_ESTABLISHED`] /
    /// [`TCP_SESSION_CLOSING`] bits; matches when the packet's TCP
    /// session phases intersect it.
    TcpSession(u8),
    /// `flow.elephant:<toserver|toclient|either|both>` (Suricata 8+).
    FlowElephant(ElephantDir),
    /// `flow.pkts` / `flow.bytes` and their `_toserver` / `_toclient`
    /// forms: the flow's counters, current packet included.
    FlowCount {
        counter: FlowCounter,
        dir: FlowCountDir,
        cmp: IntCmp,
    },
    /// `flowint:name,op[,value]`.
    Flowint(Flowint),
    /// `flowvar:name,"content"`: a flow variable a pcre captured holds
    /// `content`.
    Flowvar(VarMatch),
    /// `pktvar:name,"content"`: a packet variable a pcre captured (an
    /// earlier rule, on this packet) holds `content`.
    Pktvar(VarMatch),
    /// `xbits:cmd,name,track T[,expire N]`, and `hostbits` (as xbits
    /// with `track ip_src` / `ip_dst`): bits kept per host or address
    /// pair, across flows.
    Xbits(Xbits),
    /// `rpc:<program>[, <version|*>[, <procedure|*>]]`: the packet
    /// payload is an ONC RPC call to that program (Suricata's
    /// detect-rpc.c).
    Rpc(RpcMatch),
    /// `iprep:<side>,<category>,<op>,<score>` (or `isset` / `isnotset`):
    /// the IP reputation of the packet's addresses. The category is
    /// resolved against the loaded reputation when the rule is compiled.
    IpRep(IpRep),
    /// `geoip:[<side>,]<country>[,<country>...]`: the country of the
    /// packet's IPv4 addresses in the GeoIP database (`geoip-database`).
    GeoIp(GeoIp),
    /// `app-layer-state:[<|>]<state>`: the transaction's progress in the
    /// direction the state name belongs to, resolved against the rule
    /// header's protocol (see [`crate::app_state_id`]).
    AppLayerState(AppLayerState),
    /// Any other keyword that parsed but is not evaluated yet.
    NotEvaluable {
        keyword: String,
        value: Option<String>,
    },
}

/// How `app-layer-state` compares the transaction's progress with the
/// named state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppStateOp {
    /// No operator: Suricata's hook form, the rule is inspected once the
    /// transaction has reached the state (progress >= state).
    AtLeast,
    /// `<state`: progress before the state.
    Lt,
    /// `>state`: progress past the state.
    Gt,
}

impl AppStateOp {
    /// Whether a progress value passes against the state's value.
    pub fn matches(self, progress: u8, state: u8) -> bool {
        match self {
            AppStateOp::AtLeast => progress >= state,
            AppStateOp::Lt => progress < state,
            AppStateOp::Gt => progress > state,
        }
    }
}

/// `app-layer-state:[<|>]<state>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppLayerState {
    pub op: AppStateOp,
    /// The state name as written.
    pub name: String,
    /// The protocol the name was resolved for (`http1`, `tls`, ...).
    pub proto: String,
    /// The state's direction: true for the request (to server) side.
    pub to_server: bool,
    /// The state's progress value (Suricata's numbering).
    pub progress: u8,
}

/// The progress states of the protocols that name them, per direction,
/// in progress order (Suricata 9's names; the value is the index).
const APP_STATES: &[(&str, &[&str], &[&str])] = &[
    (
        "http1",
        &[
            "request_started",
            "request_line",
            "request_headers",
            "request_body",
            "request_trailer",
            "request_complete",
        ],
        &[
            "response_started",
            "response_line",
            "response_headers",
            "response_body",
            "response_trailer",
            "response_complete",
        ],
    ),
    (
        "tls",
        &[
            "client_in_progress",
            "client_hello_done",
            "client_cert_done",
            "client_handshake_done",
            "client_finished",
        ],
        &[
            "server_in_progress",
            "server_hello",
            "server_cert_done",
            "server_hello_done",
            "server_handshake_done",
            "server_finished",
        ],
    ),
    (
        "ssh",
        &[
            "request_in_progress",
            "request_banner_wait_eol",
            "request_banner_done",
            "request_finished",
        ],
        &[
            "response_in_progress",
            "response_banner_wait_eol",
            "response_banner_done",
            "response_finished",
        ],
    ),
    (
        "smtp",
        &["request_started", "request_data", "request_complete"],
        &["response_started", "response_data", "response_complete"],
    ),
];

/// The protocols whose transactions have named progress states, for
/// `app-layer-state` (rule header names; `ssl` is `tls`).
pub fn app_state_protocols() -> impl Iterator<Item = &'static str> {
    APP_STATES.iter().map(|(p, _, _)| *p)
}

/// Resolves an `app-layer-state` name for a rule header protocol: the
/// direction (true: to server) and progress value, as Suricata numbers
/// them; `None` when the protocol has no such state.
pub fn app_state_id(proto: &str, name: &str) -> Option<(bool, u8)> {
    let proto = if proto == "ssl" { "tls" } else { proto };
    let (_, ts, tc) = APP_STATES.iter().find(|(p, _, _)| *p == proto)?;
    if let Some(i) = ts.iter().position(|n| *n == name) {
        return Some((true, i as u8));
    }
    tc.iter().position(|n| *n == name).map(|i| (false, i as u8))
}

/// `rpc:` values; `None` is `*` (any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpcMatch {
    pub program: u32,
    pub version: Option<u32>,
    pub procedure: Option<u32>,
}

/// Which addresses `iprep` looks up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpRepSide {
    /// Source or destination.
    Any,
    Src,
    Dst,
    /// Source and destination.
    Both,
}

/// How `iprep` compares a reputation score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpRepOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    /// The address has a score in the category (any value).
    IsSet,
    /// The address has no score in the category.
    IsNotSet,
}

impl IpRepOp {
    /// Whether a score passes the comparison against `value`. As in
    /// Suricata, `IsSet` is `>= 0` (any score) and `IsNotSet` is `= 0`
    /// when an address has a score (for `src` / `dst`, `isnotset` then
    /// matches a score of 0); the absence of a score is decided by the
    /// caller.
    pub fn matches(self, score: u8, value: u8) -> bool {
        match self {
            IpRepOp::Lt => score < value,
            IpRepOp::Le => score <= value,
            IpRepOp::Gt => score > value,
            IpRepOp::Ge => score >= value,
            IpRepOp::Eq => score == value,
            IpRepOp::Ne => score != value,
            IpRepOp::IsSet => true,
            IpRepOp::IsNotSet => score == 0,
        }
    }
}

/// `iprep:<side>,<category>,<op>,<score>` / `iprep:<side>,<category>,isset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpRep {
    pub side: IpRepSide,
    /// The category's short name, as written.
    pub category: String,
    pub op: IpRepOp,
    /// The score compared (0 for `isset` / `isnotset`).
    pub value: u8,
}

/// Most countries one `geoip` option may list (Suricata's
/// `GEOOPTION_MAXLOCATIONS`).
pub const GEOIP_MAX_COUNTRIES: usize = 64;

/// `geoip:[<any|src|dst|both>,][!]<cc>[,<cc>...]` (Suricata's
/// detect-geoip.c).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeoIp {
    /// Which addresses are looked up (`any` when not given).
    pub side: IpRepSide,
    /// A `!` on any country negates the whole list: an address matches
    /// when its country is known and not in the list.
    pub negated: bool,
    /// The country codes, each cut to its first 2 bytes (as Suricata
    /// does), at most [`GEOIP_MAX_COUNTRIES`].
    pub countries: Vec<String>,
}

/// Which flow counter `flow.pkts` / `flow.bytes` read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowCounter {
    Pkts,
    Bytes,
}

/// Which direction's counter: `toserver`, `toclient`, or `either` (one
/// of the two matches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowCountDir {
    ToServer,
    ToClient,
    Either,
}

/// A `flowint` operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flowint {
    pub name: String,
    pub op: FlowintOp,
    /// The operand (absent for `isset` / `notset`).
    pub value: Option<FlowintValue>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowintOp {
    /// `=`: set.
    Set,
    /// `+`: add (an unset variable counts as 0).
    Add,
    /// `-`: subtract (saturating at 0, as Suricata's u32).
    Sub,
    IsSet,
    NotSet,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl FlowintOp {
    /// Whether the operation changes the variable (rather than tests it).
    pub fn is_modifier(self) -> bool {
        matches!(self, FlowintOp::Set | FlowintOp::Add | FlowintOp::Sub)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowintValue {
    Num(u32),
    /// Another flowint variable of the same flow.
    Var(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xbits {
    pub cmd: FlowbitsCmd,
    pub name: String,
    /// `ip_src`, `ip_dst`, `ip_pair` or `tx`.
    pub track: String,
    pub expire: Option<u32>,
}

/// Direction of `flow.elephant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElephantDir {
    ToServer,
    ToClient,
    Either,
    Both,
}

/// `tcp.session` phase: the session is not established yet.
pub const TCP_SESSION_SETUP: u8 = 1;
/// `tcp.session` phase: the session is established (the packet's
/// flow was established before it, as `flow:established`).
pub const TCP_SESSION_ESTABLISHED: u8 = 2;
/// `tcp.session` phase: a FIN was seen (FIN_WAIT1/2, TIME_WAIT,
/// LAST_ACK, CLOSE_WAIT, CLOSING).
pub const TCP_SESSION_CLOSING: u8 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Decode,
    Stream,
    AppLayer,
    /// `engine-event:` with the family prefix kept (`decoder.` or
    /// `stream.`), resolved like decode-event / stream-event.
    Engine,
}

/// Where a rule came from, for diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Origin {
    pub file: String,
    /// 1-based line of the rule's first line.
    pub line: usize,
}

/// What a `tag` keyword tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagScope {
    /// `session`: the flow of the matching packet.
    Session,
    /// `host`: the packet's source (`true`) or destination address.
    Host { src: bool },
}

/// How long a tag lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagMetric {
    Packets,
    Seconds,
    Bytes,
}

/// `tag:session|host[,count,packets|seconds|bytes[,src|dst]]` (Suricata's
/// defaults: 256 packets, `dst`; a packets count is capped at 256).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagSpec {
    pub scope: TagScope,
    pub count: u32,
    pub metric: TagMetric,
}

/// A parsed rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub action: Action,
    pub header: Header,
    pub gid: u32,
    pub sid: u32,
    pub rev: u32,
    pub msg: String,
    pub classtype: Option<String>,
    pub priority: Option<u8>,
    pub references: Vec<(String, String)>,
    /// `metadata:` key/value pairs in order (`key value` split at the
    /// first space; a lone word has an empty value).
    pub metadata: Vec<(String, String)>,
    /// Payload keywords grouped by buffer, buffers in first-use order.
    pub buffers: Vec<BufferMatch>,
    pub conditions: Vec<Condition>,
    /// `noalert` or `flowbits:noalert`.
    pub noalert: bool,
    /// `alert` (Suricata 8+): the rule alerts even if its action does
    /// not imply it (`pass ... (alert; ...)`: "alert then pass").
    pub force_alert: bool,
    /// `bypass`: a match bypasses the rest of the flow.
    pub bypass: bool,
    /// `nfq_set_mark:<mark>/<mask>` (NFQUEUE inline only): a match sets
    /// the accepted packet's netfilter mark to
    /// `(old & !mask) | (mark & mask)`.
    pub nfq_mark: Option<(u32, u32)>,
    /// `config: logging disable, type tx, scope tx`: a match keeps the
    /// matching transaction out of the transaction log.
    pub disable_tx_log: bool,
    /// `target:src_ip|dest_ip`.
    pub target: Option<String>,
    /// `tag:`: after an alert, the session's or host's later packets are
    /// logged (EVE `packet` records).
    pub tag: Option<TagSpec>,
    /// Keywords that parsed but cannot be evaluated yet, in rule order
    /// (deduplicated). A rule with any is skipped by detection.
    pub not_evaluable: Vec<String>,
    /// `requires:` that this engine does not meet (the reason); Suricata
    /// skips such rules silently, so detection skips them too.
    pub requires_unmet: Option<String>,
    pub origin: Origin,
    /// The rule text as written (joined continuation lines).
    pub text: String,
}

impl Rule {
    /// True when every keyword of the rule can be evaluated.
    pub fn is_evaluable(&self) -> bool {
        self.not_evaluable.is_empty()
    }

    /// The payload keywords of one buffer, if the rule inspects it.
    pub fn buffer(&self, buffer: &Buffer) -> Option<&BufferMatch> {
        self.buffers.iter().find(|b| b.buffer == *buffer)
    }
}
