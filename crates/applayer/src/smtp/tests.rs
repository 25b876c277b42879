use super::*;

const S: Direction = Direction::ToServer;
const C: Direction = Direction::ToClient;

/// A session: (direction, bytes) in order.
fn session(steps: &[(Direction, &[u8])]) -> (SmtpState, Vec<AppLayerEvent>) {
    let mut s = SmtpState::new(&AppLayerConfig::default());
    let mut ev = Vec::new();
    for (d, b) in steps {
        s.feed(*d, b, 1, &mut ev);
    }
    s.finish(S, 2, &mut ev);
    s.finish(C, 2, &mut ev);
    (s, ev)
}

/// The same session fed a byte at a time.
fn bytewise(steps: &[(Direction, &[u8])]) -> (SmtpState, Vec<AppLayerEvent>) {
    let mut s = SmtpState::new(&AppLayerConfig::default());
    let mut ev = Vec::new();
    for (d, b) in steps {
        for c in b.iter() {
            s.feed(*d, std::slice::from_ref(c), 1, &mut ev);
        }
    }
    s.finish(S, 2, &mut ev);
    s.finish(C, 2, &mut ev);
    (s, ev)
}

fn names(ev: &[AppLayerEvent]) -> Vec<&'static str> {
    ev.iter().map(|e| e.name()).collect()
}

const MAIL: &[u8] = b"From: Alice <a@example.com>\r\n\
To: b@example.net, c@example.org\r\n\
Subject: report\r\n\
Received: from x by y\r\n\
Received: from z\r\n\
\x20by w\r\n\
Content-Type: multipart/mixed; boundary=\"BB\"\r\n\
\r\n\
--BB\r\n\
Content-Type: text/plain\r\n\
\r\n\
see http://evil.example/a\r\n\
..dotted line\r\n\
--BB\r\n\
Content-Type: application/pdf; name=\"r.pdf\"\r\n\
Content-Transfer-Encoding: base64\r\n\
\r\n\
JVBERi0xLjQK\r\n\
--BB--\r\n\
.\r\n";

fn steps() -> Vec<(Direction, &'static [u8])> {
    vec![
        (C, &b"220 mx ESMTP\r\n"[..]),
        (S, b"EHLO client.example\r\n"),
        (C, b"250-mx\r\n250-PIPELINING\r\n250 CHUNKING\r\n"),
        (S, b"MAIL FROM:<a@example.com>\r\nRCPT TO:<b@example.net>\r\nRCPT TO:<c@example.org>\r\nDATA\r\n"),
        (C, b"250 ok\r\n250 ok\r\n250 ok\r\n354 go\r\n"),
        (S, MAIL),
        (C, b"250 queued\r\n"),
        (S, b"QUIT\r\n"),
        (C, b"221 bye\r\n"),
    ]
}

fn check_mail(s: &SmtpState, ev: &[AppLayerEvent]) {
    assert!(ev.is_empty(), "{:?}", names(ev));
    let txs: Vec<&SmtpTx> = s.transactions().collect();
    assert_eq!(txs.len(), 1);
    let t = txs[0];
    assert!(t.done);
    assert_eq!(t.buffers(BufferId::SmtpHelo), vec![&b"client.example"[..]]);
    assert_eq!(
        t.buffers(BufferId::SmtpMailFrom),
        vec![&b"<a@example.com>"[..]]
    );
    assert_eq!(
        t.buffers(BufferId::SmtpRcptTo),
        vec![&b"<b@example.net>"[..], b"<c@example.org>"]
    );
    assert_eq!(t.buffers(BufferId::EmailSubject), vec![&b"report"[..]]);
    assert_eq!(
        t.buffers(BufferId::EmailReceived),
        vec![&b"from x by y"[..], b"from z by w"]
    );
    assert_eq!(
        t.buffers(BufferId::FileData),
        vec![
            &b"see http://evil.example/a\r\n.dotted line"[..],
            b"%PDF-1.4\n"
        ]
    );
    assert_eq!(t.buffers(BufferId::FileName), vec![&b"r.pdf"[..]]);
    assert_eq!(
        t.buffers(BufferId::EmailUrl),
        vec![&b"http://evil.example/a"[..]]
    );
    let md5 = t.buffers(BufferId::EmailBodyMd5);
    assert!(md5.len() == 1 && md5[0].len() == 32, "{md5:?}");
    let e = t.email_eve().unwrap();
    assert_eq!(e["status"], "PARSE_DONE");
    assert_eq!(e["to"], json!(["b@example.net", "c@example.org"]));
    assert_eq!(e["attachment"], json!(["r.pdf"]));
    assert_eq!(
        t.eve(),
        json!({"helo": "client.example", "mail_from": "<a@example.com>",
               "rcpt_to": ["<b@example.net>", "<c@example.org>"]})
    );
}

