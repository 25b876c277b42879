//! HTTP/1.x: buffers as Suricata builds them, pipelining, chunked + gzip
//! bodies, and the same result for every way the bytes can be split.

use vigil_applayer::{AppLayerState, AppProto, BufferId, Direction, Transport};

const REQUESTS: &[u8] = b"GET /a/./b/../c%20d//e?x=%41 HTTP/1.1\r\n\
Host: WWW.Example.com:8080\r\n\
User-Agent: Mozilla/5.0 (X11)\r\n\
Cookie: session=1\r\n\
Accept: */*\r\n\
Accept-Encoding: gzip, deflate\r\n\
X-Fold: first\r\n\x20\x20second\r\n\
Accept: text/html\r\n\
\r\n\
POST /upload.php HTTP/1.1\r\n\
Host: example.com\r\n\
Content-Type: application/x-www-form-urlencoded\r\n\
Transfer-Encoding: chunked\r\n\
\r\n\
5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n";

/// `<html>hello, compressed world</html>` gzipped (mtime 0).
const GZ: &[u8] = &[
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xb3, 0xc9, 0x28, 0xc9, 0xcd, 0xb1,
    0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xd7, 0x51, 0x48, 0xce, 0xcf, 0x2d, 0x28, 0x4a, 0x2d, 0x2e, 0x4e,
    0x4d, 0x51, 0x28, 0xcf, 0x2f, 0xca, 0x49, 0xb1, 0xd1, 0x07, 0xcb, 0x02, 0x00, 0xa3, 0xad, 0x49,
    0xda, 0x24, 0x00, 0x00, 0x00,
];

fn responses() -> Vec<u8> {
    let mut r = b"HTTP/1.1 100 Continue\r\n\r\n\
HTTP/1.1 200 OK\r\n\
Server: nginx/1.18\r\n\
Content-Type: text/html; charset=utf-8\r\n\
Content-Encoding: gzip\r\n\
Transfer-Encoding: chunked\r\n\
Set-Cookie: a=b\r\n\
\r\n"
        .to_vec();
    // The gzip stream in two chunks.
    r.extend_from_slice(format!("{:x}\r\n", 20).as_bytes());
    r.extend_from_slice(&GZ[..20]);
    r.extend_from_slice(format!("\r\n{:X}\r\n", GZ.len() - 20).as_bytes());
    r.extend_from_slice(&GZ[20..]);
    r.extend_from_slice(b"\r\n0\r\n\r\n");
    r.extend_from_slice(
        b"HTTP/1.1 302 Found\r\nLocation: http://example.com/next\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
    );
    r
}

fn feed_split(state: &mut AppLayerState, dir: Direction, data: &[u8], split: usize) {
    let split = split.min(data.len());
    state.feed(dir, &data[..split], 0);
    state.feed(dir, &data[split..], 0);
}

