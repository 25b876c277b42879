//! FTP rules through the real rule parser, compiler and transaction
//! verifier, over transactions the FTP parser builds from raw lines:
//! sticky buffers (multi-buffers match on any element), the directions
//! Suricata registers them in, `ftp.dynamic_port`, `ftp.mode`,
//! `ftp.reply_received`, `ftpbounce` and `app-layer-event:ftp.*`.

use std::net::Ipv4Addr;

use vigil_applayer::{AppLayerState, AppProto, Direction as AppDir, Transport, TxId};
use vigil_craft::{PacketBuilder, ACK, PSH};
use vigil_detect::{
    AppProtoState, DetectEngine, DetectScratch, FlowDetectState, FlowView, Hit, PacketInput,
    TxDetectState, TxInput,
};
use vigil_rules::{parse_rule, ClassificationConfig, Origin, Vars};
use vigil_wire::{decode, linktype};

const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 21);

fn parse(rules: &[&str]) -> Vec<vigil_rules::Rule> {
    let vars = Vars::default();
    rules
        .iter()
        .map(|r| parse_rule(r, &vars, Origin::default()).unwrap_or_else(|e| panic!("{r}: {e}")))
        .collect()
}

fn engine(rules: &[&str]) -> DetectEngine {
    let (e, report) = DetectEngine::build(&parse(rules), &ClassificationConfig::default());
    assert!(report.skipped.is_empty(), "skipped: {:?}", report.skipped);
    e
}

/// The sids that alert on one direction of a transaction, on an empty
/// packet of that direction.
fn inspect(e: &DetectEngine, app: &AppLayerState, tx: TxId, dir: AppDir) -> Vec<u32> {
    let b = PacketBuilder::new();
    let frame = match dir {
        AppDir::ToServer => b.ipv4_tcp(CLIENT, 40000, SERVER, 21, 1, 1, PSH | ACK, b""),
        AppDir::ToClient => b.ipv4_tcp(SERVER, 21, CLIENT, 40000, 1, 1, PSH | ACK, b""),
    };
    let p = decode(linktype::ETHERNET, &frame);
    let f = FlowView {
        to_server: dir == AppDir::ToServer,
        established: true,
        app_proto: AppProtoState::Detected(AppProto::Ftp),
        ..FlowView::default()
    };
    let mut hits: Vec<Hit> = Vec::new();
    e.inspect_tx(
        PacketInput::new(&p, Some(f)),
        TxInput { app, tx, dir },
        &mut TxDetectState::default(),
        Some(&mut FlowDetectState::default()),
        &mut DetectScratch::default(),
        &mut hits,
    );
    let mut sids: Vec<u32> = hits.iter().map(|h| e.rules[h.rule as usize].sid).collect();
    sids.sort();
    sids
}

/// A control session: each command with its reply lines.
fn session(exchanges: &[(&[u8], &[u8])]) -> AppLayerState {
    let mut s = AppLayerState::new(AppProto::Ftp, Transport::Tcp);
    for (i, (cmd, reply)) in exchanges.iter().enumerate() {
        s.feed(AppDir::ToServer, cmd, i as u64);
        s.feed(AppDir::ToClient, reply, i as u64);
    }
    s
}

#[test]
fn buffers_and_their_directions() {
    let e = engine(&[
        "alert ftp any any -> any any (msg:\"cmd\"; ftp.command; content:\"RETR\"; ftp.command_data; content:\"a.txt\"; sid:1;)",
        "alert ftp any any -> any any (msg:\"150 any element\"; ftp.completion_code; content:\"150\"; sid:2;)",
        "alert ftp any any -> any any (msg:\"226 any element\"; ftp.completion_code; content:\"226\"; ftp.reply; content:\"Transfer\"; sid:3;)",
        "alert ftp any any -> any any (msg:\"code is 3 bytes\"; ftp.completion_code; content:\"150 \"; sid:4;)",
    ]);
    let app = session(&[(
        b"RETR a.txt\r\n",
        b"150 Opening data connection.\r\n226 Transfer complete.\r\n",
    )]);
    assert_eq!(inspect(&e, &app, 0, AppDir::ToServer), vec![1]);
    assert_eq!(inspect(&e, &app, 0, AppDir::ToClient), vec![2, 3]);
}

