//! EVE JSON: one JSON object per line, in Suricata 8's field order.
//!
//! Records are built into a reusable `Vec<u8>`. Every string that comes from
//! outside (rule text, metadata, app-layer names, stats names) goes through
//! `serde_json`, so escaping is always correct; the only bytes written by hand
//! are the fixed ASCII keys, numbers' surrounding punctuation, and values whose
//! alphabet needs no escaping (timestamps, IP addresses, base64).
//!
//! [`EveFormatter`] only formats, so workers can format in parallel and hand
//! finished lines to one [`EveWriter`] in input order.

use std::cmp::Ordering;
use std::io::{self, Write};

use base64::Engine as _;

use crate::alert::{write_ip, AlertEvent, FlowInfo, VarsEvent};
use crate::proto::{linktype_name, proto_name};
use crate::stats::StatsTree;
use crate::time::write_iso8601;

/// Which payload forms an alert carries when it has a payload; the EVE
/// `alert` output's `payload`, `payload-printable` and `payload-length`
/// settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EveConfig {
    /// `payload`: the payload in base64.
    pub payload_base64: bool,
    /// `payload_printable`: the payload with non-printable bytes as `.`.
    pub payload_printable: bool,
    /// `payload_length` (Suricata 8).
    pub payload_length: bool,
    /// `community-id: yes` with its `community-id-seed`: every event
    /// carries the flow's Community ID (the Community ID spec, version
    /// 1), as Suricata's does. Off by default, as in Suricata.
    pub community_id: Option<u16>,
}

impl Default for EveConfig {
    fn default() -> Self {
        EveConfig {
            payload_base64: true,
            payload_printable: true,
            payload_length: false,
            community_id: None,
        }
    }
}

/// Appends a JSON object's members to a buffer, tracking commas.
struct Obj<'b> {
    buf: &'b mut Vec<u8>,
    members: usize,
}

impl<'b> Obj<'b> {
    fn open(buf: &'b mut Vec<u8>) -> Self {
        buf.push(b'{');
        Obj { buf, members: 0 }
    }

    fn sep(&mut self) {
        if self.members > 0 {
            self.buf.push(b',');
        }
        self.members += 1;
    }