fn buf(s: &AppLayerState, tx: u64, id: BufferId, dir: Direction) -> Option<String> {
    s.buffer(tx, id, dir)
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

fn check(s: &AppLayerState) {
    use BufferId::*;
    use Direction::*;
    let txs = s.transactions();
    assert_eq!(txs.len(), 2, "two pipelined transactions");
    assert!(txs
        .iter()
        .all(|t| t.progress.request_complete && t.progress.response_complete));

    assert_eq!(buf(s, 0, HttpMethod, ToServer).unwrap(), "GET");
    assert_eq!(buf(s, 0, HttpUri, ToServer).unwrap(), "/a/c d/e?x=A");
    assert_eq!(
        buf(s, 0, HttpUriRaw, ToServer).unwrap(),
        "/a/./b/../c%20d//e?x=%41"
    );
    assert_eq!(
        buf(s, 0, HttpRequestLine, ToServer).unwrap(),
        "GET /a/./b/../c%20d//e?x=%41 HTTP/1.1"
    );
    assert_eq!(buf(s, 0, HttpProtocol, ToServer).unwrap(), "HTTP/1.1");
    assert_eq!(buf(s, 0, HttpHost, ToServer).unwrap(), "www.example.com");
    assert_eq!(
        buf(s, 0, HttpHostRaw, ToServer).unwrap(),
        "WWW.Example.com:8080"
    );
    assert_eq!(
        buf(s, 0, HttpUserAgent, ToServer).unwrap(),
        "Mozilla/5.0 (X11)"
    );
    assert_eq!(buf(s, 0, HttpCookie, ToServer).unwrap(), "session=1");
    // Repeated headers are merged, folded lines joined.
    assert_eq!(buf(s, 0, HttpAccept, ToServer).unwrap(), "*/*, text/html");
    assert_eq!(buf(s, 0, HttpAcceptEnc, ToServer).unwrap(), "gzip, deflate");
    let header = buf(s, 0, HttpHeader, ToServer).unwrap();
    assert_eq!(
        header,
        "Host: WWW.Example.com:8080\r\nUser-Agent: Mozilla/5.0 (X11)\r\n\
Accept: */*, text/html\r\nAccept-Encoding: gzip, deflate\r\nX-Fold: first second\r\n"
    );
    assert!(!header.contains("Cookie"));
    assert_eq!(
        buf(s, 0, HttpHeaderNames, ToServer).unwrap(),
        "\r\nHost\r\nUser-Agent\r\nCookie\r\nAccept\r\nAccept-Encoding\r\nX-Fold\r\n\r\n"
    );
    let raw = buf(s, 0, HttpHeaderRaw, ToServer).unwrap();
    assert!(raw.starts_with("Host: WWW.Example.com:8080\r\n"));
    assert!(raw.ends_with("Accept: text/html\r\n\r\n"));
    assert!(raw.contains("X-Fold: first\r\n  second\r\n"));
    let start = buf(s, 0, HttpStart, ToServer).unwrap();
    assert!(start.starts_with("GET /a/./b/../c%20d//e?x=%41 HTTP/1.1\r\nHost: "));
    assert!(start.contains("Cookie: session=1\r\n"));
    assert!(start.ends_with("\r\n\r\n"));
    let lines: Vec<&[u8]> = s.buffers(0, HttpRequestHeader, ToServer).collect();
    assert_eq!(lines.len(), 6);
    assert_eq!(lines[2], b"Cookie: session=1");

    // Response 1: 100 Continue skipped, chunked + gzip decoded.
    assert_eq!(buf(s, 0, HttpStatCode, ToClient).unwrap(), "200");
    assert_eq!(buf(s, 0, HttpStatMsg, ToClient).unwrap(), "OK");
    assert_eq!(
        buf(s, 0, HttpResponseLine, ToClient).unwrap(),
        "HTTP/1.1 200 OK"
    );
    assert_eq!(buf(s, 0, HttpServer, ToClient).unwrap(), "nginx/1.18");
    assert_eq!(
        buf(s, 0, HttpContentType, ToClient).unwrap(),
        "text/html; charset=utf-8"
    );
    assert_eq!(buf(s, 0, HttpCookie, ToClient).unwrap(), "a=b");
    assert!(!buf(s, 0, HttpHeader, ToClient)
        .unwrap()
        .contains("Set-Cookie"));
    assert_eq!(
        buf(s, 0, HttpResponseBody, ToClient).unwrap(),
        "<html>hello, compressed world</html>"
    );
    assert_eq!(
        buf(s, 0, FileData, ToClient).unwrap(),
        "<html>hello, compressed world</html>"
    );

    // Transaction 2: chunked request body, content-length response.
    assert_eq!(buf(s, 1, HttpMethod, ToServer).unwrap(), "POST");
    assert_eq!(buf(s, 1, HttpRequestBody, ToServer).unwrap(), "hello world");
    assert_eq!(
        buf(s, 1, HttpContentType, ToServer).unwrap(),
        "application/x-www-form-urlencoded"
    );
    assert_eq!(buf(s, 1, HttpStatCode, ToClient).unwrap(), "302");
    assert_eq!(
        buf(s, 1, HttpLocation, ToClient).unwrap(),
        "http://example.com/next"
    );
    assert_eq!(buf(s, 1, HttpContentLen, ToClient).unwrap(), "3");
    assert_eq!(buf(s, 1, HttpConnection, ToClient).unwrap(), "close");
    assert_eq!(buf(s, 1, HttpResponseBody, ToClient).unwrap(), "abc");

    let eve = s.eve(0).unwrap();
    assert_eq!(eve["hostname"], "www.example.com");
    assert_eq!(eve["http_port"], 8080);
    assert_eq!(eve["url"], "/a/./b/../c%20d//e?x=%41");
    assert_eq!(eve["http_user_agent"], "Mozilla/5.0 (X11)");
    assert_eq!(eve["http_content_type"], "text/html");
    assert_eq!(eve["http_method"], "GET");
    assert_eq!(eve["protocol"], "HTTP/1.1");
    assert_eq!(eve["status"], 200);
    let eve1 = s.eve(1).unwrap();
    assert_eq!(eve1["status"], 302);
    assert_eq!(eve1["redirect"], "http://example.com/next");
    assert_eq!(eve1["length"], 3);
}

#[test]
fn whole_messages() {
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    let ev = s.feed(Direction::ToServer, REQUESTS, 1);
    assert!(
        ev.iter().all(|e| e.name() == "REQUEST_HEADER_REPETITION"),
        "{ev:?}"
    );
    let ev = s.feed(Direction::ToClient, &responses(), 2);
    assert!(ev.is_empty(), "{ev:?}");
    check(&s);
}

#[test]
fn every_split_point() {
    let resp = responses();
    for i in 0..=REQUESTS.len() {
        let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
        feed_split(&mut s, Direction::ToServer, REQUESTS, i);
        s.feed(Direction::ToClient, &resp, 0);
        check(&s);
    }
    for i in 0..=resp.len() {
        let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
        s.feed(Direction::ToServer, REQUESTS, 0);
        feed_split(&mut s, Direction::ToClient, &resp, i);
        check(&s);
    }
}

#[test]
fn byte_at_a_time() {
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    for b in REQUESTS.chunks(1) {
        s.feed(Direction::ToServer, b, 0);
    }
    for b in responses().chunks(1) {
        s.feed(Direction::ToClient, b, 0);
    }
    check(&s);
}

#[test]
fn progress_and_inspected_marker() {
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    s.feed(Direction::ToServer, b"GET / HTTP/1.1\r\nHost: a\r\n", 0);
    // Line parsed, headers not yet: the URI is there, the headers are not.
    assert_eq!(
        s.buffer(0, BufferId::HttpUri, Direction::ToServer),
        Some(&b"/"[..])
    );
    assert_eq!(s.buffer(0, BufferId::HttpHeader, Direction::ToServer), None);
    s.feed(Direction::ToServer, b"\r\n", 0);
    let t = s.transactions()[0];
    assert!(t.progress.request_complete && !t.progress.response_complete);
    s.set_inspected(0, Direction::ToServer);
    assert!(s.transactions()[0].inspected[0]);
    s.feed(
        Direction::ToClient,
        b"HTTP/1.0 200 OK\r\n\r\nbody until close",
        0,
    );
    assert!(!s.transactions()[0].progress.response_complete);
    s.finish(Direction::ToClient);
    assert!(s.transactions()[0].progress.response_complete);
    assert_eq!(
        s.buffer(0, BufferId::HttpResponseBody, Direction::ToClient),
        Some(&b"body until close"[..])
    );
    s.set_inspected(0, Direction::ToClient);
    s.set_logged(0);
    assert_eq!(s.prune(), 1);
    assert!(s.transactions().is_empty());
}

#[test]
fn uri_with_spaces_and_absolute_form() {
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    s.feed(
        Direction::ToServer,
        b"GET /uri afterspace HTTP/1.1\r\nHost: x\r\n\r\nGET http://Other.Example:81/p/../q HTTP/1.0\r\n\r\n",
        0,
    );
    assert_eq!(
        s.buffer(0, BufferId::HttpUri, Direction::ToServer),
        Some(&b"/uri afterspace"[..])
    );
    assert_eq!(
        s.buffer(1, BufferId::HttpUri, Direction::ToServer),
        Some(&b"/q"[..])
    );
    assert_eq!(
        s.buffer(1, BufferId::HttpHost, Direction::ToServer),
        Some(&b"other.example"[..])
    );
}

#[test]
fn limits_raise_events() {
    let cfg = vigil_applayer::AppLayerConfig {
        http_max_line: 64,
        http_request_body_limit: 4,
        ..Default::default()
    };
    let mut s = AppLayerState::with_config(AppProto::Http, Transport::Tcp, &cfg);
    let mut req = b"GET /".to_vec();
    req.extend(std::iter::repeat(b'a').take(1000));
    req.extend_from_slice(
        b" HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789",
    );
    let ev = s.feed(Direction::ToServer, &req, 0);
    let names: Vec<String> = ev.iter().map(|e| e.keyword()).collect();
    assert!(
        names.contains(&"http.request_field_too_long".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"http.request_body_limit_reached".to_string()),
        "{names:?}"
    );
    assert_eq!(s.transactions().len(), 2);
    assert_eq!(
        s.buffer(1, BufferId::HttpRequestBody, Direction::ToServer),
        Some(&b"0123"[..])
    );
}

#[test]
fn duplicate_content_length_and_unmatched_response() {
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    let ev = s.feed(
        Direction::ToServer,
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
        0,
    );
    assert!(ev
        .iter()
        .any(|e| e.keyword() == "http.duplicate_content_length_field_in_request"));
    let ev = s.feed(
        Direction::ToClient,
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        0,
    );
    assert!(ev
        .iter()
        .any(|e| e.keyword() == "http.unable_to_match_response_to_request"));
}

#[test]
fn gap_resyncs_on_next_request() {
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    s.feed(
        Direction::ToServer,
        b"POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc",
        0,
    );
    s.on_gap(Direction::ToServer, None);
    s.feed(Direction::ToServer, b"tail of the lost body", 0);
    s.feed(
        Direction::ToServer,
        b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n",
        0,
    );
    let txs = s.transactions();
    assert_eq!(txs.len(), 2);
    assert_eq!(
        s.buffer(1, BufferId::HttpUri, Direction::ToServer),
        Some(&b"/next"[..])
    );
}

/// A gap inside a body of known extent is consumed as unseen body bytes
/// (libhtp with gap-accepting parsers): the body keeps what came on both
/// sides of the hole and the next message parses.
#[test]
fn gap_inside_a_body_is_skipped_and_parsing_goes_on() {
    use vigil_applayer::{AppLayerEvent, HttpEvent};
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    s.feed(
        Direction::ToServer,
        b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
        0,
    );
    s.feed(
        Direction::ToClient,
        b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nbefore",
        0,
    );
    let ev = s.on_gap(Direction::ToClient, Some(8));
    assert!(!ev.contains(&AppLayerEvent::Http(HttpEvent::StreamGap, Some(0))));
    s.feed(Direction::ToClient, b"after!", 0);
    // The body ended exactly: the next response is parsed.
    s.feed(
        Direction::ToServer,
        b"GET /b HTTP/1.1\r\nHost: h\r\n\r\n",
        0,
    );
    s.feed(
        Direction::ToClient,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123",
        0,
    );
    s.on_gap(Direction::ToClient, Some(4));
    s.feed(Direction::ToClient, b"89\r\n0\r\n\r\n", 0);
    assert_eq!(
        s.buffer(0, BufferId::HttpResponseBody, Direction::ToClient),
        Some(&b"beforeafter!"[..])
    );
    assert_eq!(
        s.buffer(1, BufferId::HttpResponseBody, Direction::ToClient),
        Some(&b"012389"[..])
    );
    assert_eq!(s.transactions().len(), 2);
    assert!(s
        .transactions()
        .iter()
        .all(|t| t.progress.request_complete && t.progress.response_complete));
}

/// A gap that does not fit in the body (or falls in a header or chunk
/// line) closes the message and the parser resynchronises on the next one.
#[test]
fn gap_past_the_body_end_resyncs() {
    use vigil_applayer::{AppLayerEvent, HttpEvent};
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    s.feed(
        Direction::ToServer,
        b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc",
        0,
    );
    let ev = s.on_gap(Direction::ToServer, Some(50));
    assert!(ev.contains(&AppLayerEvent::Http(HttpEvent::StreamGap, Some(0))));
    s.feed(Direction::ToServer, b"junk after the hole", 0);
    s.feed(
        Direction::ToServer,
        b"GET /n HTTP/1.1\r\nHost: h\r\n\r\n",
        0,
    );
    s.feed(Direction::ToServer, b"GET /m HTTP/1.1\r\n", 0);
    // In a header line: resync too.
    let ev = s.on_gap(Direction::ToServer, Some(3));
    assert!(ev.contains(&AppLayerEvent::Http(HttpEvent::StreamGap, Some(2))));
    assert_eq!(
        s.buffer(1, BufferId::HttpUri, Direction::ToServer),
        Some(&b"/n"[..])
    );
    assert_eq!(
        s.buffer(0, BufferId::HttpRequestBody, Direction::ToServer),
        Some(&b"abc"[..])
    );
}

#[test]
fn a_line_after_a_bodiless_request_is_its_unexpected_body() {
    use vigil_applayer::{
        AppLayerEvent, AppLayerState, AppProto, BufferId, Direction, HttpEvent, Transport,
    };
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    let ev = s.feed(
        Direction::ToServer,
        b"POST /login HTTP/1.1\r\nHost: a\r\n\r\nlogin=foo&password=bar\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n",
        1,
    );
    assert!(
        ev.contains(&AppLayerEvent::Http(
            HttpEvent::RequestBodyUnexpected,
            Some(0)
        )),
        "{ev:?}"
    );
    let txs = s.transactions();
    assert_eq!(txs.len(), 2, "the body line opened no transaction");
    assert_eq!(
        s.buffer(0, BufferId::HttpRequestBody, Direction::ToServer),
        Some(&b"login=foo&password=bar"[..])
    );
    assert_eq!(
        s.buffer(1, BufferId::HttpUri, Direction::ToServer),
        Some(&b"/next"[..])
    );
}

#[test]
fn an_authorization_scheme_libhtp_does_not_know_is_an_event() {
    use vigil_applayer::{AppLayerEvent, AppLayerState, AppProto, Direction, HttpEvent, Transport};
    let unrecognized = |ev: &[AppLayerEvent], tx: u64| {
        ev.contains(&AppLayerEvent::Http(
            HttpEvent::RequestAuthUnrecognized,
            Some(tx),
        ))
    };
    let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
    let ev = s.feed(
        Direction::ToServer,
        b"GET /a HTTP/1.1\r\nHost: a\r\nAuthorization: Basic dTpw\r\n\r\n\
          GET /b HTTP/1.1\r\nHost: a\r\nAuthorization: DIGEST username=\"u\"\r\n\r\n\
          GET /c HTTP/1.1\r\nHost: a\r\nAuthorization: bearer xyz\r\n\r\n\
          GET /d HTTP/1.1\r\nHost: a\r\nAuthorization: NTLM TlRMTVNTUAAB\r\n\r\n\
          GET /e HTTP/1.1\r\nHost: a\r\n\r\n",
        1,
    );
    assert!(!(0..3).any(|t| unrecognized(&ev, t)), "{ev:?}");
    assert!(unrecognized(&ev, 3), "{ev:?}");
    assert!(!unrecognized(&ev, 4), "no Authorization header: {ev:?}");
}
