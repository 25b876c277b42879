//! NFS (versions 2, 3 and 4) over ONC RPC, on TCP (record marking,
//! fragments reassembled) and UDP (one message per datagram), with
//! Suricata's transaction model (`rust/src/nfs`).
//!
//! No crate parses ONC RPC/NFS incrementally with the framing this needs
//! (the NFS parsers on crates.io are clients or servers), so the XDR
//! decoding is ours: [`Xdr`] reads the big-endian words, opaques and
//! strings, and the procedures' arguments and results are decoded as far
//! as transactions, file names and file data need.
//!
//! # Transactions
//!
//! A call and its reply (matched by XID) are one transaction, except
//! READ and WRITE: their data belongs to a *file transaction*, one per
//! file handle and direction, that collects the chunks of one file
//! (READ replies to the client, WRITE calls to the server) until the
//! last one (a READ reply with `eof`, a WRITE with `FILE_SYNC`, or a
//! COMMIT/CLOSE of the handle). A file transaction's data is its file
//! (`file.data`, `fileinfo`), named from the LOOKUP, CREATE, OPEN or
//! READDIRPLUS that gave its handle. NFSv4 COMPOUNDs are parsed op by
//! op (PUTFH, READ, WRITE, OPEN, LOOKUP, CREATE, REMOVE, COMMIT, CLOSE,
//! GETFH and the others whose arguments have a fixed layout); as in
//! Suricata, only CREATE and REMOVE compounds make transactions of
//! their own.
//!
//! # Bounds
//!
//! A message is buffered up to [`MAX_MESSAGE`] bytes (a larger record is
//! skipped with `nfs.malformed_data`); a file keeps [`MAX_FILE_DATA`]
//! bytes and a flow [`MAX_FLOW_FILE_DATA`]; names are cut at
//! [`MAX_NAME`] bytes and handles at [`MAX_HANDLE`]; the maps of
//! outstanding calls and of handle names hold [`MAX_TRACKED`] entries;
//! transactions are capped by `max_transactions`. After a gap a
//! direction is ignored until data that starts with a plausible record.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::events::{AppLayerEvent, NfsEvent};
use crate::smb::FileBuf;
use crate::state::{TxCommon, TxProgress};
use crate::txparser::{suri_str, Tx, TxList, TxParser, UintField};
use crate::{AppLayerConfig, AppProto, BufferId, Direction, Timestamp, Transport, TxId};

/// NFS's port (TCP and UDP).
pub const PORT: u16 = 2049;
/// The NFS RPC program number.
pub const PROGRAM: u32 = 100003;
/// Largest RPC message buffered (fragments together): a 1 MiB READ or
/// WRITE (Linux's largest `rsize`/`wsize`) and its headers.
pub const MAX_MESSAGE: usize = (1 << 20) + 64 * 1024;
/// File data kept per file.
pub const MAX_FILE_DATA: usize = 1 << 20;
/// File data kept per flow.
pub const MAX_FLOW_FILE_DATA: usize = 8 << 20;
/// Longest name kept.
pub const MAX_NAME: usize = 1024;
/// Longest file handle kept (NFSv4's `NFS4_FHSIZE`).
pub const MAX_HANDLE: usize = 128;
/// Most outstanding calls and handle names remembered.
pub const MAX_TRACKED: usize = 1024;
/// Most NFSv4 COMPOUND ops looked at.
const MAX_OPS: usize = 128;

/// NFSv3 procedures (RFC 1813), Suricata's names.
pub const V3_NAMES: &[(&str, u32)] = &[
    ("NULL", 0),
    ("GETATTR", 1),
    ("SETATTR", 2),
    ("LOOKUP", 3),
    ("ACCESS", 4),
    ("READLINK", 5),
    ("READ", 6),
    ("WRITE", 7),
    ("CREATE", 8),
    ("MKDIR", 9),
    ("SYMLINK", 10),
    ("MKNOD", 11),
    ("REMOVE", 12),
    ("RMDIR", 13),
    ("RENAME", 14),
    ("LINK", 15),
    ("READDIR", 16),
    ("READDIRPLUS", 17),
    ("FSSTAT", 18),
    ("FSINFO", 19),
    ("PATHCONF", 20),
    ("COMMIT", 21),
];

/// NFSv2 procedures (RFC 1094).
pub const V2_NAMES: &[(&str, u32)] = &[
    ("NULL", 0),
    ("GETATTR", 1),
    ("SETATTR", 2),
    ("ROOT", 3),
    ("LOOKUP", 4),
    ("READLINK", 5),
    ("READ", 6),
    ("WRITECACHE", 7),
    ("WRITE", 8),
    ("CREATE", 9),
    ("REMOVE", 10),
    ("RENAME", 11),
    ("LINK", 12),
    ("SYMLINK", 13),
    ("MKDIR", 14),
    ("RMDIR", 15),
    ("READDIR", 16),
    ("STATFS", 17),
];

/// NFSv4 procedures and COMPOUND operations (RFC 7530, 8881).
pub const V4_NAMES: &[(&str, u32)] = &[
    ("NULL", 0),
    ("COMPOUND", 1),
    ("ACCESS", 3),
    ("CLOSE", 4),
    ("COMMIT", 5),
    ("CREATE", 6),
    ("DELEGPURGE", 7),
    ("DELEGRETURN", 8),
    ("GETATTR", 9),
    ("GETFH", 10),
    ("LINK", 11),
    ("LOCK", 12),
    ("LOCKT", 13),
    ("LOCKU", 14),
    ("LOOKUP", 15),
    ("LOOKUPP", 16),
    ("NVERIFY", 17),
    ("OPEN", 18),
    ("OPENATTR", 19),
    ("OPEN_CONFIRM", 20),
    ("OPEN_DOWNGRADE", 21),
    ("PUTFH", 22),
    ("PUTPUBFH", 23),
    ("PUTROOTFH", 24),
    ("READ", 25),
    ("READDIR", 26),
    ("READLINK", 27),
    ("REMOVE", 28),
    ("RENAME", 29),
    ("RENEW", 30),
    ("RESTOREFH", 31),
    ("SAVEFH", 32),
    ("SECINFO", 33),
    ("SETATTR", 34),
    ("SETCLIENTID", 35),
    ("SETCLIENTID_CONFIRM", 36),
    ("VERIFY", 37),
    ("WRITE", 38),
    ("RELEASE_LOCKOWNER", 39),
    ("BACKCHANNEL_CTL", 40),
    ("BIND_CONN_TO_SESSION", 41),
    ("EXCHANGE_ID", 42),
    ("CREATE_SESSION", 43),
    ("DESTROY_SESSION", 44),
    ("FREE_STATEID", 45),
    ("GET_DIR_DELEGATION", 46),
    ("GETDEVICEINFO", 47),
    ("GETDEVICELIST", 48),
    ("LAYOUTCOMMIT", 49),
    ("LAYOUTGET", 50),
    ("LAYOUTRETURN", 51),
    ("SECINFO_NO_NAME", 52),
    ("SEQUENCE", 53),
    ("SET_SSV", 54),
    ("TEST_STATEID", 55),
    ("WANT_DELEGATION", 56),
    ("DESTROY_CLIENTID", 57),
    ("RECLAIM_COMPLETE", 58),
    ("ILLEGAL", 10044),
];

/// The names Suricata logs NFSv4 procedures by (fewer than [`V4_NAMES`]:
/// the NFSv4.1 operations are logged as numbers).
const V4_LOGGED_MAX: u32 = 39;

// NFSv3 procedure numbers.
const P3_GETATTR: u32 = 1;
const P3_LOOKUP: u32 = 3;
const P3_ACCESS: u32 = 4;
const P3_READ: u32 = 6;
const P3_WRITE: u32 = 7;
const P3_CREATE: u32 = 8;
const P3_MKDIR: u32 = 9;
const P3_REMOVE: u32 = 12;
const P3_RMDIR: u32 = 13;
const P3_RENAME: u32 = 14;
const P3_READDIRPLUS: u32 = 17;
const P3_COMMIT: u32 = 21;
// NFSv2.
const P2_READ: u32 = 6;
// NFSv4.
const P4_COMPOUND: u32 = 1;
const OP4_CLOSE: u32 = 4;
const OP4_COMMIT: u32 = 5;
const OP4_CREATE: u32 = 6;
const OP4_GETFH: u32 = 10;
const OP4_LOOKUP: u32 = 15;
const OP4_OPEN: u32 = 18;
const OP4_PUTFH: u32 = 22;
const OP4_PUTROOTFH: u32 = 24;
const OP4_READ: u32 = 25;
const OP4_REMOVE: u32 = 28;
const OP4_WRITE: u32 = 38;

const AUTH_UNIX: u32 = 1;
const AUTH_GSS: u32 = 6;
/// WRITE's `stable_how` FILE_SYNC: taken as the file's last chunk.
const FILE_SYNC: u32 = 2;

