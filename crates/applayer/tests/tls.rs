//! TLS against a real OpenSSL handshake (fixtures in `tests/data`), with
//! JA3/JA3S/JA4 cross-checked against an independent implementation.

use vigil_applayer::tls::{self, ssl_state};
use vigil_applayer::{AppLayerState, AppProto, BufferId, Direction, Transport};

const CLIENT12: &[u8] = include_bytes!("data/tls12_client.bin");
const SERVER12: &[u8] = include_bytes!("data/tls12_server.bin");
const CLIENT13: &[u8] = include_bytes!("data/tls13_client.bin");
const CERT: &[u8] = include_bytes!("data/selfsigned.der");

const JA3: &str = "771,49196-49200-159-52393-52392-52394-49195-49199-158-49188-49192-107-49187-49191-103-49162-49172-57-49161-49171-51-157-156-61-60-53-47-255,0-11-10-35-22-23-13,29-23-30-25-24,0-1-2";
const JA3_MD5: &str = "871a754af286dfb70c1b53c6887c62e0";
const JA3S: &str = "771,49200,65281-11-35-23";
const JA3S_MD5: &str = "ec74a5c51106f0419184d0dd08fb05bc";

fn s(state: &AppLayerState, id: BufferId, dir: Direction) -> Option<String> {
    state
        .buffer(0, id, dir)
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn check12(st: &AppLayerState) {
    use BufferId::*;
    use Direction::*;
    assert_eq!(s(st, TlsSni, ToServer).unwrap(), "test.vigil.example");
    assert_eq!(s(st, Ja3String, ToServer).unwrap(), JA3);
    assert_eq!(s(st, Ja3Hash, ToServer).unwrap(), JA3_MD5);
    assert_eq!(s(st, Ja3sString, ToClient).unwrap(), JA3S);
    assert_eq!(s(st, Ja3sHash, ToClient).unwrap(), JA3S_MD5);
    assert_eq!(
        s(st, Ja4Hash, ToServer).unwrap(),
        "t12d280700_d943125447b4_e7e480e5a997"
    );
    assert_eq!(
        s(st, TlsCertSubject, ToClient).unwrap(),
        "C=US, ST=WA, O=Vigil Test, CN=test.vigil.example"
    );
    assert_eq!(
        s(st, TlsCertIssuer, ToClient).unwrap(),
        "C=US, ST=WA, O=Vigil Test, CN=test.vigil.example"
    );
    assert_eq!(s(st, TlsCertSerial, ToClient).unwrap(), "00:C0:FF:EE:12:34");
    assert_eq!(
        s(st, TlsCertFingerprint, ToClient).unwrap(),
        "27:d3:c3:d8:0d:5e:64:dd:3a:9b:9f:c4:a6:09:d1:d6:f8:7c:d6:4d"
    );
    let certs: Vec<&[u8]> = st.buffers(0, TlsCerts, ToClient).collect();
    assert_eq!(certs, vec![CERT]);
    assert_eq!(
        hex(st.buffer(0, TlsRandom, ToServer).unwrap()),
        "bce3788fc2087e25ebdfdc3f3751d953a63d8c4baac88893a54637e79b57f8de"
    );
    assert_eq!(
        hex(st.buffer(0, TlsRandomTime, ToServer).unwrap()),
        "bce3788f"
    );
    assert_eq!(st.buffer(0, TlsRandomBytes, ToServer).unwrap().len(), 28);
    assert_eq!(
        hex(st.buffer(0, TlsRandom, ToClient).unwrap()),
        "0e5ef791581ef3ed35dec6502f17ffe904b52695dfb2a354706273dffbd2496a"
    );

    let t = st.as_tls().unwrap().tx().unwrap();
    assert_eq!(
        t.state_flags,
        ssl_state::CLIENT_HELLO
            | ssl_state::SERVER_HELLO
            | ssl_state::CLIENT_KEYX
            | ssl_state::SERVER_KEYX
    );
    assert_eq!(t.version(Direction::ToClient), tls::TLS_12);
    assert_eq!(
        tls::ssl_version_name(t.negotiated_version()),
        Some("tls1.2")
    );
    assert!(t.encrypted(Direction::ToServer) && t.encrypted(Direction::ToClient));
    let p = st.transactions()[0].progress;
    assert!(p.request_complete && p.response_complete);

    let eve = st.eve(0).unwrap();
    assert_eq!(eve["sni"], "test.vigil.example");
    assert_eq!(eve["version"], "TLS 1.2");
    assert_eq!(eve["serial"], "00:C0:FF:EE:12:34");
    assert_eq!(
        eve["subject"],
        "C=US, ST=WA, O=Vigil Test, CN=test.vigil.example"
    );
    assert_eq!(
        eve["issuerdn"],
        "C=US, ST=WA, O=Vigil Test, CN=test.vigil.example"
    );
    assert_eq!(eve["notbefore"], "2026-11-22T03:49:19");
    assert_eq!(eve["notafter"], "2036-11-19T03:49:19");
    assert_eq!(eve["ja3"]["hash"], JA3_MD5);
    assert_eq!(eve["ja3s"]["string"], JA3S);
}

#[test]
fn tls12_handshake() {
    let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    assert!(st.feed(Direction::ToServer, CLIENT12, 0).is_empty());
    assert!(st.feed(Direction::ToClient, SERVER12, 0).is_empty());
    check12(&st);
}

#[test]
fn tls12_every_split_point() {
    for i in 0..=CLIENT12.len() {
        let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
        st.feed(Direction::ToServer, &CLIENT12[..i], 0);
        st.feed(Direction::ToServer, &CLIENT12[i..], 0);
        st.feed(Direction::ToClient, SERVER12, 0);
        check12(&st);
    }
    for i in 0..=SERVER12.len() {
        let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
        st.feed(Direction::ToServer, CLIENT12, 0);
        st.feed(Direction::ToClient, &SERVER12[..i], 0);
        st.feed(Direction::ToClient, &SERVER12[i..], 0);
        check12(&st);
    }
}

#[test]
fn tls12_byte_at_a_time() {
    let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    for b in CLIENT12.chunks(1) {
        st.feed(Direction::ToServer, b, 0);
    }
    for b in SERVER12.chunks(1) {
        st.feed(Direction::ToClient, b, 0);
    }
    check12(&st);
}

#[test]
fn tls13_client_hello() {
    let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    st.feed(Direction::ToServer, CLIENT13, 0);
    assert_eq!(
        s(&st, BufferId::Ja3String, Direction::ToServer).unwrap(),
        "771,4866-4867-4865-255,0-11-10-35-22-23-13-43-45-51,29-23-30-25-24-256-257-258-259-260,0-1-2"
    );
    assert_eq!(
        s(&st, BufferId::Ja3Hash, Direction::ToServer).unwrap(),
        "f146948b4a599d4d7ddf071b74696983"
    );
    assert_eq!(
        s(&st, BufferId::Ja4Hash, Direction::ToServer).unwrap(),
        "t13d041000_16476d049b0b_78f1d400d464"
    );
    let t = st.as_tls().unwrap().tx().unwrap();
    assert_eq!(
        t.client_hello.as_ref().unwrap().supported_versions,
        vec![tls::TLS_13]
    );
}

#[test]
fn grease_is_left_out_of_ja3() {
    let h = tls::Hello {
        legacy_version: 771,
        ciphers: vec![0x0a0a, 4865, 0xfafa],
        extensions: vec![0x1a1a, 0, 10],
        groups: vec![0x2a2a, 29],
        point_formats: vec![0],
        ..Default::default()
    };
    assert_eq!(tls::ja3_string(&h), "771,4865,0-10,29,0");
}

#[test]
fn certificate_parses() {
    let c = tls::parse_cert(CERT).unwrap();
    assert_eq!(c.serial, "00:C0:FF:EE:12:34");
    assert!(tls::parse_cert(&CERT[..100]).is_none());
}

#[test]
fn bad_records_raise_events_and_stop() {
    let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    let ev = st.feed(
        Direction::ToServer,
        &[0x16, 0x03, 0x01, 0xff, 0xff, 1, 2, 3],
        0,
    );
    assert_eq!(ev[0].keyword(), "tls.invalid_record_length");
    let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    let ev = st.feed(Direction::ToServer, &[0x16, 0x03, 0x01, 0x00, 0x01, 1], 0);
    assert!(ev.is_empty());
    let ev = st.feed(Direction::ToServer, &[0x99, 0x03, 0x01, 0x00, 0x01, 1], 0);
    assert_eq!(ev[0].keyword(), "tls.invalid_record_type");
    // SSLv2-framed client hello, then a broken SSLv2 header.
    let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    let ev = st.feed(
        Direction::ToServer,
        &[0x80, 0x2e, 0x01, 0x03, 0x01, 0, 0x15],
        0,
    );
    assert!(ev.is_empty());
    assert_eq!(
        st.as_tls().unwrap().tx().unwrap().client_version,
        tls::TLS_10
    );
    let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    let ev = st.feed(Direction::ToServer, &[0x80, 0x2e, 0x09, 0x03, 0x01], 0);
    assert_eq!(ev[0].keyword(), "tls.invalid_sslv2_header");
}

#[test]
fn handshake_cap_is_enforced() {
    let cfg = vigil_applayer::AppLayerConfig {
        tls_max_handshake: 1000,
        ..Default::default()
    };
    let mut st = AppLayerState::with_config(AppProto::Tls, Transport::Tcp, &cfg);
    // A 5,000-byte certificate message in 4 records.
    let mut msg = vec![11, 0, 0x13, 0x88];
    msg.extend(std::iter::repeat(0u8).take(5000));
    let mut wire = Vec::new();
    for chunk in msg.chunks(1500) {
        wire.extend_from_slice(&[0x16, 3, 3, (chunk.len() >> 8) as u8, chunk.len() as u8]);
        wire.extend_from_slice(chunk);
    }
    let ev = st.feed(Direction::ToClient, &wire, 0);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].keyword(), "tls.handshake_invalid_length");
}

