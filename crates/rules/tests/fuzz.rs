//! Property tests: the parser never panics, whatever the input.

use proptest::prelude::*;
use vigil_rules::*;

const SEEDS: &[&str] = &[
    r#"alert http $HOME_NET any -> $EXTERNAL_NET any (msg:"ET MALWARE x"; flow:established,to_server; http.method; content:"POST"; http.uri; content:"/gate.php"; fast_pattern; endswith; http.header_names; content:!"Referer"; pkt_data; pcre:"/^\/[a-z]{4}\.php$/U"; reference:url,example.com; classtype:trojan-activity; sid:2000001; rev:2; metadata:created_at 2020_01_01;)"#,
    r#"alert tcp $EXTERNAL_NET any -> $HOME_NET 445 (msg:"x"; flow:to_server,established; content:"|FF|SMB"; depth:5; offset:4; byte_extract:2,0,len,relative,little; byte_test:2,>,len,0,relative; byte_jump:4,len,relative,align,post_offset -2; isdataat:!10,relative; byte_math:bytes 2,offset 0,oper +,rvalue len,result r; content:"a"; within:r; sid:1;)"#,
    r#"alert udp any any -> any 53 (msg:"dns"; dns.query; dotprefix; content:".evil.com"; nocase; endswith; bsize:<100; threshold:type limit,track by_src,count 1,seconds 60; sid:2;)"#,
    r#"alert ip [1.1.1.1,!1.1.1.2,[10.0.0.0/8,!10.1.0.0/16]] [80,!81,1024:] <> ![$HOME_NET,2001:db8::/32] any (msg:"h"; ttl:<5; dsize:10<>20; flags:SA,12; fragbits:+M; ip_proto:!6; tos:!x10; icmp_id:5; sid:3;)"#,
    r#"alert http ( msg:"SERVER-WEBAPP"; flow:to_server,established; http_uri; content:"${",fast_pattern; content:"a.",distance 0; bufferlen:1<=>5; pcre:"/\x24\x7b/i"; metadata:policy balanced-ips drop; service:http; gid:1; sid:59941; rev:3; )"#,
    r#"alert tcp $EXTERNAL_NET $HTTP_PORTS -> $HOME_NET any (msg:"y"; flow:to_client,established; file_data; content:"MZ"; within:2; content:"Content-Length:"; http_header; flowbits:isset,a|b; flowbits:noalert; detection_filter:track by_dst,count 5,seconds 10; sid:4;)"#,
    r#"alert tcp any any -> any any (msg:"z"; flow.pkts:toserver,>3; flow.bytes_toclient:<10kb; flowint:cnt,+,1; flowint:cnt,>=,lim; xbits:isset,ET.x,track ip_pair,expire 60; requires: feature geoip, version >= 7.0.3 < 8 | >= 8; tag:session,5,packets; urilen:5<>10,raw; stream_size:client,<,100; icmpv6.mtu:<1280; tcp.wscale:>7; ipopts:lsrr; threshold:type backoff,track by_flow,count 1,multiplier 10; sid:5;)"#,
    r#"alert tcp any any -> any any (content:"|00 00 00|"; byte_extract:1,4,len,relative; byte_jump:len,0,relative; byte_math:bytes len,offset 1,oper +,rvalue 102,result r; byte_test:len,=,r,1,relative; detection_filter:track by_src,count 2,seconds 60,unique_on dst_port; sid:6;)"#,
];

const THRESHOLD_SEED: &str = "threshold gen_id 1, sig_id 10, type limit, track by_src, count 1, seconds 60\n\
    suppress gen_id 1, sig_id 13, track by_either, ip [10.0.0.0/8,!10.1.0.0/16,$HOME_NET]\n\
    rate_filter gen_id 1, sig_id 14, track by_src, count 10, seconds 60, new_action drop, timeout 300\n";

fn check(text: &str) {
    let vars = Vars::default();
    let _ = parse_rule(text, &vars, Origin::default());
    let _ = parse_rules_str(text, "fuzz.rules", &vars);
    let _ = ThresholdConfig::parse(text, "threshold.config", &vars);
}

