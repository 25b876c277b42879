//! File tracking, as Suricata's file API: the files a transaction
//! carries (an HTTP body or `multipart/form-data` upload, an SMB
//! READ/WRITE stream, an FTP-data transfer, an SMTP MIME part), each with
//! its name, size, state and, when something needs them, its MD5 / SHA-1
//! / SHA-256 and libmagic type.
//!
//! The parsers keep each file's data in their `file.data` buffers
//! (capped by the protocols' own limits); [`tx_files`] lists the files of
//! one direction of a transaction from those buffers, and [`FileTracker`]
//! folds a file's data into its size, hashes and type incrementally, so
//! the same code serves detection (`filemd5`, `filesize`, `filemagic`)
//! and the `fileinfo` log.
//!
//! What is computed is decided once per process ([`enable`]), as
//! Suricata enables file hashing only for the outputs and rules that
//! need it: a flow that carries no file costs nothing, and a file costs
//! a hash only when a rule or an output asks for one.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use md5::{Digest as _, Md5};
use serde_json::{Map, Value};
use sha1::Sha1;
use sha2::Sha256;

use crate::smtp::mime::Mime;
use crate::txparser::suri_str;
use crate::{hex_lower, AppLayerState, AppProto, BufferId, Direction, TxId};

/// Compute files' MD5.
pub const FILE_MD5: u32 = 1;
/// Compute files' SHA-1.
pub const FILE_SHA1: u32 = 2;
/// Compute files' SHA-256.
pub const FILE_SHA256: u32 = 4;
/// Compute files' libmagic type.
pub const FILE_MAGIC: u32 = 8;

static FLAGS: AtomicU32 = AtomicU32::new(0);
/// Most bytes of file data the file store holds in memory at once.
static STORE_MEMCAP: AtomicUsize = AtomicUsize::new(DEFAULT_STORE_MEMCAP);
/// Files whose data was cut by [`STORE_MEMCAP`] (or a parser's cap).
static TRUNCATED: AtomicU64 = AtomicU64::new(0);

/// Default cap on one stored file's data (Suricata's `stream-depth` of
/// the file store is unlimited; Vigil caps what it holds).
pub const DEFAULT_STORE_MEMCAP: usize = 32 << 20;

/// How many bytes of a file libmagic looks at (Suricata's
/// `FILEMAGIC_MIN_SIZE` is 512; libmagic needs more for some formats).
pub const MAGIC_HEAD: usize = 4096;

/// Turns on what files compute (`FILE_*` bits), for the rules and
/// outputs that need it. Bits are only ever added.
pub fn enable(flags: u32) {
    FLAGS.fetch_or(flags, Ordering::Relaxed);
}

/// What files compute.
pub fn enabled() -> u32 {
    FLAGS.load(Ordering::Relaxed)
}

/// Sets the cap on the data of one stored file.
pub fn set_store_memcap(bytes: usize) {
    STORE_MEMCAP.store(bytes, Ordering::Relaxed);
}

/// Files truncated so far (the `file_store.truncated` counter).
pub fn truncated_count() -> u64 {
    TRUNCATED.load(Ordering::Relaxed)
}

/// A file's state, as Suricata logs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileState {
    /// Data is still coming.
    Open,
    /// The file ended normally.
    Closed,
    /// The file ended before its end (the flow closed, or a cap cut it).
    Truncated,
}

impl FileState {
    pub fn name(self) -> &'static str {
        match self {
            FileState::Open => "OPEN",
            FileState::Closed => "CLOSED",
            FileState::Truncated => "TRUNCATED",
        }
    }
}

/// One file, its data folded in as it comes.
pub struct FileTracker {
    pub name: Vec<u8>,
    /// Bytes of the file seen so far, gaps included.
    pub size: u64,
    pub state: FileState,
    /// Data was missing (a stream gap): the hashes are not computed.
    pub gaps: bool,
    md5: Option<Md5>,
    sha1: Option<Sha1>,
    sha256: Option<Sha256>,
    /// The first [`MAGIC_HEAD`] bytes, when the type is wanted.
    head: Option<Vec<u8>>,
    /// The data kept for the file store, up to the store's memcap.
    store: Option<Vec<u8>>,
    digests: Option<Digests>,
}