/// The first application-data record ends the handshake for payload
/// inspection (not the ChangeCipherSpecs); 0-RTT data before the
/// ServerHello does not. Each complete record asks once for raw stream
/// inspection of its direction.
#[test]
fn application_data_ends_payload_inspection_and_records_trigger_raw() {
    let tls = |st: &AppLayerState| -> bool { st.as_tls().unwrap().payload_done() };
    // The client's records, one at a time: ClientHello, key exchange,
    // ChangeCipherSpec, Finished, then application data.
    let mut recs = Vec::new();
    let mut rest = CLIENT12;
    while rest.len() >= 5 {
        let n = 5 + usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        recs.push(&rest[..n]);
        rest = &rest[n..];
    }
    assert_eq!(
        recs[4][0], 23,
        "fixture: the fifth client record is application data"
    );
    let mut st = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    st.feed(Direction::ToServer, &recs[0][..10], 0);
    assert!(!st.take_raw_trigger(Direction::ToServer));
    st.feed(Direction::ToServer, &recs[0][10..], 0);
    assert!(st.take_raw_trigger(Direction::ToServer));
    assert!(!st.take_raw_trigger(Direction::ToServer));
    // Early data (before any ServerHello) does not end it.
    let mut early = AppLayerState::new(AppProto::Tls, Transport::Tcp);
    early.feed(Direction::ToServer, recs[0], 0);
    early.feed(Direction::ToServer, recs[4], 0);
    assert!(!tls(&early));
    st.feed(Direction::ToClient, SERVER12, 0);
    assert!(st.take_raw_trigger(Direction::ToClient));
    for r in &recs[1..4] {
        st.feed(Direction::ToServer, r, 0);
        assert!(!tls(&st), "handshake records keep payload inspection on");
    }
    st.feed(Direction::ToServer, recs[4], 0);
    assert!(tls(&st));
}