#[test]
fn pipelined_mail_with_multipart() {
    let (s, ev) = session(&steps());
    check_mail(&s, &ev);
}

#[test]
fn byte_at_a_time_is_the_same() {
    let (s, ev) = bytewise(&steps());
    check_mail(&s, &ev);
}

#[test]
fn one_transaction_per_mail_and_helo_carried() {
    let (s, ev) = session(&[
        (C, b"220 hi\r\n"),
        (S, b"HELO a\r\n"),
        (C, b"250 ok\r\n"),
        (S, b"MAIL FROM:<x@y>\r\n"),
        (C, b"250 ok\r\n"),
        (S, b"DATA\r\n"),
        (C, b"354 go\r\n"),
        (S, b"Subject: one\r\n\r\nbody\r\n.\r\n"),
        (C, b"250 ok\r\n"),
        (S, b"RSET\r\n"),
        (C, b"250 ok\r\n"),
        (S, b"MAIL FROM:<z@y>\r\n"),
        (C, b"250 ok\r\n"),
        (S, b"RSET\r\n"),
        (C, b"250 ok\r\n"),
        (S, b"QUIT\r\n"),
        (C, b"221 bye\r\n"),
    ]);
    assert!(ev.is_empty(), "{:?}", names(&ev));
    let txs: Vec<&SmtpTx> = s.transactions().collect();
    assert_eq!(txs.len(), 2);
    assert_eq!(txs[1].helo.as_deref(), Some(&b"a"[..]));
    assert_eq!(txs[1].mail_from.as_deref(), Some(&b"<z@y>"[..]));
    assert!(txs[1].mime.is_none());
    assert!(txs.iter().all(|t| t.done));
}

#[test]
fn multi_line_replies_and_unmatched_ones() {
    let (_, ev) = session(&[
        (C, b"220-first\r\n220-second\r\n220 third\r\n"),
        (S, b"EHLO a\r\n"),
        (C, b"250-a\r\n250 b\r\n"),
        (C, b"250 extra\r\n"),
        (C, b"xyz\r\n"),
    ]);
    assert_eq!(
        names(&ev),
        vec!["UNABLE_TO_MATCH_REPLY_WITH_REQUEST", "INVALID_REPLY"]
    );
}

#[test]
fn bdat_chunks() {
    let (s, ev) = bytewise(&[
        (C, b"220 hi\r\n"),
        (S, b"EHLO a\r\n"),
        (C, b"250-a\r\n250 CHUNKING\r\n"),
        (S, b"MAIL FROM:<x@y>\r\n"),
        (C, b"250 ok\r\n"),
        (S, b"BDAT 19\r\nSubject: s\r\n\r\n.body"),
        (C, b"250 ok\r\n"),
        (S, b"BDAT 6 LAST\r\n\r\nmore"),
        (C, b"250 ok\r\n"),
        (S, b"QUIT\r\n"),
    ]);
    assert!(ev.is_empty(), "{:?}", names(&ev));
    let t = s.transactions().next().unwrap();
    assert!(t.done);
    // BDAT content is not dot-stuffed.
    assert_eq!(t.buffers(BufferId::FileData), vec![&b".body\r\nmore"[..]]);
    assert_eq!(s.transactions().count(), 1);
}

#[test]
fn starttls_stops_parsing() {
    let (s, ev) = session(&[
        (C, b"220 hi\r\n"),
        (S, b"EHLO a\r\n"),
        (C, b"250 STARTTLS\r\n"),
        (S, b"STARTTLS\r\n"),
        (C, b"220 go ahead\r\n"),
        (
            S,
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\nMAIL FROM:<x>\r\n",
        ),
    ]);
    assert!(ev.is_empty(), "{:?}", names(&ev));
    assert!(!s.wants_data(S));
    let t = s.transactions().next().unwrap();
    assert!(t.starttls && t.mail_from.is_none());
    let (s, ev) = session(&[
        (C, b"220 hi\r\n"),
        (S, b"STARTTLS\r\n"),
        (C, b"454 no\r\n"),
        (S, b"MAIL FROM:<x>\r\n"),
    ]);
    assert_eq!(names(&ev), vec!["TLS_REJECTED"]);
    assert!(s.wants_data(S));
    assert!(s.transactions().any(|t| t.mail_from.is_some()));
}

