//! Variables, address and port specifications, matchers.

use std::net::IpAddr;

use vigil_rules::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn addr(spec: &str) -> AddrSpec {
    Vars::default().resolve_address(spec).unwrap()
}

fn port(spec: &str) -> PortSpec {
    Vars::default().resolve_port(spec).unwrap()
}

/// Checks the linear and the compiled matcher agree on `ips`.
fn check(spec: &AddrSpec, yes: &[&str], no: &[&str]) {
    let m = spec.compile();
    for a in yes {
        assert!(spec.contains(ip(a)), "{spec:?} should contain {a}");
        assert!(m.contains(ip(a)), "compiled {spec:?} should contain {a}");
    }
    for a in no {
        assert!(!spec.contains(ip(a)), "{spec:?} should not contain {a}");
        assert!(
            !m.contains(ip(a)),
            "compiled {spec:?} should not contain {a}"
        );
    }
}

#[test]
fn defaults() {
    let v = Vars::default();
    assert_eq!(
        v.address("HOME_NET"),
        Some("[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]")
    );
    assert_eq!(v.address("$EXTERNAL_NET"), Some("!$HOME_NET"));
    assert_eq!(v.address("AIM_SERVERS"), Some("$EXTERNAL_NET"));
    assert_eq!(v.port("HTTP_PORTS"), Some("80"));
    assert_eq!(v.port("SHELLCODE_PORTS"), Some("!80"));
    assert_eq!(v.port("FILE_DATA_PORTS"), Some("[$HTTP_PORTS,110,143]"));
    for n in [
        "HOME_NET",
        "EXTERNAL_NET",
        "HTTP_SERVERS",
        "SMTP_SERVERS",
        "SQL_SERVERS",
        "DNS_SERVERS",
        "TELNET_SERVERS",
        "AIM_SERVERS",
        "DC_SERVERS",
        "DNP3_SERVER",
        "DNP3_CLIENT",
        "MODBUS_CLIENT",
        "MODBUS_SERVER",
        "ENIP_CLIENT",
        "ENIP_SERVER",
    ] {
        assert!(v.address(n).is_some(), "{n}");
    }
    for n in [
        "HTTP_PORTS",
        "SHELLCODE_PORTS",
        "ORACLE_PORTS",
        "SSH_PORTS",
        "DNP3_PORTS",
        "MODBUS_PORTS",
        "FILE_DATA_PORTS",
        "FTP_PORTS",
        "GENEVE_PORTS",
        "VXLAN_PORTS",
        "TEREDO_PORTS",
        "SIP_PORTS",
    ] {
        assert!(v.port(n).is_some(), "{n}");
    }
    assert!(v.validate().is_empty(), "{:?}", v.validate());
}

#[test]
fn home_and_external() {
    let home = addr("$HOME_NET");
    check(
        &home,
        &["192.168.1.1", "10.1.2.3", "172.16.0.1", "172.31.255.255"],
        &["8.8.8.8", "172.32.0.1", "::1"],
    );
    let ext = addr("$EXTERNAL_NET");
    assert!(!ext.is_any());
    check(
        &ext,
        &["8.8.8.8", "172.32.0.1", "::1", "2001:db8::1"],
        &["192.168.1.1", "10.1.2.3"],
    );
    // Double negation gives HOME_NET back.
    check(&addr("!$EXTERNAL_NET"), &["10.0.0.1"], &["8.8.8.8", "::1"]);
}

#[test]
fn any_and_groups() {
    let a = addr("any");
    assert!(a.is_any());
    assert!(a.compile().is_any());
    check(&a, &["1.2.3.4", "::"], &[]);
    let g = addr("[1.1.1.1, 2.2.2.0/24,[3.3.3.3,!2.2.2.7]]");
    check(
        &g,
        &["1.1.1.1", "2.2.2.9", "3.3.3.3"],
        &["2.2.2.7", "1.1.1.2", "::1"],
    );
    let n = addr("![1.1.1.1,!1.1.1.2]");
    check(&n, &["1.1.1.2"], &["1.1.1.1", "8.8.8.8"]);
    let only_neg = addr("[!1.1.1.1]");
    check(&only_neg, &["1.1.1.2", "::1"], &["1.1.1.1"]);
}

#[test]
fn cidr_netmask_range_ipv6() {
    check(&addr("10.0.0.5/8"), &["10.255.0.1"], &["11.0.0.0"]);
    check(
        &addr("192.168.1.0/255.255.255.0"),
        &["192.168.1.77"],
        &["192.168.2.1"],
    );
    check(
        &addr("10.0.0.5-10.0.0.9"),
        &["10.0.0.5", "10.0.0.9"],
        &["10.0.0.4", "10.0.0.10"],
    );
    check(
        &addr("2001:db8::/32"),
        &["2001:db8:1::1"],
        &["2001:db9::1", "10.0.0.1"],
    );
    check(&addr("::1"), &["::1"], &["::2", "0.0.0.1"]);
    check(&addr("0.0.0.0/0"), &["1.2.3.4"], &["::1"]);
    check(&addr("1.2.3.4/32"), &["1.2.3.4"], &["1.2.3.5"]);
}