    /// A fixed key: must be plain ASCII needing no escaping.
    fn key(&mut self, key: &'static str) {
        debug_assert!(key
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\'));
        self.sep();
        self.buf.push(b'"');
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    /// A key that comes from data (rule metadata, counter names).
    fn dyn_key(&mut self, key: &str) -> io::Result<()> {
        self.sep();
        json_str(self.buf, key)?;
        self.buf.push(b':');
        Ok(())
    }

    /// A fixed string value: plain ASCII needing no escaping, written as
    /// it is (event types and protocol names are in every record).
    fn lit(&mut self, key: &'static str, val: &'static str) {
        debug_assert!(val
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\'));
        self.key(key);
        self.buf.push(b'"');
        self.buf.extend_from_slice(val.as_bytes());
        self.buf.push(b'"');
    }

    fn str(&mut self, key: &'static str, val: &str) -> io::Result<()> {
        self.key(key);
        json_str(self.buf, val)
    }

    fn uint(&mut self, key: &'static str, val: u64) -> io::Result<()> {
        self.key(key);
        json_uint(self.buf, val)
    }

    fn bool(&mut self, key: &'static str, val: bool) {
        self.key(key);
        self.buf
            .extend_from_slice(if val { b"true" } else { b"false" });
    }

    fn object(&mut self, key: &'static str) -> Obj<'_> {
        self.key(key);
        Obj::open(self.buf)
    }

    fn close(self) {
        self.buf.push(b'}');
    }
}

fn json_str(buf: &mut Vec<u8>, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *buf, s).map_err(io::Error::from)
}

/// Appends a JSON array of strings.
fn json_str_array<'s>(
    buf: &mut Vec<u8>,
    items: impl IntoIterator<Item = &'s str>,
) -> io::Result<()> {
    buf.push(b'[');
    for (i, s) in items.into_iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        json_str(buf, s)?;
    }
    buf.push(b']');
    Ok(())
}

fn json_uint(buf: &mut Vec<u8>, v: u64) -> io::Result<()> {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    Ok(())
}

/// Appends `"<ISO 8601 time>"`.
fn json_time(buf: &mut Vec<u8>, secs: i64, nanos: u32) -> io::Result<()> {
    buf.push(b'"');
    write_iso8601(buf, secs, nanos)?;
    buf.push(b'"');
    Ok(())
}

/// Appends `"<address>"`.
fn json_ip(buf: &mut Vec<u8>, ip: &std::net::IpAddr) -> io::Result<()> {
    buf.push(b'"');
    write_ip(buf, ip)?;
    buf.push(b'"');
    Ok(())
}

/// Appends `"<standard base64 with padding>"`.
fn json_base64(buf: &mut Vec<u8>, data: &[u8]) {
    buf.push(b'"');
    let start = buf.len();
    // encoded_len only fails past usize::MAX, which no slice reaches.
    let len = base64::encoded_len(data.len(), true).unwrap_or(0);
    buf.resize(start + len, 0);
    let written = base64::engine::general_purpose::STANDARD
        .encode_slice(data, &mut buf[start..])
        .unwrap_or(0);
    buf.truncate(start + written);
    buf.push(b'"');
}

/// Suricata's printable form of a payload: printable ASCII, `\n` and `\r`
/// are kept, every other byte becomes `.`.
pub fn printable_payload(data: &[u8], out: &mut Vec<u8>) {
    out.extend(data.iter().map(|&b| {
        if (0x20..=0x7e).contains(&b) || b == b'\n' || b == b'\r' {
            b
        } else {
            b'.'
        }
    }));
}

/// `strcasecmp` over ASCII: what Suricata sorts metadata keys with.
fn ascii_casecmp(a: &str, b: &str) -> Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

/// The rule's fields an `alert` object starts with (Suricata's
/// AlertJsonHeader): action, gid, signature_id, rev, signature, category,
/// severity, and `source` / `target` for a rule with `target:`.
fn write_rule(a: &mut Obj<'_>, ev: &AlertEvent<'_>) -> io::Result<()> {
    a.str("action", ev.action)?;
    a.uint("gid", u64::from(ev.gid))?;
    a.uint("signature_id", u64::from(ev.signature_id))?;
    a.uint("rev", u64::from(ev.rev))?;
    a.str("signature", ev.signature)?;
    a.str("category", ev.category)?;
    a.uint("severity", u64::from(ev.severity))?;
    if let (Some(t), false) = (ev.target, ev.link_only) {
        write_source_target(a, ev, t)?;
    }
    Ok(())
}

/// Suricata's AlertJsonSourceTarget: `source` is the attacking side and
/// `target` the side the rule's `target:` names, each with its address
/// and, for TCP, UDP and SCTP, its port (the record's addresses, after an
/// XFF overwrite).
fn write_source_target(
    a: &mut Obj<'_>,
    ev: &AlertEvent<'_>,
    t: crate::alert::AlertTarget,
) -> io::Result<()> {
    let src = (&ev.src_ip, ev.src_port);
    let dst = (&ev.dest_ip, ev.dest_port);
    let (source, target) = match t {
        crate::alert::AlertTarget::Dest => (src, dst),
        crate::alert::AlertTarget::Src => (dst, src),
    };
    for (key, (ip, port)) in [("source", source), ("target", target)] {
        let mut o = a.object(key);
        o.key("ip");
        json_ip(o.buf, ip)?;
        if let Some(p) = port {
            o.uint("port", u64::from(p))?;
        }
        o.close();
    }
    Ok(())
}

/// The header every event starts with, as Suricata's CreateEveHeader
/// writes it.
fn write_header(
    o: &mut Obj<'_>,
    ev: &AlertEvent<'_>,
    event_type: &'static str,
    community_id: Option<u16>,
    text: &mut Vec<u8>,
) -> io::Result<()> {
    o.key("timestamp");
    json_time(o.buf, ev.ts_secs, ev.ts_nanos)?;
    if let Some(id) = ev.flow_id {
        o.uint("flow_id", id)?;
    }
    if let Some(cnt) = ev.pcap_cnt {
        o.uint("pcap_cnt", cnt)?;
    }
    o.lit("event_type", event_type);
    if !ev.vlan.is_empty() {
        o.key("vlan");
        o.buf.push(b'[');
        for (i, id) in ev.vlan.iter().enumerate() {
            if i > 0 {
                o.buf.push(b',');
            }
            json_uint(o.buf, u64::from(*id))?;
        }
        o.buf.push(b']');
    }
    if ev.link_only {
        return o.str("pkt_src", ev.pkt_src);
    }
    o.key("src_ip");
    json_ip(o.buf, &ev.src_ip)?;
    if let Some(p) = ev.src_port {
        o.uint("src_port", u64::from(p))?;
    }
    o.key("dest_ip");
    json_ip(o.buf, &ev.dest_ip)?;
    if let Some(p) = ev.dest_port {
        o.uint("dest_port", u64::from(p))?;
    }
    match proto_name(ev.proto) {
        Some(name) => o.lit("proto", name),
        None => {
            o.key("proto");
            // A number as a JSON string, e.g. "253".
            o.buf.push(b'"');
            json_uint(o.buf, u64::from(ev.proto))?;
            o.buf.push(b'"');
        }
    }
    o.uint("ip_v", if ev.src_ip.is_ipv4() { 4 } else { 6 })?;
    if let Some(t) = ev.icmp_type {
        o.uint("icmp_type", u64::from(t))?;
    }
    if let Some(c) = ev.icmp_code {
        o.uint("icmp_code", u64::from(c))?;
    }
    if let Some(s) = &ev.sctp {
        write_sctp(o, s)?;
    }
    if let Some(g) = &ev.igmp {
        let mut x = o.object("igmp");
        x.uint("type", u64::from(g.itype))?;
        x.uint("version", u64::from(g.version))?;
        x.close();
    }
    // Flow and netflow records have no packet, so no `pkt_src`.
    if !ev.pkt_src.is_empty() {
        o.str("pkt_src", ev.pkt_src)?;
    }
    if let Some(v) = &ev.vars {
        write_vars(o, v, text)?;
    }
    if let Some(seed) = community_id {
        // ICMP: type and code stand for the ports (the spec maps them).
        let (sp, dp) = match (ev.icmp_type, ev.icmp_code) {
            (Some(t), Some(c)) => (Some(u16::from(t)), Some(u16::from(c))),
            _ => (ev.src_port, ev.dest_port),
        };
        if let Ok(id) = community_id::calculate_community_id(
            seed, ev.src_ip, ev.dest_ip, sp, dp, ev.proto, false,
        ) {
            o.str("community_id", &id)?;
        }
    }
    Ok(())
}

/// A variable's value as Suricata prints it (`PrintStringsToBuffer`:
/// non-printable bytes but `\n` and `\r` as `.`), as a JSON string.
fn json_printable(buf: &mut Vec<u8>, v: &[u8], text: &mut Vec<u8>) -> io::Result<()> {
    text.clear();
    printable_payload(v, text);
    // printable_payload emits ASCII only.
    let s = std::str::from_utf8(text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    json_str(buf, s)
}

/// Flowbits with these name prefixes go to the `traffic` object (ids and
/// labels) instead of `metadata.flowbits`.
const TRAFFIC_ID_PREFIX: &str = "traffic/id/";
const TRAFFIC_LABEL_PREFIX: &str = "traffic/label/";

/// Suricata's `EveAddMetadata`: the `traffic` object (flowbits named
/// `traffic/id/...`, `traffic/label/...`), then `metadata` with
/// `flowbits`, `flowints`, `flowvars` (`[{"name":"value"},...]`) and
/// `pktvars`, each only when it has entries. Nothing when the flow and
/// packet have no variables.
fn write_vars(o: &mut Obj<'_>, v: &VarsEvent<'_>, text: &mut Vec<u8>) -> io::Result<()> {
    if !v.any() {
        return Ok(());
    }
    let ids = || {
        v.flowbits
            .iter()
            .filter_map(|b| b.strip_prefix(TRAFFIC_ID_PREFIX))
    };
    let labels = || {
        v.flowbits
            .iter()
            .filter_map(|b| b.strip_prefix(TRAFFIC_LABEL_PREFIX))
    };
    let mut plain = v
        .flowbits
        .iter()
        .filter(|b| !b.starts_with(TRAFFIC_ID_PREFIX) && !b.starts_with(TRAFFIC_LABEL_PREFIX))
        .peekable();
    if ids().next().is_some() || labels().next().is_some() {
        let mut t = o.object("traffic");
        for (key, mut names) in [
            ("id", Box::new(ids()) as Box<dyn Iterator<Item = &str>>),
            ("label", Box::new(labels())),
        ] {
            if let Some(first) = names.next() {
                t.key(key);
                json_str_array(t.buf, std::iter::once(first).chain(names))?;
            }
        }
        t.close();
    }
    let mut m = o.object("metadata");
    if plain.peek().is_some() {
        m.key("flowbits");
        json_str_array(m.buf, plain.map(String::as_str))?;
    }
    if !v.flowints.is_empty() {
        let mut fi = m.object("flowints");
        for (name, val) in v.flowints {
            fi.dyn_key(name)?;
            json_uint(fi.buf, u64::from(*val))?;
        }
        fi.close();
    }
    for (key, list) in [("flowvars", v.flowvars), ("pktvars", v.pktvars)] {
        if list.is_empty() {
            continue;
        }
        m.key(key);
        m.buf.push(b'[');
        for (i, (name, val)) in list.iter().enumerate() {
            if i > 0 {
                m.buf.push(b',');
            }
            let mut e = Obj::open(m.buf);
            e.dyn_key(name)?;
            json_printable(e.buf, val, text)?;
            e.close();
        }
        m.buf.push(b']');
    }
    m.close();
    Ok(())
}

/// Suricata's `tunnel` object (AlertJsonTunnel): the root packet's
/// addresses, ports (0 without), protocol, the depth and the root's
/// `pcap_cnt` and `pkt_src`.
fn write_tunnel(o: &mut Obj<'_>, t: &crate::alert::TunnelEvent) -> io::Result<()> {
    let mut x = o.object("tunnel");
    x.key("src_ip");
    json_ip(x.buf, &t.src_ip)?;
    x.uint("src_port", u64::from(t.src_port))?;
    x.key("dest_ip");
    json_ip(x.buf, &t.dest_ip)?;
    x.uint("dest_port", u64::from(t.dest_port))?;
    x.key("proto");
    match proto_name(t.proto) {
        Some(name) => json_str(x.buf, name)?,
        None => write!(x.buf, "\"{}\"", t.proto)?,
    }
    x.uint("depth", u64::from(t.depth))?;
    if let Some(c) = t.pcap_cnt {
        x.uint("pcap_cnt", c)?;
    }
    x.str("pkt_src", "wire/pcap")?;
    x.close();
    Ok(())
}

/// Suricata 9's `sctp` object: verification tag, chunk count, the first
/// 16 chunk types by name (`unknown(N)` for types Suricata does not
/// name) and which of INIT, INIT ACK, DATA and ABORT the packet has.
fn write_sctp(o: &mut Obj<'_>, s: &vigil_wire::SctpInfo) -> io::Result<()> {
    let mut x = o.object("sctp");
    x.uint("vtag", u64::from(s.vtag))?;
    x.uint("chunk_cnt", u64::from(s.chunk_cnt))?;
    x.key("chunk_types");
    x.buf.push(b'[');
    for (i, t) in s.chunk_types().iter().enumerate() {
        if i > 0 {
            x.buf.push(b',');
        }
        match vigil_wire::sctp_chunk::name(*t) {
            Some(n) => json_str(x.buf, n)?,
            None => write!(x.buf, "\"unknown({t})\"")?,
        }
    }
    x.buf.push(b']');
    x.bool("has_init", s.has_init);
    x.bool("has_init_ack", s.has_init_ack);
    x.bool("has_data", s.has_data);
    x.bool("has_abort", s.has_abort);
    x.close();
    Ok(())
}

/// Formats EVE records into caller-provided buffers. Holds only scratch
/// space, so one per worker thread costs nothing after warm-up.
#[derive(Debug, Default, Clone)]
pub struct EveFormatter {
    config: EveConfig,
    order: Vec<usize>,
    text: Vec<u8>,
}

impl EveFormatter {
    pub fn new(config: EveConfig) -> Self {
        EveFormatter {
            config,
            order: Vec::new(),
            text: Vec::new(),
        }
    }

    pub fn config(&self) -> &EveConfig {
        &self.config
    }

    /// Appends one alert record to `out`, without the trailing newline.
    pub fn alert(&mut self, out: &mut Vec<u8>, ev: &AlertEvent<'_>) -> io::Result<()> {
        let mut o = Obj::open(out);

        write_header(
            &mut o,
            ev,
            "alert",
            self.config.community_id,
            &mut self.text,
        )?;

        // AlertJsonHeader.
        if let Some(tx) = ev.tx_id {
            o.uint("tx_id", tx)?;
        }
        {
            let mut a = o.object("alert");
            write_rule(&mut a, ev)?;
            if !ev.metadata.is_empty() {
                a.key("metadata");
                write_metadata(a.buf, ev.metadata, &mut self.order)?;
            }
            if !ev.references.is_empty() {
                a.key("references");
                json_str_array(a.buf, ev.references.iter().map(String::as_str))?;
            }
            if !ev.context.is_empty() {
                let mut c = a.object("context");
                for (k, v) in ev.context {
                    c.dyn_key(k)?;
                    json_printable(c.buf, v, &mut self.text)?;
                }
                c.close();
            }
            if let Some(x) = ev.xff {
                a.str("xff", x)?;
            }
            a.close();
        }
        if let Some(t) = &ev.tunnel {
            write_tunnel(&mut o, t)?;
        }

        if let Some((key, json)) = ev.app {
            o.key(key);
            o.buf.extend_from_slice(json.as_bytes());
        }
        if let Some(p) = ev.app_proto {
            o.str("app_proto", p)?;
        }
        if let Some(d) = ev.direction {
            o.str("direction", d)?;
        }
        if let Some(f) = &ev.flow {
            write_flow(o.object("flow"), f)?;
        }

        if let Some(payload) = ev.payload {
            if self.config.payload_base64 && !payload.is_empty() {
                o.key("payload");
                json_base64(o.buf, payload);
            }
            if self.config.payload_length {
                o.uint("payload_length", payload.len() as u64)?;
            }
            if self.config.payload_printable && !payload.is_empty() {
                self.text.clear();
                printable_payload(payload, &mut self.text);
                // printable_payload emits ASCII only.
                let s = std::str::from_utf8(&self.text)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                o.str("payload_printable", s)?;
            }
            o.uint("stream", u64::from(ev.stream))?;
        }

        if let Some(f) = &ev.frame {
            // Suricata's FrameJsonLogOneFrame.
            let mut fo = o.object("frame");
            fo.str("type", f.name)?;
            fo.uint("id", f.id)?;
            fo.str(
                "direction",
                if f.to_server { "toserver" } else { "toclient" },
            )?;
            if let Some(off) = f.stream_offset {
                fo.uint("stream_offset", off)?;
            }
            fo.uint("length", f.length)?;
            fo.bool("complete", f.complete);
            let data = &f.payload[..f.payload.len().min(256)];
            fo.key("payload");
            json_base64(fo.buf, data);
            self.text.clear();
            printable_payload(data, &mut self.text);
            let s = std::str::from_utf8(&self.text)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            fo.str("payload_printable", s)?;
            if let Some(t) = f.tx_id {
                fo.uint("tx_id", t)?;
            }
            fo.close();
        }

        if let Some(pkt) = ev.packet {
            o.key("packet");
            json_base64(o.buf, pkt);
        }
        if let Some(lt) = ev.packet_info_linktype {
            let mut pi = o.object("packet_info");
            pi.uint("linktype", u64::from(lt))?;
            pi.str("linktype_name", linktype_name(lt))?;
            pi.close();
        }

        o.close();
        Ok(())
    }

    /// Appends one app-layer transaction record (`event_type` `http`,
    /// `dns` or `tls`: the key of `ev.app`) to `out`, without the
    /// trailing newline. Nothing is written when `ev.app` is `None`.
    pub fn tx_record(&mut self, out: &mut Vec<u8>, ev: &AlertEvent<'_>) -> io::Result<()> {
        let Some((key, json)) = ev.app else {
            return Ok(());
        };
        let mut o = Obj::open(out);
        write_header(&mut o, ev, key, self.config.community_id, &mut self.text)?;
        // Suricata's SIP, MQTT, RFB, DHCP, Kerberos, SNMP, IKE, QUIC, FTP data,
        // WebSocket, PostgreSQL, mDNS and LLMNR loggers write their records
        // without `tx_id` (PostgreSQL's is in its object); flow records have
        // none.
        if let Some(tx) = ev.tx_id.filter(|_| {
            !matches!(
                key,
                "sip"
                    | "mqtt"
                    | "rfb"
                    | "dhcp"
                    | "krb5"
                    | "snmp"
                    | "ike"
                    | "quic"
                    | "ftp_data"
                    | "websocket"
                    | "pgsql"
                    | "flow"
                    | "netflow"
                    | "mdns"
                    | "llmnr"
                    | "ldap"
                    | "ntp"
                    | "bittorrent_dht"
                    | "pop3"
                    | "rdp"
            )
        }) {
            o.uint("tx_id", tx)?;
        }
        // Flow records say the flow's application protocol.
        if let Some(p) = ev.app_proto.filter(|_| matches!(key, "flow" | "netflow")) {
            o.str("app_proto", p)?;
        }
        o.key(key);
        o.buf.extend_from_slice(json.as_bytes());
        o.close();
        Ok(())
    }

    /// Appends one `drop` record (Suricata's drop log): the header, the
    /// `drop` object from `ev.app`, and with `with_alert` the rule that
    /// dropped the packet as an `alert` object.
    pub fn drop_record(
        &mut self,
        out: &mut Vec<u8>,
        ev: &AlertEvent<'_>,
        with_alert: bool,
    ) -> io::Result<()> {
        let Some((key, json)) = ev.app else {
            return Ok(());
        };
        let mut o = Obj::open(out);
        write_header(&mut o, ev, key, self.config.community_id, &mut self.text)?;
        o.key(key);
        o.buf.extend_from_slice(json.as_bytes());
        if with_alert {
            let mut a = o.object("alert");
            write_rule(&mut a, ev)?;
            a.close();
        }
        o.close();
        Ok(())
    }

    /// Appends one `packet` record (Suricata's `tagged-packets`: a packet
    /// a `tag` covers): the header, then the frame in base64 (`ev.packet`)
    /// and its `packet_info`.
    pub fn packet_record(&mut self, out: &mut Vec<u8>, ev: &AlertEvent<'_>) -> io::Result<()> {
        let mut o = Obj::open(out);
        write_header(
            &mut o,
            ev,
            "packet",
            self.config.community_id,
            &mut self.text,
        )?;
        o.key("packet");
        json_base64(o.buf, ev.packet.unwrap_or(&[]));
        let lt = ev.packet_info_linktype.unwrap_or(1);
        let mut pi = o.object("packet_info");
        pi.uint("linktype", u64::from(lt))?;
        pi.str("linktype_name", linktype_name(lt))?;
        pi.close();
        o.close();
        Ok(())
    }

    /// Appends one stats record to `out`, without the trailing newline:
    /// `{"timestamp":...,"event_type":"stats","stats":{...}}`. Only counters
    /// are written (no uptime), so equal trees give equal bytes.
    pub fn stats(
        &mut self,
        out: &mut Vec<u8>,
        ts_secs: i64,
        ts_nanos: u32,
        tree: &StatsTree,
    ) -> io::Result<()> {
        let mut o = Obj::open(out);
        o.key("timestamp");
        json_time(o.buf, ts_secs, ts_nanos)?;
        o.str("event_type", "stats")?;
        o.key("stats");
        serde_json::to_writer(&mut *o.buf, tree).map_err(io::Error::from)?;
        o.close();
        Ok(())
    }
}

fn write_flow(mut o: Obj<'_>, f: &FlowInfo) -> io::Result<()> {
    o.uint("pkts_toserver", f.pkts_toserver)?;
    o.uint("pkts_toclient", f.pkts_toclient)?;
    o.uint("bytes_toserver", f.bytes_toserver)?;
    o.uint("bytes_toclient", f.bytes_toclient)?;
    o.key("start");
    json_time(o.buf, f.start_secs, f.start_nanos)?;
    o.key("src_ip");
    json_ip(o.buf, &f.src_ip)?;
    o.key("dest_ip");
    json_ip(o.buf, &f.dest_ip)?;
    if let Some(p) = f.src_port {
        o.uint("src_port", u64::from(p))?;
    }
    if let Some(p) = f.dest_port {
        o.uint("dest_port", u64::from(p))?;
    }
    o.close();
    Ok(())
}

/// Suricata's rule metadata object (`CraftPreformattedJSON`): keys sorted
/// case-insensitively, each key once with all its values. Suricata keeps the
/// pairs in a list it prepends to, then sorts it stably, so the values of
/// one key come out in reverse rule order; this reproduces that.
fn write_metadata(
    buf: &mut Vec<u8>,
    pairs: &[(String, String)],
    order: &mut Vec<usize>,
) -> io::Result<()> {
    order.clear();
    order.extend((0..pairs.len()).rev());
    order.sort_by(|&a, &b| ascii_casecmp(&pairs[a].0, &pairs[b].0));

    let mut o = Obj::open(buf);
    let mut i = 0;
    while i < order.len() {
        let key = &pairs[order[i]].0;
        o.dyn_key(key)?;
        o.buf.push(b'[');
        let mut j = i;
        while j < order.len() && ascii_casecmp(key, &pairs[order[j]].0) == Ordering::Equal {
            if j > i {
                o.buf.push(b',');
            }
            json_str(o.buf, &pairs[order[j]].1)?;
            j += 1;
        }
        o.buf.push(b']');
        i = j;
    }
    o.close();
    Ok(())
}

/// How many bytes of records [`EveWriter`] gathers before it writes them.
const WRITE_AT: usize = 64 * 1024;

/// Writes EVE records, one per line, buffered: each record is formatted
/// straight into the buffer (no line copied into a `BufWriter`), and the
/// buffer goes to the writer in whole lines once it holds 64 KiB.
///
/// Call [`flush`](Self::flush) (or [`into_inner`](Self::into_inner)) at the
/// end of a run; dropping the writer flushes too but loses any error.
#[derive(Debug)]
pub struct EveWriter<W: Write> {
    /// `None` only once [`EveWriter::into_inner`] took it.
    out: Option<W>,
    buf: Vec<u8>,
    fmt: EveFormatter,
}

impl<W: Write> EveWriter<W> {
    pub fn new(inner: W) -> Self {
        Self::with_config(inner, EveConfig::default())
    }

    pub fn with_config(inner: W, config: EveConfig) -> Self {
        EveWriter {
            out: Some(inner),
            buf: Vec::with_capacity(WRITE_AT + 4096),
            fmt: EveFormatter::new(config),
        }
    }

    /// Appends one record formatted by `f` and its newline; a record that
    /// fails to format leaves nothing behind.
    fn record(
        &mut self,
        f: impl FnOnce(&mut EveFormatter, &mut Vec<u8>) -> io::Result<()>,
    ) -> io::Result<()> {
        let start = self.buf.len();
        if let Err(e) = f(&mut self.fmt, &mut self.buf) {
            self.buf.truncate(start);
            return Err(e);
        }
        self.buf.push(b'\n');
        if self.buf.len() >= WRITE_AT {
            self.write_buffered()?;
        }
        Ok(())
    }

    /// Hands the buffered lines to the writer.
    fn write_buffered(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let out = self.out.as_mut().expect("writer taken");
        let r = out.write_all(&self.buf);
        self.buf.clear();
        r
    }

    /// Writes an app-layer transaction record (see
    /// [`EveFormatter::tx_record`]).
    pub fn write_tx(&mut self, ev: &AlertEvent<'_>) -> io::Result<()> {
        if ev.app.is_none() {
            return Ok(());
        }
        self.record(|f, out| f.tx_record(out, ev))
    }

    /// Writes a `drop` record (see [`EveFormatter::drop_record`]).
    pub fn write_drop(&mut self, ev: &AlertEvent<'_>, with_alert: bool) -> io::Result<()> {
        if ev.app.is_none() {
            return Ok(());
        }
        self.record(|f, out| f.drop_record(out, ev, with_alert))
    }

    /// Writes a `packet` record (see [`EveFormatter::packet_record`]).
    pub fn write_packet(&mut self, ev: &AlertEvent<'_>) -> io::Result<()> {
        self.record(|f, out| f.packet_record(out, ev))
    }

    pub fn write_alert(&mut self, ev: &AlertEvent<'_>) -> io::Result<()> {
        self.record(|f, out| f.alert(out, ev))
    }

    /// Writes a stats record stamped with `ts_secs`/`ts_nanos` (use packet
    /// time, not the wall clock, to keep runs repeatable).
    pub fn write_stats(&mut self, ts_secs: i64, ts_nanos: u32, tree: &StatsTree) -> io::Result<()> {
        self.record(|f, out| f.stats(out, ts_secs, ts_nanos, tree))
    }

    /// Writes a record formatted elsewhere (e.g. by a worker's
    /// [`EveFormatter`]); a newline is added if it has none.
    pub fn write_record(&mut self, record: &[u8]) -> io::Result<()> {
        self.record(|_, out| {
            let body = record.strip_suffix(b"\n").unwrap_or(record);
            out.extend_from_slice(body);
            Ok(())
        })
    }

    /// The record settings this writer formats with.
    pub fn config(&self) -> &EveConfig {
        self.fmt.config()
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.write_buffered()?;
        self.out.as_mut().expect("writer taken").flush()
    }

    pub fn get_ref(&self) -> &W {
        self.out.as_ref().expect("writer taken")
    }

    /// The underlying writer; writing to it directly bypasses what is
    /// buffered here (flush first).
    pub fn get_mut(&mut self) -> &mut W {
        self.out.as_mut().expect("writer taken")
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.out.take().expect("writer taken"))
    }
}

impl<W: Write> Drop for EveWriter<W> {
    fn drop(&mut self) {
        if self.out.is_some() {
            let _ = self.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn meta(pairs: &[(&str, &str)]) -> String {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut buf = Vec::new();
        write_metadata(&mut buf, &owned, &mut Vec::new()).unwrap();
        String::from_utf8(buf).unwrap()
    }

    fn vars_json(v: &VarsEvent<'_>) -> String {
        let mut buf = Vec::new();
        let mut o = Obj::open(&mut buf);
        o.str("pkt_src", "wire/pcap").unwrap();
        write_vars(&mut o, v, &mut Vec::new()).unwrap();
        o.close();
        String::from_utf8(buf).unwrap()
    }

    /// Keeps each write the writer gets, shared with the test.
    #[derive(Clone, Default)]
    struct Chunks(std::rc::Rc<std::cell::RefCell<Vec<Vec<u8>>>>);

    impl Write for Chunks {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().push(b.to_vec());
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn records_reach_the_writer_in_whole_lines_and_all_of_them_on_drop() {
        let chunks = Chunks::default();
        let mut w = EveWriter::new(chunks.clone());
        let line = |i: usize| format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(i % 300));
        for i in 0..1000 {
            if i % 2 == 0 {
                w.write_record(line(i).as_bytes()).unwrap();
            } else {
                w.write_record(format!("{}\n", line(i)).as_bytes()).unwrap();
            }
        }
        // Gathered, not written one line at a time.
        let written = chunks.0.borrow().len();
        assert!((1..10).contains(&written), "{written} writes");
        assert!(chunks.0.borrow().iter().all(|c| c.ends_with(b"\n")));
        drop(w);
        let all: Vec<u8> = chunks.0.borrow().concat();
        let want: String = (0..1000).map(|i| line(i) + "\n").collect();
        assert_eq!(String::from_utf8(all).unwrap(), want);
        // An empty record is an empty line.
        let mut w = EveWriter::new(Vec::new());
        w.write_record(b"").unwrap();
        assert_eq!(w.into_inner().unwrap(), b"\n");
    }

    #[test]
    fn vars_metadata_bytes() {
        let bits = vec![
            "zz".to_string(),
            "traffic/id/app".to_string(),
            "a\"b".to_string(),
            "traffic/label/x".to_string(),
        ];
        let ints = vec![("cnt".to_string(), 7), ("z".to_string(), u32::MAX)];
        let fv: Vec<(Arc<str>, Box<[u8]>)> = vec![
            ("user".into(), b"al\"ice\\".to_vec().into()),
            ("bin".into(), b"\x00a\r\n\x7f\xc3\xa9\t".to_vec().into()),
        ];
        let pv: Vec<(Arc<str>, Box<[u8]>)> = vec![
            ("pw".into(), b"x".to_vec().into()),
            ("pw".into(), b"y".to_vec().into()),
        ];
        let v = VarsEvent {
            flowbits: &bits,
            flowints: &ints,
            flowvars: &fv,
            pktvars: &pv,
        };
        assert_eq!(
            vars_json(&v),
            concat!(
                r#"{"pkt_src":"wire/pcap","traffic":{"id":["app"],"label":["x"]},"#,
                r#""metadata":{"flowbits":["zz","a\"b"],"flowints":{"cnt":7,"z":4294967295},"#,
                r#""flowvars":[{"user":"al\"ice\\"},{"bin":".a\r\n...."}],"#,
                r#""pktvars":[{"pw":"x"},{"pw":"y"}]}}"#
            )
        );
        // Only the keys with entries; nothing at all without variables.
        let only_pkt = VarsEvent {
            pktvars: &pv[..1],
            ..VarsEvent::default()
        };
        assert_eq!(
            vars_json(&only_pkt),
            r#"{"pkt_src":"wire/pcap","metadata":{"pktvars":[{"pw":"x"}]}}"#
        );
        assert_eq!(
            vars_json(&VarsEvent::default()),
            r#"{"pkt_src":"wire/pcap"}"#
        );
        // Only traffic bits: an empty metadata object, as Suricata.
        let t = vec!["traffic/id/a".to_string()];
        assert_eq!(
            vars_json(&VarsEvent {
                flowbits: &t,
                ..VarsEvent::default()
            }),
            r#"{"pkt_src":"wire/pcap","traffic":{"id":["a"]},"metadata":{}}"#
        );
    }

    #[test]
    fn alert_context_follows_rule_metadata() {
        let ctx: Vec<(Arc<str>, Box<[u8]>)> = vec![("x".into(), b"G\x01".to_vec().into())];
        let md = vec![("foo".to_string(), "bar".to_string())];
        let ev = AlertEvent {
            metadata: &md,
            context: &ctx,
            ..AlertEvent::default()
        };
        let mut out = Vec::new();
        EveFormatter::new(EveConfig::default())
            .alert(&mut out, &ev)
            .unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.contains(r#""severity":3,"metadata":{"foo":["bar"]},"context":{"x":"G."}}"#),
            "{s}"
        );
        assert!(!s.contains(r#""metadata":{"flow"#), "{s}");
    }

    #[test]
    fn metadata_like_suricatas_unit_test() {
        // DetectMetadataParseTest02: "toto 1; titi 2, jaivu gros_minet".
        assert_eq!(
            meta(&[("toto", "1"), ("titi", "2"), ("jaivu", "gros_minet")]),
            r#"{"jaivu":["gros_minet"],"titi":["2"],"toto":["1"]}"#
        );
    }

    #[test]
    fn metadata_groups_sorts_and_reverses_values() {
        assert_eq!(
            meta(&[
                ("created_at", "2013_05_31"),
                ("tag", "A"),
                ("confidence", "Medium"),
                ("tag", "B"),
                ("Tag", "C"),
            ]),
            r#"{"confidence":["Medium"],"created_at":["2013_05_31"],"Tag":["C","B","A"]}"#
        );
    }

    #[test]
    fn printable() {
        let mut out = Vec::new();
        printable_payload(b"GET /\r\n\t\x00\x7f\xffok~ ", &mut out);
        assert_eq!(out, b"GET /\r\n....ok~ ");
    }

    #[test]
    fn base64_forms() {
        let mut buf = Vec::new();
        json_base64(&mut buf, b"GOOD");
        assert_eq!(buf, br#""R09PRA==""#);
        buf.clear();
        json_base64(&mut buf, b"");
        assert_eq!(buf, br#""""#);
    }

    #[test]
    fn casecmp_is_strcasecmp() {
        assert_eq!(ascii_casecmp("abc", "ABD"), Ordering::Less);
        assert_eq!(ascii_casecmp("ab", "abc"), Ordering::Less);
        assert_eq!(ascii_casecmp("Tag", "tag"), Ordering::Equal);
        // Letters are lowered first, so '_' (0x5f) sorts before 'z' (0x7a).
        assert_eq!(ascii_casecmp("a_b", "aZb"), Ordering::Less);
    }
}
