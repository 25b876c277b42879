//! Stream-aware detection inputs: which payload a TCP rule inspects (the
//! reassembled stream, the packet, or the packet only as a fallback), the
//! `stream_size` keyword, and the chunk of reassembled data handed to
//! detection.
//!
//! Suricata's rules: a TCP-capable rule with payload keywords inspects the
//! reassembled stream (`SIG_FLAG_REQUIRE_STREAM`) unless it asks for
//! packets (`tcp-pkt`, `dsize`, `flow:no_stream`, and the packet header
//! keywords `ttl`, `tos`, `id`, `window`, `flags`, `seq`, `ack`, `fragbits`,
//! `fragoffset`, `ipopts`, `icmp_id`, `icmpv6.mtu`, `vlan.layers`,
//! `flow.age`: `SIG_FLAG_REQUIRE_PACKET`). A stream rule whose content has `depth`
//! or `offset`, or that uses `stream_size`, inspects packets too. When a
//! stream rule finds no match in the stream, the packet's own payload is
//! inspected only if the packet was not added to the stream (or the rule
//! also requires packets) and the rule is not `flow:only_stream`.

use vigil_rules::{Buffer, Condition, IntCmp, PayloadItem, Proto, Rule};

/// How a rule's packet-payload keywords meet TCP stream data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamReq {
    /// The rule has keywords on the packet payload (Suricata's PMATCH).
    pub payload: bool,
    /// Inspect packets (`SIG_FLAG_REQUIRE_PACKET`).
    pub packet: bool,
    /// Inspect the reassembled stream (`SIG_FLAG_REQUIRE_STREAM`).
    pub stream: bool,
    /// Never fall back to packets (`flow:only_stream`).
    pub stream_only: bool,
}

impl StreamReq {
    /// Suricata's signature flags for a parsed rule.
    pub fn of(rule: &Rule) -> StreamReq {
        let app = match &rule.header.proto {
            Proto::App(n) => n.as_str(),
            _ => "",
        };
        let mut r = StreamReq {
            payload: rule
                .buffers
                .iter()
                .any(|b| b.buffer == Buffer::Packet && !b.items.is_empty()),
            packet: app == "tcp-pkt",
            stream: app == "tcp-stream",
            stream_only: false,
        };
        let mut stream_size = false;
        for c in &rule.conditions {
            match c {
                Condition::Flow(f) => {
                    if f.only_stream {
                        r.stream = true;
                        r.stream_only = true;
                    }
                    if f.no_stream {
                        r.packet = true;
                    }
                }
                Condition::Dsize(_) => r.packet = true,
                // Packet header keywords whose setup sets
                // SIG_FLAG_REQUIRE_PACKET in Suricata: the rule's payload
                // keywords then see each packet's payload, never the
                // reassembled stream (found by scripts/differential.sh,
                // checked against the Suricata 9 peer).
                Condition::Ttl(_)
                | Condition::Tos(_)
                | Condition::IpId(_)
                | Condition::TcpWindow { .. }
                | Condition::Flags(_)
                | Condition::TcpSeq(_)
                | Condition::TcpAck(_)
                | Condition::Fragbits { .. }
                | Condition::Fragoffset { .. }
                | Condition::IpOpts(_)
                | Condition::IcmpId(_)
                | Condition::Icmpv6Mtu(_)
                | Condition::VlanLayers(_)
                | Condition::Rpc(_)
                | Condition::FlowAge(_)
                | Condition::TcpSession(_)
                | Condition::FlowElephant(_) => r.packet = true,
                Condition::NotEvaluable { keyword, .. } if keyword == "stream_size" => {
                    stream_size = true
                }
                _ => {}
            }
        }
        let tcp = matches!(rule.header.proto, Proto::Ip | Proto::Tcp) || !app.is_empty();
        if tcp && r.payload && !r.packet && !r.stream {
            r.stream = true;
            let anchored = rule
                .buffers
                .iter()
                .filter(|b| b.buffer == Buffer::Packet)
                .flat_map(|b| b.items.iter())
                .any(|i| {
                    matches!(i, PayloadItem::Content(c)
                        if c.depth.is_some() || c.offset.is_some() || c.startswith)
                });
            r.packet = anchored || stream_size;
        }
        r
    }
}

