//! `geoip`: rules against a crafted MaxMind DB (vigil_craft::mmdb):
//! 10.1/16 RU, 10.2/16 US, 10.3/16 DE, 10.4/16 a record without a
//! country; other addresses are not in the database.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use vigil_craft::{eth_ipv4_tcp, eth_ipv6_tcp};
use vigil_detect::geoip::GeoIpDb;
use vigil_detect::{
    BuildReport, DatasetConfig, DetectEngine, DetectScratch, FlowDetectState, FlowView,
    PacketInput, Skip,
};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Vars};
use vigil_wire::{decode, linktype};

const RU: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 5);
const US: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 5);
const DE: Ipv4Addr = Ipv4Addr::new(10, 3, 0, 5);
const NO_COUNTRY: Ipv4Addr = Ipv4Addr::new(10, 4, 0, 5);
const MISS: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

fn db() -> Arc<GeoIpDb> {
    Arc::new(GeoIpDb::from_bytes(vigil_craft::mmdb::test_country_db()).unwrap())
}

fn build(rules: &[&str], geoip: Option<Arc<GeoIpDb>>) -> (DetectEngine, BuildReport) {
    let vars = Vars::default();
    let parsed: Vec<_> = rules
        .iter()
        .map(|r| parse_rule(r, &vars, Origin::default()).unwrap_or_else(|e| panic!("{r}: {e}")))
        .collect();
    let cfg = DatasetConfig {
        geoip,
        ..DatasetConfig::default()
    };
    DetectEngine::build_with_data(&parsed, &ClassificationConfig::default(), None, cfg)
}

fn engine(rules: &[&str]) -> DetectEngine {
    let (e, report) = build(rules, Some(db()));
    assert!(report.skipped.is_empty(), "skipped: {:?}", report.skipped);
    e
}

fn alerts_on(
    e: &DetectEngine,
    frame: &[u8],
    st: Option<&mut FlowDetectState>,
    pseudo: bool,
) -> Vec<u32> {
    let p = decode(linktype::ETHERNET, frame);
    let mut scratch = DetectScratch::default();
    let mut cand = Vec::new();
    let sel = e.select_groups(&p).expect("IP packet");
    let addrs = p.ip.as_ref().map(|i| (i.src, i.dst));
    e.candidates(sel, p.payload(), addrs, &mut scratch, &mut cand);
    let mut hits = Vec::new();
    let mut input = PacketInput::new(
        &p,
        Some(FlowView {
            to_server: true,
            established: true,
            ..FlowView::default()
        }),
    );
    input.pseudo = pseudo;
    e.verify(input, &cand, st, &mut scratch, &mut hits);
    let mut sids: Vec<u32> = hits.iter().map(|&i| e.rules[i as usize].sid).collect();
    sids.sort_unstable();
    sids
}

fn pkt(src: Ipv4Addr, dst: Ipv4Addr) -> Vec<u8> {
    eth_ipv4_tcp(src, 40000, dst, 80, 1, 1, 0x18, b"x")
}

/// Sids alerting on a src -> dst packet, with and without flow state.
fn alerts(e: &DetectEngine, src: Ipv4Addr, dst: Ipv4Addr) -> Vec<u32> {
    let with_flow = alerts_on(
        e,
        &pkt(src, dst),
        Some(&mut FlowDetectState::default()),
        false,
    );
    let flowless = alerts_on(e, &pkt(src, dst), None, false);
    assert_eq!(with_flow, flowless, "{src} -> {dst}");
    with_flow
}

const RULES: &[&str] = &[
    "alert tcp any any -> any any (geoip:src,RU; sid:1;)",
    "alert tcp any any -> any any (geoip:dst,RU,US; sid:2;)",
    "alert tcp any any -> any any (geoip:both,RU,US; sid:3;)",
    "alert tcp any any -> any any (geoip:any,DE; sid:4;)",
    "alert tcp any any -> any any (geoip:US; sid:5;)",
    "alert tcp any any -> any any (geoip:src,!RU; sid:6;)",
    "alert tcp any any -> any any (geoip:both,!RU,US; sid:7;)",
    "alert tcp any any -> any any (geoip:any,RUS; sid:8;)",
];

#[test]
fn sides_lists_and_negation() {
    let e = engine(RULES);
    // RU -> US: src RU (1), dst in RU,US (2), both in RU,US (3), any US
    // (5); src is RU so !RU fails (6); both !RU,US: no (7). RUS is cut
    // to RU (8, any).
    assert_eq!(alerts(&e, RU, US), vec![1, 2, 3, 5, 8]);
    // US -> DE: dst DE not in RU,US; any DE (4), any US (5), src !RU (6).
    assert_eq!(alerts(&e, US, DE), vec![4, 5, 6]);
    // DE -> DE: both !RU,US holds for both (7), and src !RU (6).
    assert_eq!(alerts(&e, DE, DE), vec![4, 6, 7]);
    // DE -> RU: dst RU (2), any RU (8), src !RU (6).
    assert_eq!(alerts(&e, DE, RU), vec![2, 4, 6, 8]);
}