#[test]
fn address_errors() {
    let v = Vars::default();
    for bad in [
        "",
        "!any",
        "[1.1.1.1",
        "1.1.1.1]",
        "[1.1.1.1,,2.2.2.2]",
        "1.1.1.256",
        "1.1.1.1/33",
        "::1/129",
        "1.1.1.1/255.0.255.0",
        "$NOPE",
        "$HTTP_PORTS",
        "[1.1.1.1,!1.1.1.1]",
        "10.0.0.9-10.0.0.1",
        "1.1.1.1-::1",
        "!",
        "foo",
    ] {
        let r = v.resolve_address(bad);
        assert!(r.is_err(), "{bad:?} should fail, got {r:?}");
        assert_eq!(r.unwrap_err().kind, RuleErrorKind::Address);
    }
}

#[test]
fn variable_errors_and_cycles() {
    let mut v = Vars::default();
    v.set_address("A", "$B").unwrap();
    v.set_address("B", "$A").unwrap();
    assert!(v.resolve_address("$A").is_err());
    v.set_address("C", "$UNDEFINED").unwrap();
    let e = v.resolve_address("$C").unwrap_err();
    assert!(e.message.contains("UNDEFINED"), "{e}");
    assert!(v.set_address("bad name", "any").is_err());
    assert_eq!(v.validate().len(), 3);
}

#[test]
fn nested_variables_and_set() {
    let mut v = Vars::default();
    v.set_address("$HOME_NET", "[10.0.0.0/8]").unwrap();
    v.set_address("MY", "[$HOME_NET,!10.1.0.0/16]").unwrap();
    let s = v.resolve_address("$MY").unwrap();
    check(&s, &["10.2.0.1"], &["10.1.0.1", "192.168.0.1"]);
    // EXTERNAL_NET follows the new HOME_NET.
    let e = v.resolve_address("$EXTERNAL_NET").unwrap();
    check(&e, &["192.168.0.1"], &["10.2.3.4"]);
    v.set_port("WEB", "[$HTTP_PORTS,8080:8090]").unwrap();
    let p = v.resolve_port("$WEB").unwrap();
    assert!(p.contains(80) && p.contains(8085) && !p.contains(443));
}

#[test]
fn ports() {
    let any = port("any");
    assert!(any.is_any());
    assert!(any.contains(0) && any.contains(65535));
    let p = port("80");
    assert!(p.contains(80) && !p.contains(81));
    let r = port("1024:");
    assert!(r.contains(1024) && r.contains(65535) && !r.contains(1023));
    let r = port(":1023");
    assert!(r.contains(0) && r.contains(1023) && !r.contains(1024));
    let r = port("80:90");
    assert!(r.contains(85) && !r.contains(91));
    let n = port("!80");
    assert!(!n.is_any() && n.contains(81) && !n.contains(80));
    let g = port("[80,443,8000:9000,!8080]");
    for (x, want) in [
        (80, true),
        (443, true),
        (8500, true),
        (8080, false),
        (81, false),
    ] {
        assert_eq!(g.contains(x), want, "{x}");
        assert_eq!(g.compile().contains(x), want, "compiled {x}");
    }
    assert!(port("$SHELLCODE_PORTS").contains(22));
    assert!(!port("$SHELLCODE_PORTS").contains(80));
    let f = port("$FILE_DATA_PORTS");
    assert!(f.contains(80) && f.contains(110) && f.contains(143) && !f.contains(25));
    let s = port("$SIP_PORTS");
    assert!(s.contains(5060) && s.contains(5061));
    // Suricata: the doubly negated element is included, the rest excluded.
    let nn = port("![1:100,!200]");
    assert!(nn.contains(200) && !nn.contains(20) && !nn.contains(101));
    assert!(Vars::default().resolve_port("![1:100,!50]").is_err());
}

#[test]
fn port_errors() {
    let v = Vars::default();
    for bad in [
        "",
        "!any",
        "65536",
        "90:80",
        ":",
        "[80",
        "80,81",
        "abc",
        "$HOME_NET",
        "$NOPE",
        "[80,!80]",
        "-1",
    ] {
        let r = v.resolve_port(bad);
        assert!(r.is_err(), "{bad:?} should fail, got {r:?}");
    }
}

#[test]
fn big_list_matcher() {
    // A long list like ET's CINS groups: compiled matcher agrees with scan.
    let mut list = Vec::new();
    for i in 0..500u32 {
        let a = 0x0a00_0000u32 + i * 7919;
        list.push(std::net::Ipv4Addr::from(a).to_string());
    }
    let spec = addr(&format!("[{}]", list.join(",")));
    let m = spec.compile();
    assert!(m.v4_ranges().len() <= 500);
    for i in 0..5000u32 {
        let a = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000u32 + i * 797));
        assert_eq!(spec.contains(a), m.contains(a), "{a}");
    }
    for a in &list {
        assert!(m.contains(ip(a)));
    }
}

#[test]
fn matcher_ranges_are_normalized() {
    let s = addr("[10.0.0.0/24,10.0.1.0/24,!10.0.0.128/25]");
    let m = s.compile();
    assert_eq!(
        m.v4_ranges(),
        &[(0x0a00_0000, 0x0a00_007f), (0x0a00_0100, 0x0a00_01ff)]
    );
    assert!(m.v6_ranges().is_empty());
    let p = port("[1:10,5:20,22,23]").compile();
    assert_eq!(p.ranges(), &[(1, 20), (22, 23)]);
}
