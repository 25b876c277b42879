//! Rule parser: one test per keyword family, good and bad.

use vigil_rules::*;

fn rule(text: &str) -> Result<Rule, RuleError> {
    parse_rule(
        text,
        &Vars::default(),
        Origin {
            file: "t.rules".into(),
            line: 7,
        },
    )
}

/// Parses `alert tcp any any -> any any (<opts> sid:1;)`.
fn ok(opts: &str) -> Rule {
    let t = format!("alert tcp any any -> any any ({opts} sid:1;)");
    rule(&t).unwrap_or_else(|e| panic!("{t}\n  -> {e}"))
}

fn bad(opts: &str) -> RuleError {
    let t = format!("alert tcp any any -> any any ({opts} sid:1;)");
    match rule(&t) {
        Ok(r) => panic!("{t}\n  should fail, got {r:#?}"),
        Err(e) => e,
    }
}

fn bad_kw(opts: &str, kind: RuleErrorKind, kw: &str) {
    let e = bad(opts);
    assert_eq!(e.kind, kind, "{opts}: {e}");
    assert_eq!(e.keyword.as_deref(), Some(kw), "{opts}: {e}");
}

fn contents(r: &Rule, b: &Buffer) -> Vec<Content> {
    r.buffers
        .iter()
        .filter(|m| &m.buffer == b)
        .flat_map(|m| m.items.iter())
        .filter_map(|i| match i {
            PayloadItem::Content(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn items(r: &Rule, b: &Buffer) -> Vec<PayloadItem> {
    r.buffers
        .iter()
        .find(|m| &m.buffer == b)
        .map(|m| m.items.clone())
        .unwrap_or_default()
}

fn named(s: &str) -> Buffer {
    Buffer::Named(s.into())
}

// ---------------------------------------------------------------- header

#[test]
fn header_actions_and_protocols() {
    for (a, want) in [
        ("alert", Action::Alert),
        ("pass", Action::Pass),
        ("drop", Action::Drop),
        ("reject", Action::Reject),
        ("rejectsrc", Action::RejectSrc),
        ("rejectdst", Action::RejectDst),
        ("rejectboth", Action::RejectBoth),
        ("log", Action::Log),
        ("sdrop", Action::Drop),
    ] {
        let r = rule(&format!("{a} ip any any -> any any (sid:1;)")).unwrap();
        assert_eq!(r.action, want);
    }
    for (p, want) in [
        ("ip", Proto::Ip),
        ("tcp", Proto::Tcp),
        ("udp", Proto::Udp),
        ("icmp", Proto::Icmp),
        ("icmpv4", Proto::Icmp),
        ("icmpv6", Proto::Icmpv6),
        ("ipv6-icmp", Proto::Icmpv6),
        ("sctp", Proto::Sctp),
        ("pkthdr", Proto::PktHdr),
        ("http", Proto::App("http".into())),
        ("dns", Proto::App("dns".into())),
        ("tls", Proto::App("tls".into())),
        ("smb", Proto::App("smb".into())),
        ("tcp-pkt", Proto::App("tcp-pkt".into())),
        ("tcp-stream", Proto::App("tcp-stream".into())),
    ] {
        let r = rule(&format!("alert {p} any any -> any any (sid:1;)")).unwrap();
        assert_eq!(r.header.proto, want);
    }
    assert_eq!(Proto::App("http".into()).transport(), Proto::Tcp);
    assert_eq!(Proto::App("dns".into()).transport(), Proto::Ip);
    assert_eq!(Proto::App("tcp-pkt".into()).transport(), Proto::Tcp);
    assert_eq!(Proto::Udp.transport(), Proto::Udp);
}

#[test]
fn header_fields() {
    let r = rule(
        "alert tcp $HOME_NET [1024:, !2000] <> [1.2.3.4, 5.6.7.0/24] $HTTP_PORTS (msg:\"m\"; sid:5; rev:3; gid:2;)",
    )
    .unwrap();
    assert_eq!(r.header.direction, Direction::Both);
    assert!(r.header.src_ports.contains(1500) && !r.header.src_ports.contains(2000));
    assert!(r.header.dst.contains("5.6.7.9".parse().unwrap()));
    assert!(r.header.dst_ports.contains(80) && !r.header.dst_ports.contains(81));
    assert_eq!((r.sid, r.rev, r.gid), (5, 3, 2));
    assert_eq!(r.origin.line, 7);
    assert!(r.text.starts_with("alert tcp $HOME_NET"));
    let r = rule("alert tcp any any -> any any (sid:1;)").unwrap();
    assert_eq!((r.gid, r.rev), (1, 0));
    assert_eq!(r.header.direction, Direction::Forward);
    assert!(r.header.src.is_any() && r.header.dst_ports.is_any());
}

#[test]
fn header_errors() {
    for (t, kind) in [
        (
            "alert tcp any any <- any any (sid:1;)",
            RuleErrorKind::Header,
        ),
        (
            "alert tcp any any => any any (sid:1;)",
            RuleErrorKind::Header,
        ),
        (
            "alarm tcp any any -> any any (sid:1;)",
            RuleErrorKind::Header,
        ),
        (
            "alert foo any any -> any any (sid:1;)",
            RuleErrorKind::Header,
        ),
        ("alert tcp any any -> any (sid:1;)", RuleErrorKind::Header),
        (
            "alert tcp any any -> any any any (sid:1;)",
            RuleErrorKind::Header,
        ),
        ("alert tcp any any -> any any sid:1;", RuleErrorKind::Syntax),
        (
            "alert tcp any any -> any any (sid:1;",
            RuleErrorKind::Syntax,
        ),
        (
            "alert tcp $NOPE any -> any any (sid:1;)",
            RuleErrorKind::Address,
        ),
        (
            "alert tcp any 99999 -> any any (sid:1;)",
            RuleErrorKind::Port,
        ),
        (
            "alert tcp any any -> any $HOME_NET (sid:1;)",
            RuleErrorKind::Port,
        ),
        (
            "alert tcp any any -> any any (msg:\"x\";)",
            RuleErrorKind::MissingSid,
        ),
    ] {
        let e = rule(t).unwrap_err();
        assert_eq!(e.kind, kind, "{t}: {e}");
    }
}

#[test]
fn snort3_service_header() {
    let r = rule("alert http ( msg:\"x\"; http_uri; content:\"/a\"; sid:9; )").unwrap();
    assert_eq!(r.header.proto, Proto::App("http".into()));
    assert!(r.header.src.is_any() && r.header.dst.is_any());
    assert_eq!(contents(&r, &named("http.uri")).len(), 1);
}

// ---------------------------------------------------------------- meta

#[test]
fn meta_keywords() {
    let r = ok(
        "msg:\"a \\\"quoted\\\" \\; semi \\\\ back\"; classtype:trojan-activity; priority:2; \
                reference:url,example.com/a,b; reference: cve , 2020-1234; \
                metadata:created_at 2020_01_01, tag Foo Bar, lone; target:dest_ip; rev:4;",
    );
    assert_eq!(r.msg, "a \"quoted\" ; semi \\ back");
    assert_eq!(r.classtype.as_deref(), Some("trojan-activity"));
    assert_eq!(r.priority, Some(2));
    assert_eq!(
        r.references,
        vec![
            ("url".to_string(), "example.com/a,b".to_string()),
            ("cve".to_string(), "2020-1234".to_string())
        ]
    );
    assert_eq!(
        r.metadata,
        vec![
            ("created_at".into(), "2020_01_01".into()),
            ("tag".into(), "Foo Bar".into()),
            ("lone".into(), String::new())
        ]
    );
    assert_eq!(r.target.as_deref(), Some("dest_ip"));
    assert_eq!(r.rev, 4);
}

#[test]
fn meta_errors() {
    bad_kw("priority:0;", RuleErrorKind::InvalidValue, "priority");
    bad_kw("priority:300;", RuleErrorKind::InvalidValue, "priority");
    bad_kw(
        "reference:nocomma;",
        RuleErrorKind::InvalidValue,
        "reference",
    );
    bad_kw("target:foo;", RuleErrorKind::InvalidValue, "target");
    bad_kw("classtype:a b;", RuleErrorKind::InvalidValue, "classtype");
    bad_kw("msg:\"a\"; msg:\"b\";", RuleErrorKind::Validation, "msg");
    bad_kw("sid:2;", RuleErrorKind::Validation, "sid");
    bad_kw("rev:x;", RuleErrorKind::InvalidValue, "rev");
    let e = rule("alert tcp any any -> any any (sid:0;)").unwrap_err();
    assert_eq!(e.keyword.as_deref(), Some("sid"));
}

// ---------------------------------------------------------------- content

#[test]
fn content_decoding() {
    let r = ok("content:\"A|42 43|D|0a|\\\"\\;\\:\\\\\";");
    let c = &contents(&r, &Buffer::Packet)[0];
    assert_eq!(c.pattern, b"ABCD\n\";:\\");
    assert!(!c.negated);
    let r = ok("content:!\"x\";");
    assert!(contents(&r, &Buffer::Packet)[0].negated);
    let r = ok("content: ! \"|de ad,be ef|\";");
    let c = &contents(&r, &Buffer::Packet)[0];
    assert!(c.negated);
    assert_eq!(c.pattern, vec![0xde, 0xad, 0xbe, 0xef]);
    let r = ok("content:unquoted;");
    assert_eq!(contents(&r, &Buffer::Packet)[0].pattern, b"unquoted");
}

#[test]
fn content_errors() {
    for v in [
        "content:\"|4|\";",
        "content:\"|41\";",
        "content:\"|zz|\";",
        "content:\"a\\x\";",
        "content:\"\";",
        "content:\"abc;",
        "content:\"a\"b\";",
        "content;",
    ] {
        let e = bad(v);
        assert_eq!(e.keyword.as_deref(), Some("content"), "{v}: {e}");
    }
}

#[test]
fn content_modifiers() {
    let r = ok("content:\"abc\"; nocase; offset:2; depth:10; rawbytes; \
                content:\"de\"; distance:-1; within:5; fast_pattern; \
                content:\"f\"; startswith; content:\"g\"; endswith;");
    let cs = contents(&r, &Buffer::Packet);
    assert!(cs[0].nocase && cs[0].rawbytes);
    assert_eq!(cs[0].offset, Some(NumOrVar::Num(2)));
    assert_eq!(cs[0].depth, Some(NumOrVar::Num(10)));
    assert_eq!(cs[1].distance, Some(NumOrVarSigned::Num(-1)));
    assert_eq!(cs[1].within, Some(NumOrVar::Num(5)));
    assert_eq!(
        cs[1].fast_pattern,
        Some(FastPattern {
            only: false,
            chop: None
        })
    );
    assert!(cs[2].startswith && cs[3].endswith);
    let r = ok("content:\"abcdef\"; fast_pattern:only;");
    assert!(contents(&r, &Buffer::Packet)[0].fast_pattern.unwrap().only);
    let r = ok("content:\"abcdef\"; fast_pattern:1,3;");
    assert_eq!(
        contents(&r, &Buffer::Packet)[0].fast_pattern.unwrap().chop,
        Some((1, 3))
    );
    // nocase twice is fine; relative on the first content of a buffer too.
    ok("content:\"a\"; nocase; nocase;");
    ok("content:\"a\"; distance:0;");
    ok("content:\"a\"; within:1;");
}

#[test]
fn content_modifier_errors() {
    bad_kw("nocase;", RuleErrorKind::Validation, "nocase");
    bad_kw("distance:1;", RuleErrorKind::Validation, "distance");
    bad_kw(
        "content:\"abc\"; depth:2;",
        RuleErrorKind::Validation,
        "depth",
    );
    bad_kw(
        "content:\"abc\"; within:2;",
        RuleErrorKind::Validation,
        "within",
    );
    bad_kw(
        "content:\"abc\"; depth:5; depth:6;",
        RuleErrorKind::Validation,
        "depth",
    );
    bad_kw(
        "content:\"abc\"; offset:1; distance:1;",
        RuleErrorKind::Validation,
        "distance",
    );
    bad_kw(
        "content:\"abc\"; within:5; depth:5;",
        RuleErrorKind::Validation,
        "depth",
    );
    bad_kw(
        "content:\"a\"; startswith; offset:1;",
        RuleErrorKind::Validation,
        "offset",
    );
    bad_kw(
        "content:\"a\"; fast_pattern; fast_pattern;",
        RuleErrorKind::Validation,
        "fast_pattern",
    );
    bad_kw(
        "content:\"a\"; fast_pattern; content:\"b\"; fast_pattern;",
        RuleErrorKind::Validation,
        "fast_pattern",
    );
    bad_kw(
        "content:\"abc\"; fast_pattern:2,5;",
        RuleErrorKind::InvalidValue,
        "fast_pattern",
    );
    bad_kw(
        "content:\"abc\"; fast_pattern:x;",
        RuleErrorKind::InvalidValue,
        "fast_pattern",
    );
    bad_kw(
        "content:!\"abc\"; fast_pattern:only;",
        RuleErrorKind::Validation,
        "fast_pattern",
    );
    bad_kw(
        "content:\"abc\"; offset:-1;",
        RuleErrorKind::InvalidValue,
        "offset",
    );
    bad_kw(
        "content:\"abc\"; offset:nosuchvar;",
        RuleErrorKind::InvalidValue,
        "offset",
    );
}

#[test]
fn http_modifiers_move_content() {
    let r = ok(
        "content:\"GET\"; http_method; content:\"/x\"; http_uri; nocase; \
                content:\"y\"; distance:0; http_uri; content:\"h\"; http_header; \
                content:\"rh\"; http_raw_header; content:\"c\"; http_cookie; \
                content:\"ru\"; http_raw_uri; content:\"b\"; http_client_body; \
                content:\"s\"; http_server_body; content:\"200\"; http_stat_code; \
                content:\"OK\"; http_stat_msg; content:\"ua\"; http_user_agent; \
                content:\"ho\"; http_host; content:\"RH\"; http_raw_host; content:\"pkt\";",
    );
    assert_eq!(contents(&r, &named("http.method"))[0].pattern, b"GET");
    let uri = contents(&r, &named("http.uri"));
    assert_eq!(uri.len(), 2);
    assert!(uri[0].nocase);
    assert_eq!(uri[1].distance, Some(NumOrVarSigned::Num(0)));
    for b in [
        "http.header",
        "http.header.raw",
        "http.cookie",
        "http.uri.raw",
        "http.request_body",
        "http.response_body",
        "http.stat_code",
        "http.stat_msg",
        "http.user_agent",
        "http.host",
        "http.host.raw",
    ] {
        assert_eq!(contents(&r, &named(b)).len(), 1, "{b}");
        assert!(r.not_evaluable.iter().any(|n| n == b), "{b}");
    }
    assert_eq!(contents(&r, &Buffer::Packet)[0].pattern, b"pkt");
    // Buffers in first-use order.
    assert_eq!(r.buffers[0].buffer, named("http.method"));
    assert_eq!(r.buffers[1].buffer, named("http.uri"));
    let r = ok("uricontent:\"/a\";");
    assert_eq!(contents(&r, &named("http.uri")).len(), 1);
}

#[test]
fn http_modifier_errors() {
    // (`http_uri;` before any content reads as a Snort 3 sticky buffer.)
    bad_kw(
        "http.uri; content:\"a\"; pkt_data; http_uri;",
        RuleErrorKind::Validation,
        "http_uri",
    );
    bad_kw(
        "content:\"a\"; rawbytes; http_uri;",
        RuleErrorKind::Validation,
        "http_uri",
    );
    bad_kw(
        "dns.query; content:\"a\"; http_header;",
        RuleErrorKind::Validation,
        "http_header",
    );
}

#[test]
fn sticky_buffers() {
    let r = ok("http.uri; content:\"a\"; content:\"b\"; distance:0; pkt_data; content:\"p\"; \
                file_data; content:\"f\"; dns_query; content:\"d\"; tls_sni; content:\"t\"; \
                http.uri; content:\"c\"; bsize:>3; ipv4.hdr; content:\"|45|\"; tcp.hdr; content:\"|00|\";");
    assert_eq!(contents(&r, &named("http.uri")).len(), 3);
    assert_eq!(contents(&r, &Buffer::Packet)[0].pattern, b"p");
    assert_eq!(contents(&r, &named("file.data")).len(), 1);
    assert_eq!(contents(&r, &named("dns.query")).len(), 1);
    assert_eq!(contents(&r, &named("tls.sni")).len(), 1);
    assert_eq!(contents(&r, &Buffer::Ipv4Hdr).len(), 1);
    assert_eq!(contents(&r, &Buffer::TcpHdr).len(), 1);
    assert!(matches!(
        items(&r, &named("http.uri")).last(),
        Some(PayloadItem::Bsize(IntCmp::Gt(3)))
    ));
    assert_eq!(
        r.not_evaluable,
        vec!["http.uri", "file.data", "dns.query", "tls.sni"]
    );
    let r = ok("udp.hdr; content:\"a\"; icmpv4.hdr; content:\"b\"; icmpv6.hdr; content:\"c\"; ipv6.hdr; content:\"d\";");
    assert!(r.not_evaluable.is_empty());
    assert_eq!(r.buffers.len(), 4);
    // Modifiers apply to the sticky buffer's last content only.
    bad_kw(
        "content:\"a\"; http.uri; nocase;",
        RuleErrorKind::Validation,
        "nocase",
    );
    bad_kw("bsize:5;", RuleErrorKind::Validation, "bsize");
}

#[test]
fn legacy_sticky_names_are_canonical() {
    for (legacy, canon) in [
        ("file_data", "file.data"),
        ("dns_query", "dns.query"),
        ("tls_sni", "tls.sni"),
        ("tls_cert_subject", "tls.cert_subject"),
        ("tls_cert_issuer", "tls.cert_issuer"),
        ("ja3_hash", "ja3.hash"),
        ("ja3s_hash", "ja3s.hash"),
        ("ssh_proto", "ssh.proto"),
        ("http_request_line", "http.request_line"),
        ("http_accept", "http.accept"),
        ("dce_stub_data", "dcerpc.stub_data"),
        ("http.header_names", "http.header_names"),
        ("tls.certs", "tls.certs"),
    ] {
        let r = ok(&format!("{legacy}; content:\"x\";"));
        assert_eq!(contents(&r, &named(canon)).len(), 1, "{legacy}");
        assert_eq!(r.not_evaluable, vec![canon.to_string()], "{legacy}");
    }
}

#[test]
fn transforms() {
    let r = ok("dns.query; dotprefix; content:\".evil.com\"; endswith;");
    assert_eq!(r.not_evaluable, vec!["dns.query", "dotprefix"]);
    let r = ok("http.uri; to_lowercase; url_decode; strip_whitespace; pcrexform:\"a(.*)\"; xor:\"0d0ac8ff\"; to_md5; content:\"x\";");
    assert!(r.not_evaluable.iter().any(|n| n == "xor"));
    bad_kw(
        "dotprefix; content:\"x\";",
        RuleErrorKind::Validation,
        "dotprefix",
    );
}

// ---------------------------------------------------------------- pcre

#[test]
fn pcre_flags() {
    let r = ok("content:\"a\"; pcre:\"/a.*b/ismxAEGR\";");
    let PayloadItem::Pcre(p) = &items(&r, &Buffer::Packet)[1] else {
        panic!()
    };
    assert!(p.caseless && p.dotall && p.multiline && p.extended);
    assert!(p.anchored && p.dollar_endonly && p.ungreedy && p.relative);
    assert_eq!(p.pattern, "a.*b");
    let r = ok("pcre:!\"/x\\/y\\;\"z/B\";");
    let PayloadItem::Pcre(p) = &items(&r, &Buffer::Packet)[0] else {
        panic!()
    };
    assert!(p.negated && p.rawbytes);
    assert_eq!(p.pattern, "x\\/y\\;\"z");
    for (flag, buf) in [
        ('U', "http.uri"),
        ('I', "http.uri.raw"),
        ('P', "http.request_body"),
        ('Q', "file.data"),
        ('H', "http.header"),
        ('D', "http.header.raw"),
        ('M', "http.method"),
        ('C', "http.cookie"),
        ('S', "http.stat_code"),
        ('Y', "http.stat_msg"),
        ('V', "http.user_agent"),
        ('W', "http.host"),
        ('Z', "http.host.raw"),
    ] {
        let r = ok(&format!("pcre:\"/x/{flag}\";"));
        let PayloadItem::Pcre(p) = &items(&r, &named(buf))[0] else {
            panic!("{flag}")
        };
        assert_eq!(p.buffer_flag, Some(flag));
        assert_eq!(r.not_evaluable, vec![buf.to_string()]);
    }
    // Relative in a sticky buffer needs no preceding match.
    ok("http.uri; pcre:\"/x/R\";");
    ok("content:\"a\"; http_uri; pcre:\"/x/UR\";");
    ok("http.response_body; pcre:\"/x/Q\";");
}

#[test]
fn pcre_errors() {
    bad_kw("pcre:\"/x/R\";", RuleErrorKind::Validation, "pcre");
    bad_kw(
        "content:\"a\"; http_uri; pcre:\"/x/R\";",
        RuleErrorKind::Validation,
        "pcre",
    );
    bad_kw("pcre:\"/x/J\";", RuleErrorKind::InvalidValue, "pcre");
    bad_kw("pcre:\"/x/UH\";", RuleErrorKind::InvalidValue, "pcre");
    bad_kw("pcre:\"x\";", RuleErrorKind::InvalidValue, "pcre");
    bad_kw("pcre:\"/x\";", RuleErrorKind::InvalidValue, "pcre");
    bad_kw("pcre:\"/x/i;", RuleErrorKind::InvalidValue, "pcre");
    bad_kw(
        "dns.query; pcre:\"/x/U\";",
        RuleErrorKind::Validation,
        "pcre",
    );
}

// ---------------------------------------------------------------- byte_*

#[test]
fn byte_test_forms() {
    let r = ok("content:\"a\"; byte_test:4,>,1000,0,relative,little; \
                byte_test:2,!&,0x80,-2,relative,bitmask 0x0ff0; \
                byte_test:3,=,123,5,string,dec; byte_test:1,!=,5,0; byte_test:8,<=,1,0,big,dce;");
    let it = items(&r, &Buffer::Packet);
    let PayloadItem::ByteTest(a) = &it[1] else {
        panic!()
    };
    assert_eq!((a.nbytes, a.op, a.negated), (4, CmpOp::Gt, false));
    assert_eq!(a.value, NumOrVar64::Num(1000));
    assert!(a.relative && a.endian == Endian::Little);
    let PayloadItem::ByteTest(b) = &it[2] else {
        panic!()
    };
    assert_eq!((b.op, b.negated), (CmpOp::And, true));
    assert_eq!(b.offset, NumOrVarSigned::Num(-2));
    assert_eq!(b.bitmask, Some(0x0ff0));
    let PayloadItem::ByteTest(c) = &it[3] else {
        panic!()
    };
    assert_eq!(c.base, NumBase::Dec);
    let PayloadItem::ByteTest(d) = &it[4] else {
        panic!()
    };
    assert_eq!((d.op, d.negated), (CmpOp::Ne, false));
    // dce goes to the DCE/RPC stub data.
    let dce = items(&r, &named("dcerpc.stub_data"));
    let PayloadItem::ByteTest(e) = &dce[0] else {
        panic!()
    };
    assert!(e.dce);
    for op in ["<", ">", "=", "<=", ">=", "&", "^", "!<", "!^"] {
        ok(&format!("byte_test:1,{op},1,0;"));
    }
}

#[test]
fn byte_keywords_with_variables() {
    let r = ok("content:\"a\"; byte_extract:2,0,len,relative,little,multiplier 2,align 4; \
                content:\"b\"; within:len; byte_test:2,>,len,len; isdataat:len,relative; \
                byte_math:bytes 2,offset 0,oper +,rvalue len,result sum,relative,endian little; \
                byte_jump:4,sum,relative,from_beginning,post_offset -3,multiplier 2,align,string,hex; \
                content:\"c\"; offset:sum; depth:len;");
    let it = items(&r, &Buffer::Packet);
    let PayloadItem::ByteExtract(e) = &it[1] else {
        panic!()
    };
    assert_eq!(e.name, "len");
    assert_eq!((e.multiplier, e.align, e.endian), (2, 4, Endian::Little));
    let PayloadItem::Content(c) = &it[2] else {
        panic!()
    };
    assert_eq!(c.within, Some(NumOrVar::Var("len".into())));
    let PayloadItem::ByteMath(m) = &it[5] else {
        panic!()
    };
    assert_eq!((m.op, m.result.as_str()), (MathOp::Add, "sum"));
    assert_eq!(m.rvalue, NumOrVar64::Var("len".into()));
    let PayloadItem::ByteJump(j) = &it[6] else {
        panic!()
    };
    assert_eq!(j.offset, NumOrVarSigned::Var("sum".into()));
    assert!(j.from_beginning && j.align && j.relative);
    assert_eq!((j.post_offset, j.multiplier, j.base), (-3, 2, NumBase::Hex));
}

#[test]
fn byte_keyword_errors() {
    bad_kw("byte_test:4,>,1;", RuleErrorKind::InvalidValue, "byte_test");
    bad_kw(
        "byte_test:9,>,1,0;",
        RuleErrorKind::InvalidValue,
        "byte_test",
    );
    bad_kw(
        "byte_test:24,>,1,0,string;",
        RuleErrorKind::InvalidValue,
        "byte_test",
    );
    bad_kw(
        "byte_test:4,~,1,0;",
        RuleErrorKind::InvalidValue,
        "byte_test",
    );
    bad_kw(
        "byte_test:4,>,nosuch,0;",
        RuleErrorKind::InvalidValue,
        "byte_test",
    );
    bad_kw(
        "byte_test:4,>,1,0,sideways;",
        RuleErrorKind::InvalidValue,
        "byte_test",
    );
    bad_kw(
        "byte_test:4,>,1,0,big,little;",
        RuleErrorKind::InvalidValue,
        "byte_test",
    );
    bad_kw("byte_jump:4;", RuleErrorKind::InvalidValue, "byte_jump");
    bad_kw(
        "byte_jump:4,0,multiplier 0;",
        RuleErrorKind::InvalidValue,
        "byte_jump",
    );
    bad_kw(
        "byte_jump:4,0,from_beginning,from_end;",
        RuleErrorKind::InvalidValue,
        "byte_jump",
    );
    bad_kw(
        "byte_extract:4,0;",
        RuleErrorKind::InvalidValue,
        "byte_extract",
    );
    bad_kw(
        "byte_extract:4,0,1abc;",
        RuleErrorKind::InvalidValue,
        "byte_extract",
    );
    bad_kw(
        "byte_extract:4,0,x,align 3;",
        RuleErrorKind::InvalidValue,
        "byte_extract",
    );
    bad_kw(
        "byte_math:bytes 2,offset 0,oper +,rvalue 1;",
        RuleErrorKind::InvalidValue,
        "byte_math",
    );
    bad_kw(
        "byte_math:bytes 2,offset 0,oper %,rvalue 1,result r;",
        RuleErrorKind::InvalidValue,
        "byte_math",
    );
    bad_kw("isdataat:foo;", RuleErrorKind::InvalidValue, "isdataat");
    bad_kw(
        "isdataat:1,sideways;",
        RuleErrorKind::InvalidValue,
        "isdataat",
    );
}

#[test]
fn isdataat_forms() {
    let r = ok("content:\"a\"; isdataat:!10,relative,rawbytes;");
    let PayloadItem::IsDataAt(i) = &items(&r, &Buffer::Packet)[1] else {
        panic!()
    };
    assert!(i.negated && i.relative && i.rawbytes);
    assert_eq!(i.offset, NumOrVar::Num(10));
    // Relative byte keywords follow the buffer of the previous match.
    let r = ok("content:\"a\"; http_uri; isdataat:1,relative; byte_test:1,=,1,0;");
    assert_eq!(items(&r, &named("http.uri")).len(), 2);
    assert_eq!(items(&r, &Buffer::Packet).len(), 1);
}

// ---------------------------------------------------------------- integers

#[test]
fn integer_keywords() {
    let cond = |o: &str| ok(o).conditions[0].clone();
    assert_eq!(cond("dsize:10;"), Condition::Dsize(IntCmp::Eq(10)));
    assert_eq!(cond("dsize:<10;"), Condition::Dsize(IntCmp::Lt(10)));
    assert_eq!(cond("dsize:>10;"), Condition::Dsize(IntCmp::Gt(10)));
    assert_eq!(cond("dsize:<=10;"), Condition::Dsize(IntCmp::Le(10)));
    assert_eq!(cond("dsize:>=10;"), Condition::Dsize(IntCmp::Ge(10)));
    assert_eq!(cond("dsize:!10;"), Condition::Dsize(IntCmp::Ne(10)));
    assert_eq!(
        cond("dsize:10<>20;"),
        Condition::Dsize(IntCmp::RangeEx(10, 20))
    );
    assert_eq!(cond("ttl:1-5;"), Condition::Ttl(IntCmp::RangeEx(1, 5)));
    assert_eq!(cond("ttl:<3;"), Condition::Ttl(IntCmp::Lt(3)));
    assert_eq!(cond("itype:>30;"), Condition::Itype(IntCmp::Gt(30)));
    assert_eq!(cond("icode:0<>5;"), Condition::Icode(IntCmp::RangeEx(0, 5)));
    assert_eq!(cond("icmp_id:1234;"), Condition::IcmpId(1234));
    assert_eq!(cond("icmp_seq:\"7\";"), Condition::IcmpSeq(7));
    assert_eq!(cond("tcp.mss:<536;"), Condition::TcpMss(IntCmp::Lt(536)));
    assert_eq!(
        cond("sctp.vtag:3559606418;"),
        Condition::SctpVtag(IntCmp::Eq(3_559_606_418))
    );
    assert_eq!(
        cond("sctp.chunk_cnt:>16;"),
        Condition::SctpChunkCnt(IntCmp::Gt(16))
    );
    assert_eq!(
        cond("sctp.chunk_type:init_ack;"),
        Condition::SctpChunkType(IntCmp::Eq(2))
    );
    assert_eq!(
        cond("sctp.chunk_type:!hb_ack;"),
        Condition::SctpChunkType(IntCmp::Ne(5))
    );
    assert_eq!(
        cond("sctp.chunk_type:>forward_tsn;"),
        Condition::SctpChunkType(IntCmp::Gt(192))
    );
    assert_eq!(
        cond("sctp.chunk_type:3;"),
        Condition::SctpChunkType(IntCmp::Eq(3))
    );
    assert_eq!(cond("tos:8;"), Condition::Tos(IntCmp::Eq(8)));
    assert_eq!(cond("tos:!x10;"), Condition::Tos(IntCmp::Ne(16)));
    assert_eq!(cond("id:31337;"), Condition::IpId(31337));
    assert_eq!(cond("seq:0;"), Condition::TcpSeq(0));
    assert_eq!(cond("ack:4294967295;"), Condition::TcpAck(u32::MAX));
    // Suricata 9's dotted names.
    assert_eq!(cond("tcp.seq:12;"), Condition::TcpSeq(12));
    assert_eq!(cond("tcp.ack:13;"), Condition::TcpAck(13));
    assert_eq!(
        cond("tcp.window:1024;"),
        Condition::TcpWindow {
            negated: false,
            value: 1024
        }
    );
    assert_eq!(
        cond("window:!55808;"),
        Condition::TcpWindow {
            negated: true,
            value: 55808
        }
    );
    assert_eq!(
        cond("fragoffset:>100;"),
        Condition::Fragoffset {
            negated: false,
            op: IntCmp::Gt(100)
        }
    );
    assert_eq!(cond("sameip;"), Condition::SameIp);
    assert_eq!(cond("ipopts:lsrr;"), Condition::IpOpts("lsrr".into()));
    assert!(IntCmp::RangeEx(10, 20).matches(11) && !IntCmp::RangeEx(10, 20).matches(10));
}

#[test]
fn integer_errors() {
    bad_kw("dsize:70000;", RuleErrorKind::InvalidValue, "dsize");
    bad_kw("dsize:5<>6;", RuleErrorKind::InvalidValue, "dsize");
    bad_kw("dsize:abc;", RuleErrorKind::InvalidValue, "dsize");
    bad_kw("ttl:256;", RuleErrorKind::InvalidValue, "ttl");
    bad_kw("itype:<0;", RuleErrorKind::InvalidValue, "itype");
    bad_kw("icmp_id:70000;", RuleErrorKind::InvalidValue, "icmp_id");
    bad_kw("window:-1;", RuleErrorKind::InvalidValue, "window");
    bad_kw("ipopts:bogus;", RuleErrorKind::InvalidValue, "ipopts");
    bad_kw("seq:x;", RuleErrorKind::InvalidValue, "seq");
    bad_kw("tcp.seq:x;", RuleErrorKind::InvalidValue, "tcp.seq");
    bad_kw("sameip:1;", RuleErrorKind::InvalidValue, "sameip");
}

#[test]
fn ip_proto_forms() {
    let c = |o: &str| ok(o).conditions[0].clone();
    assert_eq!(
        c("ip_proto:6;"),
        Condition::IpProto {
            proto: 6,
            negated: false,
            op: IntCmp::Eq(6)
        }
    );
    assert_eq!(
        c("ip_proto:tcp;"),
        Condition::IpProto {
            proto: 6,
            negated: false,
            op: IntCmp::Eq(6)
        }
    );
    assert_eq!(
        c("ip_proto:!1;"),
        Condition::IpProto {
            proto: 1,
            negated: true,
            op: IntCmp::Ne(1)
        }
    );
    assert_eq!(
        c("ip_proto:<5;"),
        Condition::IpProto {
            proto: 5,
            negated: false,
            op: IntCmp::Lt(5)
        }
    );
    assert_eq!(
        c("ip_proto:>5;"),
        Condition::IpProto {
            proto: 5,
            negated: false,
            op: IntCmp::Gt(5)
        }
    );
    assert!(matches!(
        c("ip_proto:gre;"),
        Condition::IpProto { proto: 47, .. }
    ));
    bad_kw("ip_proto:nope;", RuleErrorKind::InvalidValue, "ip_proto");
    bad_kw("ip_proto:300;", RuleErrorKind::InvalidValue, "ip_proto");
}

// ---------------------------------------------------------------- flags

#[test]
fn tcp_flags() {
    let f = |o: &str| match &ok(o).conditions[0] {
        Condition::Flags(f) => *f,
        c => panic!("{c:?}"),
    };
    let x = f("flags:S;");
    assert_eq!(
        (x.flags, x.mask, x.modifier),
        (0x02, 0, FlagsModifier::Exact)
    );
    assert_eq!(f("flags:SA;").flags, 0x12);
    assert_eq!(f("flags:!R;").modifier, FlagsModifier::Not);
    assert_eq!(f("flags:+S;").modifier, FlagsModifier::Plus);
    assert_eq!(f("flags:A+;").modifier, FlagsModifier::Plus);
    let x = f("flags:*SA;");
    assert_eq!((x.flags, x.modifier), (0x12, FlagsModifier::Any));
    let x = f("flags:S,12;");
    assert_eq!((x.flags, x.mask), (0x02, 0xc0));
    let x = f("flags:SF,CE;");
    assert_eq!((x.flags, x.mask), (0x03, 0xc0));
    assert_eq!(f("flags:0;").flags, 0);
    assert_eq!(f("flags:FSRPAUCE;").flags, 0xff);
    assert_eq!(f("tcp.flags:1;").flags, 0x80);
    bad_kw("flags:X;", RuleErrorKind::InvalidValue, "flags");
    bad_kw("flags:+!S;", RuleErrorKind::InvalidValue, "flags");
    bad_kw("flags:,S;", RuleErrorKind::InvalidValue, "flags");
}

#[test]
fn fragbits() {
    let c = |o: &str| ok(o).conditions[0].clone();
    assert_eq!(
        c("fragbits:M;"),
        Condition::Fragbits {
            modifier: FlagsModifier::Exact,
            bits: 1
        }
    );
    assert_eq!(
        c("fragbits:+D;"),
        Condition::Fragbits {
            modifier: FlagsModifier::Plus,
            bits: 2
        }
    );
    assert_eq!(
        c("fragbits:*MDR;"),
        Condition::Fragbits {
            modifier: FlagsModifier::Any,
            bits: 7
        }
    );
    assert_eq!(
        c("fragbits:!R;"),
        Condition::Fragbits {
            modifier: FlagsModifier::Not,
            bits: 4
        }
    );
    bad_kw("fragbits:Q;", RuleErrorKind::InvalidValue, "fragbits");
}

// ---------------------------------------------------------------- flow

#[test]
fn flow_options() {
    let f = |o: &str| match &ok(o).conditions[0] {
        Condition::Flow(f) => *f,
        c => panic!("{c:?}"),
    };
    let x = f("flow:established,to_server;");
    assert!(x.established && x.to_server && !x.to_client);
    let x = f("flow: from_server , not_established, no_stream;");
    assert!(x.to_client && x.not_established && x.no_stream);
    assert!(f("flow:from_client;").to_server);
    assert!(f("flow:stateless;").stateless);
    assert!(f("flow:only_stream;").only_stream);
    assert!(f("flow:only_frag;").only_frag);
    assert!(f("flow:no_frag;").no_frag);
    bad_kw(
        "flow:to_server,to_client;",
        RuleErrorKind::InvalidValue,
        "flow",
    );
    bad_kw(
        "flow:established,not_established;",
        RuleErrorKind::InvalidValue,
        "flow",
    );
    bad_kw("flow:sideways;", RuleErrorKind::InvalidValue, "flow");
    bad_kw(
        "flow:to_server; flow:established;",
        RuleErrorKind::Validation,
        "flow",
    );
}

#[test]
fn flowbits_and_noalert() {
    let r = ok(
        "flowbits:set,ET.foo; flowbits:isset,a|b; flowbits:unset,a&b; flowbits:toggle,x; \
                flowbits:isnotset,y; flowbits:noalert;",
    );
    let fb: Vec<Flowbits> = r
        .conditions
        .iter()
        .filter_map(|c| match c {
            Condition::Flowbits(f) => Some(f.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(fb.len(), 5);
    assert_eq!(
        (fb[0].cmd, fb[0].names.clone()),
        (FlowbitsCmd::Set, vec!["ET.foo".to_string()])
    );
    assert!(fb[1].any && fb[1].names == ["a", "b"]);
    assert!(!fb[2].any && fb[2].names == ["a", "b"]);
    assert_eq!(fb[3].cmd, FlowbitsCmd::Toggle);
    assert_eq!(fb[4].cmd, FlowbitsCmd::IsNotSet);
    assert!(r.noalert);
    assert!(ok("noalert;").noalert);
    bad_kw("flowbits:set;", RuleErrorKind::InvalidValue, "flowbits");
    bad_kw("flowbits:frob,x;", RuleErrorKind::InvalidValue, "flowbits");
    bad_kw("flowbits:set,a|b;", RuleErrorKind::InvalidValue, "flowbits");
    bad_kw(
        "flowbits:isset,a|b&c;",
        RuleErrorKind::InvalidValue,
        "flowbits",
    );
    bad_kw(
        "flowbits:noalert,x;",
        RuleErrorKind::InvalidValue,
        "flowbits",
    );
}

#[test]
fn threshold_and_detection_filter() {
    let r = ok("threshold: type limit, track by_src, seconds 60, count 1; \
                detection_filter:track by_dst, count 5, seconds 10;");
    assert_eq!(
        r.conditions,
        vec![
            Condition::Threshold(Threshold {
                kind: ThresholdKind::Limit,
                track: Track::BySrc,
                count: 1,
                seconds: 60,
                multiplier: 0,
                unique_on: None,
            }),
            Condition::Threshold(Threshold {
                kind: ThresholdKind::DetectionFilter,
                track: Track::ByDst,
                count: 5,
                seconds: 10,
                multiplier: 0,
                unique_on: None,
            }),
        ]
    );
    for (t, k) in [
        ("threshold", ThresholdKind::Threshold),
        ("both", ThresholdKind::Both),
    ] {
        for track in ["by_rule", "by_both", "by_flow"] {
            let r = ok(&format!(
                "threshold:type {t},track {track},count 3,seconds 1;"
            ));
            assert!(matches!(r.conditions[0], Condition::Threshold(th) if th.kind == k));
        }
    }
    bad_kw(
        "threshold:type limit, track by_src, count 1;",
        RuleErrorKind::InvalidValue,
        "threshold",
    );
    bad_kw(
        "threshold:type often, track by_src, count 1, seconds 1;",
        RuleErrorKind::InvalidValue,
        "threshold",
    );
    bad_kw(
        "threshold:type limit, track by_cat, count 1, seconds 1;",
        RuleErrorKind::InvalidValue,
        "threshold",
    );
    bad_kw(
        "detection_filter:type limit, track by_src, count 1, seconds 1;",
        RuleErrorKind::InvalidValue,
        "detection_filter",
    );
}

#[test]
fn threshold_backoff_and_unique_on() {
    let r = ok("threshold:type backoff, track by_flow, count 3, multiplier 2;");
    assert_eq!(
        r.conditions,
        vec![Condition::Threshold(Threshold {
            kind: ThresholdKind::Backoff,
            track: Track::ByFlow,
            count: 3,
            seconds: 0,
            multiplier: 2,
            unique_on: None,
        })]
    );
    assert!(r.is_evaluable());
    for bad_opts in [
        "threshold:type backoff, track by_src, count 3, multiplier 2;",
        "threshold:type backoff, track by_flow, count 3;",
        "threshold:type backoff, track by_flow, count 3, multiplier 1;",
        "threshold:type backoff, track by_flow, count 3, multiplier 2, seconds 5;",
        "threshold:type limit, track by_src, count 3, seconds 5, multiplier 2;",
        "threshold:type limit, track by_src, count 3, count 4, seconds 5;",
        "detection_filter:track by_src, count 3, seconds 5, unique_on proto;",
    ] {
        let e = bad(bad_opts);
        assert_eq!(e.kind, RuleErrorKind::InvalidValue, "{bad_opts}: {e}");
    }
    let r = ok("detection_filter:track by_dst, count 10, seconds 60, unique_on dst_port;");
    assert!(matches!(
        r.conditions[0],
        Condition::Threshold(Threshold {
            unique_on: Some(UniqueOn::DstPort),
            ..
        })
    ));
    // unique_on needs ports.
    let e = rule("alert icmp any any -> any any (detection_filter:track by_dst, count 1, seconds 6, unique_on dst_port; sid:1;)").unwrap_err();
    assert_eq!(e.kind, RuleErrorKind::Validation);
    // Two thresholds of one kind are an error; one of each is fine.
    bad_kw(
        "threshold:type limit,track by_src,count 1,seconds 1; threshold:type limit,track by_src,count 1,seconds 1;",
        RuleErrorKind::Validation,
        "threshold",
    );
}

#[test]
fn flow_counters() {
    let r = ok("flow.pkts:toclient,=10; flow.bytes:either,>3000; flow.pkts_toserver:<5; flow.bytes_toclient:8kb;");
    assert_eq!(
        r.conditions,
        vec![
            Condition::FlowCount {
                counter: FlowCounter::Pkts,
                dir: FlowCountDir::ToClient,
                cmp: IntCmp::Eq(10)
            },
            Condition::FlowCount {
                counter: FlowCounter::Bytes,
                dir: FlowCountDir::Either,
                cmp: IntCmp::Gt(3000)
            },
            Condition::FlowCount {
                counter: FlowCounter::Pkts,
                dir: FlowCountDir::ToServer,
                cmp: IntCmp::Lt(5)
            },
            Condition::FlowCount {
                counter: FlowCounter::Bytes,
                dir: FlowCountDir::ToClient,
                cmp: IntCmp::Eq(8192)
            },
        ]
    );
    assert!(r.is_evaluable());
    bad_kw("flow.pkts:10;", RuleErrorKind::InvalidValue, "flow.pkts");
    bad_kw(
        "flow.pkts:sideways,10;",
        RuleErrorKind::InvalidValue,
        "flow.pkts",
    );
    bad_kw(
        "flow.bytes_toserver:x;",
        RuleErrorKind::InvalidValue,
        "flow.bytes_toserver",
    );
}

#[test]
fn flowint_forms() {
    let r = ok("flowint:cnt,+,1; flowint:cnt,>=,other; flowint:cnt,isset; flowint:x,notset;");
    assert_eq!(
        r.conditions,
        vec![
            Condition::Flowint(Flowint {
                name: "cnt".into(),
                op: FlowintOp::Add,
                value: Some(FlowintValue::Num(1))
            }),
            Condition::Flowint(Flowint {
                name: "cnt".into(),
                op: FlowintOp::Ge,
                value: Some(FlowintValue::Var("other".into()))
            }),
            Condition::Flowint(Flowint {
                name: "cnt".into(),
                op: FlowintOp::IsSet,
                value: None
            }),
            Condition::Flowint(Flowint {
                name: "x".into(),
                op: FlowintOp::NotSet,
                value: None
            }),
        ]
    );
    assert!(r.is_evaluable());
    // ET's spacing.
    ok("flowint: ET.infostealer.dll.download, +, 1;");
    for b in [
        "flowint:cnt;",
        "flowint:cnt,*,1;",
        "flowint:cnt,+;",
        "flowint:cnt,isset,1;",
        "flowint:cnt,=,-1;",
    ] {
        bad_kw(b, RuleErrorKind::InvalidValue, "flowint");
    }
}

#[test]
fn xbits_and_hostbits_parse() {
    let r = ok("xbits:isset,ET.x,track ip_pair,expire 60;");
    assert_eq!(
        r.conditions,
        vec![Condition::Xbits(Xbits {
            cmd: FlowbitsCmd::IsSet,
            name: "ET.x".into(),
            track: "ip_pair".into(),
            expire: Some(60)
        })]
    );
    assert!(r.not_evaluable.is_empty());
    assert!(ok("xbits:noalert;").noalert);
    // hostbits: xbits on the source (default), destination or both hosts.
    let hb = |v: &str| -> Vec<(FlowbitsCmd, String)> {
        ok(v)
            .conditions
            .iter()
            .filter_map(|c| match c {
                Condition::Xbits(x) => {
                    assert_eq!(x.name, "h");
                    assert_eq!(x.expire, None);
                    Some((x.cmd, x.track.clone()))
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        hb("hostbits:set,h;"),
        vec![(FlowbitsCmd::Set, "ip_src".into())]
    );
    assert_eq!(
        hb("hostbits:isset,h,dst;"),
        vec![(FlowbitsCmd::IsSet, "ip_dst".into())]
    );
    assert_eq!(
        hb("hostbits:toggle,h,both;"),
        vec![
            (FlowbitsCmd::Toggle, "ip_src".into()),
            (FlowbitsCmd::Toggle, "ip_dst".into())
        ]
    );
    assert!(ok("hostbits:noalert;").noalert);
    for b in [
        "hostbits:set;",
        "hostbits:set,h,sideways;",
        "hostbits:frob,h;",
        "hostbits:set,h,src,extra;",
    ] {
        bad_kw(b, RuleErrorKind::InvalidValue, "hostbits");
    }
    for b in [
        "xbits:set,a;",
        "xbits:set,a,track ip_host;",
        "xbits:frob,a,track ip_src;",
        "xbits:set,a,track ip_src,expire 0;",
    ] {
        bad_kw(b, RuleErrorKind::InvalidValue, "xbits");
    }
}

#[test]
fn requires_gates_rules() {
    assert_eq!(ok("requires: version >= 7;").requires_unmet, None);
    assert_eq!(ok("requires: version >= 7.0.3 < 9;").requires_unmet, None);
    assert_eq!(
        ok("requires: version >= 6 < 7 | >= 8;").requires_unmet,
        None
    );
    let r = ok("requires: version >= 99;");
    assert!(r.requires_unmet.as_deref().unwrap().contains("version"));
    let r = ok("requires: feature geoip, version >= 7;");
    assert!(r.requires_unmet.as_deref().unwrap().contains("geoip"));
    let r = ok("requires: frobnicator 3;");
    assert!(r.requires_unmet.is_some());
    assert!(r.not_evaluable.is_empty());
    for b in [
        "requires: version;",
        "requires: version >= x;",
        "requires: version ~ 7;",
    ] {
        bad_kw(b, RuleErrorKind::InvalidValue, "requires");
    }
}

#[test]
fn packet_keywords_parse() {
    let r = ok("icmpv6.mtu:<1280; tcp.wscale:>=14; ipopts:lsrr;");
    assert_eq!(
        r.conditions,
        vec![
            Condition::Icmpv6Mtu(IntCmp::Lt(1280)),
            Condition::TcpWscale(IntCmp::Ge(14)),
            Condition::IpOpts("lsrr".into()),
        ]
    );
    assert!(r.is_evaluable());
    bad_kw("tcp.wscale:300;", RuleErrorKind::InvalidValue, "tcp.wscale");
    bad_kw("ipopts:foo;", RuleErrorKind::InvalidValue, "ipopts");
}

#[test]
fn byte_keywords_take_variable_nbytes() {
    let r = ok("content:\"|00 00 00|\"; byte_extract:1,4,len,relative; byte_jump:len,0,relative; byte_test:len,=,5,0; byte_math:bytes len, offset 1, oper +, rvalue 1, result r;");
    let items = &r.buffers[0].items;
    match (&items[2], &items[3], &items[4]) {
        (PayloadItem::ByteJump(j), PayloadItem::ByteTest(t), PayloadItem::ByteMath(m)) => {
            assert_eq!(j.nbytes_var.as_deref(), Some("len"));
            assert_eq!(t.nbytes_var.as_deref(), Some("len"));
            assert_eq!(m.nbytes_var.as_deref(), Some("len"));
        }
        other => panic!("{other:?}"),
    }
    // The variable must be defined before use.
    bad_kw("byte_jump:len,0;", RuleErrorKind::InvalidValue, "byte_jump");
    bad_kw(
        "byte_math:bytes n, offset 1, oper +, rvalue 1, result r;",
        RuleErrorKind::InvalidValue,
        "byte_math",
    );
}

#[test]
fn tag_urilen_stream_size_validated() {
    let r = ok("tag:host, 10, seconds, src;");
    assert!(r.conditions.is_empty() && r.not_evaluable.is_empty());
    assert_eq!(
        r.tag,
        Some(TagSpec {
            scope: TagScope::Host { src: true },
            count: 10,
            metric: TagMetric::Seconds
        })
    );
    // Suricata's defaults: 256 packets, the destination host; a packets
    // count is capped at 256; a direction on a session tag is ignored.
    let t = |v: &str| ok(&format!("tag:{v};")).tag.unwrap();
    assert_eq!(
        t("session"),
        TagSpec {
            scope: TagScope::Session,
            count: 256,
            metric: TagMetric::Packets
        }
    );
    assert_eq!(t("host").scope, TagScope::Host { src: false });
    assert_eq!(t("session,1000,packets").count, 256);
    assert_eq!(t("session,1000,bytes").count, 1000);
    assert_eq!(t("session,5,packets,src").scope, TagScope::Session);
    bad_kw("tag:flow,5,packets;", RuleErrorKind::InvalidValue, "tag");
    bad_kw("tag:session,5,parsecs;", RuleErrorKind::InvalidValue, "tag");
    // Snort 3's form.
    assert_eq!(
        t("session,packets 5"),
        TagSpec {
            scope: TagScope::Session,
            count: 5,
            metric: TagMetric::Packets
        }
    );
    assert_eq!(
        t("host_src, seconds 30").scope,
        TagScope::Host { src: true }
    );
    bad_kw(
        "tag:session,packets five;",
        RuleErrorKind::InvalidValue,
        "tag",
    );
    bad_kw("tag:session,minutes 5;", RuleErrorKind::InvalidValue, "tag");
    bad_kw("tag:session,5;", RuleErrorKind::InvalidValue, "tag");
    bad_kw(
        "tag:host,5,packets,both;",
        RuleErrorKind::InvalidValue,
        "tag",
    );
    bad_kw("tag:host,-5,packets;", RuleErrorKind::InvalidValue, "tag");
    bad_kw(
        "tag:host,99999999999,bytes;",
        RuleErrorKind::InvalidValue,
        "tag",
    );
    bad_kw("tag:session; tag:host;", RuleErrorKind::InvalidValue, "tag");
    assert_eq!(
        ok("urilen:5<>10,norm;").not_evaluable,
        vec!["urilen".to_string()]
    );
    bad_kw("urilen:abc;", RuleErrorKind::InvalidValue, "urilen");
    bad_kw("urilen:5,cooked;", RuleErrorKind::InvalidValue, "urilen");
    assert_eq!(
        ok("stream_size: client,=,39;").not_evaluable,
        vec!["stream_size".to_string()]
    );
    bad_kw(
        "stream_size:client,~,39;",
        RuleErrorKind::InvalidValue,
        "stream_size",
    );
    bad_kw(
        "stream_size:client,<;",
        RuleErrorKind::InvalidValue,
        "stream_size",
    );
}

#[test]
fn events() {
    let r = ok("decode-event:ipv4.trunc_pkt; stream-event:3whs_ack_in_wrong_dir; app-layer-event:http.invalid_header;");
    assert_eq!(
        r.conditions,
        vec![
            Condition::Event {
                kind: EventKind::Decode,
                name: "ipv4.trunc_pkt".into()
            },
            Condition::Event {
                kind: EventKind::Stream,
                name: "3whs_ack_in_wrong_dir".into()
            },
            Condition::Event {
                kind: EventKind::AppLayer,
                name: "http.invalid_header".into()
            },
        ]
    );
    bad_kw(
        "decode-event:a b;",
        RuleErrorKind::InvalidValue,
        "decode-event",
    );
}

// ---------------------------------------------------------------- other keywords

#[test]
fn not_evaluable_keywords_parse() {
    for (opt, canon) in [
        ("app-layer-protocol:http;", "app-layer-protocol"),
        ("dns.opcode:0;", "dns.opcode"),
        ("tls.version:1.2;", "tls.version"),
        ("ssl_state:client_hello;", "ssl_state"),
        ("ssl_version:sslv3;", "ssl_version"),
        ("stream_size:server,>,100;", "stream_size"),
        ("urilen:>100;", "urilen"),
        ("filemagic:\"PDF\";", "filemagic"),
        (
            "dce_iface:4b324fc8-1670-01d3-1278-5a47bf6ee188;",
            "dcerpc.iface",
        ),
        ("dce_opnum:0-5;", "dcerpc.opnum"),
        ("smb.named_pipe; content:\"x\";", "smb.named_pipe"),
        ("lua:script.lua;", "lua"),
        ("ja3.hash; content:\"abc\";", "ja3.hash"),
        (
            "http.user_agent; dataset:isset,ua,type string,load ua.json,format json,value_key ua;",
            "dataset",
        ),
        ("filestore;", "filestore"),
        ("http.request_header; content:\"x\";", "http.request_header"),
    ] {
        let r = ok(opt);
        assert!(
            r.not_evaluable.iter().any(|n| n == canon),
            "{opt}: {:?}",
            r.not_evaluable
        );
    }
    let r = ok("urilen:>100;");
    assert_eq!(
        r.conditions,
        vec![Condition::NotEvaluable {
            keyword: "urilen".into(),
            value: Some(">100".into())
        }]
    );
    // Informational keywords are accepted and ignored.
    let r = ok("tag:session,10,packets;");
    assert!(r.not_evaluable.is_empty() && r.conditions.is_empty());
}

#[test]
fn unknown_keyword_is_an_error() {
    let e = bad("frobnicate:1;");
    assert_eq!(e.kind, RuleErrorKind::UnknownKeyword);
    assert_eq!(e.keyword.as_deref(), Some("frobnicate"));
    let e = bad("http.nonsense; content:\"x\";");
    assert_eq!(e.kind, RuleErrorKind::UnknownKeyword);
    let e = bad("content:\"x\",sideways;");
    assert_eq!(e.kind, RuleErrorKind::UnknownKeyword);
    // Keyword names are case-insensitive, as in Suricata.
    ok("CONTENT:\"x\"; NoCase;");
}

#[test]
fn escaped_semicolons_and_whitespace() {
    let r = ok("  msg : \"a\\;b\" ;content:\"x\\;y\";   nocase ;");
    assert_eq!(r.msg, "a;b");
    assert_eq!(contents(&r, &Buffer::Packet)[0].pattern, b"x;y");
    // Missing final semicolon is tolerated.
    let r = rule("alert tcp any any -> any any (msg:\"a\"; sid:3)").unwrap();
    assert_eq!(r.sid, 3);
}

// ---------------------------------------------------------------- Snort 3

#[test]
fn snort3_inline_modifiers_and_sticky_http() {
    let r = rule(
        "alert tcp $EXTERNAL_NET any -> $HOME_NET 445 ( msg:\"x\"; flow:to_server,established; \
         content:\"|FF|SMB\",depth 5,offset 4,nocase; content:\"abc\",distance 0,within 10,fast_pattern; \
         http_uri; content:\"/a\"; content:\"b\",distance 0; http_header; content:\"H\"; \
         pkt_data; content:\"p\"; bufferlen:<100; metadata:ruleset community; service:http; \
         classtype:misc-activity; sid:105; rev:14; )",
    )
    .unwrap();
    let pk = contents(&r, &Buffer::Packet);
    assert_eq!(pk[0].depth, Some(NumOrVar::Num(5)));
    assert_eq!(pk[0].offset, Some(NumOrVar::Num(4)));
    assert!(pk[0].nocase);
    assert_eq!(pk[1].within, Some(NumOrVar::Num(10)));
    assert!(pk[1].fast_pattern.is_some());
    assert_eq!(pk[2].pattern, b"p");
    assert_eq!(contents(&r, &named("http.uri")).len(), 2);
    assert_eq!(contents(&r, &named("http.header")).len(), 1);
    assert!(matches!(
        items(&r, &Buffer::Packet).last(),
        Some(PayloadItem::Bsize(IntCmp::Lt(100)))
    ));
    let r = rule(
        "alert tcp any any -> any any ( msg:\"x\"; content:\"abcdef\",fast_pattern,fast_pattern_offset 1,fast_pattern_length 3; sid:1; )",
    )
    .unwrap();
    assert_eq!(
        contents(&r, &Buffer::Packet)[0].fast_pattern,
        Some(FastPattern {
            only: false,
            chop: Some((1, 3))
        })
    );
}

#[test]
fn snort2_http_modifier_overrides_file_data() {
    let r =
        ok("file_data; content:\"a\"; content:\"Content-Length:\"; http_header; content:\"b\";");
    assert_eq!(contents(&r, &named("file.data")).len(), 2);
    assert_eq!(contents(&r, &named("http.header")).len(), 1);
}

// ---------------------------------------------------------------- errors

#[test]
fn asn1_options_parse_and_bad_ones_name_the_keyword() {
    let r = ok("content:\"x\"; asn1:bitstring_overflow, double_overflow, relative_offset -3, oversize_length 1024;");
    let items = &r.buffers[0].items;
    assert_eq!(
        items.last(),
        Some(&PayloadItem::Asn1(Asn1 {
            bitstring_overflow: true,
            double_overflow: true,
            oversize_length: Some(1024),
            absolute_offset: None,
            relative_offset: Some(-3),
        }))
    );
    assert!(r.not_evaluable.is_empty(), "{:?}", r.not_evaluable);
    for bad in [
        "asn1:absolute_offset 0, relative_offset 1, oversize_length 5;",
        "asn1:absolute_offset 0;",
        "asn1:oversize_length -1;",
        "asn1:relative_offset 70000, double_overflow;",
        "asn1:bitstring_overflow 3;",
        "asn1:frobnicate;",
        "asn1;",
    ] {
        let text = format!("alert tcp any any -> any any (msg:\"m\"; {bad} sid:1;)");
        let e = parse_rule(&text, &Vars::default(), Origin::default()).unwrap_err();
        assert_eq!(e.keyword.as_deref(), Some("asn1"), "{bad}: {e}");
    }
}

#[test]
fn entropy_options() {
    let item = |o: &str| ok(o).buffers[0].items[0].clone();
    assert_eq!(
        item("entropy:value >=7.5;"),
        PayloadItem::Entropy(Entropy {
            bytes: None,
            offset: 0,
            value: FloatCmp::Ge(7.5)
        })
    );
    assert_eq!(
        item("entropy: offset 4 , bytes 16, value 1.5-2;"),
        PayloadItem::Entropy(Entropy {
            bytes: Some(16),
            offset: 4,
            value: FloatCmp::RangeEx(1.5, 2.0)
        })
    );
    for bad in [
        "entropy:bytes 4;",
        "entropy:value !1;",
        "entropy:value 2, relative;",
        "entropy:value 3-1;",
        "entropy:value nan;",
        "entropy:offset -1, value 1;",
    ] {
        let e = rule(&format!("alert tcp any any -> any any ({bad} sid:3;)")).unwrap_err();
        assert_eq!(e.keyword.as_deref(), Some("entropy"), "{bad}: {e}");
    }
}

#[test]
fn error_display_has_location_sid_and_keyword() {
    let e = rule("alert tcp any any -> any any (msg:\"x\"; content:\"abc\"; depth:1; sid:42;)")
        .unwrap_err();
    assert_eq!(e.sid, Some(42));
    let s = e.to_string();
    assert!(s.starts_with("t.rules:7: sid 42: keyword depth: "), "{s}");
    let e = rule("alert tcp any any -> any any (sid : 77; bogus;)").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.rules:7: sid 77: keyword bogus: unknown keyword 'bogus'"
    );
    let e = parse_rule("garbage", &Vars::default(), Origin::default()).unwrap_err();
    assert_eq!(e.sid, None);
    assert!(!e.to_string().contains("sid"));
    let d: RuleDiagnostic = rule("alert tcp any any -> any any (foo; sid:5;)")
        .unwrap_err()
        .into();
    assert_eq!(
        d.to_string(),
        "t.rules:7: sid 5: keyword foo: unknown keyword 'foo'"
    );
    assert_eq!((d.line, d.sid), (7, Some(5)));
}

#[test]
fn the_config_keyword_and_action() {
    let r = rule(
        "config dns any any -> any any (dns.query; content:\"x\"; config: logging disable, type tx, scope tx; sid:1;)",
    )
    .unwrap();
    assert_eq!(r.action, Action::Config);
    assert!(r.disable_tx_log);
    // Suricata 8's tracking setting parses but is not evaluable yet.
    let r = rule(
        "config tcp any any -> any 666 (config: tracking disable, type flow, scope packet; sid:2;)",
    )
    .unwrap();
    assert!(!r.disable_tx_log);
    assert!(r
        .conditions
        .iter()
        .any(|c| matches!(c, Condition::NotEvaluable { keyword, .. } if keyword == "config")));
    for bad in [
        "config: logging enable, type tx, scope tx",
        "config: logging disable",
        "config: logging disable, type tx, scope tx, scope tx",
    ] {
        let text = format!("alert tcp any any -> any any ({bad}; sid:3;)");
        let e = rule(&text).unwrap_err();
        assert!(e.to_string().contains("config"), "{bad}: {e}");
    }
}

// ---------------------------------------------------------------- base64

#[test]
fn base64_decode_and_data() {
    let r = ok(
        r#"content:"b64,"; base64_decode:bytes 100, offset 2, relative; base64_data; content:"hello"; nocase; content:"x"; distance:1;"#,
    );
    assert!(r.not_evaluable.is_empty(), "{:?}", r.not_evaluable);
    // One packet list: the content and the decode, which carries the
    // base64_data keywords (no buffer of its own).
    assert_eq!(r.buffers.len(), 1, "{:?}", r.buffers);
    let it = items(&r, &Buffer::Packet);
    assert_eq!(it.len(), 2);
    let PayloadItem::Base64Decode(d) = &it[1] else {
        panic!("{:?}", it[1])
    };
    assert_eq!((d.bytes, d.offset, d.relative), (Some(100), 2, true));
    let data: Vec<&Content> = d
        .data
        .iter()
        .map(|i| match i {
            PayloadItem::Content(c) => c,
            o => panic!("{o:?}"),
        })
        .collect();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0].pattern, b"hello");
    assert!(data[0].nocase);
    assert_eq!(data[1].pattern, b"x");
    assert!(data[1].distance.is_some());

    // Defaults, on a sticky buffer; pkt_data after base64_data returns to
    // the packet.
    let r = ok(r#"http.uri; base64_decode; base64_data; content:"a"; pkt_data; content:"p";"#);
    let PayloadItem::Base64Decode(d) = &items(&r, &named("http.uri"))[0] else {
        panic!("{:?}", r.buffers)
    };
    assert_eq!((d.bytes, d.offset, d.relative), (None, 0, false));
    assert_eq!(d.data.len(), 1);
    assert_eq!(contents(&r, &Buffer::Packet)[0].pattern, b"p");
}

#[test]
fn base64_errors() {
    bad_kw(
        r#"base64_data; content:"a";"#,
        RuleErrorKind::Validation,
        "base64_data",
    );
    bad_kw(
        "base64_decode:bytes 0;",
        RuleErrorKind::InvalidValue,
        "base64_decode",
    );
    bad_kw(
        "base64_decode:size 4;",
        RuleErrorKind::InvalidValue,
        "base64_decode",
    );
    bad_kw(
        "base64_decode; base64_decode;",
        RuleErrorKind::Validation,
        "base64_decode",
    );
    bad_kw(
        "base64_decode; base64_data; base64_decode;",
        RuleErrorKind::Validation,
        "base64_decode",
    );
    bad_kw(
        "base64_decode; base64_data:1;",
        RuleErrorKind::InvalidValue,
        "base64_data",
    );
}

#[test]
fn vlan_keywords() {
    let cond = |o: &str| ok(o).conditions[0].clone();
    assert_eq!(
        cond("vlan.id:300;"),
        Condition::VlanId {
            cmp: IntCmp::Eq(300),
            layer: VlanLayer::Any
        }
    );
    assert_eq!(
        cond("vlan.id:<300,0;"),
        Condition::VlanId {
            cmp: IntCmp::Lt(300),
            layer: VlanLayer::Index(0)
        }
    );
    assert_eq!(
        cond("vlan.id:>=200,-3;"),
        Condition::VlanId {
            cmp: IntCmp::Ge(200),
            layer: VlanLayer::Index(-3)
        }
    );
    assert_eq!(
        cond("vlan.id:7,all;"),
        Condition::VlanId {
            cmp: IntCmp::Eq(7),
            layer: VlanLayer::All
        }
    );
    assert_eq!(
        cond("vlan.layers:>1;"),
        Condition::VlanLayers(IntCmp::Gt(1))
    );
    assert!(ok("vlan.id:1;").not_evaluable.is_empty());
    bad_kw("vlan.id:4096;", RuleErrorKind::InvalidValue, "vlan.id");
    bad_kw("vlan.id:1,3;", RuleErrorKind::InvalidValue, "vlan.id");
    bad_kw("vlan.id:1,-4;", RuleErrorKind::InvalidValue, "vlan.id");
    bad_kw("vlan.id:1,some;", RuleErrorKind::InvalidValue, "vlan.id");
    bad_kw("vlan.layers:x;", RuleErrorKind::InvalidValue, "vlan.layers");
}

#[test]
fn flow_age_keyword() {
    let cond = |o: &str| ok(o).conditions[0].clone();
    assert_eq!(
        cond("flow.age:>3600;"),
        Condition::FlowAge(IntCmp::Gt(3600))
    );
    assert_eq!(cond("flow.age:10;"), Condition::FlowAge(IntCmp::Eq(10)));
    assert!(ok("flow.age:1;").not_evaluable.is_empty());
    bad_kw("flow.age:x;", RuleErrorKind::InvalidValue, "flow.age");
    bad_kw(
        "flow.age:4294967296;",
        RuleErrorKind::InvalidValue,
        "flow.age",
    );
}

/// Each use of an HTTP header multi-buffer is an instance of its own
/// (two lists); a single-buffer keyword used twice stays one list.
#[test]
fn multi_buffer_instances() {
    let r = ok(
        r#"http.request_header; content:"method: GET"; http.request_header; content:"authority: x";"#,
    );
    let h: Vec<&BufferMatch> = r
        .buffers
        .iter()
        .filter(|b| b.buffer == named("http.request_header"))
        .collect();
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].items.len(), 1);
    assert_eq!(h[1].items.len(), 1);
    let r = ok(r#"http.uri; content:"/a"; http.method; content:"GET"; http.uri; content:"b";"#);
    let u: Vec<&BufferMatch> = r
        .buffers
        .iter()
        .filter(|b| b.buffer == named("http.uri"))
        .collect();
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].items.len(), 2);
}

/// `pcre:"/re/flags,flow:name"`: capture variables are accepted (the
/// match is kept), malformed ones are not.
#[test]
fn pcre_capture_variables() {
    let r = ok(r#"content:"a"; pcre:"/a(b+)c/i,flow:x_var";"#);
    let p = r.buffers[0]
        .items
        .iter()
        .find_map(|i| match i {
            PayloadItem::Pcre(p) => Some(p),
            _ => None,
        })
        .expect("pcre");
    assert_eq!(p.pattern, "a(b+)c");
    assert!(p.caseless);
    ok(r#"pcre:"/(a)(b)/,pkt:one,flow:two";"#);
    bad(r#"pcre:"/a/,bogus";"#);
    bad(r#"pcre:"/a/,flow:";"#);
}

#[test]
fn rpc_values() {
    let r = ok("rpc:100000, 2, 3;");
    assert_eq!(
        r.conditions,
        vec![Condition::Rpc(RpcMatch {
            program: 100000,
            version: Some(2),
            procedure: Some(3)
        })]
    );
    for (opt, v, p) in [
        ("rpc:100000,*,3;", None, Some(3)),
        ("rpc:100000, 2, *;", Some(2), None),
        ("rpc:100000,*,*;", None, None),
        ("rpc:100000,2;", Some(2), None),
        ("rpc:100000;", None, None),
        ("rpc:\"100000, 2, 3\";", Some(2), Some(3)),
    ] {
        assert_eq!(
            ok(opt).conditions,
            vec![Condition::Rpc(RpcMatch {
                program: 100000,
                version: v,
                procedure: p
            })],
            "{opt}"
        );
    }
    assert!(ok("rpc:1;").not_evaluable.is_empty());
    for opt in [
        "rpc;",
        "rpc:;",
        "rpc:*;",
        "rpc:abc;",
        "rpc:111,aaa,*;",
        "rpc:1,2,3,4;",
        "rpc:1,,3;",
        "rpc:-1;",
        "rpc:4294967296;",
        "rpc:1,2,x;",
        "rpc:1 2;",
    ] {
        bad_kw(opt, RuleErrorKind::InvalidValue, "rpc");
    }
}

#[test]
fn geoip_values() {
    let g = |opt: &str| match &ok(opt).conditions[..] {
        [Condition::GeoIp(g)] => g.clone(),
        other => panic!("{opt}: {other:?}"),
    };
    let geo = |side, negated, c: &[&str]| GeoIp {
        side,
        negated,
        countries: c.iter().map(|s| s.to_string()).collect(),
    };
    // Suricata's GeoipParseTest01..07, and the `UK`/`RUS` cut to 2.
    for (opt, want) in [
        ("geoip:US;", geo(IpRepSide::Any, false, &["US"])),
        ("geoip:!US;", geo(IpRepSide::Any, true, &["US"])),
        ("geoip:src,US;", geo(IpRepSide::Src, false, &["US"])),
        ("geoip:dst,!US;", geo(IpRepSide::Dst, true, &["US"])),
        (
            "geoip:US,ES,UK;",
            geo(IpRepSide::Any, false, &["US", "ES", "UK"]),
        ),
        (
            "geoip:both,!US,ES,UK;",
            geo(IpRepSide::Both, true, &["US", "ES", "UK"]),
        ),
        ("geoip:any, RUS ;", geo(IpRepSide::Any, false, &["RU"])),
        ("geoip:\"src,RU\";", geo(IpRepSide::Src, false, &["RU"])),
        ("geoip:ES,!US;", geo(IpRepSide::Any, true, &["ES", "US"])),
    ] {
        assert_eq!(g(opt), want, "{opt}");
    }
    assert!(ok("geoip:RU;").not_evaluable.is_empty());
    let many = vec!["AA"; 64].join(",");
    assert_eq!(g(&format!("geoip:src,{many};")).countries.len(), 64);
    for opt in [
        "geoip;".to_string(),
        "geoip:;".into(),
        "geoip:src;".into(),
        "geoip:src,;".into(),
        "geoip:src,RU,;".into(),
        "geoip:!;".into(),
        "geoip:R U;".into(),
        "geoip:!!RU;".into(),
        "geoip:\u{e9}s;".into(),
        format!("geoip:src,{many},BB;"),
    ] {
        bad_kw(&opt, RuleErrorKind::InvalidValue, "geoip");
    }
}

#[test]
fn iprep_values() {
    let r = ok("iprep:src,BadHosts,>,30;");
    assert_eq!(
        r.conditions,
        vec![Condition::IpRep(IpRep {
            side: IpRepSide::Src,
            category: "BadHosts".into(),
            op: IpRepOp::Gt,
            value: 30
        })]
    );
    assert!(r.not_evaluable.is_empty());
    for (opt, side, op, value) in [
        ("iprep:any,CnC,<,5;", IpRepSide::Any, IpRepOp::Lt, 5),
        (
            "iprep: dst , CnC , = , 127 ;",
            IpRepSide::Dst,
            IpRepOp::Eq,
            127,
        ),
        ("iprep:both,CnC,>=,0;", IpRepSide::Both, IpRepOp::Ge, 0),
        ("iprep:src,CnC,<=,255;", IpRepSide::Src, IpRepOp::Le, 255),
        ("iprep:src,CnC,!=,3;", IpRepSide::Src, IpRepOp::Ne, 3),
        ("iprep:src,CnC,!,3;", IpRepSide::Src, IpRepOp::Ne, 3),
        ("iprep:src,CnC,isset;", IpRepSide::Src, IpRepOp::IsSet, 0),
        (
            "iprep:any,CnC,isnotset;",
            IpRepSide::Any,
            IpRepOp::IsNotSet,
            0,
        ),
    ] {
        assert_eq!(
            ok(opt).conditions,
            vec![Condition::IpRep(IpRep {
                side,
                category: "CnC".into(),
                op,
                value
            })],
            "{opt}"
        );
    }
    for opt in [
        "iprep;",
        "iprep:;",
        "iprep:src;",
        "iprep:src,CnC;",
        "iprep:src,CnC,>;",
        "iprep:src,CnC,>,;",
        "iprep:src,CnC,>,256;",
        "iprep:src,CnC,>,-1;",
        "iprep:src,CnC,>,x;",
        "iprep:src,CnC,~,1;",
        "iprep:src,CnC,isset,1;",
        "iprep:src,CnC,gt;",
        "iprep:up,CnC,>,1;",
        "iprep:src,,>,1;",
        "iprep:src,CnC,>,1,2;",
    ] {
        bad_kw(opt, RuleErrorKind::InvalidValue, "iprep");
    }
}

#[test]
fn domain_and_tld_transforms() {
    for kw in ["domain", "tld"] {
        let r = ok(&format!("dns.query; {kw}; content:\"example.com\";"));
        assert_eq!(r.buffers[0].transforms[0].name, kw);
        assert!(r.buffers[0].transforms[0].arg.is_none());
        // No option, and a sticky buffer first.
        let e = bad(&format!("dns.query; {kw}:x; content:\"a\";"));
        assert_eq!(e.keyword.as_deref(), Some(kw), "{e}");
        let e = bad(&format!("{kw}; content:\"a\";"));
        assert_eq!(e.keyword.as_deref(), Some(kw), "{e}");
    }
}

#[test]
fn target_values() {
    assert_eq!(ok("target:src_ip;").target.as_deref(), Some("src_ip"));
    assert_eq!(ok("target:dest_ip;").target.as_deref(), Some("dest_ip"));
    assert!(ok("target:dest_ip;").not_evaluable.is_empty());
    for opt in ["target;", "target:;", "target:dst_ip;", "target:src;"] {
        bad_kw(opt, RuleErrorKind::InvalidValue, "target");
    }
}

fn pcre_of(r: &Rule) -> Pcre {
    r.buffers
        .iter()
        .flat_map(|b| &b.items)
        .find_map(|i| match i {
            PayloadItem::Pcre(p) => Some(p.clone()),
            _ => None,
        })
        .expect("pcre")
}

fn cap(scope: VarScope, name: &str) -> PcreCapture {
    PcreCapture {
        scope,
        name: name.into(),
    }
}

/// Named groups store variables by their type prefix (the shortest run
/// before an underscore, as Suricata's ungreedy capture regex): `pkt_`,
/// `flow_`, `alert_`; other groups are plain. Names after the flags come
/// first, then the named groups in pattern order.
#[test]
fn pcre_named_capture_groups() {
    let p = pcre_of(&ok(
        r#"pcre:"/(?P<flow_user>a)(?P<pkt_my_name>b)(?P<alert_x>c)(?P<foo_y>d)(?P<name>e)(?P<pkt_>f)/";"#,
    ));
    assert_eq!(
        p.captures,
        vec![
            cap(VarScope::Flow, "user"),
            cap(VarScope::Pkt, "my_name"),
            cap(VarScope::Alert, "x"),
        ]
    );
    let p = pcre_of(&ok(r#"pcre:"/(a)(?P<flow_b>b)/i,pkt:one";"#));
    assert_eq!(
        p.captures,
        vec![cap(VarScope::Pkt, "one"), cap(VarScope::Flow, "b")]
    );
    assert!(p.caseless);
    // Eight at most.
    let many: String = (0..9).map(|i| format!("(?P<pkt_v{i}>.)")).collect();
    bad_kw(
        &format!("pcre:\"/{many}/\";"),
        RuleErrorKind::InvalidValue,
        "pcre",
    );
    let eight: String = (0..8).map(|i| format!("(?P<pkt_v{i}>.)")).collect();
    assert_eq!(
        pcre_of(&ok(&format!("pcre:\"/{eight}/\";"))).captures.len(),
        8
    );
    // Suricata copies the type into 16 bytes.
    bad_kw(
        r#"pcre:"/(?P<abcdefghijklmnop_x>a)/";"#,
        RuleErrorKind::InvalidValue,
        "pcre",
    );
    // Key/value packet variables are parsed, not evaluated.
    let r = ok(r#"pcre:"/(\w+)=(\w+)/,pkt:key,pkt:value";"#);
    assert!(r
        .conditions
        .iter()
        .any(|c| matches!(c, Condition::NotEvaluable { keyword, .. } if keyword == "pcre")));
}

/// `flowvar` / `pktvar`: `name,"content"`, the name up to the last comma,
/// the content's quotes stripped and `|hex|` decoded.
#[test]
fn flowvar_and_pktvar() {
    let r = ok(r#"flowvar:user,"al|69|ce"; pktvar: pw , "x|01|";"#);
    assert_eq!(
        r.conditions,
        vec![
            Condition::Flowvar(VarMatch {
                name: "user".into(),
                content: b"alice".to_vec(),
            }),
            Condition::Pktvar(VarMatch {
                name: "pw".into(),
                content: b"x\x01".to_vec(),
            }),
        ]
    );
    let r = ok("flowvar:x,abc;");
    assert_eq!(
        r.conditions,
        vec![Condition::Flowvar(VarMatch {
            name: "x".into(),
            content: b"abc".to_vec(),
        })]
    );
    for kw in ["flowvar", "pktvar"] {
        for v in ["x", "x,", "x,\"\"", ",\"a\"", "x,\"|4\"", "x,\"|zz|\""] {
            bad_kw(&format!("{kw}:{v};"), RuleErrorKind::InvalidValue, kw);
        }
    }
    let reg = keyword_registry();
    for kw in ["flowvar", "pktvar"] {
        let k = reg.iter().find(|k| k.name == kw).expect(kw);
        assert_eq!(k.status, KeywordStatus::Supported, "{kw}");
    }
}

#[test]
fn dataset_and_datarep_parse() {
    let r = ok("http.user_agent; to_lowercase; dataset:set,ua-seen, type string, state ua-seen.lst, memcap 10mb, hashsize 1024;");
    let m = &r.buffers[0];
    assert_eq!(m.buffer, Buffer::Named("http.user_agent".into()));
    assert_eq!(m.transforms.len(), 1);
    let PayloadItem::Dataset(d) = &m.items[0] else {
        panic!("{:?}", m.items)
    };
    assert_eq!(d.cmd, DatasetCmd::Set);
    assert_eq!(
        d.set,
        DatasetDecl {
            name: "ua-seen".into(),
            ty: Some(DatasetType::String),
            load: Some("ua-seen.lst".into()),
            save: Some("ua-seen.lst".into()),
            state: true,
            memcap: Some(10 << 20),
            hashsize: Some(1024),
        }
    );
    assert!(
        !r.not_evaluable.iter().any(|n| n == "dataset"),
        "{:?}",
        r.not_evaluable
    );
    for (opt, cmd) in [
        ("unset", DatasetCmd::Unset),
        ("isset", DatasetCmd::IsSet),
        ("isnotset", DatasetCmd::IsNotSet),
    ] {
        let r = ok(&format!(
            "ip.src; dataset:{opt},bad, type ip, load bad.lst;"
        ));
        assert!(matches!(&r.buffers[0].items[0], PayloadItem::Dataset(d) if d.cmd == cmd));
        assert_eq!(r.buffers[0].buffer, Buffer::IpSrc);
    }
    let r = ok("dns.query; datarep:dns-rep, >=, 200, load dns.rep, type md5, memcap 1mb;");
    let PayloadItem::Datarep(d) = &r.buffers[0].items[0] else {
        panic!()
    };
    assert_eq!((d.op, d.value), (RepOp::Ge, 200));
    assert_eq!(d.set.ty, Some(DatasetType::Md5));
    assert_eq!(d.set.load.as_deref(), Some("dns.rep"));
    for (o, want) in [
        (">", RepOp::Gt),
        ("<", RepOp::Lt),
        ("<=", RepOp::Le),
        ("==", RepOp::Eq),
        ("!=", RepOp::Ne),
    ] {
        let r = ok(&format!("http.host; datarep:h,{o},1;"));
        assert!(matches!(&r.buffers[0].items[0], PayloadItem::Datarep(d) if d.op == want));
    }
}

#[test]
fn dataset_and_datarep_errors() {
    use RuleErrorKind::{InvalidValue as V, Validation};
    for opts in [
        "http.uri; dataset:add,x;",
        "http.uri; dataset:set;",
        "http.uri; dataset:set,,;",
        "http.uri; dataset:set,x, type blob;",
        "http.uri; dataset:set,x, type;",
        "http.uri; dataset:set,x, load a, load b;",
        "http.uri; dataset:set,x, state a, load b;",
        "http.uri; dataset:set,x, load b, state a;",
        "http.uri; dataset:set,x, save a, state a;",
        "http.uri; dataset:set,x, memcap lots;",
        "http.uri; dataset:set,x, hashsize -1;",
        "http.uri; dataset:set,x, colour blue;",
        "http.uri; dataset:set,x y;",
        "http.uri; dataset:set,x, format xml;",
    ] {
        bad_kw(opts, V, "dataset");
    }
    let long = format!("http.uri; dataset:set,{};", "n".repeat(64));
    bad_kw(&long, V, "dataset");
    for opts in [
        "http.uri; datarep:x;",
        "http.uri; datarep:x,>;",
        "http.uri; datarep:x,=>,1;",
        "http.uri; datarep:x,>,65536;",
        "http.uri; datarep:x,>,-1;",
        "http.uri; datarep:x,>,1, save f;",
        "http.uri; datarep:x,>,1, type;",
    ] {
        bad_kw(opts, V, "datarep");
    }
    // Only on a sticky buffer.
    bad_kw(
        "content:\"a\"; dataset:isset,x, type string;",
        Validation,
        "dataset",
    );
    bad_kw("datarep:x,>,1, type string;", Validation, "datarep");
}

#[test]
fn app_layer_state_values() {
    let p = |t: &str| parse_rule(t, &Vars::default(), Origin::default());
    let st = |t: &str| match p(t).unwrap().conditions.as_slice() {
        [Condition::AppLayerState(s)] => s.clone(),
        c => panic!("{t}: {c:?}"),
    };
    let s = st("alert http1 any any -> any any (app-layer-state:<request_body; sid:1;)");
    assert_eq!(
        (s.op, s.proto.as_str(), s.to_server, s.progress),
        (AppStateOp::Lt, "http1", true, 3)
    );
    let s = st("alert http1 any any -> any any (app-layer-state: >response_line ; sid:1;)");
    assert_eq!((s.op, s.to_server, s.progress), (AppStateOp::Gt, false, 1));
    let s = st("alert tls any any -> any any (app-layer-state:server_hello_done; sid:1;)");
    assert_eq!(
        (s.op, s.to_server, s.progress),
        (AppStateOp::AtLeast, false, 3)
    );
    let s = st("alert ssl any any -> any any (app-layer-state:>client_hello_done; sid:1;)");
    assert_eq!(
        (s.proto.as_str(), s.to_server, s.progress),
        ("tls", true, 1)
    );
    let s = st("alert ssh any any -> any any (app-layer-state:>response_banner_done; sid:1;)");
    assert_eq!((s.to_server, s.progress), (false, 2));
    // As Suricata: only < and >, a state of the header's protocol, and a
    // protocol with named states (`http` is HTTP/1 and HTTP/2).
    for t in [
        "alert http1 any any -> any any (app-layer-state:<=request_body; sid:1;)",
        "alert http1 any any -> any any (app-layer-state:>=request_body; sid:1;)",
        "alert http1 any any -> any any (app-layer-state:> request_body; sid:1;)",
        "alert http1 any any -> any any (app-layer-state:>; sid:1;)",
        "alert http1 any any -> any any (app-layer-state; sid:1;)",
        "alert http1 any any -> any any (app-layer-state:>bogus; sid:1;)",
        "alert http1 any any -> any any (app-layer-state:>client_hello_done; sid:1;)",
        "alert http any any -> any any (app-layer-state:>request_headers; sid:1;)",
        "alert dns any any -> any any (app-layer-state:>request_started; sid:1;)",
        "alert tcp any any -> any any (app-layer-state:>request_started; sid:1;)",
    ] {
        let e = p(t).expect_err(t);
        assert_eq!(e.keyword.as_deref(), Some("app-layer-state"), "{t}: {e}");
    }
    let e =
        p("alert http any any -> any any (app-layer-state:>request_headers; sid:1;)").unwrap_err();
    assert!(e.message.contains("http1"), "{e}");
}

#[test]
fn replace_on_a_packet_content_of_the_same_length() {
    let r = ok("content:\"big\"; replace:\"p|69|g\"; content:\"x\";");
    let PayloadItem::Content(c) = &r.buffers[0].items[0] else {
        panic!("content")
    };
    assert_eq!(c.replace.as_deref(), Some(&b"pig"[..]));
    assert!(r.not_evaluable.is_empty());
    bad_kw(
        "content:\"big\"; replace:\"pigs\";",
        RuleErrorKind::InvalidValue,
        "replace",
    );
    bad_kw("replace:\"pig\";", RuleErrorKind::InvalidValue, "replace");
    bad_kw(
        "content:!\"big\"; replace:\"pig\";",
        RuleErrorKind::InvalidValue,
        "replace",
    );
    bad_kw(
        "content:\"big\"; replace:pig;",
        RuleErrorKind::InvalidValue,
        "replace",
    );
    bad_kw(
        "content:\"big\"; replace:\"pig\"; replace:\"dig\";",
        RuleErrorKind::InvalidValue,
        "replace",
    );
    // Not on a sticky buffer (Suricata: the payload's contents only).
    bad_kw(
        "http.uri; content:\"big\"; replace:\"pig\";",
        RuleErrorKind::InvalidValue,
        "replace",
    );
}

/// `prefilter` (Suricata's detect-prefilter.c): no value, once per rule
/// on a non-content keyword, after a keyword that can prefilter; after a
/// content it is `fast_pattern` without options.
#[test]
fn prefilter_keyword() {
    let r = ok("content:\"abc\"; content:\"defgh\"; prefilter;");
    let cs = contents(&r, &Buffer::Packet);
    assert!(cs[0].fast_pattern.is_none());
    assert_eq!(
        cs[1].fast_pattern,
        Some(FastPattern {
            only: false,
            chop: None
        })
    );
    // An explicit fast_pattern elsewhere is kept.
    let r = ok("content:\"abc\"; fast_pattern; content:\"defgh\"; prefilter;");
    let cs = contents(&r, &Buffer::Packet);
    assert!(cs[0].fast_pattern.is_some() && cs[1].fast_pattern.is_none());
    // Modifiers and sticky buffers are not matches: the content stays last.
    let r = ok("http.uri; content:\"/a\"; nocase; depth:5; http.method; prefilter;");
    assert!(contents(&r, &Buffer::Named("http.uri".into()))[0]
        .fast_pattern
        .is_some());
    for o in [
        "flags:S; prefilter;",
        "tcp.flags:S; prefilter;",
        "dsize:>10; prefilter; content:\"a\";",
        "ttl:<3; msg:\"x\"; prefilter;",
        "flow:established; prefilter;",
        "flowbits:isset,a; prefilter;",
        "stream-event:pkt_invalid_ack; prefilter;",
        "content:\"a\"; prefilter; flags:S; prefilter;",
        // Twice: accepted by the Suricata 9 peer.
        "flags:S; prefilter; ttl:64; prefilter;",
    ] {
        ok(o);
    }
    bad_kw("prefilter;", RuleErrorKind::Validation, "prefilter");
    bad_kw(
        "msg:\"x\"; prefilter;",
        RuleErrorKind::Validation,
        "prefilter",
    );
    bad_kw(
        "flags:S; prefilter:x;",
        RuleErrorKind::InvalidValue,
        "prefilter",
    );
    bad_kw(
        "pcre:\"/a/\"; prefilter;",
        RuleErrorKind::Validation,
        "prefilter",
    );
    bad_kw(
        "engine-event:decoder.ipv4.trunc_pkt; prefilter;",
        RuleErrorKind::Validation,
        "prefilter",
    );
    bad_kw(
        "content:\"a\"; content:!\"b\"; distance:0; prefilter;",
        RuleErrorKind::Validation,
        "prefilter",
    );
    let e = bad("byte_test:1,>,2,0; prefilter;");
    assert!(e.to_string().contains("not supported for byte_test"), "{e}");
}

/// `tcp.session` (Suricata 9's detect-tcp-session.c syntax): a set of
/// phases, no spaces, no repeats, on TCP rules only.
#[test]
fn tcp_session_keyword() {
    let c = |o: &str| ok(o).conditions.pop().unwrap();
    assert_eq!(
        c("tcp.session:setup;"),
        Condition::TcpSession(TCP_SESSION_SETUP)
    );
    assert_eq!(
        c("tcp.session:closing,established;"),
        Condition::TcpSession(TCP_SESSION_CLOSING | TCP_SESSION_ESTABLISHED)
    );
    assert_eq!(
        c("tcp.session:setup,established,closing;"),
        Condition::TcpSession(7)
    );
    for v in [
        "",
        ",",
        ",setup",
        "setup,",
        "setup,,established",
        "bogus",
        "SETUP",
        "setu p",
        "setup,setup",
        "setup,established,setup",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ] {
        bad_kw(
            &format!("tcp.session:{v};"),
            RuleErrorKind::InvalidValue,
            "tcp.session",
        );
    }
    for h in ["udp", "icmp", "sctp", "dhcp"] {
        let e = rule(&format!(
            "alert {h} any any -> any any (tcp.session:setup; sid:1;)"
        ))
        .unwrap_err();
        assert_eq!(e.keyword.as_deref(), Some("tcp.session"), "{h}: {e}");
    }
    for h in ["ip", "tcp", "http", "tcp-pkt", "dns"] {
        rule(&format!(
            "alert {h} any any -> any any (tcp.session:closing; sid:1;)"
        ))
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    }
}

/// `flow.elephant:<dir>`: a direction is required.
#[test]
fn flow_elephant_keyword() {
    let c = |o: &str| ok(o).conditions.pop().unwrap();
    assert_eq!(
        c("flow.elephant:toserver;"),
        Condition::FlowElephant(ElephantDir::ToServer)
    );
    assert_eq!(
        c("flow.elephant:toclient;"),
        Condition::FlowElephant(ElephantDir::ToClient)
    );
    assert_eq!(
        c("flow.elephant:either;"),
        Condition::FlowElephant(ElephantDir::Either)
    );
    assert_eq!(
        c("flow.elephant:both;"),
        Condition::FlowElephant(ElephantDir::Both)
    );
    for o in [
        "flow.elephant;",
        "flow.elephant:bogus;",
        "flow.elephant:to_server;",
    ] {
        assert_eq!(bad(o).keyword.as_deref(), Some("flow.elephant"), "{o}");
    }
}

/// `alert`: no value; recorded on the rule.
#[test]
fn alert_keyword() {
    let r = rule("pass tcp any any -> any any (content:\"a\"; alert; sid:1;)").unwrap();
    assert!(r.force_alert && !r.noalert);
    assert!(!ok("content:\"a\";").force_alert);
    bad_kw("alert:yes;", RuleErrorKind::InvalidValue, "alert");
}

/// `nfq_set_mark:<mark>/<mask>` (Suricata's detect-mark.c): two 32-bit
/// numbers, decimal or 0x hex; the mask is required.
#[test]
fn nfq_set_mark_mark_and_mask() {
    let r = ok("nfq_set_mark:0x10/0xff;");
    assert_eq!(r.nfq_mark, Some((0x10, 0xff)));
    assert!(r.not_evaluable.is_empty());
    assert_eq!(ok("nfq_set_mark: 1/1;").nfq_mark, Some((1, 1)));
    assert_eq!(
        ok("nfq_set_mark:4294967295/0XFFFF0000;").nfq_mark,
        Some((u32::MAX, 0xffff_0000))
    );
    assert_eq!(ok("content:\"x\";").nfq_mark, None);
    for bad in [
        "nfq_set_mark:4;",
        "nfq_set_mark:0x1g/0xff;",
        "nfq_set_mark:/0xff;",
        "nfq_set_mark:1/;",
        "nfq_set_mark:0x100000000/1;",
        "nfq_set_mark:-1/1;",
        "nfq_set_mark:1/2/3;",
    ] {
        bad_kw(bad, RuleErrorKind::InvalidValue, "nfq_set_mark");
    }
    bad_kw("nfq_set_mark;", RuleErrorKind::InvalidValue, "nfq_set_mark");
}