#[test]
fn seeds_parse() {
    for s in SEEDS {
        parse_rule(s, &Vars::default(), Origin::default()).unwrap_or_else(|e| panic!("{s}\n{e}"));
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize, usize),
    Insert(usize, String),
    Duplicate(usize, usize),
    Replace(usize, char),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let tokens = prop::sample::select(vec![
        ";",
        ":",
        "\"",
        "\\",
        "|",
        "!",
        ",",
        "[",
        "]",
        "(",
        ")",
        "$",
        "/",
        "-",
        "<>",
        "0x",
        "99999999999",
        "-1",
        " ",
        "relative",
        "nocase;",
        "content:\"",
        "pcre:\"/",
        "http_uri;",
        "pkt_data;",
        "é",
        "\0",
        "$HOME_NET",
        "any",
        "distance:0;",
        "byte_extract:1,0,v;",
        "within:v;",
        "fast_pattern;",
    ]);
    prop_oneof![
        (any::<usize>(), 0usize..40).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (
            any::<usize>(),
            prop_oneof![tokens.prop_map(String::from), ".{0,8}"]
        )
            .prop_map(|(a, s)| Mutation::Insert(a, s)),
        (any::<usize>(), 0usize..60).prop_map(|(a, n)| Mutation::Duplicate(a, n)),
        (any::<usize>(), any::<char>()).prop_map(|(a, c)| Mutation::Replace(a, c)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(text: &str, muts: &[Mutation]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for m in muts {
        let len = chars.len().max(1);
        match m {
            Mutation::Delete(a, n) => {
                let a = a % len;
                let b = (a + n).min(chars.len());
                if a < b {
                    chars.drain(a..b);
                }
            }
            Mutation::Insert(a, s) => {
                let a = a % (chars.len() + 1);
                for (i, c) in s.chars().enumerate() {
                    chars.insert(a + i, c);
                }
            }
            Mutation::Duplicate(a, n) => {
                let a = a % len;
                let b = (a + n).min(chars.len());
                if a < b {
                    let seg: Vec<char> = chars[a..b].to_vec();
                    for (i, c) in seg.into_iter().enumerate() {
                        chars.insert(b + i, c);
                    }
                }
            }
            Mutation::Replace(a, c) => {
                if !chars.is_empty() {
                    let a = a % chars.len();
                    chars[a] = *c;
                }
            }
            Mutation::Truncate(a) => {
                let a = a % len;
                chars.truncate(a);
            }
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_strings(s in ".{0,300}") {
        check(&s);
    }

    #[test]
    fn never_panics_on_rule_shaped_strings(
        action in prop::sample::select(vec!["alert", "drop", "pass", "x"]),
        proto in prop::sample::select(vec!["tcp", "udp", "ip", "http", "icmp", "dns"]),
        src in "[!\\[\\]0-9.,/$A-Z_a-z:-]{0,30}",
        ports in "[!\\[\\]0-9,:$A-Z_]{0,15}",
        opts in prop::collection::vec("[a-z_.]{1,12}(:[ -~]{0,30})?;", 0..12),
    ) {
        let text = format!("{action} {proto} {src} {ports} -> any any ({} sid:1;)", opts.join(" "));
        check(&text);
    }

    #[test]
    fn never_panics_on_mutated_rules(
        seed in prop::sample::select(SEEDS.to_vec()),
        muts in prop::collection::vec(mutation(), 1..6),
    ) {
        let text = apply(seed, &muts);
        check(&text);
    }

    #[test]
    fn address_parsing_never_panics(s in "[!\\[\\], 0-9a-f.:/$A-Z_-]{0,60}") {
        let v = Vars::default();
        if let Ok(spec) = v.resolve_address(&s) {
            let m = spec.compile();
            for ip in ["10.0.0.1", "8.8.8.8", "::1", "0.0.0.0", "255.255.255.255"] {
                let ip = ip.parse().unwrap();
                prop_assert_eq!(spec.contains(ip), m.contains(ip));
            }
        }
        if let Ok(spec) = v.resolve_port(&s) {
            let m = spec.compile();
            for p in [0u16, 1, 80, 1023, 1024, 65535] {
                prop_assert_eq!(spec.contains(p), m.contains(p));
            }
        }
    }

    #[test]
    fn compiled_matchers_agree(
        items in prop::collection::vec((any::<bool>(), any::<u32>(), 0u8..=32), 1..20),
        probes in prop::collection::vec(any::<u32>(), 1..50),
    ) {
        let parts: Vec<String> = items
            .iter()
            .map(|(neg, a, l)| format!("{}{}/{}", if *neg { "!" } else { "" }, std::net::Ipv4Addr::from(*a), l))
            .collect();
        let text = format!("[{}]", parts.join(","));
        if let Ok(spec) = Vars::default().resolve_address(&text) {
            let m = spec.compile();
            for p in probes.iter().chain(items.iter().map(|i| &i.1)) {
                let ip = std::net::IpAddr::V4(std::net::Ipv4Addr::from(*p));
                prop_assert_eq!(spec.contains(ip), m.contains(ip), "{} {}", text, ip);
            }
        }
    }
}

/// Keywords whose values are checked by the parser: a bad value is an
/// error that names the keyword.
const VALUE_KEYWORDS: &[&str] = &[
    "sctp.vtag",
    "sctp.chunk_cnt",
    "sctp.chunk_type",
    "entropy",
    "tcpv4-csum",
    "tcp.mss",
    "dsize",
    "vlan.id",
    "rpc",
    "iprep",
    "geoip",
    "target",
    "flowvar",
    "pktvar",
    "tag",
    "replace",
    "nfq_set_mark",
    "engine-event",
    "prefilter",
    "tcp.session",
    "flow.elephant",
    "alert",
    "frame",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

    #[test]
    fn bad_keyword_values_name_the_keyword(
        kw in prop::sample::select(VALUE_KEYWORDS.to_vec()),
        value in prop_oneof!["[ -~]{0,24}", "[<>=!]{0,2}[0-9a-z_]{0,12}", "[0-9]{8,30}"],
    ) {
        let text = format!("alert sctp any any -> any any ({kw}:{value}; sid:9;)");
        if let Err(e) = parse_rule(&text, &Vars::default(), Origin::default()) {
            // A value that breaks the option syntax itself (a `;` or a
            // quote) may fail before the keyword is read.
            if !value.contains([';', '"', '\\', '(', ')']) {
                prop_assert_eq!(e.keyword.as_deref(), Some(kw), "{}: {}", text, e);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, .. ProptestConfig::default() })]

    /// Truncations of valid `rpc` / `iprep` values, and `domain` / `tld`
    /// with any value: an error names the keyword, never a panic.
    #[test]
    fn truncated_values_name_the_keyword(
        which in 0usize..6,
        cut in 0usize..40,
        junk in "[ -~]{0,8}",
    ) {
        let full = [
            "rpc:100000, 2, 3",
            "iprep:both,BadHosts,>=,127",
            "iprep:src,CnC,isnotset",
            "rpc:1,*,*",
            "tag:host, 300, seconds, src",
            "tag:session,99999999999,bytes",
        ][which];
        let kw = full.split(':').next().unwrap_or("");
        let cut = cut.min(full.len());
        let text = format!("alert udp any any -> any any ({}{}; sid:9;)", &full[..cut], junk);
        if let Err(e) = parse_rule(&text, &Vars::default(), Origin::default()) {
            if cut > kw.len() && !junk.contains([';', '"', '\\', '(', ')']) {
                prop_assert_eq!(e.keyword.as_deref(), Some(kw), "{}: {}", text, e);
            }
        }
        for t in ["domain", "tld"] {
            let text = format!("alert dns any any -> any any (dns.query; {t}:{junk}; sid:9;)");
            if let Err(e) = parse_rule(&text, &Vars::default(), Origin::default()) {
                if !junk.contains([';', '"', '\\', '(', ')']) {
                    prop_assert_eq!(e.keyword.as_deref(), Some(t), "{}: {}", text, e);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

    /// `frame` values cut anywhere or followed by junk, on rule headers of
    /// every kind: a rule or an error naming `frame`, never a panic.
    #[test]
    fn frame_values_name_the_keyword(
        which in 0usize..8,
        proto in prop::sample::select(vec!["tcp", "udp", "ip", "tls", "smb", "dns", "http", "ftp", "icmp", "tcp-pkt"]),
        cut in 0usize..20,
        junk in "[ -~]{0,8}",
    ) {
        let full = ["tls.pdu", "smb.nbss.hdr", "pdu", "http1.request", "tls.ssl2.hdr", "dns.stream", "smtp.data", "nfs.rpc.creds"][which];
        let cut = cut.min(full.len());
        let text = format!("alert {proto} any any -> any any (frame:{}{}; content:\"a\"; sid:9;)", &full[..cut], junk);
        if let Err(e) = parse_rule(&text, &Vars::default(), Origin::default()) {
            if !junk.contains([';', '"', '\\', '(', ')']) {
                prop_assert_eq!(e.keyword.as_deref(), Some("frame"), "{}: {}", text, e);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

    /// A pcre with capture groups and names, cut anywhere or with random
    /// bytes in its group names: never a panic; an error names `pcre`.
    #[test]
    fn pcre_captures_never_panic(
        cut in 0usize..80,
        junk in "[ -~]{0,12}",
        names in "[a-z_:, ]{0,20}",
    ) {
        let full = format!(
            "/(?P<flow_{junk}>a)(?P<pkt_x>b)(?P<alert{junk}>c)(?P<{junk}_y>d)/i,{names}"
        );
        let cut = full.char_indices().nth(cut).map_or(full.len(), |(i, _)| i);
        let value = &full[..cut];
        let text = format!("alert tcp any any -> any any (pcre:\"{value}\"; sid:9;)");
        if let Err(e) = parse_rule(&text, &Vars::default(), Origin::default()) {
            if !value.contains([';', '"', '\\']) {
                prop_assert_eq!(e.keyword.as_deref(), Some("pcre"), "{}: {}", text, e);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    /// `dataset` / `datarep` options: random, or valid ones cut short or
    /// with random parts, give a rule or an error naming the keyword,
    /// never a panic.
    #[test]
    fn dataset_options_error_names_the_keyword(
        kw in prop::sample::select(vec!["dataset", "datarep"]),
        parts in prop::collection::vec(
            prop_oneof![
                Just("set".to_string()),
                Just("isnotset".to_string()),
                Just(">=".to_string()),
                Just("65535".to_string()),
                Just(" type string".to_string()),
                Just(" type ip".to_string()),
                Just(" load f.lst".to_string()),
                Just(" state s.lst".to_string()),
                Just(" save s.lst".to_string()),
                Just(" memcap 10mb".to_string()),
                Just(" hashsize 1024".to_string()),
                Just(" format json".to_string()),
                "[ -~]{0,12}",
            ],
            0..7,
        ),
        cut in 0usize..80,
    ) {
        let full = parts.join(",");
        let mut end = cut.min(full.len());
        while !full.is_char_boundary(end) {
            end -= 1;
        }
        let value = &full[..end];
        let text = format!("alert http any any -> any any (http.uri; {kw}:{value}; sid:9;)");
        if let Err(e) = parse_rule(&text, &Vars::default(), Origin::default()) {
            if !value.contains([';', '"', '\\', '(', ')']) {
                prop_assert_eq!(e.keyword.as_deref(), Some(kw), "{}: {}", text, e);
            }
        }
    }
}

/// A small deterministic PRNG (xorshift64*) for the long mutation run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    ";",
    ":",
    "\"",
    "\\",
    "|",
    "!",
    ",",
    "[",
    "]",
    "(",
    ")",
    "$",
    "/",
    "-",
    "<>",
    "0x",
    "99999999999",
    "-1",
    " ",
    "relative",
    "nocase;",
    "content:\"",
    "pcre:\"/",
    "http_uri;",
    "pkt_data;",
    "é",
    "\0",
    "$HOME_NET",
    "any",
    "distance:0;",
    "byte_extract:1,0,v;",
    "within:v;",
    "fast_pattern;",
    "flowint:",
    "flowvar:",
    "pktvar:",
    "(?P<flow_",
    "(?P<pkt_",
    ",flow:",
    "xbits:",
    "requires:",
    "version",
    ">=",
    "|",
    "backoff",
    "multiplier",
    "unique_on",
    "flow.pkts:",
    "either,",
    "gen_id",
    "sig_id",
    "suppress",
    "track by_src",
    "ip",
];

/// A long, stable-toolchain mutation run over the seeds (the cargo-fuzz
/// target in `fuzz/` does the same with coverage guidance on nightly).
/// `VIGIL_FUZZ_SECS=1800 cargo test -p vigil-rules --release --test fuzz
/// -- --ignored long_mutation_run`.
#[test]
#[ignore]
fn long_mutation_run() {
    let secs: u64 = std::env::var("VIGIL_FUZZ_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let seed: u64 = std::env::var("VIGIL_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let mut rng = Rng(seed | 1);
    let start = std::time::Instant::now();
    let mut n = 0u64;
    let mut corpus: Vec<String> = SEEDS.iter().map(|s| s.to_string()).collect();
    corpus.push(THRESHOLD_SEED.to_string());
    while start.elapsed().as_secs() < secs {
        let base = corpus[rng.below(corpus.len())].clone();
        let muts: Vec<Mutation> = (0..1 + rng.below(6))
            .map(|_| match rng.below(5) {
                0 => Mutation::Delete(rng.next() as usize, rng.below(40)),
                1 => Mutation::Insert(
                    rng.next() as usize,
                    if rng.below(2) == 0 {
                        TOKENS[rng.below(TOKENS.len())].to_string()
                    } else {
                        (0..rng.below(8))
                            .map(|_| char::from_u32(rng.below(0x250) as u32).unwrap_or('?'))
                            .collect()
                    },
                ),
                2 => Mutation::Duplicate(rng.next() as usize, rng.below(60)),
                3 => Mutation::Replace(
                    rng.next() as usize,
                    char::from_u32(rng.below(0x80) as u32).unwrap_or('x'),
                ),
                _ => Mutation::Truncate(rng.next() as usize),
            })
            .collect();
        let text = apply(&base, &muts);
        check(&text);
        // Keep some mutants (bounded) so mutations compound.
        if rng.below(16) == 0 && text.len() < 4096 {
            if corpus.len() < 4096 {
                corpus.push(text);
            } else {
                let i = rng.below(corpus.len());
                corpus[i] = text;
            }
        }
        n += 1;
    }
    eprintln!("long_mutation_run: {n} inputs in {secs} s, no panic");
}

#[test]
fn deep_nesting_does_not_overflow() {
    let deep = format!("{}1.1.1.1{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(Vars::default().resolve_address(&deep).is_err());
    let bangs = format!("{}1.1.1.1", "!".repeat(100_001));
    let s = Vars::default().resolve_address(&bangs).unwrap();
    assert!(!s.contains("1.1.1.1".parse().unwrap()));
    let many = format!(
        "alert tcp any any -> any any ({} sid:1;)",
        "content:\"a\"; ".repeat(20_000)
    );
    assert!(parse_rule(&many, &Vars::default(), Origin::default()).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, .. ProptestConfig::default() })]

    /// `app-layer-state`: random values, and valid ones cut short or with
    /// junk appended, on protocols with and without named states: an
    /// error names the keyword, never a panic.
    #[test]
    fn app_layer_state_errors_name_the_keyword(
        proto in prop::sample::select(vec!["http1", "http", "tls", "ssh", "smtp", "dns", "tcp"]),
        which in 0usize..4,
        cut in 0usize..30,
        junk in prop_oneof!["[ -~]{0,12}", "[<>=!]{0,2}[a-z_]{0,20}"],
    ) {
        let full = [">request_headers", "<client_cert_done", "response_banner_done", "request_data"][which];
        let cut = cut.min(full.len());
        for value in [format!("{}{}", &full[..cut], junk), junk.clone()] {
            let text = format!("alert {proto} any any -> any any (app-layer-state:{value}; sid:9;)");
            if let Err(e) = parse_rule(&text, &Vars::default(), Origin::default()) {
                if !value.contains([';', '"', '\\', '(', ')']) {
                    prop_assert_eq!(e.keyword.as_deref(), Some("app-layer-state"), "{}: {}", text, e);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, .. ProptestConfig::default() })]

    /// `geoip`: random values, valid ones cut short or with junk
    /// appended, and long country lists: an error names the keyword,
    /// never a panic; a value that parses keeps at most 64 codes of at
    /// most 2 characters.
    #[test]
    fn geoip_errors_name_the_keyword(
        which in 0usize..4,
        cut in 0usize..30,
        junk in prop_oneof!["[ -~]{0,12}", "[,!a-zA-Z]{0,20}"],
        n in 0usize..80,
    ) {
        let full = ["src,RU", "both,!US,DE,UK", "any,RU,CN", "dst,!KP"][which];
        let cut = cut.min(full.len());
        let list = vec!["AB"; n].join(",");
        for value in [format!("{}{}", &full[..cut], junk), junk.clone(), format!("any,{list}")] {
            let text = format!("alert ip any any -> any any (geoip:{value}; sid:9;)");
            match parse_rule(&text, &Vars::default(), Origin::default()) {
                Err(e) => {
                    if !value.contains([';', '"', '\\', '(', ')']) {
                        prop_assert_eq!(e.keyword.as_deref(), Some("geoip"), "{}: {}", text, e);
                    }
                }
                Ok(r) => {
                    for c in &r.conditions {
                        if let vigil_rules::Condition::GeoIp(g) = c {
                            prop_assert!(!g.countries.is_empty() && g.countries.len() <= 64);
                            prop_assert!(g.countries.iter().all(|c| (1..=2).contains(&c.len())));
                        }
                    }
                }
            }
        }
    }
}