/// A closed file's hashes (lowercase hex).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Digests {
    pub md5: Option<String>,
    pub sha1: Option<String>,
    pub sha256: Option<String>,
}

impl FileTracker {
    /// Opens a file computing what `flags` ask for (`FILE_*`); `store`
    /// keeps its data for the file store.
    pub fn new(name: &[u8], flags: u32, store: bool) -> Self {
        FileTracker {
            name: name.to_vec(),
            size: 0,
            state: FileState::Open,
            gaps: false,
            md5: (flags & FILE_MD5 != 0).then(Md5::new),
            sha1: (flags & FILE_SHA1 != 0).then(Sha1::new),
            sha256: (flags & FILE_SHA256 != 0).then(Sha256::new),
            head: (flags & FILE_MAGIC != 0).then(Vec::new),
            store: store.then(Vec::new),
            digests: None,
        }
    }

    /// The next bytes of the file.
    pub fn append(&mut self, data: &[u8]) {
        if self.state != FileState::Open {
            return;
        }
        self.size = self.size.saturating_add(data.len() as u64);
        if let Some(h) = self.md5.as_mut() {
            h.update(data);
        }
        if let Some(h) = self.sha1.as_mut() {
            h.update(data);
        }
        if let Some(h) = self.sha256.as_mut() {
            h.update(data);
        }
        if let Some(head) = self.head.as_mut() {
            let room = MAGIC_HEAD.saturating_sub(head.len());
            head.extend_from_slice(&data[..room.min(data.len())]);
        }
        if let Some(s) = self.store.as_mut() {
            let cap = STORE_MEMCAP.load(Ordering::Relaxed);
            let room = cap.saturating_sub(s.len());
            if data.len() > room {
                s.extend_from_slice(&data[..room]);
                self.truncate();
                return;
            }
            s.extend_from_slice(data);
        }
    }