#[test]
fn rejected_data_and_missing_greeting() {
    let (s, ev) = session(&[
        (S, b"MAIL FROM:<x@y>\r\n"),
        (C, b"250 ok\r\n"),
        (S, b"DATA\r\n"),
        (C, b"554 no\r\n"),
        (S, b"RCPT TO:<q@r>\r\n"),
    ]);
    assert_eq!(
        names(&ev),
        vec!["NO_SERVER_WELCOME_MESSAGE", "DATA_COMMAND_REJECTED"]
    );
    // The line after the rejection is a command again.
    assert!(s
        .transactions()
        .any(|t| t.rcpt_to == vec![b"<q@r>".to_vec()]));
}

#[test]
fn oversized_lines_are_capped() {
    let long = [b"MAIL FROM:<".to_vec(), vec![b'a'; 2000], b">\r\n".to_vec()].concat();
    let reply = [b"250 ".to_vec(), vec![b'b'; 2000], b"\r\n".to_vec()].concat();
    let data = [vec![b'x'; 10_000], b"\r\n.\r\n".to_vec()].concat();
    let (s, ev) = session(&[
        (C, b"220 hi\r\n"),
        (S, &long),
        (C, &reply),
        (S, b"DATA\r\n"),
        (C, b"354 go\r\n"),
        (S, &data),
    ]);
    assert_eq!(
        names(&ev),
        vec![
            "MAX_COMMAND_LINE_LEN_EXCEEDED",
            "MAX_REPLY_LINE_LEN_EXCEEDED",
            "MIME_LONG_LINE"
        ]
    );
    let t = s.transactions().next().unwrap();
    assert_eq!(t.mail_from.as_ref().map(Vec::len), Some(MAX_LINE - 10));
    // The long body line is kept whole, in pieces, and the data ended.
    assert_eq!(t.buffers(BufferId::FileData)[0].len(), 10_000);
    assert!(t.done);
}

#[test]
fn gap_in_data_resyncs_on_a_command() {
    let mut s = SmtpState::new(&AppLayerConfig::default());
    let mut ev = Vec::new();
    s.feed(
        S,
        b"HELO a\r\nMAIL FROM:<x>\r\nDATA\r\nSubject: s\r\n\r\npart",
        1,
        &mut ev,
    );
    s.on_gap(S);
    s.feed(
        S,
        b"ial line\r\nmore data\r\n.\r\nMAIL FROM:<second>\r\n",
        1,
        &mut ev,
    );
    let txs: Vec<&SmtpTx> = s.transactions().collect();
    assert_eq!(txs.len(), 2);
    assert!(txs[0].truncated && txs[0].done);
    assert_eq!(txs[0].buffers(BufferId::FileData), vec![&b"part"[..]]);
    assert_eq!(txs[1].mail_from.as_deref(), Some(&b"<second>"[..]));
}

#[test]
fn garbage_never_panics_and_stays_capped() {
    let mut seed = 0x1234_5678u32;
    let mut s = SmtpState::new(&AppLayerConfig::default());
    let mut ev = Vec::new();
    for i in 0..3000 {
        let mut buf = Vec::new();
        for _ in 0..(i % 97) {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let pick = b"\r\n.-: =DATABDAT 3 LAST\r\nMAIL FROM:<a>\r\n--b\r\n354 220 ";
            buf.push(pick[(seed as usize) % pick.len()]);
        }
        let d = if i % 3 == 0 { C } else { S };
        s.feed(d, &buf, 1, &mut ev);
        if i % 500 == 0 {
            s.on_gap(d);
        }
    }
    s.finish(S, 2, &mut ev);
    assert!(s.transactions().count() <= AppLayerConfig::default().max_transactions);
    for t in s.transactions() {
        assert!(t.rcpt_to.len() <= MAX_RCPT);
        for id in BufferId::ALL {
            for b in t.buffers(*id) {
                assert!(b.len() <= mime::MAX_PART_DATA);
            }
        }
    }
}

#[test]
fn a_flood_of_bad_lines_raises_each_event_once() {
    let mut s = SmtpState::new(&AppLayerConfig::default());
    let mut ev = Vec::new();
    s.feed(C, &b"220 hi\r\nbad\r\n".repeat(1000), 1, &mut ev);
    assert_eq!(
        names(&ev),
        vec!["INVALID_REPLY", "UNABLE_TO_MATCH_REPLY_WITH_REQUEST"]
    );
}