/// Which stream `stream_size` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeSide {
    Client,
    Server,
    Both,
    Either,
}

/// `stream_size:<client|server|both|either>,<op>,<n>`: compares the
/// sequence progress (`next_seq - isn`) of the session's streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamSize {
    pub side: SizeSide,
    pub cmp: IntCmp,
}

impl StreamSize {
    pub fn parse(v: &str) -> Result<StreamSize, String> {
        let t = v.trim().trim_matches('"');
        let parts: Vec<&str> = t.split(',').map(str::trim).collect();
        let [side, op, n] = parts[..] else {
            return Err(format!("stream_size: expected side,op,value in '{v}'"));
        };
        let side = match side {
            "client" => SizeSide::Client,
            "server" => SizeSide::Server,
            "both" => SizeSide::Both,
            "either" => SizeSide::Either,
            s => return Err(format!("stream_size: unknown side '{s}'")),
        };
        let n: u64 = n
            .parse()
            .map_err(|_| format!("stream_size: bad value '{n}'"))?;
        let cmp = match op {
            "<" => IntCmp::Lt(n),
            "<=" => IntCmp::Le(n),
            ">" => IntCmp::Gt(n),
            ">=" => IntCmp::Ge(n),
            "=" | "==" => IntCmp::Eq(n),
            "!=" => IntCmp::Ne(n),
            o => return Err(format!("stream_size: unknown operator '{o}'")),
        };
        Ok(StreamSize { side, cmp })
    }

    /// `sizes` is (client, server); `None` when the packet has no TCP
    /// session, which never matches.
    pub fn matches(&self, sizes: Option<(u32, u32)>) -> bool {
        let Some((c, s)) = sizes else { return false };
        let (c, s) = (
            self.cmp.matches(u64::from(c)),
            self.cmp.matches(u64::from(s)),
        );
        match self.side {
            SizeSide::Client => c,
            SizeSide::Server => s,
            SizeSide::Both => c && s,
            SizeSide::Either => c || s,
        }
    }
}

/// Reassembled stream data ready for inspection on one packet: the
/// contiguous blocks (a gap separates blocks; a match never spans one),
/// with their stream offsets. Reused by the worker: no allocation per
/// packet once warm.
#[derive(Debug, Default, Clone)]
pub struct StreamChunk {
    data: Vec<u8>,
    /// (start in `data`, end in `data`, stream offset).
    blocks: Vec<(usize, usize, u64)>,
    /// Stream offset where inspection started (gaps before the first
    /// block are shown in logged payloads).
    pub start: u64,
}

impl StreamChunk {
    pub fn clear(&mut self, start: u64) {
        self.data.clear();
        self.blocks.clear();
        self.start = start;
    }