    /// `len` bytes of the file are missing: the size counts them, the
    /// hashes are dropped (they could not be the file's).
    pub fn gap(&mut self, len: u64) {
        if self.state != FileState::Open {
            return;
        }
        self.size = self.size.saturating_add(len);
        self.gaps = true;
        self.md5 = None;
        self.sha1 = None;
        self.sha256 = None;
        // A stored file with a hole is not the file.
        if self.store.take().is_some() {
            TRUNCATED.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The file ended.
    pub fn close(&mut self) {
        if self.state == FileState::Open {
            self.state = FileState::Closed;
            self.finish_digests();
        }
    }

    /// The file was cut short.
    pub fn truncate(&mut self) {
        if self.state == FileState::Open {
            self.state = FileState::Truncated;
            TRUNCATED.fetch_add(1, Ordering::Relaxed);
            // Suricata gives no hashes of a file it did not see whole.
            self.md5 = None;
            self.sha1 = None;
            self.sha256 = None;
            self.finish_digests();
        }
    }

    fn finish_digests(&mut self) {
        self.digests = Some(Digests {
            md5: self.md5.take().map(|h| hex_lower(&h.finalize())),
            sha1: self.sha1.take().map(|h| hex_lower(&h.finalize())),
            sha256: self.sha256.take().map(|h| hex_lower(&h.finalize())),
        });
    }

    /// The hashes, once the file is closed.
    pub fn digests(&self) -> Option<&Digests> {
        self.digests.as_ref()
    }

    /// The libmagic type of the file's first bytes (when asked for).
    pub fn magic(&self) -> Option<String> {
        self.head.as_deref().and_then(magic)
    }

    /// The data kept for the file store (when asked for).
    pub fn stored_data(&self) -> Option<&[u8]> {
        self.store.as_deref()
    }

    /// The EVE `fileinfo` object (Suricata's key order).
    pub fn eve(&self, tx_id: TxId, stored: Option<u64>) -> Value {
        let mut m = Map::new();
        m.insert("filename".into(), suri_str(&self.name));
        if let Some(t) = self.magic() {
            m.insert("magic".into(), Value::String(t));
        }
        m.insert("gaps".into(), Value::Bool(self.gaps));
        m.insert("state".into(), Value::String(self.state.name().into()));
        if let Some(d) = self.digests() {
            for (k, v) in [("md5", &d.md5), ("sha1", &d.sha1), ("sha256", &d.sha256)] {
                if let Some(v) = v {
                    m.insert(k.into(), Value::String(v.clone()));
                }
            }
        }
        match stored {
            Some(id) => {
                m.insert("stored".into(), Value::Bool(true));
                m.insert("file_id".into(), Value::from(id));
            }
            None => {
                m.insert("stored".into(), Value::Bool(false));
            }
        }
        m.insert("size".into(), Value::from(self.size));
        m.insert("tx_id".into(), Value::from(tx_id));
        Value::Object(m)
    }
}

thread_local! {
    /// The thread's libmagic handle (loaded on first use: `None` when
    /// the magic database cannot be loaded), and the last answer, so that
    /// a rule inspecting the same file twice asks libmagic once.
    static MAGIC: RefCell<Option<Option<magic::Cookie<magic::cookie::Load>>>> =
        const { RefCell::new(None) };
    static LAST_MAGIC: RefCell<(u64, Option<String>)> = const { RefCell::new((0, None)) };
}

/// libmagic's description of `data` (Suricata's `filemagic` value):
/// `None` when libmagic or its database is not available.
pub fn magic(data: &[u8]) -> Option<String> {
    if data.is_empty() {
        return None;
    }
    let head = &data[..data.len().min(MAGIC_HEAD)];
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        head.hash(&mut h);
        h.finish()
    };
    if let Some(hit) = LAST_MAGIC.with(|l| {
        let l = l.borrow();
        (l.0 == key && l.1.is_some()).then(|| l.1.clone())
    }) {
        return hit;
    }
    let out = MAGIC.with(|m| {
        let mut m = m.borrow_mut();
        let cookie = m.get_or_insert_with(|| {
            let c = magic::Cookie::open(magic::cookie::Flags::ERROR).ok()?;
            c.load(&Default::default()).ok()
        });
        cookie.as_ref().and_then(|c| c.buffer(head).ok())
    });
    LAST_MAGIC.with(|l| *l.borrow_mut() = (key, out.clone()));
    out
}

/// One file of a transaction, as the parser holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileView<'a> {
    pub name: Option<std::borrow::Cow<'a, [u8]>>,
    pub data: std::borrow::Cow<'a, [u8]>,
}