/// The procedure number a name has in an NFS version (2, 3, else 4).
pub fn procedure_by_name(version: u32, name: &str) -> Option<u32> {
    let table = match version {
        2 => V2_NAMES,
        3 => V3_NAMES,
        _ => V4_NAMES,
    };
    table
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, v)| v)
}

/// A procedure's name as Suricata logs it: by the NFSv3 table below
/// version 4 (NFSv2 procedures included), else by the NFSv4 one;
/// numbers it does not name as the number.
pub fn procedure_string(version: u16, procedure: u32) -> String {
    let (table, max) = if version < 4 {
        (V3_NAMES, u32::MAX)
    } else {
        (V4_NAMES, V4_LOGGED_MAX)
    };
    table
        .iter()
        .find(|&&(_, v)| v == procedure && (v <= max || v == 10044))
        .map(|&(n, _)| n.to_string())
        .unwrap_or_else(|| procedure.to_string())
}

/// An NFSv3 status as Suricata logs it (`OK`, `ERR_NOENT`, ...).
pub fn status_string(status: u32) -> String {
    let s = match status {
        0 => "OK",
        1 => "ERR_PERM",
        2 => "ERR_NOENT",
        5 => "ERR_IO",
        6 => "ERR_NXIO",
        13 => "ERR_ACCES",
        17 => "ERR_EXIST",
        18 => "ERR_XDEV",
        19 => "ERR_NODEV",
        20 => "ERR_NOTDIR",
        21 => "ERR_ISDIR",
        22 => "ERR_INVAL",
        27 => "ERR_FBIG",
        28 => "ERR_NOSPC",
        30 => "ERR_ROFS",
        31 => "ERR_MLINK",
        63 => "ERR_NAMETOOLONG",
        66 => "ERR_NOTEMPTY",
        69 => "ERR_DQUOT",
        70 => "ERR_STALE",
        71 => "ERR_REMOTE",
        10001 => "ERR_BADHANDLE",
        10002 => "ERR_NOT_SYNC",
        10003 => "ERR_BAD_COOKIE",
        10004 => "ERR_NOTSUPP",
        10005 => "ERR_TOOSMALL",
        10006 => "ERR_SERVERFAULT",
        10007 => "ERR_BADTYPE",
        10008 => "ERR_JUKEBOX",
        n => return n.to_string(),
    };
    s.to_string()
}

fn rpc_status_string(s: u32) -> String {
    match s {
        0 => "ACCEPTED".into(),
        1 => "DENIED".into(),
        n => n.to_string(),
    }
}

fn auth_type_string(a: u32) -> String {
    match a {
        0 => "NULL".into(),
        1 => "UNIX".into(),
        2 => "SHORT".into(),
        3 => "DH".into(),
        4 => "KERB".into(),
        5 => "RSA".into(),
        6 => "GSS".into(),
        n => n.to_string(),
    }
}

/// An XDR reader (RFC 4506): big-endian words, padded opaques.
#[derive(Clone, Copy, Debug)]
pub struct Xdr<'a> {
    b: &'a [u8],
}

impl<'a> Xdr<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Xdr { b }
    }
    pub fn rest(&self) -> &'a [u8] {
        self.b
    }
    pub fn u32(&mut self) -> Option<u32> {
        let v = self.b.get(..4)?;
        let r = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
        self.b = &self.b[4..];
        Some(r)
    }
    pub fn u64(&mut self) -> Option<u64> {
        let hi = self.u32()? as u64;
        Some(hi << 32 | self.u32()? as u64)
    }
    pub fn bool(&mut self) -> Option<bool> {
        Some(self.u32()? != 0)
    }
    /// `n` bytes and their padding to a multiple of 4.
    pub fn fixed(&mut self, n: usize) -> Option<&'a [u8]> {
        let padded = n.checked_add((4 - n % 4) % 4)?;
        if self.b.len() < padded {
            return None;
        }
        let r = &self.b[..n];
        self.b = &self.b[padded..];
        Some(r)
    }
    /// A variable-length opaque or string.
    pub fn opaque(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.fixed(n)
    }
    fn skip(&mut self, n: usize) -> Option<()> {
        self.fixed(n).map(|_| ())
    }
    /// An NFSv4 `bitmap4`.
    fn bitmap(&mut self) -> Option<()> {
        let n = self.u32()? as usize;
        self.skip(n.checked_mul(4)?)
    }
    /// An NFSv4 `fattr4`: bitmap and opaque values.
    fn fattr4(&mut self) -> Option<()> {
        self.bitmap()?;
        self.opaque().map(|_| ())
    }
    /// An NFSv3 `post_op_attr` (`fattr3` is 84 bytes).
    fn post_op_attr(&mut self) -> Option<()> {
        if self.bool()? {
            self.skip(84)?;
        }
        Some(())
    }
    /// An NFSv3 `wcc_data`: pre-op attributes (24 bytes) and post-op.
    fn wcc_data(&mut self) -> Option<()> {
        if self.bool()? {
            self.skip(24)?;
        }
        self.post_op_attr()
    }
}

fn cut(b: &[u8], max: usize) -> Vec<u8> {
    b[..b.len().min(max)].to_vec()
}

/// The credentials of a call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Creds {
    pub flavor: u32,
    /// AUTH_UNIX's machine name, uid and gid.
    pub unix: Option<(Vec<u8>, u32, u32)>,
    /// RPCSEC_GSS with integrity on a data call: the arguments are
    /// wrapped (`rpc_gss_integ_data`).
    pub gss_integrity: bool,
}

/// An RPC call.
#[derive(Debug)]
pub struct Call<'a> {
    pub xid: u32,
    pub program: u32,
    pub version: u32,
    pub procedure: u32,
    pub creds: Creds,
    pub args: &'a [u8],
}

/// An RPC reply.
#[derive(Debug)]
pub struct Reply<'a> {
    pub xid: u32,
    /// `reply_stat`: 0 accepted, 1 denied.
    pub reply_state: u32,
    /// `accept_stat` of an accepted reply (0 success).
    pub accept_state: u32,
    pub results: &'a [u8],
}

fn parse_creds(flavor: u32, body: &[u8]) -> Creds {
    let mut c = Creds {
        flavor,
        ..Default::default()
    };
    let mut x = Xdr::new(body);
    match flavor {
        AUTH_UNIX => {
            let unix = (|| {
                x.u32()?;
                let name = x.opaque()?;
                Some((cut(name, MAX_NAME), x.u32()?, x.u32()?))
            })();
            c.unix = unix;
        }
        AUTH_GSS => {
            // version, procedure (0: data), sequence, service (2: integrity).
            let g = (|| Some((x.u32()?, x.u32()?, x.u32()?, x.u32()?)))();
            c.gss_integrity = matches!(g, Some((_, 0, _, 2)));
        }
        _ => {}
    }
    c
}

/// Parses an RPC call (after the record marker).
pub fn parse_call(b: &[u8]) -> Option<Call<'_>> {
    let mut x = Xdr::new(b);
    let xid = x.u32()?;
    if x.u32()? != 0 || x.u32()? != 2 {
        return None;
    }
    let program = x.u32()?;
    let version = x.u32()?;
    let procedure = x.u32()?;
    let flavor = x.u32()?;
    let body = x.opaque()?;
    if body.len() > 400 {
        return None;
    }
    x.u32()?;
    x.opaque()?;
    let creds = parse_creds(flavor, body);
    let mut args = x.rest();
    if creds.gss_integrity {
        // rpc_gss_integ_data: opaque(sequence + arguments), checksum.
        let mut w = Xdr::new(args);
        let mut inner = Xdr::new(w.opaque()?);
        inner.u32()?;
        args = inner.rest();
    }
    Some(Call {
        xid,
        program,
        version,
        procedure,
        creds,
        args,
    })
}

/// Parses an RPC reply (after the record marker).
pub fn parse_reply(b: &[u8]) -> Option<Reply<'_>> {
    let mut x = Xdr::new(b);
    let xid = x.u32()?;
    if x.u32()? != 1 {
        return None;
    }
    let reply_state = x.u32()?;
    let accept_state = match reply_state {
        0 => {
            x.u32()?;
            x.opaque()?;
            x.u32()?
        }
        1 => 0,
        _ => return None,
    };
    Some(Reply {
        xid,
        reply_state,
        accept_state,
        results: x.rest(),
    })
}

/// Whether `b` (after any record marker) starts an NFS call: RPC
/// version 2, program 100003, versions 2 to 4. `None`: too short.
pub fn probe_call(b: &[u8]) -> Option<bool> {
    // Each word present must fit: a mismatch is known before the whole
    // header is there.
    let w = |i: usize| {
        b.get(i..i + 4)
            .map(|x| u32::from_be_bytes([x[0], x[1], x[2], x[3]]))
    };
    type Check = (usize, fn(u32) -> bool);
    let checks: [Check; 4] = [
        (4, |v| v == 0),
        (8, |v| v == 2),
        (12, |v| v == PROGRAM),
        (16, |v| (2..=4).contains(&v)),
    ];
    for (at, ok) in checks {
        match w(at) {
            Some(v) if !ok(v) => return Some(false),
            Some(_) => {}
            None => return None,
        }
    }
    Some(true)
}

