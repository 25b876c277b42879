//! File tracking end to end: a crafted HTTP session with a PDF download
//! and a `multipart/form-data` upload, through the real `vigil` binary:
//! the file keywords (`filemagic`, `filemd5`, `filesize`, `filename`,
//! `filestore`), the `fileinfo` records and Suricata's file-store v2.

use std::net::SocketAddr;

use vigil_craft::{TcpSession, TimedFrame};

mod common;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

const PDF: &[u8] = b"%PDF-1.6\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n";
const EICAR: &[u8] = b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";

fn session() -> Vec<TimedFrame> {
    let mut s =
        TcpSession::new(addr("10.0.0.1:40000"), addr("10.0.0.2:80")).start_at((1_700_000_000, 0));
    let mut resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/pdf\r\nContent-Length: {}\r\n\r\n",
        PDF.len()
    )
    .into_bytes();
    resp.extend_from_slice(PDF);
    let mut body = b"--XYZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n\
--XYZ\r\nContent-Disposition: form-data; name=\"up\"; filename=\"eicar.com\"\r\n\
Content-Type: application/octet-stream\r\n\r\n"
        .to_vec();
    body.extend_from_slice(EICAR);
    body.extend_from_slice(b"\r\n--XYZ--\r\n");
    let mut post = format!(
        "POST /upload HTTP/1.1\r\nHost: files.example\r\nContent-Type: multipart/form-data; boundary=XYZ\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    post.extend_from_slice(&body);
    s.handshake()
        .client_send(b"GET /docs/report.pdf HTTP/1.1\r\nHost: files.example\r\n\r\n")
        .server_send(&resp)
        .client_send(&post)
        .server_send(b"HTTP/1.1 204 No Content\r\n\r\n")
        .close();
    s.take_frames()
}

fn md5_hex(data: &[u8]) -> String {
    vigil_applayer::files::HashKind::Md5.digest(data)
}

#[test]
fn fileinfo_keywords_and_filestore() {
    let list = std::env::temp_dir().join(format!("vigil-files-md5-{}.txt", std::process::id()));
    std::fs::write(
        &list,
        format!("# bad files\n{}  eicar.com\n", md5_hex(EICAR)),
    )
    .unwrap();
    let rules = format!(
        "alert http any any -> any any (msg:\"pdf\"; filemagic:\"PDF document\"; filestore; sid:1;)\n\
alert http any any -> any any (msg:\"eicar md5\"; filemd5:{list}; sid:2;)\n\
alert http any any -> any any (msg:\"not in list\"; filemd5:!{list}; sid:3;)\n\
alert http any any -> any any (msg:\"small file\"; filesize:<100; sid:4;)\n\
alert http any any -> any any (msg:\"upload name\"; flow:to_server; filename:\"eicar.com\"; fileext:\"com\"; sid:5;)\n\
alert http any any -> any any (msg:\"upload data\"; flow:to_server; file.data; content:\"EICAR-STANDARD\"; sid:6;)\n\
alert http any any -> any any (msg:\"no match\"; filesize:>1000000; sid:7;)\n\
alert http any any -> any any (msg:\"not a zip\"; filemagic:!\"zip\"; sid:8;)\n",
        list = list.display()
    );
    let yaml = "outputs:\n  - eve-log:\n      enabled: yes\n      filename: eve.json\n      types:\n        - alert\n        - http\n        - files:\n            force-hash: [sha1]\n  - file-store:\n      version: 2\n      enabled: yes\n      dir: filestore\n";
    let r = common::run_with("files", &session(), &rules, None, yaml, &[]);
    let _ = std::fs::remove_file(&list);
    let sids = common::alert_sids(&r.events);
    // sid 3: the PDF is not in the list; sid 4: both files are small;
    // sid 8: both files alert on their own side.
    assert_eq!(sids, vec![1, 2, 3, 4, 4, 5, 6, 8, 8], "{:#?}", r.events);

    let files: Vec<&serde_json::Value> = r
        .events
        .iter()
        .filter(|e| e["event_type"] == "fileinfo")
        .collect();
    assert_eq!(files.len(), 2, "{files:#?}");
    let pdf = &files[0];
    // The download: from the server, named by the request path, with the
    // transaction's http object beside it.
    assert_eq!(pdf["src_port"], 80);
    assert!(pdf.get("tx_id").is_none());
    let fi = &pdf["fileinfo"];
    assert_eq!(fi["filename"], "/docs/report.pdf");
    assert_eq!(fi["size"], PDF.len());
    assert_eq!(fi["state"], "CLOSED");
    assert_eq!(fi["gaps"], false);
    assert_eq!(fi["tx_id"], 0);
    assert!(fi["magic"].as_str().unwrap().contains("PDF document"));
    assert_eq!(fi["md5"], md5_hex(PDF));
    assert_eq!(
        fi["sha256"],
        vigil_applayer::files::HashKind::Sha256.digest(PDF)
    );
    assert_eq!(
        fi["sha1"],
        vigil_applayer::files::HashKind::Sha1.digest(PDF)
    );
    assert_eq!(fi["stored"], true);
    assert_eq!(fi["file_id"], 1);
    assert_eq!(fi["sid"], serde_json::json!([1]));
    assert_eq!(pdf["http"]["url"], "/docs/report.pdf");
    // file-store v2: <dir>/<sha256[..2]>/<sha256>.
    let sha = fi["sha256"].as_str().unwrap();
    let stored = r.dir.join("out/filestore").join(&sha[..2]).join(sha);
    assert_eq!(std::fs::read(&stored).unwrap(), PDF);

    // The upload: the multipart part with a file name, to the server.
    let up = &files[1];
    assert_eq!(up["src_port"], 40000);
    let fi = &up["fileinfo"];
    assert_eq!(fi["filename"], "eicar.com");
    assert_eq!(fi["size"], EICAR.len());
    assert_eq!(fi["md5"], md5_hex(EICAR));
    assert_eq!(fi["tx_id"], 1);
    assert_eq!(fi["stored"], false);
    assert!(fi.get("sid").is_none());
    assert_eq!(up["http"]["http_method"], "POST");
}

#[test]
fn no_fileinfo_unless_listed_and_no_hashes_unless_asked() {
    let rules = "alert http any any -> any any (msg:\"pdf name\"; fileext:\"pdf\"; sid:1;)\n";
    let r = common::run("files-off", &session(), rules, Some(&["alert", "http"]));
    assert_eq!(common::alert_sids(&r.events), vec![1]);
    assert!(r.events.iter().all(|e| e["event_type"] != "fileinfo"));
    let r = common::run("files-on", &session(), rules, Some(&["alert", "files"]));
    let fi: Vec<&serde_json::Value> = r
        .events
        .iter()
        .filter(|e| e["event_type"] == "fileinfo")
        .map(|e| &e["fileinfo"])
        .collect();
    assert_eq!(fi.len(), 2);
    // Nothing asked for hashes or the type.
    assert!(fi[0].get("md5").is_none() && fi[0].get("magic").is_none());
    assert!(!r.dir.join("out/filestore").exists());
}