/// The files one direction of a transaction carries, in order.
///
/// HTTP: a response body is a file (named by Content-Disposition or the
/// request path); a request body is a file only as the parts of a
/// `multipart/form-data` upload that have a file name, or as a PUT
/// body. HTTP/2: each side's DATA (unnamed). SMTP and POP3: the mail's
/// MIME parts. SMB, FTP-data and NFS: each `file.data` instance with its
/// `file.name`.
pub fn tx_files(state: &AppLayerState, tx: TxId, dir: Direction) -> Vec<FileView<'_>> {
    use std::borrow::Cow;
    if !matches!(
        state.proto(),
        AppProto::Http
            | AppProto::Smb
            | AppProto::FtpData
            | AppProto::Smtp
            | AppProto::Pop3
            | AppProto::Nfs
            | AppProto::Http2
    ) {
        return Vec::new();
    }
    // HTTP/2: a stream's DATA in one direction is one file, in both
    // directions, without a name (Suricata opens it with an empty one).
    if state.proto() == AppProto::Http2 {
        return state
            .buffers(tx, BufferId::FileData, dir)
            .filter(|d| !d.is_empty())
            .map(|d| FileView {
                name: None,
                data: Cow::Borrowed(d),
            })
            .collect();
    }
    if let (Some(h), Direction::ToServer) = (state.as_http(), dir) {
        let Some(t) = h.tx(tx) else {
            return Vec::new();
        };
        if let Some(ct) = t
            .request_header("content-type")
            .filter(|ct| ieq_prefix(trim_start(ct), b"multipart/form-data"))
        {
            return multipart_files(ct, &t.request_body);
        }
    }
    // A mail's files: its parts, each with its own name (a text part
    // has none), in the direction the mail goes.
    let mail_dir = match state.proto() {
        AppProto::Smtp => Some(Direction::ToServer),
        AppProto::Pop3 => Some(Direction::ToClient),
        _ => None,
    };
    if let Some(d) = mail_dir {
        let Some(m) = state.mime(tx).filter(|_| d == dir) else {
            return Vec::new();
        };
        return m
            .parts
            .iter()
            .filter(|p| !p.data.is_empty())
            .map(|p| FileView {
                name: p.filename.as_deref().map(Cow::Borrowed),
                data: Cow::Borrowed(&p.data[..]),
            })
            .collect();
    }
    let names: Vec<&[u8]> = state.buffers(tx, BufferId::FileName, dir).collect();
    state
        .buffers(tx, BufferId::FileData, dir)
        .enumerate()
        .filter(|(_, d)| !d.is_empty())
        .filter_map(|(i, d)| {
            let name = names.get(i).or(names.last()).copied();
            // An HTTP request body that is no upload is not a file.
            if name.is_none() && state.proto() == AppProto::Http {
                return None;
            }
            Some(FileView {
                name: name.map(Cow::Borrowed),
                data: Cow::Borrowed(d),
            })
        })
        .collect()
}

fn trim_start(v: &[u8]) -> &[u8] {
    let i = v
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(v.len());
    &v[i..]
}

fn ieq_prefix(v: &[u8], p: &[u8]) -> bool {
    v.len() >= p.len() && v[..p.len()].eq_ignore_ascii_case(p)
}

/// The files of a `multipart/form-data` body: its parts with a file
/// name, decoded by the MIME decoder SMTP uses.
fn multipart_files<'a>(content_type: &[u8], body: &[u8]) -> Vec<FileView<'a>> {
    let mut m = Mime::new();
    let mut ev = Vec::new();
    let mut hdr = b"Content-Type: ".to_vec();
    hdr.extend_from_slice(content_type);
    m.feed(&hdr, b"\r\n", false, &mut ev);
    m.feed(b"", b"\r\n", false, &mut ev);
    let mut rest = body;
    while !rest.is_empty() {
        let (line, eol, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => {
                let cr = i > 0 && rest[i - 1] == b'\r';
                let end = if cr { i - 1 } else { i };
                (&rest[..end], &rest[end..=i], &rest[i + 1..])
            }
            None => (rest, &b""[..], &b""[..]),
        };
        m.feed(line, eol, false, &mut ev);
        rest = next;
    }
    m.finish(&mut ev);
    m.parts
        .into_iter()
        .filter_map(|p| {
            let name = p.filename?;
            Some(FileView {
                name: Some(std::borrow::Cow::Owned(name)),
                data: std::borrow::Cow::Owned(p.data),
            })
        })
        .collect()
}

/// Whether a direction of a transaction is complete (its files closed).
pub fn side_complete(state: &AppLayerState, tx: TxId, dir: Direction) -> bool {
    state
        .transactions()
        .iter()
        .any(|t| t.id == tx && t.progress.complete(dir))
}

/// Folds a file's data into a tracker computing `flags`, closed when
/// `complete`, else truncated when `eof` (the flow ended), else open.
pub fn track(f: &FileView<'_>, flags: u32, store: bool, complete: bool, eof: bool) -> FileTracker {
    let mut t = FileTracker::new(f.name.as_deref().unwrap_or_default(), flags, store);
    t.append(&f.data);
    if complete {
        t.close();
    } else if eof {
        t.truncate();
    }
    t
}