    /// Appends a block at stream offset `off` whose bytes `fill` appends
    /// to the given buffer.
    pub fn push_block(&mut self, off: u64, fill: impl FnOnce(&mut Vec<u8>)) {
        let s = self.data.len();
        fill(&mut self.data);
        let e = self.data.len();
        if e > s {
            self.blocks.push((s, e, off));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Stream offset just past the last block.
    pub fn end(&self) -> Option<u64> {
        self.blocks.last().map(|&(s, e, off)| off + (e - s) as u64)
    }

    /// The blocks' bytes, in stream order.
    pub fn blocks(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.blocks.iter().map(|&(s, e, _)| &self.data[s..e])
    }

    /// The chunk as Suricata logs a stream payload: the data with
    /// `[N bytes missing]` for each gap, at most `max` bytes.
    pub fn render(&self, max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut cursor = self.start;
        for &(s, e, off) in &self.blocks {
            if off > cursor {
                out.extend_from_slice(format!("[{} bytes missing]", off - cursor).as_bytes());
            }
            out.extend_from_slice(&self.data[s..e]);
            cursor = off + (e - s) as u64;
            if out.len() >= max {
                break;
            }
        }
        out.truncate(max);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_rules::{parse_rule, Origin, Vars};

    fn req(opts: &str) -> StreamReq {
        req_proto("tcp", opts)
    }

    fn req_proto(proto: &str, opts: &str) -> StreamReq {
        let text = format!("alert {proto} any any -> any any ({opts} sid:1;)");
        StreamReq::of(&parse_rule(&text, &Vars::default(), Origin::default()).unwrap())
    }

    #[test]
    fn suricata_signature_flags() {
        let s = req(r#"content:"x";"#);
        assert!(s.stream && !s.packet && !s.stream_only);
        let s = req(r#"content:"x"; depth:4;"#);
        assert!(s.stream && s.packet);
        let s = req(r#"content:"x"; startswith;"#);
        assert!(s.stream && s.packet);
        let s = req(r#"content:"x"; dsize:>3;"#);
        assert!(!s.stream && s.packet);
        let s = req(r#"flow:only_stream; content:"x";"#);
        assert!(s.stream && s.stream_only && !s.packet);
        let s = req(r#"flow:no_stream; content:"x";"#);
        assert!(!s.stream && s.packet);
        let s = req_proto("tcp-pkt", r#"content:"x";"#);
        assert!(!s.stream && s.packet);
        let s = req_proto("tcp-stream", r#"content:"x";"#);
        assert!(s.stream && !s.packet && !s.stream_only);
        let s = req_proto("udp", r#"content:"x";"#);
        assert!(!s.stream);
        let s = req(r#"content:"x"; stream_size:client,<,5;"#);
        assert!(s.stream && s.packet);
        let s = req("flags:S;");
        assert!(!s.payload && !s.stream);
    }

    #[test]
    fn header_keywords_make_payload_rules_packet_only() {
        for kw in [
            "ttl:>0;",
            "tos:!255;",
            "id:1;",
            "window:7559;",
            "flags:A+;",
            "seq:5;",
            "ack:5;",
            "fragbits:!R;",
            "fragoffset:0;",
            "vlan.layers:0;",
            "flow.age:<10;",
        ] {
            let s = req(&format!(r#"content:"x"; {kw}"#));
            assert!(s.payload && s.packet && !s.stream, "{kw}: {s:?}");
        }
        // flow, flowbits and stream_size keep the stream.
        for kw in ["flow:established;", "flowbits:isnotset,x;"] {
            let s = req(&format!(r#"content:"x"; {kw}"#));
            assert!(s.stream && !s.packet, "{kw}: {s:?}");
        }
    }

    #[test]
    fn stream_size() {
        let s = StreamSize::parse("client,<,5").unwrap();
        assert!(s.matches(Some((4, 100))));
        assert!(!s.matches(Some((5, 1))));
        assert!(!s.matches(None));
        let s = StreamSize::parse("either, >=, 100").unwrap();
        assert!(s.matches(Some((4, 100))));
        let s = StreamSize::parse("both,!=,3").unwrap();
        assert!(!s.matches(Some((4, 3))));
        assert!(StreamSize::parse("nobody,<,5").is_err());
        assert!(StreamSize::parse("client,<").is_err());
    }

    #[test]
    fn chunk_render_marks_gaps() {
        let mut c = StreamChunk::default();
        c.clear(0);
        c.push_block(4, |b| b.extend_from_slice(b"GOOD"));
        c.push_block(8, |b| b.extend_from_slice(b"DATA"));
        assert_eq!(c.render(4096), b"[4 bytes missing]GOODDATA");
        c.clear(0);
        c.push_block(0, |b| b.extend_from_slice(b"VERY"));
        c.push_block(8, |b| b.extend_from_slice(b"DATA"));
        assert_eq!(c.render(4096), b"VERY[4 bytes missing]DATA");
        assert_eq!(c.end(), Some(12));
        assert_eq!(c.blocks().count(), 2);
    }
}