#[test]
fn an_address_without_a_country_never_matches() {
    let e = engine(RULES);
    // Not in the database, and a record without country.iso_code: even
    // the negated lists do not match.
    for a in [MISS, NO_COUNTRY] {
        assert_eq!(alerts(&e, a, a), Vec::<u32>::new(), "{a}");
    }
    // Negated `both` needs both addresses known.
    assert_eq!(alerts(&e, DE, MISS), vec![4, 6]);
    // The known side alone is enough for `dst` and `any`.
    assert_eq!(alerts(&e, MISS, US), vec![2, 5]);
}

#[test]
fn ipv6_and_pseudo_packets_never_match() {
    let e = engine(&[
        "alert tcp any any -> any any (geoip:!ZZ; sid:1;)",
        "alert tcp any any -> any any (geoip:RU; sid:2;)",
    ]);
    let v6 = eth_ipv6_tcp(
        Ipv6Addr::LOCALHOST,
        40000,
        Ipv6Addr::LOCALHOST,
        80,
        1,
        1,
        0x18,
        b"x",
    );
    assert!(alerts_on(&e, &v6, None, false).is_empty());
    let p = pkt(RU, US);
    assert_eq!(alerts_on(&e, &p, None, false), vec![1, 2]);
    assert!(alerts_on(&e, &p, None, true).is_empty());
}

#[test]
fn flow_cache_holds_the_two_addresses() {
    let e = engine(&["alert tcp any any -> any any (geoip:src,RU; sid:1;)"]);
    let mut st = FlowDetectState::default();
    // Both directions of a flow are answered from the cache.
    for _ in 0..3 {
        assert_eq!(alerts_on(&e, &pkt(RU, US), Some(&mut st), false), vec![1]);
        assert!(alerts_on(&e, &pkt(US, RU), Some(&mut st), false).is_empty());
    }
    // A third address (not possible in one flow) is still looked up.
    assert!(alerts_on(&e, &pkt(DE, US), Some(&mut st), false).is_empty());
    assert_eq!(alerts_on(&e, &pkt(RU, DE), Some(&mut st), false), vec![1]);
    // A reload empties the cache: a new engine with another database
    // (10.1/16 now US) answers with it.
    let other = vigil_craft::mmdb::country_db(&[vigil_craft::mmdb::Network {
        addr: Ipv4Addr::new(10, 1, 0, 0),
        prefix: 16,
        country: Some("US"),
    }]);
    let (e2, _) = build(
        &["alert tcp any any -> any any (geoip:src,US; sid:2;)"],
        Some(Arc::new(GeoIpDb::from_bytes(other).unwrap())),
    );
    st.remap(&[], &[]);
    assert_eq!(alerts_on(&e2, &pkt(RU, US), Some(&mut st), false), vec![2]);
}

#[test]
fn without_a_database_geoip_rules_are_invalid() {
    let (e, report) = build(
        &[
            "alert tcp any any -> any any (geoip:src,RU; sid:1;)",
            "alert tcp any any -> any any (sid:2;)",
        ],
        None,
    );
    assert_eq!(e.rules.len(), 1);
    assert_eq!(report.invalid_by_keyword.get("geoip"), Some(&1));
    assert!(matches!(&report.skipped[0].reason,
        Skip::Invalid { keyword, message } if keyword == "geoip" && message.contains("geoip-database")));
    // Reported without -v, with the other load problems.
    assert!(report
        .dataset_errors
        .iter()
        .any(|m| m.contains("geoip") && m.contains("geoip-database")));
}

#[test]
fn unreadable_or_bad_database_names_the_path() {
    let err =
        GeoIpDb::open(std::path::Path::new("/nonexistent/GeoLite2-Country.mmdb")).unwrap_err();
    assert!(err.contains("/nonexistent/GeoLite2-Country.mmdb"), "{err}");
    assert!(GeoIpDb::from_bytes(b"not a database".to_vec()).is_err());
    // Truncated databases are errors or work, never panics.
    let good = vigil_craft::mmdb::test_country_db();
    for n in 0..good.len() {
        if let Ok(db) = GeoIpDb::from_bytes(good[..n].to_vec()) {
            let _ = db.country(RU);
        }
    }
}