/// Which hash a hash list holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashKind {
    Md5,
    Sha1,
    Sha256,
}

impl HashKind {
    pub fn hex_len(self) -> usize {
        match self {
            HashKind::Md5 => 32,
            HashKind::Sha1 => 40,
            HashKind::Sha256 => 64,
        }
    }
    pub fn flag(self) -> u32 {
        match self {
            HashKind::Md5 => FILE_MD5,
            HashKind::Sha1 => FILE_SHA1,
            HashKind::Sha256 => FILE_SHA256,
        }
    }
    /// The hash of `data`, lowercase hex.
    pub fn digest(self, data: &[u8]) -> String {
        match self {
            HashKind::Md5 => hex_lower(&Md5::digest(data)),
            HashKind::Sha1 => hex_lower(&Sha1::digest(data)),
            HashKind::Sha256 => hex_lower(&Sha256::digest(data)),
        }
    }
}

/// Parses a hash list file (`filemd5` ...): one hex hash per line, its
/// first word; blank lines and `#` comments are skipped. A line whose
/// first word is not a hash of the kind is an error, as in Suricata.
pub fn parse_hash_list(text: &str, kind: HashKind) -> Result<HashSet<String>, String> {
    let mut out = HashSet::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let word = line.split_whitespace().next().unwrap_or_default();
        if word.len() != kind.hex_len() || !word.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("line {}: '{word}' is not a {kind:?} hash", n + 1));
        }
        out.insert(word.to_ascii_lowercase());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_incremental_and_final_on_close() {
        let mut t = FileTracker::new(b"a.txt", FILE_MD5 | FILE_SHA1 | FILE_SHA256, false);
        t.append(b"hello ");
        assert!(t.digests().is_none());
        t.append(b"world");
        t.close();
        let d = t.digests().unwrap();
        assert_eq!(d.md5.as_deref(), Some("5eb63bbbe01eeed093cb22bb8f5acdc3"));
        assert_eq!(
            d.sha1.as_deref(),
            Some("2aae6c35c94fcfb415dbe95f408b9ce91ee846ed")
        );
        assert_eq!(
            d.sha256.as_deref(),
            Some("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9")
        );
        assert_eq!(t.size, 11);
        assert_eq!(t.state, FileState::Closed);
        // Data after the close is ignored.
        t.append(b"more");
        assert_eq!(t.size, 11);
    }

    #[test]
    fn no_hashes_unless_asked() {
        let mut t = FileTracker::new(b"x", 0, false);
        t.append(b"abc");
        t.close();
        assert_eq!(t.digests(), Some(&Digests::default()));
        let v = t.eve(3, None);
        assert!(v.get("md5").is_none());
        assert_eq!(v["size"], 3);
        assert_eq!(v["tx_id"], 3);
        assert_eq!(v["state"], "CLOSED");
        assert_eq!(v["stored"], false);
    }

    #[test]
    fn gap_drops_hashes_and_counts_size() {
        let mut t = FileTracker::new(b"x", FILE_MD5, true);
        t.append(b"abc");
        let before = truncated_count();
        t.gap(100);
        t.append(b"def");
        t.close();
        assert!(t.gaps);
        assert_eq!(t.size, 106);
        assert_eq!(t.digests().unwrap().md5, None);
        assert!(t.stored_data().is_none());
        assert!(truncated_count() > before);
        assert_eq!(t.eve(0, None)["gaps"], true);
    }

    #[test]
    fn store_cap_truncates() {
        let mut t = FileTracker::new(b"big", FILE_SHA256, true);
        let cap = STORE_MEMCAP.load(Ordering::Relaxed);
        t.append(&vec![0u8; cap]);
        assert_eq!(t.state, FileState::Open);
        t.append(b"x");
        assert_eq!(t.state, FileState::Truncated);
        assert_eq!(t.stored_data().unwrap().len(), cap);
        assert_eq!(t.digests().unwrap().sha256, None);
        assert_eq!(t.eve(1, None)["state"], "TRUNCATED");
    }

    #[test]
    fn truncate_on_eof() {
        let f = FileView {
            name: Some(std::borrow::Cow::Borrowed(&b"n"[..])),
            data: std::borrow::Cow::Borrowed(&b"data"[..]),
        };
        assert_eq!(track(&f, 0, false, false, true).state, FileState::Truncated);
        assert_eq!(track(&f, 0, false, false, false).state, FileState::Open);
        assert_eq!(track(&f, 0, false, true, true).state, FileState::Closed);
    }

    #[test]
    fn magic_of_pdf() {
        // libmagic's description, when its database is installed.
        if let Some(m) = magic(b"%PDF-1.6\n%\xe2\xe3\xcf\xd3\n") {
            assert!(m.contains("PDF document, version 1.6"), "{m}");
        }
        assert_eq!(magic(b""), None);
    }

    #[test]
    fn hash_lists() {
        let l = parse_hash_list(
            "# comment\n\n 44D88612FEA8A8F36DE82E1278ABB02F  eicar.com\n",
            HashKind::Md5,
        )
        .unwrap();
        assert!(l.contains("44d88612fea8a8f36de82e1278abb02f"));
        assert!(parse_hash_list("abc\n", HashKind::Md5).is_err());
        assert!(parse_hash_list(&"a".repeat(32), HashKind::Sha1).is_err());
        assert_eq!(
            HashKind::Md5.digest(b""),
            "d41d8cd98f00b204e9800998ecf8427e"
        );
    }

    #[test]
    fn http_transaction_files() {
        use crate::{AppLayerState, Transport};
        let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
        let body = b"--XX\r\nContent-Disposition: form-data; name=\"f\"; filename=\"up.bin\"\r\n\r\nABC\r\n--XX--\r\n";
        let head = format!(
            "POST /u HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=XX\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.feed(Direction::ToServer, head.as_bytes(), 0);
        s.feed(Direction::ToServer, body, 0);
        s.feed(
            Direction::ToClient,
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nDONE",
            0,
        );
        let up = tx_files(&s, 0, Direction::ToServer);
        assert_eq!(up.len(), 1);
        assert_eq!(up[0].name.as_deref(), Some(&b"up.bin"[..]));
        assert_eq!(&up[0].data[..], b"ABC");
        // file.name of the upload is the part's file name.
        assert_eq!(
            s.buffer(0, BufferId::FileName, Direction::ToServer),
            Some(&b"up.bin"[..])
        );
        // The response body is a file named by the request path.
        let down = tx_files(&s, 0, Direction::ToClient);
        assert_eq!(down.len(), 1);
        assert_eq!(down[0].name.as_deref(), Some(&b"/u"[..]));
        assert!(side_complete(&s, 0, Direction::ToClient));
        // A plain POST body is no file.
        let mut s = AppLayerState::new(AppProto::Http, Transport::Tcp);
        s.feed(
            Direction::ToServer,
            b"POST /f HTTP/1.1\r\nContent-Length: 3\r\n\r\na=b",
            0,
        );
        assert!(tx_files(&s, 0, Direction::ToServer).is_empty());
        // Protocols without files list none.
        let s = AppLayerState::new(AppProto::Dns, Transport::Udp);
        assert!(tx_files(&s, 0, Direction::ToClient).is_empty());
    }

    #[test]
    fn multipart_upload_is_a_file() {
        let body = b"--XX\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nfield\r\n\
--XX\r\nContent-Disposition: form-data; name=\"f\"; filename=\"e.com\"\r\n\
Content-Type: application/octet-stream\r\n\r\nX5O!P%@AP\r\n--XX--\r\n";
        let f = multipart_files(b"multipart/form-data; boundary=XX", body);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].name.as_deref(), Some(&b"e.com"[..]));
        assert_eq!(&f[0].data[..], b"X5O!P%@AP");
    }
}