#[test]
fn dynamic_port_mode_and_reply_received() {
    let e = engine(&[
        "alert ftp any any -> any any (msg:\"port range\"; ftp.dynamic_port:59925-59927; sid:1;)",
        "alert ftp any any -> any any (msg:\"active\"; ftp.mode:active; sid:2;)",
        "alert ftp any any -> any any (msg:\"passive\"; ftp.mode:passive; sid:3;)",
        "alert ftp any any -> any any (msg:\"replied\"; ftp.reply_received:on; sid:4;)",
        "alert ftp any any -> any any (msg:\"waiting\"; ftp.reply_received:no; sid:5;)",
    ]);
    let app = session(&[
        (
            b"PORT 192,168,0,13,234,22\r\n",
            b"200 PORT command successful.\r\n",
        ),
        (
            b"PASV\r\n",
            b"227 Entering Passive Mode (1,2,3,4,234,22).\r\n",
        ),
        (b"SYST\r\n", b""),
    ]);
    // ftp.dynamic_port and ftp.mode both ways; reply_received to the
    // client only.
    assert_eq!(inspect(&e, &app, 0, AppDir::ToServer), vec![1, 2]);
    assert_eq!(inspect(&e, &app, 0, AppDir::ToClient), vec![1, 2, 4]);
    assert_eq!(inspect(&e, &app, 1, AppDir::ToClient), vec![1, 3, 4]);
    // No port: no mode; no reply yet.
    assert_eq!(inspect(&e, &app, 2, AppDir::ToServer), Vec::<u32>::new());
    assert_eq!(inspect(&e, &app, 2, AppDir::ToClient), vec![5]);
    // A greeting has no command: reply_received does not apply.
    let greeting = session(&[(b"", b"220 ready\r\n")]);
    assert_eq!(
        inspect(&e, &greeting, 0, AppDir::ToClient),
        Vec::<u32>::new()
    );
}

#[test]
fn ftpbounce_compares_the_port_address_with_the_client() {
    // The ET Open form: a tcp rule made an FTP one by ftpbounce.
    let e = engine(&[
        "alert tcp any any -> any 21 (msg:\"bounce\"; flow:to_server,established; ftpbounce; sid:1;)",
    ]);
    let app = session(&[
        (b"PORT 10,0,0,1,4,1\r\n", b"200 ok\r\n"),
        (b"PORT 192,168,7,7,0,80\r\n", b"200 ok\r\n"),
        (b"EPRT |1|192.168.7.7|80|\r\n", b"200 ok\r\n"),
    ]);
    assert_eq!(inspect(&e, &app, 0, AppDir::ToServer), Vec::<u32>::new());
    assert_eq!(inspect(&e, &app, 1, AppDir::ToServer), vec![1]);
    // Suricata's ftpbounce looks at PORT only.
    assert_eq!(inspect(&e, &app, 2, AppDir::ToServer), Vec::<u32>::new());
    assert_eq!(inspect(&e, &app, 1, AppDir::ToClient), Vec::<u32>::new());
}

#[test]
fn app_layer_events_and_bad_values() {
    let e = engine(&[
        "alert ftp any any -> any any (msg:\"long\"; app-layer-event:ftp.request_command_too_long; sid:1;)",
    ]);
    let mut long = b"STOR ".to_vec();
    long.resize(10_000, b'a');
    long.extend_from_slice(b"\r\n");
    let app = session(&[(&long, b"553 no\r\n"), (b"NOOP\r\n", b"200 ok\r\n")]);
    assert_eq!(inspect(&e, &app, 0, AppDir::ToServer), vec![1]);
    assert_eq!(inspect(&e, &app, 1, AppDir::ToServer), Vec::<u32>::new());
    for bad in [
        "alert ftp any any -> any any (msg:\"x\"; ftp.mode:sideways; sid:2;)",
        "alert ftp any any -> any any (msg:\"x\"; ftp.reply_received:maybe; sid:3;)",
        "alert ftp any any -> any any (msg:\"x\"; ftp.dynamic_port:70000; sid:4;)",
        "alert ftp any any -> any any (msg:\"x\"; app-layer-event:ftp.no_such_event; sid:5;)",
    ] {
        let (e, report) = DetectEngine::build(&parse(&[bad]), &ClassificationConfig::default());
        assert!(e.rules.is_empty(), "{bad} loaded");
        assert_eq!(report.skipped.len(), 1, "{bad}");
    }
}