/// Whether `b` starts a plausible RPC reply (accepted or denied).
pub fn probe_reply(b: &[u8]) -> Option<bool> {
    let w = |i: usize| {
        b.get(i..i + 4)
            .map(|x| u32::from_be_bytes([x[0], x[1], x[2], x[3]]))
    };
    match (w(4), w(8)) {
        (Some(t), _) if t != 1 => Some(false),
        (Some(_), Some(s)) => Some(s <= 1),
        _ => None,
    }
}

/// TCP: a record marker and a call to NFS (toward the server), or a
/// reply (toward the client, trusted on [`PORT`] only: a reply carries no
/// program number).
pub fn probe_tcp(dir: Direction, b: &[u8], port: u16) -> Option<bool> {
    if b.len() < 4 {
        return None;
    }
    let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff;
    if len < 12 || len as usize > MAX_MESSAGE {
        return Some(false);
    }
    match dir {
        Direction::ToServer => probe_call(&b[4..]),
        Direction::ToClient if port == PORT => probe_reply(&b[4..]),
        Direction::ToClient => Some(false),
    }
}

/// UDP: a call to NFS on any port, a reply on [`PORT`].
pub fn probe_udp(dir: Direction, b: &[u8], port: u16) -> bool {
    match dir {
        Direction::ToServer => probe_call(b) == Some(true),
        Direction::ToClient => port == PORT && probe_reply(b) == Some(true),
    }
}

/// A file transfer of a file transaction.
#[derive(Debug, Default)]
pub struct FileXfer {
    pub dir: Option<Direction>,
    pub buf: FileBuf,
    pub chunks: u32,
    pub last_xid: u32,
    /// Procedures of the transfer beside the transaction's (COMMIT).
    pub additional_procs: Vec<u32>,
}

/// One call and its reply, or one file transfer.
#[derive(Debug, Default)]
pub struct NfsTx {
    pub(crate) common: TxCommon,
    pub xid: u32,
    pub procedure: u32,
    pub version: u16,
    pub file_name: Vec<u8>,
    pub file_handle: Vec<u8>,
    pub auth_type: u32,
    pub creds: Option<(Vec<u8>, u32, u32)>,
    pub rpc_status: u32,
    pub nfs_status: u32,
    pub request_done: bool,
    pub response_done: bool,
    pub is_first: bool,
    pub is_last: bool,
    /// RENAME's new name.
    pub rename_to: Option<Vec<u8>>,
    pub file: Option<FileXfer>,
}

impl Tx for NfsTx {
    fn common(&self) -> &TxCommon {
        &self.common
    }
    fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.request_done,
            response_complete: self.response_done,
        }
    }
}

impl NfsTx {
    pub fn is_file_tx(&self) -> bool {
        self.file.is_some()
    }

    fn set_creds(&mut self, c: &Creds) {
        self.auth_type = c.flavor;
        self.creds = c.unix.clone();
    }

    /// `nfs_procedure`'s values: the procedure, and a file transfer's
    /// additional ones.
    pub fn procedures(&self) -> Vec<u64> {
        let mut v = vec![self.procedure as u64];
        if let Some(f) = &self.file {
            v.extend(f.additional_procs.iter().map(|&p| p as u64));
        }
        v
    }

    /// The EVE `nfs` object; `version` is the flow's NFS version (as
    /// Suricata logs it).
    pub fn eve(&self, version: u16) -> Value {
        let mut m = Map::new();
        m.insert("version".into(), Value::from(version));
        m.insert(
            "procedure".into(),
            Value::String(procedure_string(version, self.procedure)),
        );
        m.insert(
            "filename".into(),
            Value::String(String::from_utf8_lossy(&self.file_name).into_owned()),
        );
        if !self.file_handle.is_empty() {
            m.insert(
                "hhash".into(),
                Value::String(format!("{:x}", crc32(&self.file_handle))),
            );
        }
        m.insert("id".into(), Value::from(self.common.id + 1));
        m.insert("file_tx".into(), Value::Bool(self.is_file_tx()));
        m.insert("type".into(), Value::String("response".into()));
        m.insert(
            "status".into(),
            Value::String(status_string(self.nfs_status)),
        );
        // A file transfer's `read` or `write` object (any version, as
        // the Suricata 9 peer logs NFSv4 READs).
        if let Some(x) = &self.file {
            let key = match x.dir {
                Some(Direction::ToServer) => "write",
                _ => "read",
            };
            let mut f = Map::new();
            f.insert("first".into(), Value::Bool(self.is_first));
            f.insert("last".into(), Value::Bool(self.is_last));
            f.insert("last_xid".into(), Value::from(x.last_xid));
            f.insert("chunks".into(), Value::from(x.chunks));
            m.insert(key.into(), Value::Object(f));
        } else if version <= 3 && self.procedure == P3_RENAME {
            let mut r = Map::new();
            r.insert(
                "from".into(),
                Value::String(String::from_utf8_lossy(&self.file_name).into_owned()),
            );
            let to = self.rename_to.as_deref().unwrap_or_default();
            r.insert(
                "to".into(),
                Value::String(String::from_utf8_lossy(to).into_owned()),
            );
            m.insert("rename".into(), Value::Object(r));
        }
        Value::Object(m)
    }

    /// The EVE `rpc` object logged beside `nfs`.
    pub fn rpc_eve(&self) -> Value {
        let mut m = Map::new();
        m.insert("xid".into(), Value::from(self.xid));
        m.insert(
            "status".into(),
            Value::String(rpc_status_string(self.rpc_status)),
        );
        m.insert(
            "auth_type".into(),
            Value::String(auth_type_string(self.auth_type)),
        );
        if self.auth_type == AUTH_UNIX {
            let (name, uid, gid) = self.creds.clone().unwrap_or_default();
            let mut c = Map::new();
            c.insert("machine_name".into(), suri_str(&name));
            c.insert("uid".into(), Value::from(uid));
            c.insert("gid".into(), Value::from(gid));
            m.insert("creds".into(), Value::Object(c));
        }
        Value::Object(m)
    }
}

