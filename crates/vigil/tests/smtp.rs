//! SMTP end to end: a crafted capture (greeting, EHLO with a multi-line
//! reply, pipelined MAIL/RCPT/DATA, a multipart mail with a quoted-
//! printable text part and a base64 attachment, dot-stuffed lines, small
//! segments, then a second mail sent with BDAT) through the `vigil`
//! binary to alerts and EVE `smtp` records with their `email` object.

mod common;

use std::net::SocketAddr;

use serde_json::json;
use vigil_craft::{TcpSession, TimedFrame};

/// `file.data` of the attachment: "PK\x03\x04 evil payload" in base64,
/// split over two lines.
const MAIL: &[u8] = b"From: Mallory <m@evil.example>\r\n\
To: victim@corp.example, boss@corp.example\r\n\
Cc: audit@corp.example\r\n\
Subject: Invoice 42\r\n\
Date: Tue, 1 Oct 2024 10:00:00 +0000\r\n\
Message-ID: <42@evil.example>\r\n\
X-Mailer: CraftMail 1.0\r\n\
Received: from relay1 by mx\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=\"==b1==\"\r\n\
\r\n\
--==b1==\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
Content-Transfer-Encoding: quoted-printable\r\n\
\r\n\
Please pay at https://pay.evil.example/inv?id=3D42 to=\r\n\
day.\r\n\
..hidden dot line\r\n\
--==b1==\r\n\
Content-Type: application/zip\r\n\
Content-Disposition: attachment; filename=\"invoice.zip\"\r\n\
Content-Transfer-Encoding: base64\r\n\
\r\n\
UEsDBCBldmls\r\n\
IHBheWxvYWQ=\r\n\
--==b1==--\r\n\
.\r\n";

fn capture() -> Vec<TimedFrame> {
    let mut t = TcpSession::new(
        "10.4.0.1:40000".parse::<SocketAddr>().unwrap(),
        "10.4.0.2:25".parse::<SocketAddr>().unwrap(),
    )
    .start_at((1_700_000_000, 0))
    .with_mss(61);
    t.handshake()
        .server_send(b"220 mx.corp.example ESMTP\r\n")
        .client_send(b"EHLO attacker.example\r\n")
        .server_send(b"250-mx.corp.example\r\n250-PIPELINING\r\n250-CHUNKING\r\n250 8BITMIME\r\n")
        .client_send(
            b"MAIL FROM:<m@evil.example>\r\nRCPT TO:<victim@corp.example>\r\nRCPT TO:<boss@corp.example>\r\nDATA\r\n",
        )
        .server_send(b"250 ok\r\n250 ok\r\n250 ok\r\n354 go ahead\r\n")
        .client_send(MAIL)
        .server_send(b"250 queued as 1\r\n")
        .client_send(b"MAIL FROM:<second@evil.example>\r\nRCPT TO:<x@corp.example>\r\n")
        .server_send(b"250 ok\r\n250 ok\r\n")
        .client_send(b"BDAT 27 LAST\r\nSubject: chunked\r\n\r\nbdat!\r\n")
        .server_send(b"250 ok\r\n")
        .client_send(b"QUIT\r\n")
        .server_send(b"221 bye\r\n")
        .close();
    t.into_frames()
}

#[test]
fn smtp_to_alerts_and_records() {
    let common::Run { events, dir, .. } = common::run(
        "smtp",
        &capture(),
        "alert smtp any any -> any any (msg:\"attachment\"; flow:to_server; file.data; content:\"PK|03 04| evil payload\"; sid:1;)\n\
         alert smtp any any -> any any (msg:\"qp text\"; file_data; content:\"id=42 today.|0d 0a|.hidden\"; sid:2;)\n\
         alert smtp any any -> any any (msg:\"helo\"; smtp.helo; content:\"attacker\"; smtp.mail_from; content:\"evil\"; sid:3;)\n\
         alert smtp any any -> any any (msg:\"rcpt\"; smtp.rcpt_to; content:\"boss@\"; sid:4;)\n\
         alert smtp any any -> any any (msg:\"subject\"; email.subject; content:\"Invoice\"; email.x_mailer; content:\"Craft\"; sid:5;)\n\
         alert smtp any any -> any any (msg:\"url\"; email.url; content:\"pay.evil.example\"; sid:6;)\n\
         alert smtp any any -> any any (msg:\"bdat\"; file.data; content:\"bdat!\"; email.subject; content:\"chunked\"; sid:7;)\n\
         alert smtp any any -> any any (msg:\"never: base64 text\"; file.data; content:\"UEsDBCBldmls\"; sid:8;)\n\
         alert smtp any any -> any any (msg:\"never: stuffed dot\"; file.data; content:\"..hidden\"; sid:9;)\n\
         alert smtp any any -> any any (msg:\"never: event\"; app-layer-event:smtp.invalid_reply; sid:10;)\n\
         alert smtp any any -> any any (msg:\"never: rcpt\"; smtp.rcpt_to; content:\"m@evil\"; sid:11;)\n",
        Some(&["alert", "smtp"]),
    );

    let sids = common::alert_sids(&events);
    // sid 3 matches both mails (the HELO is the session's).
    assert_eq!(sids, vec![1, 2, 3, 3, 4, 5, 6, 7], "{events:?}");
    let att = events
        .iter()
        .find(|e| e["alert"]["signature_id"] == 1)
        .unwrap();
    assert_eq!(att["app_proto"], "smtp");
    assert_eq!(att["tx_id"], 0);
    assert_eq!(att["smtp"]["helo"], "attacker.example");
    assert_eq!(att["email"]["attachment"], json!(["invoice.zip"]));

    let recs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event_type"] == "smtp")
        .collect();
    assert_eq!(recs.len(), 2, "{recs:?}");
    let r = &recs[0];
    assert_eq!(r["tx_id"], 0);
    assert_eq!(
        r["smtp"],
        json!({"helo": "attacker.example", "mail_from": "<m@evil.example>",
               "rcpt_to": ["<victim@corp.example>", "<boss@corp.example>"]})
    );
    let e = &r["email"];
    assert_eq!(e["status"], "PARSE_DONE");
    assert_eq!(e["from"], "Mallory <m@evil.example>");
    assert_eq!(e["to"], json!(["victim@corp.example", "boss@corp.example"]));
    assert_eq!(e["cc"], json!(["audit@corp.example"]));
    assert_eq!(e["subject"], "Invoice 42");
    assert_eq!(e["message_id"], "<42@evil.example>");
    assert_eq!(e["x_mailer"], "CraftMail 1.0");
    assert_eq!(e["received"], json!(["from relay1 by mx"]));
    assert_eq!(e["url"], json!(["https://pay.evil.example/inv?id=42"]));
    let r = &recs[1];
    assert_eq!(r["tx_id"], 1);
    assert_eq!(r["smtp"]["helo"], "attacker.example");
    assert_eq!(r["smtp"]["mail_from"], "<second@evil.example>");
    assert_eq!(r["email"]["subject"], "chunked");
    assert!(r["email"].get("attachment").is_none());

    // The records are within Suricata's EVE schema.
    let check =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/eve_schema_check.py");
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/peers/suricata/eve.schema.json");
    if schema.exists() {
        let o = std::process::Command::new("python3")
            .arg(&check)
            .arg(dir.join("out/eve.json"))
            .arg("--schema")
            .arg(&schema)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