/// CRC-32 (IEEE), Suricata's `hhash` of a file handle.
pub fn crc32(b: &[u8]) -> u32 {
    let mut c = !0u32;
    for &x in b {
        c ^= x as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// What a call left for its reply.
#[derive(Debug, Default, Clone)]
struct Pending {
    version: u32,
    procedure: u32,
    handle: Vec<u8>,
    name: Vec<u8>,
    offset: u64,
    gss_integrity: bool,
}

/// One NFSv4 COMPOUND op's arguments, as far as they matter.
enum Op4<'a> {
    PutFh(&'a [u8]),
    Read(u64),
    Write {
        offset: u64,
        stable: u32,
        data: &'a [u8],
    },
    Open(Option<&'a [u8]>),
    Lookup(&'a [u8]),
    Create(&'a [u8]),
    Remove(&'a [u8]),
    Commit,
    Close,
    Other,
}

fn stateid(x: &mut Xdr) -> Option<()> {
    x.skip(16)
}

/// One COMPOUND op: its number and arguments; `None` when it is cut or
/// its layout is not known (the ops after it are not looked at).
fn parse_op4<'a>(x: &mut Xdr<'a>) -> Option<(u32, Op4<'a>)> {
    let op = x.u32()?;
    let v = match op {
        3 | 30 | 52 | 7 | 57 | 58 => {
            // ACCESS, RENEW, SECINFO_NO_NAME: a word or a clientid.
            match op {
                30 | 7 | 57 => x.u64().map(|_| ())?,
                _ => x.u32().map(|_| ())?,
            }
            Op4::Other
        }
        OP4_CLOSE => {
            x.u32()?;
            stateid(x)?;
            Op4::Close
        }
        OP4_COMMIT => {
            x.u64()?;
            x.u32()?;
            Op4::Commit
        }
        OP4_CREATE => {
            match x.u32()? {
                5 => {
                    x.opaque()?;
                }
                3 | 4 => {
                    x.u64()?;
                }
                _ => {}
            }
            let name = x.opaque()?;
            x.fattr4()?;
            Op4::Create(name)
        }
        8 | 45 => {
            stateid(x)?;
            Op4::Other
        }
        9 => {
            x.bitmap()?;
            Op4::Other
        }
        OP4_GETFH | 16 | 23 | OP4_PUTROOTFH | 27 | 31 | 32 => Op4::Other,
        11 | 33 => {
            x.opaque()?;
            Op4::Other
        }
        OP4_LOOKUP => Op4::Lookup(x.opaque()?),
        17 | 37 => {
            x.fattr4()?;
            Op4::Other
        }
        OP4_OPEN => {
            x.u32()?;
            x.u32()?;
            x.u32()?;
            x.u64()?;
            x.opaque()?;
            if x.u32()? == 1 {
                match x.u32()? {
                    0 | 1 => x.fattr4()?,
                    2 => x.skip(8)?,
                    3 => {
                        x.skip(8)?;
                        x.fattr4()?;
                    }
                    _ => return None,
                }
            }
            let name = match x.u32()? {
                0 | 3 => Some(x.opaque()?),
                1 => {
                    x.u32()?;
                    None
                }
                2 => {
                    stateid(x)?;
                    Some(x.opaque()?)
                }
                5 => {
                    stateid(x)?;
                    None
                }
                4 | 6 => None,
                _ => return None,
            };
            Op4::Open(name)
        }
        19 => {
            x.u32()?;
            Op4::Other
        }
        20 => {
            stateid(x)?;
            x.u32()?;
            Op4::Other
        }
        21 => {
            stateid(x)?;
            x.skip(12)?;
            Op4::Other
        }
        OP4_PUTFH => Op4::PutFh(x.opaque()?),
        OP4_READ => {
            stateid(x)?;
            let off = x.u64()?;
            x.u32()?;
            Op4::Read(off)
        }
        26 => {
            x.skip(8 + 8 + 8)?;
            x.bitmap()?;
            Op4::Other
        }
        OP4_REMOVE => Op4::Remove(x.opaque()?),
        29 => {
            x.opaque()?;
            x.opaque()?;
            Op4::Other
        }
        34 => {
            stateid(x)?;
            x.fattr4()?;
            Op4::Other
        }
        35 => {
            x.skip(8)?;
            x.opaque()?;
            x.u32()?;
            x.opaque()?;
            x.opaque()?;
            x.u32()?;
            Op4::Other
        }
        36 => {
            x.skip(16)?;
            Op4::Other
        }
        OP4_WRITE => {
            stateid(x)?;
            let offset = x.u64()?;
            let stable = x.u32()?;
            let data = x.opaque()?;
            Op4::Write {
                offset,
                stable,
                data,
            }
        }
        39 => {
            x.u64()?;
            x.opaque()?;
            Op4::Other
        }
        44 => {
            x.skip(16)?;
            Op4::Other
        }
        53 => {
            x.skip(16 + 12)?;
            x.u32()?;
            Op4::Other
        }
        55 => {
            let n = x.u32()? as usize;
            x.skip(n.checked_mul(16)?)?;
            Op4::Other
        }
        _ => return None,
    };
    Some((op, v))
}

/// An NFSv4 result that matters.
enum Res4<'a> {
    Read { eof: bool, data: &'a [u8] },
    Open,
    GetFh(&'a [u8]),
    Other,
}

fn change_info(x: &mut Xdr) -> Option<()> {
    x.skip(4 + 8 + 8)
}

fn nfsace4(x: &mut Xdr) -> Option<()> {
    x.skip(12)?;
    x.opaque().map(|_| ())
}

/// One COMPOUND result's body (its op and status read).
fn parse_res4<'a>(x: &mut Xdr<'a>, op: u32, status: u32) -> Option<Res4<'a>> {
    let ok = status == 0;
    if op == 34 {
        // SETATTR's attrsset comes whatever the status.
        x.bitmap()?;
        return Some(Res4::Other);
    }
    if !ok {
        return match op {
            35 if status == 10017 => {
                x.opaque()?;
                x.opaque()?;
                Some(Res4::Other)
            }
            _ => Some(Res4::Other),
        };
    }
    Some(match op {
        3 => {
            x.skip(8)?;
            Res4::Other
        }
        OP4_CLOSE | 20 | 21 => {
            stateid(x)?;
            Res4::Other
        }
        OP4_COMMIT => {
            x.skip(8)?;
            Res4::Other
        }
        OP4_CREATE => {
            change_info(x)?;
            x.bitmap()?;
            Res4::Other
        }
        9 => {
            x.fattr4()?;
            Res4::Other
        }
        OP4_GETFH => Res4::GetFh(x.opaque()?),
        11 | OP4_REMOVE => {
            change_info(x)?;
            Res4::Other
        }
        29 => {
            change_info(x)?;
            change_info(x)?;
            Res4::Other
        }
        OP4_OPEN => {
            stateid(x)?;
            change_info(x)?;
            x.u32()?;
            x.bitmap()?;
            match x.u32()? {
                0 => {}
                1 => {
                    stateid(x)?;
                    x.u32()?;
                    nfsace4(x)?;
                }
                2 => {
                    stateid(x)?;
                    x.u32()?;
                    match x.u32()? {
                        1 => x.skip(8)?,
                        2 => x.skip(8)?,
                        _ => return None,
                    }
                    nfsace4(x)?;
                }
                3 => {
                    if matches!(x.u32()?, 1 | 2) {
                        x.u32()?;
                    }
                }
                _ => return None,
            }
            Res4::Open
        }
        OP4_READ => {
            let eof = x.bool()?;
            Res4::Read {
                eof,
                data: x.opaque()?,
            }
        }
        27 => {
            x.opaque()?;
            Res4::Other
        }
        35 => {
            x.skip(16)?;
            Res4::Other
        }
        OP4_WRITE => {
            x.skip(16)?;
            Res4::Other
        }
        53 => {
            x.skip(16 + 20)?;
            Res4::Other
        }
        7 | 8 | 15 | 16 | 17 | 22 | 23 | 24 | 30 | 31 | 32 | 36 | 37 | 39 | 44 | 45 | 57 | 58 => {
            Res4::Other
        }
        _ => return None,
    })
}

/// Per-flow NFS state.
#[derive(Debug)]
pub struct NfsState {
    txs: TxList<NfsTx>,
    transport: Transport,
    /// Stream bytes not yet framed, per direction.
    bufs: [Vec<u8>; 2],
    /// Fragments of the message being reassembled.
    frags: [Vec<u8>; 2],
    /// Bytes of an oversized record still to skip.
    skip: [usize; 2],
    gap: [bool; 2],
    pending: HashMap<u32, Pending>,
    /// File handle to name.
    names: HashMap<Vec<u8>, Vec<u8>>,
    /// The flow's NFS version (the first call's).
    pub version: u16,
    file_bytes: usize,
}

impl NfsState {
    pub fn new(transport: Transport, cfg: &AppLayerConfig) -> Self {
        NfsState {
            txs: TxList::new(cfg.max_transactions),
            transport,
            bufs: Default::default(),
            frags: Default::default(),
            skip: [0, 0],
            gap: [false, false],
            pending: HashMap::new(),
            names: HashMap::new(),
            version: 0,
            file_bytes: 0,
        }
    }

    pub fn tx(&self, id: TxId) -> Option<&NfsTx> {
        self.txs.get(id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &NfsTx> {
        self.txs.txs.iter()
    }

    /// An event on the newest transaction (Suricata's `set_event`).
    fn event(&self, e: NfsEvent, ev: &mut Vec<AppLayerEvent>) {
        ev.push(AppLayerEvent::Nfs(
            e,
            self.txs.txs.back().map(|t| t.common.id),
        ));
    }

    fn new_tx(&mut self, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) -> &mut NfsTx {
        let dropped = self.txs.push(|id| NfsTx {
            common: TxCommon::new(id, ts),
            ..Default::default()
        });
        if dropped {
            self.event(NfsEvent::TooManyTransactions, ev);
        }
        self.txs.txs.back_mut().expect("just pushed")
    }

    fn remember_name(&mut self, handle: &[u8], name: &[u8]) {
        if handle.is_empty() {
            return;
        }
        if self.names.len() >= MAX_TRACKED && !self.names.contains_key(handle) {
            if let Some(k) = self.names.keys().next().cloned() {
                self.names.remove(&k);
            }
        }
        self.names
            .insert(cut(handle, MAX_HANDLE), cut(name, MAX_NAME));
    }

    fn name_of(&self, handle: &[u8]) -> Vec<u8> {
        self.names
            .get(&handle[..handle.len().min(MAX_HANDLE)])
            .cloned()
            .unwrap_or_default()
    }

    fn file_tx_pos(&self, handle: &[u8], dir: Direction) -> Option<usize> {
        self.txs.txs.iter().position(|t| {
            t.file.as_ref().is_some_and(|f| f.dir == Some(dir))
                && t.file_handle == handle
                && !(t.request_done && t.response_done)
        })
    }

    /// Opens a file transaction.
    #[allow(clippy::too_many_arguments)]
    fn new_file_tx(
        &mut self,
        handle: &[u8],
        name: Vec<u8>,
        dir: Direction,
        xid: u32,
        procedure: u32,
        version: u32,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> usize {
        let t = self.new_tx(ts, ev);
        t.file_handle = cut(handle, MAX_HANDLE);
        t.file_name = name;
        t.xid = xid;
        t.procedure = procedure;
        t.version = version as u16;
        t.is_first = true;
        t.file = Some(FileXfer {
            dir: Some(dir),
            ..Default::default()
        });
        self.txs.txs.len() - 1
    }

    /// Puts a chunk into the file transaction at `i`.
    fn file_chunk(&mut self, i: usize, offset: u64, data: &[u8]) {
        let room = MAX_FLOW_FILE_DATA.saturating_sub(self.file_bytes);
        if let Some(f) = self.txs.txs[i].file.as_mut() {
            let before = f.buf.held();
            f.buf.write(offset, data, MAX_FILE_DATA.min(before + room));
            self.file_bytes += f.buf.held() - before;
        }
    }

    fn close_file_tx(&mut self, i: usize, xid: u32) {
        let t = &mut self.txs.txs[i];
        if let Some(f) = t.file.as_mut() {
            f.last_xid = xid;
        }
        t.is_last = true;
        t.request_done = true;
        t.response_done = true;
    }

    /// A WRITE's data, toward the server.
    #[allow(clippy::too_many_arguments)]
    fn write_chunk(
        &mut self,
        call: &Call,
        handle: &[u8],
        offset: u64,
        stable: u32,
        data: &[u8],
        procedure: u32,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if data.is_empty() || data.len() > 16 << 20 {
            return;
        }
        let last = stable == FILE_SYNC;
        let handle = cut(handle, MAX_HANDLE);
        let i = match self.file_tx_pos(&handle, Direction::ToServer) {
            Some(i) => {
                if let Some(f) = self.txs.txs[i].file.as_mut() {
                    f.chunks += 1;
                }
                i
            }
            None => {
                let name = self.name_of(&handle);
                let i = self.new_file_tx(
                    &handle,
                    name,
                    Direction::ToServer,
                    call.xid,
                    procedure,
                    call.version,
                    ts,
                    ev,
                );
                self.txs.txs[i].set_creds(&call.creds);
                i
            }
        };
        self.file_chunk(i, offset, data);
        if last {
            self.close_file_tx(i, call.xid);
        }
    }

    /// A COMMIT (or v4 CLOSE) of a handle closes its WRITE transfer.
    fn commit(&mut self, xid: u32, handle: &[u8], procedure: u32) {
        if let Some(i) = self.file_tx_pos(&cut(handle, MAX_HANDLE), Direction::ToServer) {
            if let Some(f) = self.txs.txs[i].file.as_mut() {
                // Suricata counts the COMMIT as a chunk.
                f.chunks += 1;
                f.additional_procs.push(procedure);
            }
            self.close_file_tx(i, xid);
        }
    }

    /// A READ reply's data, toward the client.
    #[allow(clippy::too_many_arguments)]
    fn read_chunk(
        &mut self,
        p: &Pending,
        r: &Reply,
        status: u32,
        eof: bool,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let handle = cut(&p.handle, MAX_HANDLE);
        // A chunk counts on a transfer already open (as Suricata counts:
        // not the one that opens it).
        let i = match self.file_tx_pos(&handle, Direction::ToClient) {
            Some(i) => {
                if let Some(f) = self.txs.txs[i].file.as_mut() {
                    f.chunks += 1;
                }
                i
            }
            None => {
                let name = self.name_of(&handle);
                let procedure = if p.version == 4 { OP4_READ } else { P3_READ };
                // A transfer opened by a reply has no version of its own
                // in Suricata (0: `nfs.version` does not match it, and a
                // procedure name is looked up as NFSv4's).
                self.new_file_tx(
                    &handle,
                    name,
                    Direction::ToClient,
                    r.xid,
                    procedure,
                    0,
                    ts,
                    ev,
                )
            }
        };
        self.file_chunk(i, p.offset, data);
        if eof {
            let t = &mut self.txs.txs[i];
            t.rpc_status = r.reply_state;
            t.nfs_status = status;
            self.close_file_tx(i, r.xid);
        }
    }

    /// A reply completes the call's transaction.
    fn reply_done(&mut self, r: &Reply, nfs_status: u32, handle: &[u8]) {
        if let Some(t) = self
            .txs
            .txs
            .iter_mut()
            .find(|t| t.file.is_none() && t.xid == r.xid && !t.response_done)
        {
            t.response_done = true;
            t.rpc_status = r.reply_state;
            t.nfs_status = nfs_status;
            if t.file_handle.is_empty() && !handle.is_empty() {
                t.file_handle = cut(handle, MAX_HANDLE);
            }
        }
    }

    fn request_tx(&mut self, c: &Call, p: &Pending, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let t = self.new_tx(ts, ev);
        t.xid = c.xid;
        t.procedure = c.procedure;
        t.version = c.version as u16;
        t.request_done = true;
        t.file_name = p.name.clone();
        t.file_handle = cut(&p.handle, MAX_HANDLE);
        t.set_creds(&c.creds);
    }

    fn call(&mut self, c: Call, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        if c.program != PROGRAM {
            return;
        }
        if !(2..=4).contains(&c.version) {
            self.event(NfsEvent::NonExistingVersion, ev);
            return;
        }
        if self.version == 0 {
            self.version = c.version as u16;
        }
        let mut p = Pending {
            version: c.version,
            procedure: c.procedure,
            gss_integrity: c.creds.gss_integrity,
            ..Default::default()
        };
        let ok = match c.version {
            2 => self.call_v2(&c, &mut p, ts, ev),
            3 => self.call_v3(&c, &mut p, ts, ev),
            _ => self.call_v4(&c, &mut p, ts, ev),
        };
        if ok.is_none() {
            self.event(NfsEvent::MalformedData, ev);
        }
        if self.pending.len() >= MAX_TRACKED && !self.pending.contains_key(&c.xid) {
            if let Some(k) = self.pending.keys().next().copied() {
                self.pending.remove(&k);
            }
        }
        self.pending.insert(c.xid, p);
    }

    fn call_v2(
        &mut self,
        c: &Call,
        p: &mut Pending,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> Option<()> {
        let mut x = Xdr::new(c.args);
        let parsed = if c.procedure == P2_READ {
            (|| {
                p.handle = x.fixed(32)?.to_vec();
                p.offset = x.u32()? as u64;
                Some(())
            })()
        } else {
            Some(())
        };
        self.request_tx(c, p, ts, ev);
        parsed
    }

    fn call_v3(
        &mut self,
        c: &Call,
        p: &mut Pending,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> Option<()> {
        let mut x = Xdr::new(c.args);
        let mut rename_to = None;
        let parsed = (|| -> Option<()> {
            match c.procedure {
                P3_LOOKUP => {
                    x.opaque()?;
                    p.name = cut(x.opaque()?, MAX_NAME);
                }
                P3_ACCESS | P3_GETATTR | P3_READDIRPLUS => {
                    p.handle = x.opaque()?.to_vec();
                    p.name = self.name_of(&p.handle);
                }
                P3_READ => {
                    p.handle = x.opaque()?.to_vec();
                    p.offset = x.u64()?;
                    p.name = self.name_of(&p.handle);
                }
                P3_WRITE => {
                    let h = x.opaque()?;
                    let off = x.u64()?;
                    x.u32()?;
                    let stable = x.u32()?;
                    let data = x.opaque()?;
                    self.write_chunk(c, h, off, stable, data, P3_WRITE, ts, ev);
                }
                P3_CREATE | P3_REMOVE | P3_MKDIR | P3_RMDIR => {
                    p.handle = x.opaque()?.to_vec();
                    p.name = cut(x.opaque()?, MAX_NAME);
                }
                P3_RENAME => {
                    p.handle = x.opaque()?.to_vec();
                    p.name = cut(x.opaque()?, MAX_NAME);
                    x.opaque()?;
                    rename_to = Some(cut(x.opaque()?, MAX_NAME));
                }
                P3_COMMIT => {
                    let h = x.opaque()?;
                    self.commit(c.xid, h, P3_COMMIT);
                }
                _ => {}
            }
            Some(())
        })();
        match c.procedure {
            P3_COMMIT | P3_WRITE => {}
            P3_READ => {
                if parsed.is_some() && self.file_tx_pos(&p.handle, Direction::ToClient).is_none() {
                    let name = p.name.clone();
                    let i = self.new_file_tx(
                        &p.handle.clone(),
                        name,
                        Direction::ToClient,
                        c.xid,
                        P3_READ,
                        3,
                        ts,
                        ev,
                    );
                    self.txs.txs[i].set_creds(&c.creds);
                }
            }
            _ => {
                self.request_tx(c, p, ts, ev);
                if c.procedure == P3_RENAME {
                    if let Some(t) = self.txs.txs.back_mut() {
                        t.rename_to = Some(rename_to.unwrap_or_default());
                    }
                }
            }
        }
        parsed
    }

    fn call_v4(
        &mut self,
        c: &Call,
        p: &mut Pending,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> Option<()> {
        if c.procedure != P4_COMPOUND {
            return Some(());
        }
        let mut x = Xdr::new(c.args);
        x.opaque()?;
        x.u32()?;
        let n = x.u32()? as usize;
        let mut putfh: Option<&[u8]> = None;
        let mut main = 0;
        for _ in 0..n.min(MAX_OPS) {
            let Some((_, op)) = parse_op4(&mut x) else {
                break;
            };
            match op {
                Op4::PutFh(h) => putfh = Some(h),
                Op4::Read(off) => {
                    if let Some(h) = putfh {
                        p.offset = off;
                        p.handle = h.to_vec();
                        p.name = self.name_of(h);
                    }
                }
                Op4::Open(Some(name)) | Op4::Lookup(name) => p.name = cut(name, MAX_NAME),
                Op4::Write {
                    offset,
                    stable,
                    data,
                } => {
                    if let Some(h) = putfh {
                        self.write_chunk(c, h, offset, stable, data, OP4_WRITE, ts, ev);
                    }
                }
                Op4::Commit | Op4::Close => {
                    if let Some(h) = putfh {
                        self.commit(c.xid, h, OP4_COMMIT);
                    }
                }
                Op4::Create(name) => {
                    if let Some(h) = putfh {
                        p.handle = h.to_vec();
                    }
                    p.name = cut(name, MAX_NAME);
                    main = OP4_CREATE;
                }
                Op4::Remove(name) => {
                    p.name = cut(name, MAX_NAME);
                    main = OP4_REMOVE;
                }
                Op4::Open(None) | Op4::Other => {}
            }
        }
        if main != 0 {
            let t = self.new_tx(ts, ev);
            t.xid = c.xid;
            t.procedure = main;
            t.version = 4;
            t.request_done = true;
            t.file_name = p.name.clone();
            t.file_handle = cut(&p.handle, MAX_HANDLE);
            t.set_creds(&c.creds);
        }
        Some(())
    }

    fn reply(&mut self, r: Reply, ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        let Some(mut p) = self.pending.remove(&r.xid) else {
            return;
        };
        let mut results = r.results;
        if p.gss_integrity && r.reply_state == 0 && r.accept_state == 0 {
            let mut w = Xdr::new(results);
            match w.opaque().and_then(|b| {
                let mut i = Xdr::new(b);
                i.u32()?;
                Some(i.rest())
            }) {
                Some(inner) => results = inner,
                None => {
                    self.event(NfsEvent::MalformedData, ev);
                    return;
                }
            }
        }
        let ok = match p.version {
            2 => self.reply_v2(&p, &r, results, ts, ev),
            3 => self.reply_v3(&p, &r, results, ts, ev),
            4 => self.reply_v4(&mut p, &r, results, ts, ev),
            _ => {
                self.event(NfsEvent::UnsupportedVersion, ev);
                Some(())
            }
        };
        if ok.is_none() {
            self.event(NfsEvent::MalformedData, ev);
        }
    }

    fn reply_v2(
        &mut self,
        p: &Pending,
        r: &Reply,
        results: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> Option<()> {
        let mut x = Xdr::new(results);
        let status = x.u32().unwrap_or(0);
        let mut parsed = Some(());
        if p.procedure == P2_READ && status == 0 {
            parsed = (|| {
                x.skip(68)?;
                let data = x.opaque()?;
                self.read_chunk(p, r, status, false, data, ts, ev);
                Some(())
            })();
        }
        self.reply_done(r, status, &[]);
        parsed
    }

    fn reply_v3(
        &mut self,
        p: &Pending,
        r: &Reply,
        results: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> Option<()> {
        let mut x = Xdr::new(results);
        let mut handle: Vec<u8> = Vec::new();
        let status = x.u32().unwrap_or(0);
        let parsed = (|| -> Option<()> {
            if status != 0 {
                if p.procedure == P3_READ {
                    x.post_op_attr()?;
                }
                return Some(());
            }
            match p.procedure {
                P3_LOOKUP => {
                    let h = x.opaque()?;
                    self.remember_name(h, &p.name);
                    handle = h.to_vec();
                }
                P3_CREATE => {
                    let handle_follows = x.bool()?;
                    if handle_follows {
                        let h = x.opaque()?;
                        self.remember_name(h, &p.name);
                        handle = h.to_vec();
                    }
                }
                P3_READ => {
                    x.post_op_attr()?;
                    x.u32()?;
                    let eof = x.bool()?;
                    let data = x.opaque()?;
                    self.read_chunk(p, r, status, eof, data, ts, ev);
                }
                P3_READDIRPLUS => {
                    x.post_op_attr()?;
                    x.skip(8)?;
                    for _ in 0..MAX_TRACKED {
                        if !x.bool()? {
                            break;
                        }
                        x.u64()?;
                        let name = x.opaque()?;
                        x.u64()?;
                        x.post_op_attr()?;
                        if x.bool()? {
                            let h = x.opaque()?;
                            self.remember_name(h, name);
                        }
                    }
                }
                P3_WRITE | P3_COMMIT | P3_REMOVE | P3_RMDIR | P3_MKDIR | P3_RENAME => {
                    // Status only; the rest is attributes.
                    let _ = x.wcc_data();
                }
                _ => {}
            }
            Some(())
        })();
        if p.procedure != P3_READ {
            self.reply_done(r, status, &handle);
        }
        parsed
    }

    fn reply_v4(
        &mut self,
        p: &mut Pending,
        r: &Reply,
        results: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> Option<()> {
        if p.procedure != P4_COMPOUND || r.reply_state != 0 || r.accept_state != 0 {
            return Some(());
        }
        let mut x = Xdr::new(results);
        x.u32()?;
        x.opaque()?;
        let n = x.u32()? as usize;
        let mut name_with_getfh = false;
        let mut main_status = None;
        for _ in 0..n.min(MAX_OPS) {
            let op = x.u32()?;
            let status = x.u32()?;
            let Some(res) = parse_res4(&mut x, op, status) else {
                break;
            };
            match (op, res) {
                (OP4_REMOVE | OP4_CREATE, _) => main_status = Some(status),
                (_, Res4::Read { eof, data }) => {
                    let pp = p.clone();
                    self.read_chunk(&pp, r, status, eof, data, ts, ev);
                }
                (_, Res4::Open) => name_with_getfh = true,
                (_, Res4::GetFh(h)) if name_with_getfh => {
                    let name = p.name.clone();
                    self.remember_name(h, &name);
                }
                (OP4_PUTROOTFH, _) if status == 0 && p.name.is_empty() => {
                    p.name = b"<mount_root>".to_vec();
                }
                _ => {}
            }
            if status != 0 {
                break;
            }
        }
        if let Some(s) = main_status {
            self.reply_done(r, s, &[]);
        }
        Some(())
    }

    /// One whole RPC message.
    fn message(&mut self, dir: Direction, m: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        match dir {
            Direction::ToServer => match parse_call(m) {
                Some(c) => self.call(c, ts, ev),
                None => self.event(NfsEvent::MalformedData, ev),
            },
            Direction::ToClient => match parse_reply(m) {
                Some(r) => self.reply(r, ts, ev),
                None => self.event(NfsEvent::MalformedData, ev),
            },
        }
    }

    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if self.transport == Transport::Udp {
            if data.len() <= MAX_MESSAGE {
                self.message(dir, data, ts, ev);
            } else {
                self.event(NfsEvent::MalformedData, ev);
            }
            return;
        }
        let d = dir.index();
        let mut data = data;
        if self.skip[d] > 0 {
            let n = self.skip[d].min(data.len());
            self.skip[d] -= n;
            data = &data[n..];
            if data.is_empty() {
                return;
            }
        }
        if self.gap[d] {
            let plausible = match dir {
                Direction::ToServer => probe_tcp(dir, data, PORT) == Some(true),
                Direction::ToClient => probe_tcp(dir, data, PORT) == Some(true),
            };
            if !plausible {
                return;
            }
            self.gap[d] = false;
        }
        let mut buf = std::mem::take(&mut self.bufs[d]);
        buf.extend_from_slice(data);
        let mut off = 0;
        while buf.len() - off >= 4 {
            let b = &buf[off..];
            let marker = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let last = marker & 0x8000_0000 != 0;
            let len = (marker & 0x7fff_ffff) as usize;
            if self.frags[d].len() + len > MAX_MESSAGE {
                self.event(NfsEvent::MalformedData, ev);
                self.frags[d].clear();
                let have = (b.len() - 4).min(len);
                self.skip[d] = len - have;
                off += 4 + have;
                continue;
            }
            if b.len() < 4 + len {
                break;
            }
            self.frags[d].extend_from_slice(&b[4..4 + len]);
            off += 4 + len;
            if last {
                let m = std::mem::take(&mut self.frags[d]);
                self.message(dir, &m, ts, ev);
            }
        }
        buf.drain(..off);
        if self.skip[d] > 0 {
            buf.clear();
        }
        self.bufs[d] = buf;
    }

    pub fn on_gap(&mut self, dir: Direction) {
        let d = dir.index();
        self.gap[d] = true;
        self.skip[d] = 0;
        self.bufs[d].clear();
        self.frags[d].clear();
    }
}

impl TxParser for NfsState {
    fn proto(&self) -> AppProto {
        AppProto::Nfs
    }
    fn feed(&mut self, dir: Direction, data: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        NfsState::feed(self, dir, data, ts, ev)
    }
    fn on_gap(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        NfsState::on_gap(self, dir)
    }
    fn finish(&mut self, dir: Direction, _ev: &mut Vec<AppLayerEvent>) {
        self.bufs[dir.index()].clear();
        self.frags[dir.index()].clear();
    }
    fn infos(&self) -> Vec<(&TxCommon, TxProgress)> {
        self.txs.infos()
    }
    fn common(&self, tx: TxId) -> Option<&TxCommon> {
        self.txs.get(tx).map(|t| &t.common)
    }
    fn common_mut(&mut self, tx: TxId) -> Option<&mut TxCommon> {
        self.txs.get_mut(tx).map(|t| &mut t.common)
    }
    fn retain(&mut self, keep: &mut dyn FnMut(&TxCommon, TxProgress) -> bool) {
        let before: usize = self
            .txs
            .txs
            .iter()
            .filter_map(|t| t.file.as_ref().map(|f| f.buf.held()))
            .sum();
        self.txs.retain(keep);
        let after: usize = self
            .txs
            .txs
            .iter()
            .filter_map(|t| t.file.as_ref().map(|f| f.buf.held()))
            .sum();
        self.file_bytes = self.file_bytes.saturating_sub(before - after);
    }
    fn buffers(&self, tx: TxId, id: BufferId, dir: Direction) -> Vec<&[u8]> {
        let Some(t) = self.txs.get(tx) else {
            return Vec::new();
        };
        let Some(f) = t.file.as_ref().filter(|f| f.dir == Some(dir)) else {
            return Vec::new();
        };
        match id {
            BufferId::FileData => vec![f.buf.data()],
            BufferId::FileName => vec![&t.file_name[..]],
            _ => Vec::new(),
        }
    }
    fn uints(&self, tx: TxId, field: UintField, _dir: Direction) -> Vec<u64> {
        let Some(t) = self.txs.get(tx) else {
            return Vec::new();
        };
        match field {
            UintField::NfsProcedure => t.procedures(),
            UintField::NfsVersion => vec![t.version as u64],
            _ => Vec::new(),
        }
    }
    fn eve(&self, tx: TxId) -> Option<Value> {
        self.txs.get(tx).map(|t| t.eve(self.version))
    }
    fn eve_siblings(&self, tx: TxId) -> Vec<(&'static str, Value)> {
        self.txs
            .get(tx)
            .map(|t| vec![("rpc", t.rpc_eve())])
            .unwrap_or_default()
    }
    fn log_filtered(&self, tx: TxId) -> bool {
        // Suricata leaves NFSv2/3 GETATTR out of the transaction log.
        self.version <= 3
            && self
                .txs
                .get(tx)
                .is_some_and(|t| t.procedure == P3_GETATTR && t.file.is_none())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An XDR writer for the tests.
    #[derive(Default)]
    pub struct W(pub Vec<u8>);

    impl W {
        pub fn u32(mut self, v: u32) -> Self {
            self.0.extend_from_slice(&v.to_be_bytes());
            self
        }
        pub fn u64(mut self, v: u64) -> Self {
            self.0.extend_from_slice(&v.to_be_bytes());
            self
        }
        pub fn opaque(mut self, b: &[u8]) -> Self {
            self.0.extend_from_slice(&(b.len() as u32).to_be_bytes());
            self.0.extend_from_slice(b);
            while !self.0.len().is_multiple_of(4) {
                self.0.push(0);
            }
            self
        }
        pub fn raw(mut self, b: &[u8]) -> Self {
            self.0.extend_from_slice(b);
            self
        }
    }

    pub fn call(xid: u32, vers: u32, procedure: u32, args: &[u8]) -> Vec<u8> {
        let cred = W::default()
            .u32(0)
            .opaque(b"client")
            .u32(1000)
            .u32(100)
            .u32(0)
            .0;
        W::default()
            .u32(xid)
            .u32(0)
            .u32(2)
            .u32(PROGRAM)
            .u32(vers)
            .u32(procedure)
            .u32(AUTH_UNIX)
            .opaque(&cred)
            .u32(0)
            .u32(0)
            .raw(args)
            .0
    }

    pub fn reply(xid: u32, results: &[u8]) -> Vec<u8> {
        W::default()
            .u32(xid)
            .u32(1)
            .u32(0)
            .u32(0)
            .u32(0)
            .u32(0)
            .raw(results)
            .0
    }

    pub fn record(m: &[u8]) -> Vec<u8> {
        let mut v = (m.len() as u32 | 0x8000_0000).to_be_bytes().to_vec();
        v.extend_from_slice(m);
        v
    }

    fn tcp() -> NfsState {
        NfsState::new(Transport::Tcp, &AppLayerConfig::default())
    }

    fn feed(s: &mut NfsState, dir: Direction, d: &[u8]) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        s.feed(dir, d, 0, &mut ev);
        ev
    }

    const FH: &[u8] = b"\x01\x02\x03\x04handle-of-file!!";

    #[test]
    fn xdr_reads_padded_opaques() {
        let b = W::default().opaque(b"abcde").u32(7).0;
        assert_eq!(b.len(), 4 + 8 + 4);
        let mut x = Xdr::new(&b);
        assert_eq!(x.opaque(), Some(&b"abcde"[..]));
        assert_eq!(x.u32(), Some(7));
        assert_eq!(x.u32(), None);
        // A length past the end is no opaque.
        assert_eq!(Xdr::new(&W::default().u32(9).raw(b"abc").0).opaque(), None);
    }

    #[test]
    fn call_and_reply_headers() {
        let c = call(0x11, 3, P3_GETATTR, &W::default().opaque(FH).0);
        let p = parse_call(&c).unwrap();
        assert_eq!(
            (p.xid, p.program, p.version, p.procedure),
            (0x11, PROGRAM, 3, 1)
        );
        assert_eq!(p.creds.unix, Some((b"client".to_vec(), 1000, 100)));
        assert_eq!(probe_call(&c), Some(true));
        assert_eq!(probe_call(&c[..10]), None);
        // A mismatch is known early.
        assert_eq!(probe_call(b"GET / HTTP/1.1"), Some(false));
        assert_eq!(
            probe_tcp(Direction::ToServer, b"GETX / HTTP", 2049),
            Some(false)
        );
        let r = reply(0x11, &[0, 0, 0, 0]);
        let p = parse_reply(&r).unwrap();
        assert_eq!((p.xid, p.reply_state, p.accept_state), (0x11, 0, 0));
        assert!(parse_call(&r).is_none());
        assert!(parse_reply(&c).is_none());
        assert_eq!(probe_tcp(Direction::ToServer, &record(&c), 1), Some(true));
        assert_eq!(probe_tcp(Direction::ToClient, &record(&r), 1), Some(false));
        assert_eq!(
            probe_tcp(Direction::ToClient, &record(&r), PORT),
            Some(true)
        );
        // Another RPC program is not NFS.
        let mut other = c.clone();
        other[12..16].copy_from_slice(&100005u32.to_be_bytes());
        assert_eq!(probe_call(&other), Some(false));
    }

    #[test]
    fn lookup_names_the_read_file_and_pairs_by_xid() {
        let mut s = tcp();
        let lookup = call(
            1,
            3,
            P3_LOOKUP,
            &W::default().opaque(b"dir").opaque(b"a.txt").0,
        );
        // Two records in one segment, the second split.
        let read = call(2, 3, P3_READ, &W::default().opaque(FH).u64(0).u32(4096).0);
        let mut both = record(&lookup);
        let r2 = record(&read);
        both.extend_from_slice(&r2[..10]);
        assert!(feed(&mut s, Direction::ToServer, &both).is_empty());
        assert!(feed(&mut s, Direction::ToServer, &r2[10..]).is_empty());
        let lres = W::default().u32(0).opaque(FH).u32(0).u32(0).0;
        feed(&mut s, Direction::ToClient, &record(&reply(1, &lres)));
        let t = s.tx(0).unwrap();
        assert_eq!(t.procedure, P3_LOOKUP);
        assert_eq!(t.file_name, b"a.txt");
        assert!(t.request_done && t.response_done);
        assert_eq!(t.file_handle, FH);
        // The READ's file transaction was opened before the name was known.
        let rres = W::default().u32(0).u32(0).u32(5).u32(1).opaque(b"hello").0;
        feed(&mut s, Direction::ToClient, &record(&reply(2, &rres)));
        let f = s.tx(1).unwrap();
        assert!(f.is_file_tx() && f.is_first && f.is_last);
        assert!(f.response_done);
        assert_eq!(f.file.as_ref().unwrap().buf.data(), b"hello");
        assert_eq!(
            TxParser::buffers(&s, 1, BufferId::FileData, Direction::ToClient),
            vec![&b"hello"[..]]
        );
        assert!(TxParser::buffers(&s, 1, BufferId::FileData, Direction::ToServer).is_empty());
        let e = f.eve(3);
        assert_eq!(e["procedure"], "READ");
        assert_eq!(e["file_tx"], true);
        assert_eq!(e["read"]["last"], true);
        assert_eq!(e["read"]["last_xid"], 2);
        assert_eq!(e["id"], 2);
        assert_eq!(e["hhash"], format!("{:x}", crc32(FH)));
        let rpc = f.rpc_eve();
        assert_eq!(rpc["auth_type"], "UNIX");
        assert_eq!(rpc["creds"]["machine_name"], "client");
        assert_eq!(rpc["creds"]["uid"], 1000);
    }

    #[test]
    fn write_chunks_then_commit_make_one_file() {
        let mut s = tcp();
        // LOOKUP gives the name first.
        let lookup = call(
            1,
            3,
            P3_LOOKUP,
            &W::default().opaque(b"d").opaque(b"up.bin").0,
        );
        feed(&mut s, Direction::ToServer, &record(&lookup));
        let lres = W::default().u32(0).opaque(FH).u32(0).u32(0).0;
        feed(&mut s, Direction::ToClient, &record(&reply(1, &lres)));
        for (xid, off, d) in [(2u32, 0u64, &b"abc"[..]), (3, 3, b"def")] {
            let w = W::default()
                .opaque(FH)
                .u64(off)
                .u32(d.len() as u32)
                .u32(0)
                .opaque(d)
                .0;
            feed(
                &mut s,
                Direction::ToServer,
                &record(&call(xid, 3, P3_WRITE, &w)),
            );
        }
        let f = s.tx(1).unwrap();
        assert_eq!(f.file_name, b"up.bin");
        assert!(!f.request_done);
        let commit = W::default().opaque(FH).u64(0).u32(0).0;
        feed(
            &mut s,
            Direction::ToServer,
            &record(&call(4, 3, P3_COMMIT, &commit)),
        );
        let f = s.tx(1).unwrap();
        assert!(f.request_done && f.is_last);
        assert_eq!(f.file.as_ref().unwrap().buf.data(), b"abcdef");
        assert_eq!(f.procedures(), vec![P3_WRITE as u64, P3_COMMIT as u64]);
        // The second WRITE and the COMMIT (Suricata's count).
        assert_eq!(f.eve(3)["write"]["chunks"], 2);
        assert_eq!(s.transactions().count(), 2);
    }

    #[test]
    fn rename_and_status() {
        let mut s = tcp();
        let args = W::default()
            .opaque(FH)
            .opaque(b"old")
            .opaque(FH)
            .opaque(b"new")
            .0;
        feed(
            &mut s,
            Direction::ToServer,
            &record(&call(9, 3, P3_RENAME, &args)),
        );
        feed(
            &mut s,
            Direction::ToClient,
            &record(&reply(9, &2u32.to_be_bytes())),
        );
        let e = s.tx(0).unwrap().eve(3);
        assert_eq!(e["rename"]["from"], "old");
        assert_eq!(e["rename"]["to"], "new");
        assert_eq!(e["status"], "ERR_NOENT");
        assert_eq!(e["type"], "response");
    }

    #[test]
    fn v4_compound_open_read_and_create() {
        let mut s = tcp();
        // PUTFH, OPEN(CLAIM_NULL "f4.txt"), GETFH.
        let open = W::default()
            .opaque(b"")
            .u32(0)
            .u32(3)
            .u32(OP4_PUTFH)
            .opaque(b"rootfh")
            .u32(OP4_OPEN)
            .u32(0)
            .u32(1)
            .u32(0)
            .u64(7)
            .opaque(b"owner")
            .u32(0)
            .u32(0)
            .opaque(b"f4.txt")
            .u32(OP4_GETFH)
            .0;
        feed(&mut s, Direction::ToServer, &record(&call(1, 4, 1, &open)));
        assert_eq!(s.version, 4);
        // No transaction for an OPEN compound (as Suricata).
        assert_eq!(s.transactions().count(), 0);
        let res = W::default()
            .u32(0)
            .opaque(b"")
            .u32(3)
            .u32(OP4_PUTFH)
            .u32(0)
            .u32(OP4_OPEN)
            .u32(0)
            .raw(&[0; 16])
            .raw(&[0; 20])
            .u32(0)
            .u32(0)
            .u32(0)
            .u32(OP4_GETFH)
            .u32(0)
            .opaque(FH)
            .0;
        feed(&mut s, Direction::ToClient, &record(&reply(1, &res)));
        assert_eq!(s.name_of(FH), b"f4.txt");
        // PUTFH, READ: data in the reply.
        let read = W::default()
            .opaque(b"")
            .u32(0)
            .u32(2)
            .u32(OP4_PUTFH)
            .opaque(FH)
            .u32(OP4_READ)
            .raw(&[0; 16])
            .u64(0)
            .u32(100)
            .0;
        feed(&mut s, Direction::ToServer, &record(&call(2, 4, 1, &read)));
        let res = W::default()
            .u32(0)
            .opaque(b"")
            .u32(2)
            .u32(OP4_PUTFH)
            .u32(0)
            .u32(OP4_READ)
            .u32(0)
            .u32(1)
            .opaque(b"v4 data")
            .0;
        feed(&mut s, Direction::ToClient, &record(&reply(2, &res)));
        let f = s.tx(0).unwrap();
        assert_eq!(f.file_name, b"f4.txt");
        assert_eq!(f.procedure, OP4_READ);
        assert_eq!(f.file.as_ref().unwrap().buf.data(), b"v4 data");
        assert!(f.response_done);
        assert_eq!(f.eve(4)["procedure"], "READ");
        // CREATE makes a transaction.
        let create = W::default()
            .opaque(b"")
            .u32(0)
            .u32(2)
            .u32(OP4_PUTFH)
            .opaque(b"rootfh")
            .u32(OP4_CREATE)
            .u32(2)
            .opaque(b"newdir")
            .u32(0)
            .opaque(b"")
            .0;
        feed(
            &mut s,
            Direction::ToServer,
            &record(&call(3, 4, 1, &create)),
        );
        let t = s.tx(1).unwrap();
        assert_eq!(
            (t.procedure, &t.file_name[..]),
            (OP4_CREATE, &b"newdir"[..])
        );
        assert_eq!(t.uints_for_test(), vec![OP4_CREATE as u64]);
    }

    impl NfsTx {
        fn uints_for_test(&self) -> Vec<u64> {
            self.procedures()
        }
    }

    #[test]
    fn malformed_and_oversized_records() {
        let mut s = tcp();
        // A call whose READ arguments are cut.
        let ev = feed(
            &mut s,
            Direction::ToServer,
            &record(&call(1, 3, P3_LOOKUP, &[0, 0, 0, 9])),
        );
        assert!(ev
            .iter()
            .any(|e| matches!(e, AppLayerEvent::Nfs(NfsEvent::MalformedData, _))));
        // Version 5 does not exist.
        let ev = feed(&mut s, Direction::ToServer, &record(&call(2, 5, 0, &[])));
        assert!(ev
            .iter()
            .any(|e| matches!(e, AppLayerEvent::Nfs(NfsEvent::NonExistingVersion, _))));
        // An oversized record is skipped, and the next one parses.
        let big = (MAX_MESSAGE as u32 + 10) | 0x8000_0000;
        let ev = feed(&mut s, Direction::ToServer, &big.to_be_bytes());
        assert_eq!(ev.len(), 1);
        feed(&mut s, Direction::ToServer, &vec![0u8; MAX_MESSAGE + 10]);
        let before = s.transactions().count();
        feed(&mut s, Direction::ToServer, &record(&call(3, 3, 0, &[])));
        assert_eq!(s.transactions().count(), before + 1);
        assert!(s.bufs[0].is_empty());
    }

    #[test]
    fn gap_resyncs_on_a_record() {
        let mut s = tcp();
        s.on_gap(Direction::ToServer);
        assert!(feed(&mut s, Direction::ToServer, b"garbage after the gap").is_empty());
        feed(&mut s, Direction::ToServer, &record(&call(3, 3, 0, &[])));
        assert_eq!(s.transactions().count(), 1);
    }

    #[test]
    fn udp_messages_and_names() {
        let mut s = NfsState::new(Transport::Udp, &AppLayerConfig::default());
        let mut ev = Vec::new();
        s.feed(Direction::ToServer, &call(5, 2, 4, &[0; 40]), 0, &mut ev);
        s.feed(Direction::ToClient, &reply(5, &[0, 0, 0, 0]), 0, &mut ev);
        let t = s.tx(0).unwrap();
        assert!(t.request_done && t.response_done);
        // NFSv2 procedures are logged by the NFSv3 names (as Suricata).
        assert_eq!(t.eve(2)["procedure"], "ACCESS");
        assert!(probe_udp(Direction::ToServer, &call(5, 2, 4, &[]), 999));
        assert!(!probe_udp(Direction::ToClient, &reply(5, &[]), 999));
        assert_eq!(procedure_by_name(2, "write"), Some(8));
        assert_eq!(procedure_by_name(3, "WRITE"), Some(7));
        assert_eq!(procedure_by_name(4, "WRITE"), Some(38));
        assert_eq!(procedure_string(4, 53), "53");
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn getattr_is_not_logged() {
        let mut s = tcp();
        feed(
            &mut s,
            Direction::ToServer,
            &record(&call(1, 3, P3_GETATTR, &W::default().opaque(FH).0)),
        );
        assert!(TxParser::log_filtered(&s, 0));
    }
}
