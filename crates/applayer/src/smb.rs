//! SMB 1, 2 and 3 over TCP (ports 445 and 139), as Suricata's
//! `rust/src/smb` parses it: NetBIOS session service (NBSS) records,
//! each carrying one SMB1 message (with its AndX chain), one or more
//! compounded SMB2/3 messages, or an SMB3 transform header (encrypted:
//! recognised, counted and skipped).
//!
//! # Transactions
//!
//! A request and its response form a transaction, matched as Suricata
//! matches them: SMB2 by message id, SMB1 by process id and multiplex id.
//! An SMB2 response with `STATUS_PENDING` updates the transaction's
//! status; the final response of the same message id completes it.
//! Reads and writes on a file open a file transaction of their own per
//! file id and direction (writes to the server, reads to the client):
//! its data is put together at the offsets the commands give, in any
//! order, and is what `file.data` inspects; a write over bytes already
//! seen raises `smb.file_overlap` (as in Suricata, whether or not the
//! bytes differ; the first write's bytes are kept). A file transaction is
//! complete once its file is closed (or the stream ends).
//!
//! # DCERPC over named pipes
//!
//! Writes to, reads from and `FSCTL_PIPE_TRANSCEIVE` ioctls on a named
//! pipe (a tree whose share type is a pipe: `IPC$`), and SMB1
//! `TransactNmPipe` transactions, carry DCERPC PDUs. They are fed to one
//! [`DcerpcState`] per flow (Suricata keeps the bound interfaces per SMB
//! state), whose transactions the SMB transactions point to: the
//! `dcerpc.iface`, `dcerpc.opnum` and `dcerpc.stub_data` keywords and
//! the EVE `dcerpc` object of an SMB transaction come from there.
//!
//! # Bounds
//!
//! A record is buffered up to [`MAX_RECORD`] bytes (the rest of a larger
//! one is skipped with `smb.record_overflow`); file data is kept up to
//! [`MAX_FILE_DATA`] bytes per file and [`MAX_FLOW_FILE_DATA`] per flow;
//! names are cut at [`MAX_NAME`] bytes; the maps of open files, trees
//! and outstanding reads hold at most [`MAX_TRACKED`] entries;
//! transactions are capped by `max_transactions`. A gap, or a record that
//! is not NBSS, loses the framing of that direction until an NBSS header
//! followed by an SMB signature is found again (Suricata's resync).

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde_json::Value;

use crate::dcerpc::DcerpcState;
use crate::events::{AppLayerEvent, SmbEvent};
use crate::state::{TxCommon, TxProgress};
use crate::{AppLayerConfig, BufferId, Direction, Timestamp, TxId};

/// Largest record buffered (header included).
pub const MAX_RECORD: usize = 1 << 20;
/// File data kept per file.
pub const MAX_FILE_DATA: usize = 1 << 20;
/// File data kept per flow.
pub const MAX_FLOW_FILE_DATA: usize = 8 << 20;
/// Longest name (share, file, NTLMSSP field) kept.
pub const MAX_NAME: usize = 1024;
/// Most entries in each of the maps of trees, files and reads.
pub const MAX_TRACKED: usize = 1024;
/// Out-of-order pieces held per file.
const MAX_CHUNKS: usize = 256;
/// Commands followed in one AndX chain or SMB2 compound.
const MAX_CHAIN: usize = 16;

const SMB1_COMMAND_CLOSE: u8 = 0x04;
const SMB1_COMMAND_TRANS: u8 = 0x25;
const SMB1_COMMAND_TRANS2: u8 = 0x32;
const SMB1_COMMAND_READ_ANDX: u8 = 0x2e;
const SMB1_COMMAND_WRITE_ANDX: u8 = 0x2f;
const SMB1_COMMAND_NEGOTIATE: u8 = 0x72;
const SMB1_COMMAND_SESSION_SETUP_ANDX: u8 = 0x73;
const SMB1_COMMAND_TREE_CONNECT_ANDX: u8 = 0x75;
const SMB1_COMMAND_NT_CREATE_ANDX: u8 = 0xa2;

const SMB2_NEGOTIATE: u16 = 0;
const SMB2_SESSION_SETUP: u16 = 1;
const SMB2_TREE_CONNECT: u16 = 3;
const SMB2_CREATE: u16 = 5;
const SMB2_CLOSE: u16 = 6;
const SMB2_READ: u16 = 8;
const SMB2_WRITE: u16 = 9;
const SMB2_IOCTL: u16 = 11;
const SMB2_GET_INFO: u16 = 16;
const SMB2_SET_INFO: u16 = 17;

const STATUS_PENDING: u32 = 0x103;
const FSCTL_PIPE_TRANSCEIVE: u32 = 0x0011_c017;

/// `prefix` followed by `name`, in one allocation.
fn prefixed(prefix: &str, name: &str) -> String {
    let mut s = String::with_capacity(prefix.len() + name.len());
    s.push_str(prefix);
    s.push_str(name);
    s
}

/// SMB1 command names (Suricata's `smb1_command_string`).
pub fn smb1_command_name(c: u8) -> String {
    let n = match c {
        0x00 => "CREATE_DIRECTORY",
        0x01 => "DELETE_DIRECTORY",
        0x02 => "OPEN",
        0x03 => "CREATE",
        0x04 => "CLOSE",
        0x05 => "FLUSH",
        0x06 => "DELETE",
        0x07 => "RENAME",
        0x08 => "QUERY_INFORMATION",
        0x09 => "SET_INFORMATION",
        0x0a => "READ",
        0x0b => "WRITE",
        0x0c => "LOCK_BYTE_RANGE",
        0x0d => "UNLOCK_BYTE_RANGE",
        0x10 => "CHECK_DIRECTORY",
        0x12 => "SEEK",
        0x1a => "READ_RAW",
        0x1d => "WRITE_RAW",
        0x22 => "SET_INFORMATION2",
        0x23 => "QUERY_INFORMATION2",
        0x24 => "LOCKING_ANDX",
        0x25 => "TRANS",
        0x26 => "TRANS_SECONDARY",
        0x27 => "IOCTL",
        0x2b => "ECHO",
        0x2c => "WRITE_AND_CLOSE",
        0x2d => "OPEN_ANDX",
        0x2e => "READ_ANDX",
        0x2f => "WRITE_ANDX",
        0x31 => "CLOSE_AND_TREE_DISC",
        0x32 => "TRANS2",
        0x33 => "TRANS2_SECONDARY",
        0x34 => "FIND_CLOSE2",
        0x70 => "TREE_CONNECT",
        0x71 => "TREE_DISCONNECT",
        0x72 => "NEGOTIATE_PROTOCOL",
        0x73 => "SESSION_SETUP_ANDX",
        0x74 => "LOGOFF_ANDX",
        0x75 => "TREE_CONNECT_ANDX",
        0x80 => "QUERY_INFORMATION_DISK",
        0x81 => "SEARCH",
        0xa0 => "NT_TRANS",
        0xa1 => "NT_TRANS_SECONDARY",
        0xa2 => "NT_CREATE_ANDX",
        0xa4 => "NT_CANCEL",
        0xa5 => "NT_RENAME",
        _ => return format!("SMB1_COMMAND_UNKNOWN_{c:#04x}"),
    };
    prefixed("SMB1_COMMAND_", n)
}

/// SMB2 command names (Suricata's `smb2_command_string`).
pub fn smb2_command_name(c: u16) -> String {
    let n = match c {
        0 => "NEGOTIATE_PROTOCOL",
        1 => "SESSION_SETUP",
        2 => "SESSION_LOGOFF",
        3 => "TREE_CONNECT",
        4 => "TREE_DISCONNECT",
        5 => "CREATE",
        6 => "CLOSE",
        7 => "FLUSH",
        8 => "READ",
        9 => "WRITE",
        10 => "LOCK",
        11 => "IOCTL",
        12 => "CANCEL",
        13 => "KEEPALIVE",
        14 => "FIND",
        15 => "CHANGE_NOTIFY",
        16 => "GET_INFO",
        17 => "SET_INFO",
        18 => "OPLOCK_BREAK",
        _ => return format!("SMB2_COMMAND_UNKNOWN_{c:#06x}"),
    };
    prefixed("SMB2_COMMAND_", n)
}

/// NTSTATUS names of the common codes.
pub fn status_name(s: u32) -> &'static str {
    match s {
        0 => "STATUS_SUCCESS",
        0x103 => "STATUS_PENDING",
        0x8000_0005 => "STATUS_BUFFER_OVERFLOW",
        0x8000_0006 => "STATUS_NO_MORE_FILES",
        0xc000_0001 => "STATUS_UNSUCCESSFUL",
        0xc000_0002 => "STATUS_NOT_IMPLEMENTED",
        0xc000_0008 => "STATUS_INVALID_HANDLE",
        0xc000_000d => "STATUS_INVALID_PARAMETER",
        0xc000_000f => "STATUS_NO_SUCH_FILE",
        0xc000_0010 => "STATUS_INVALID_DEVICE_REQUEST",
        0xc000_0011 => "STATUS_END_OF_FILE",
        0xc000_0016 => "STATUS_MORE_PROCESSING_REQUIRED",
        0xc000_0022 => "STATUS_ACCESS_DENIED",
        0xc000_0023 => "STATUS_BUFFER_TOO_SMALL",
        0xc000_0034 => "STATUS_OBJECT_NAME_NOT_FOUND",
        0xc000_0035 => "STATUS_OBJECT_NAME_COLLISION",
        0xc000_003a => "STATUS_OBJECT_PATH_NOT_FOUND",
        0xc000_0043 => "STATUS_SHARING_VIOLATION",
        0xc000_006d => "STATUS_LOGON_FAILURE",
        0xc000_00b5 => "STATUS_IO_TIMEOUT",
        0xc000_00ba => "STATUS_FILE_IS_A_DIRECTORY",
        0xc000_00bb => "STATUS_NOT_SUPPORTED",
        0xc000_00c9 => "STATUS_NETWORK_NAME_DELETED",
        0xc000_00cc => "STATUS_BAD_NETWORK_NAME",
        0xc000_0120 => "STATUS_CANCELLED",
        0xc000_0128 => "STATUS_FILE_CLOSED",
        0xc000_0203 => "STATUS_USER_SESSION_DELETED",
        0xc000_0225 => "STATUS_NOT_FOUND",
        0xc000_014b => "STATUS_PIPE_BROKEN",
        0xc000_00b0 => "STATUS_PIPE_DISCONNECTED",
        0xc000_00d9 => "STATUS_PIPE_EMPTY",
        0xc000_0033 => "STATUS_OBJECT_NAME_INVALID",
        _ => "UNKNOWN",
    }
}

fn ioctl_name(code: u32) -> String {
    match code {
        0x0006_0194 => "FSCTL_DFS_GET_REFERRALS".into(),
        0x0011_c017 => "FSCTL_PIPE_TRANSCEIVE".into(),
        0x0011_0018 => "FSCTL_PIPE_WAIT".into(),
        0x0011_400c => "FSCTL_PIPE_PEEK".into(),
        0x0014_0204 => "FSCTL_VALIDATE_NEGOTIATE_INFO".into(),
        0x0014_01fc => "FSCTL_QUERY_NETWORK_INTERFACE_INFO".into(),
        0x0014_4064 => "FSCTL_SRV_ENUMERATE_SNAPSHOTS".into(),
        0x0014_0078 => "FSCTL_SRV_REQUEST_RESUME_KEY".into(),
        0x0009_00c0 => "FSCTL_CREATE_OR_GET_OBJECT_ID".into(),
        _ => format!("FSCTL_UNKNOWN_{code:#010x}"),
    }
}

fn disposition_name(d: u32) -> &'static str {
    match d {
        0 => "FILE_SUPERSEDE",
        1 => "FILE_OPEN",
        2 => "FILE_CREATE",
        3 => "FILE_OPEN_IF",
        4 => "FILE_OVERWRITE",
        5 => "FILE_OVERWRITE_IF",
        _ => "UNKNOWN",
    }
}

fn dialect_name(d: u16) -> String {
    match d {
        0x0202 => "2.02".into(),
        0x0210 => "2.10".into(),
        0x0222 => "2.22".into(),
        0x0224 => "2.24".into(),
        0x02ff => "2.??".into(),
        0x0300 => "3.00".into(),
        0x0302 => "3.02".into(),
        0x0310 => "3.10".into(),
        0x0311 => "3.11".into(),
        _ => format!("{d:#06x}"),
    }
}

fn u16le(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}
fn u32le(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}
fn u64le(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}
fn slice(b: &[u8], at: usize, len: usize) -> Option<&[u8]> {
    b.get(at..at.checked_add(len)?)
}

/// UTF-16LE to UTF-8 (lossy), stopping at a NUL, cut at [`MAX_NAME`].
fn utf16(b: &[u8]) -> Vec<u8> {
    let units: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    let mut s = String::from_utf16_lossy(&units).into_bytes();
    s.truncate(MAX_NAME);
    s
}

/// A NUL-terminated string at `at` (UTF-16LE when `unicode`) and the
/// offset just past its terminator.
fn cstr(b: &[u8], at: usize, unicode: bool) -> Option<(Vec<u8>, usize)> {
    let rest = b.get(at..)?;
    if unicode {
        let n = rest
            .chunks_exact(2)
            .position(|c| c == [0, 0])
            .unwrap_or(rest.len() / 2);
        Some((utf16(&rest[..n * 2]), at + n * 2 + 2))
    } else {
        let n = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        let mut v = rest[..n].to_vec();
        v.truncate(MAX_NAME);
        Some((v, at + n + 1))
    }
}

/// Windows FILETIME (100 ns since 1601) to Unix seconds.
fn filetime(t: u64) -> i64 {
    (t / 10_000_000) as i64 - 11_644_473_600
}

/// A GUID as Suricata prints it (`guid_to_string`: byte pairs swapped
/// after the first eight bytes).
fn guid(b: &[u8]) -> String {
    if b.len() < 16 {
        return String::new();
    }
    let mut s = String::with_capacity(36);
    for (n, &i) in [3, 2, 1, 0, 5, 4, 7, 6, 9, 8, 11, 10, 15, 14, 13, 12]
        .iter()
        .enumerate()
    {
        if matches!(n, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        crate::push_hex_lower(&mut s, &b[i..=i]);
    }
    s
}

/// NTLMSSP fields of an AUTHENTICATE message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ntlmssp {
    pub domain: Vec<u8>,
    pub user: Vec<u8>,
    pub host: Vec<u8>,
    /// `major.minor build N rev R` when the version field is present.
    pub version: Option<String>,
}

/// An NTLMSSP message whose fields point outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MalformedNtlmssp;

/// Finds an NTLMSSP message in a security blob (SPNEGO wrapped or not)
/// and parses it when it is an AUTHENTICATE (type 3). `Err` when it is
/// one whose fields point outside the message.
pub fn parse_ntlmssp(blob: &[u8]) -> Result<Option<Ntlmssp>, MalformedNtlmssp> {
    let Some(at) = memchr::memmem::find(blob, b"NTLMSSP\0") else {
        return Ok(None);
    };
    let m = &blob[at..];
    if u32le(m, 8) != Some(3) {
        return Ok(None);
    }
    let flags = u32le(m, 60).ok_or(MalformedNtlmssp)?;
    let unicode = flags & 1 != 0;
    let field = |off: usize| -> Result<Vec<u8>, MalformedNtlmssp> {
        let len = u16le(m, off).ok_or(MalformedNtlmssp)? as usize;
        let o = u32le(m, off + 4).ok_or(MalformedNtlmssp)? as usize;
        let b = slice(m, o, len).ok_or(MalformedNtlmssp)?;
        Ok(if unicode {
            utf16(b)
        } else {
            let mut v = b.to_vec();
            v.truncate(MAX_NAME);
            v
        })
    };
    let domain = field(28)?;
    let user = field(36)?;
    let host = field(44)?;
    let version = if flags & 0x0200_0000 != 0 {
        slice(m, 64, 8).map(|v| {
            format!(
                "{}.{} build {} rev {}",
                v[0],
                v[1],
                u16::from_le_bytes([v[2], v[3]]),
                v[7]
            )
        })
    } else {
        None
    };
    Ok(Some(Ntlmssp {
        domain,
        user,
        host,
        version,
    }))
}

/// File data put together from pieces at offsets.
#[derive(Debug, Default)]
pub struct FileBuf {
    /// Contiguous data from offset 0.
    data: Vec<u8>,
    /// Pieces beyond the contiguous end, by offset.
    chunks: BTreeMap<u64, Vec<u8>>,
    held: usize,
    /// Data was dropped (caps).
    pub truncated: bool,
}

impl FileBuf {
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Bytes held (contiguous and pending).
    pub fn held(&self) -> usize {
        self.data.len() + self.held
    }

    /// Puts `d` at `off`, keeping at most `cap` bytes in all. Returns
    /// whether it overlaps data already seen (Suricata raises
    /// `file_overlap` for any write below what it tracked, whatever the
    /// bytes: a rewrite of the same byte is an evasion attempt too).
    /// Data already there is kept (first write wins).
    pub fn write(&mut self, off: u64, d: &[u8], cap: usize) -> bool {
        let end = off.saturating_add(d.len() as u64);
        let overlap = (off < self.data.len() as u64 && !d.is_empty())
            || self
                .chunks
                .range(..end)
                .any(|(&o, c)| o + c.len() as u64 > off);
        self.place(off, d, cap);
        while let Some((&o, _)) = self.chunks.first_key_value() {
            if o > self.data.len() as u64 {
                break;
            }
            let Some(c) = self.chunks.remove(&o) else {
                break;
            };
            self.held -= c.len();
            self.append(o, &c, cap);
        }
        overlap
    }

    fn place(&mut self, off: u64, d: &[u8], cap: usize) {
        if off <= self.data.len() as u64 {
            return self.append(off, d, cap);
        }
        if self.chunks.contains_key(&off) {
            return;
        }
        if self.chunks.len() >= MAX_CHUNKS || self.held() + d.len() > cap {
            self.truncated = true;
            return;
        }
        self.held += d.len();
        self.chunks.insert(off, d.to_vec());
    }

    fn append(&mut self, off: u64, d: &[u8], cap: usize) {
        let have = self.data.len() as u64;
        let over = ((have - off) as usize).min(d.len());
        let rest = &d[over..];
        let room = cap.saturating_sub(self.held());
        if rest.len() > room {
            self.truncated = true;
        }
        self.data.extend_from_slice(&rest[..rest.len().min(room)]);
    }
}

/// What a transaction is about.
#[derive(Debug, Default)]
pub enum SmbTxKind {
    #[default]
    Generic,
    Negotiate {
        client_dialects: Vec<String>,
        client_guid: Option<String>,
        server_guid: Option<String>,
        max_read: Option<u32>,
        max_write: Option<u32>,
    },
    SessionSetup {
        ntlmssp: Option<Ntlmssp>,
        /// Native OS and LAN manager of the request and the response (SMB1).
        native: [Option<(Vec<u8>, Vec<u8>)>; 2],
    },
    TreeConnect {
        share: Vec<u8>,
        /// Share type of the response (`None` until then).
        pipe: Option<bool>,
        share_type: Option<&'static str>,
        service: [Option<Vec<u8>>; 2],
    },
    Create {
        filename: Vec<u8>,
        disposition: u32,
        times: Option<[u64; 4]>,
        size: u64,
        fid: Vec<u8>,
    },
    Ioctl {
        function: u32,
    },
    File {
        fid: Vec<u8>,
        dir: Direction,
        name: Vec<u8>,
        share: Vec<u8>,
        buf: FileBuf,
    },
}

/// One SMB transaction.
#[derive(Debug)]
pub struct SmbTx {
    pub(crate) common: TxCommon,
    /// 1 (SMB1) or 2 (SMB2/3): the version of the request.
    pub version: u8,
    pub command: u16,
    /// Matching key (SMB2 message id, SMB1 pid << 16 | mid).
    key: u64,
    pub status: Option<u32>,
    pub session_id: u64,
    pub tree_id: u32,
    pub req_done: bool,
    pub resp_done: bool,
    pub kind: SmbTxKind,
    /// The DCERPC transaction (in the flow's [`DcerpcState`]) this one
    /// carries.
    pub dcerpc: Option<TxId>,
}

impl SmbTx {
    pub fn id(&self) -> TxId {
        self.common.id
    }

    pub fn progress(&self) -> TxProgress {
        TxProgress {
            request_complete: self.req_done,
            response_complete: self.resp_done,
        }
    }

    fn command_name(&self) -> String {
        if self.version == 1 {
            smb1_command_name(self.command as u8)
        } else {
            smb2_command_name(self.command)
        }
    }

    /// `smb.share` / `smb.named_pipe` / `smb.ntlmssp_*` (requests) and
    /// `file.data` / `file.name` (the file's direction).
    pub fn buffer(&self, id: BufferId, dir: Direction) -> Option<&[u8]> {
        match (&self.kind, id) {
            (SmbTxKind::TreeConnect { share, pipe, .. }, BufferId::SmbShare) => {
                (dir == Direction::ToServer && *pipe != Some(true)).then_some(&share[..])
            }
            (SmbTxKind::TreeConnect { share, pipe, .. }, BufferId::SmbNamedPipe) => {
                (dir == Direction::ToServer && *pipe == Some(true)).then_some(&share[..])
            }
            (
                SmbTxKind::SessionSetup {
                    ntlmssp: Some(n), ..
                },
                BufferId::SmbNtlmsspUser,
            ) => (dir == Direction::ToServer).then_some(&n.user[..]),
            (
                SmbTxKind::SessionSetup {
                    ntlmssp: Some(n), ..
                },
                BufferId::SmbNtlmsspDomain,
            ) => (dir == Direction::ToServer).then_some(&n.domain[..]),
            (SmbTxKind::File { dir: d, buf, .. }, BufferId::FileData) => {
                (*d == dir && !buf.data.is_empty()).then_some(buf.data())
            }
            (SmbTxKind::File { dir: d, name, .. }, BufferId::FileName) => {
                (*d == dir).then_some(&name[..])
            }
            _ => None,
        }
    }
}

/// Framing of one direction.
#[derive(Debug, Default)]
struct Framing {
    hdr: [u8; 4],
    hdr_len: usize,
    /// The record being read.
    rec: Vec<u8>,
    /// Its length (from the NBSS header).
    want: usize,
    /// Bytes still to skip (a non-message NBSS record, the rest of an
    /// oversized one).
    skip: usize,
    /// Looking for the next NBSS + SMB header.
    lost: bool,
    /// The last bytes seen while lost (a header can straddle chunks).
    tail: Vec<u8>,
}

/// A tree the client connected to.
#[derive(Debug, Clone, Default)]
struct Tree {
    share: Vec<u8>,
    pipe: bool,
}

/// A file (or pipe) the client opened.
#[derive(Debug, Clone, Default)]
struct OpenFile {
    name: Vec<u8>,
    share: Vec<u8>,
    pipe: bool,
}

/// Per-flow SMB state.
#[derive(Debug)]
pub struct SmbState {
    max_tx: usize,
    framing: [Framing; 2],
    txs: VecDeque<SmbTx>,
    next_id: TxId,
    /// Negotiated dialect, as Suricata names it.
    dialect: Option<String>,
    /// SMB1 dialects offered (the response picks one by index).
    smb1_dialects: Vec<String>,
    negotiated: bool,
    trees: HashMap<(u8, u32), Tree>,
    files: HashMap<Vec<u8>, OpenFile>,
    /// Outstanding reads: key -> (file id, offset).
    reads: HashMap<u64, (Vec<u8>, u64)>,
    /// Outstanding creates / tree connects: key -> share / file name.
    file_bytes: usize,
    /// DCERPC over named pipes.
    pub dcerpc: DcerpcState,
    /// Records parsed per direction.
    pub records: [u64; 2],
    /// SMB3 transform (encrypted) records skipped.
    pub encrypted: u64,
    /// Malformed records seen.
    pub malformed: u64,
}

impl SmbState {
    pub fn new(cfg: &AppLayerConfig) -> Self {
        SmbState {
            max_tx: cfg.max_transactions.max(1),
            framing: [Framing::default(), Framing::default()],
            txs: VecDeque::new(),
            next_id: 0,
            dialect: None,
            smb1_dialects: Vec::new(),
            negotiated: false,
            trees: HashMap::new(),
            files: HashMap::new(),
            reads: HashMap::new(),
            file_bytes: 0,
            dcerpc: DcerpcState::new(cfg),
            records: [0; 2],
            encrypted: 0,
            malformed: 0,
        }
    }

    pub fn transactions(&self) -> impl Iterator<Item = &SmbTx> {
        self.txs.iter()
    }

    pub fn tx(&self, id: TxId) -> Option<&SmbTx> {
        self.txs.iter().find(|t| t.common.id == id)
    }

    pub(crate) fn tx_mut(&mut self, id: TxId) -> Option<&mut SmbTx> {
        self.txs.iter_mut().find(|t| t.common.id == id)
    }

    /// Drops the transactions `keep` rejects, and the DCERPC
    /// transactions no SMB transaction points to any more.
    pub(crate) fn retain(&mut self, keep: impl FnMut(&SmbTx) -> bool) {
        self.txs.retain(keep);
        let live: Vec<TxId> = self.txs.iter().filter_map(|t| t.dcerpc).collect();
        self.dcerpc
            .retain(|d| live.contains(&d.id()) || !(d.req_done && d.resp_done));
    }

    /// The DCERPC transaction an SMB transaction carries.
    pub fn dcerpc_tx(&self, tx: TxId) -> Option<TxId> {
        self.tx(tx)?.dcerpc
    }

    fn event(e: SmbEvent, tx: Option<TxId>, ev: &mut Vec<AppLayerEvent>) {
        ev.push(AppLayerEvent::Smb(e, tx));
    }

    fn new_tx(
        &mut self,
        ts: Timestamp,
        version: u8,
        command: u16,
        key: u64,
        ev: &mut Vec<AppLayerEvent>,
    ) -> usize {
        if self.txs.len() >= self.max_tx {
            // The oldest goes, as in the other parsers.
            self.txs.pop_front();
            Self::event(SmbEvent::TooManyTransactions, None, ev);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.txs.push_back(SmbTx {
            common: TxCommon::new(id, ts),
            version,
            command,
            key,
            status: None,
            session_id: 0,
            tree_id: 0,
            req_done: true,
            resp_done: false,
            kind: SmbTxKind::Generic,
            dcerpc: None,
        });
        self.txs.len() - 1
    }

    /// The open transaction a response answers.
    fn find_open(&self, version: u8, key: u64) -> Option<usize> {
        self.txs.iter().position(|t| {
            t.version == version
                && t.key == key
                && !t.resp_done
                && !matches!(t.kind, SmbTxKind::File { .. })
        })
    }

    /// Stream data of one direction, in pieces of any size.
    pub fn feed(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let di = dir.index();
        let mut pos = 0;
        while pos < data.len() {
            let f = &mut self.framing[di];
            if f.lost {
                let mut comb = std::mem::take(&mut f.tail);
                let tl = comb.len();
                comb.extend_from_slice(&data[pos..]);
                match find_sync(&comb) {
                    Some(i) => {
                        f.lost = false;
                        f.hdr_len = 0;
                        f.skip = 0;
                        if i < tl {
                            // The header starts in the kept tail.
                            let head = comb[i..tl].to_vec();
                            self.frame(dir, &head, ts, ev);
                        } else {
                            pos += i - tl;
                        }
                        continue;
                    }
                    None => {
                        let keep = comb.len().min(7);
                        f.tail = comb[comb.len() - keep..].to_vec();
                        return;
                    }
                }
            }
            let n = self.frame(dir, &data[pos..], ts, ev);
            pos += n.max(1).min(data.len() - pos);
        }
    }

    /// Consumes framed bytes until the data ends or framing is lost;
    /// returns how many were used.
    fn frame(
        &mut self,
        dir: Direction,
        data: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) -> usize {
        let di = dir.index();
        let mut pos = 0;
        while pos < data.len() {
            let f = &mut self.framing[di];
            if f.lost {
                return pos;
            }
            if f.skip > 0 {
                let n = f.skip.min(data.len() - pos);
                f.skip -= n;
                pos += n;
                continue;
            }
            if f.hdr_len < 4 {
                let n = (4 - f.hdr_len).min(data.len() - pos);
                f.hdr[f.hdr_len..f.hdr_len + n].copy_from_slice(&data[pos..pos + n]);
                f.hdr_len += n;
                pos += n;
                if f.hdr_len < 4 {
                    continue;
                }
                // 24-bit length: NBSS's 17 bits, or SMB2's direct TCP
                // transport (whose messages can be larger).
                let len = (usize::from(f.hdr[1]) << 16)
                    | (usize::from(f.hdr[2]) << 8)
                    | usize::from(f.hdr[3]);
                match f.hdr[0] {
                    0x00 => {
                        f.want = len;
                        f.rec.clear();
                        if len == 0 {
                            f.hdr_len = 0;
                        }
                    }
                    // Session request, positive / negative response,
                    // retarget, keep-alive: skipped.
                    0x81..=0x85 => {
                        f.skip = len;
                        f.hdr_len = 0;
                    }
                    _ => {
                        f.lost = true;
                        f.hdr_len = 0;
                        self.malformed += 1;
                        Self::event(SmbEvent::MalformedData, None, ev);
                        return pos;
                    }
                }
                continue;
            }
            let room = f.want.min(MAX_RECORD) - f.rec.len();
            let n = room.min(data.len() - pos);
            f.rec.extend_from_slice(&data[pos..pos + n]);
            pos += n;
            if f.rec.len() < f.want.min(MAX_RECORD) {
                continue;
            }
            let truncated = f.want > MAX_RECORD;
            if truncated {
                f.skip = f.want - MAX_RECORD;
            }
            f.hdr_len = 0;
            let rec = std::mem::take(&mut f.rec);
            if truncated {
                Self::event(SmbEvent::RecordOverflow, None, ev);
            }
            self.records[di] += 1;
            self.record(dir, &rec, ts, ev);
        }
        pos
    }

    /// One complete NBSS session message.
    fn record(&mut self, dir: Direction, rec: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        match rec.get(..4) {
            Some(b"\xffSMB") => self.smb1(dir, rec, ts, ev),
            Some(b"\xfeSMB") => {
                let mut start = 0;
                for _ in 0..MAX_CHAIN {
                    let Some(msg) = rec.get(start..) else { break };
                    let next = u32le(msg, 20).unwrap_or(0) as usize;
                    let end = if next >= 64 && next < msg.len() {
                        next
                    } else {
                        msg.len()
                    };
                    self.smb2(dir, &msg[..end], ts, ev);
                    if end == msg.len() || next == 0 {
                        break;
                    }
                    start += next;
                    if rec.get(start..start + 4) != Some(b"\xfeSMB") {
                        self.malformed += 1;
                        Self::event(SmbEvent::MalformedData, None, ev);
                        break;
                    }
                }
            }
            Some(b"\xfdSMB") => self.encrypted += 1,
            _ => {
                self.malformed += 1;
                Self::event(SmbEvent::MalformedData, None, ev);
            }
        }
    }

    fn wrong_way(is_resp: bool, dir: Direction, ev: &mut Vec<AppLayerEvent>) -> bool {
        match (is_resp, dir) {
            (true, Direction::ToServer) => {
                Self::event(SmbEvent::ResponseToServer, None, ev);
                true
            }
            (false, Direction::ToClient) => {
                Self::event(SmbEvent::RequestToClient, None, ev);
                true
            }
            _ => false,
        }
    }

    /// One SMB2/3 message (header and body; offsets in it count from
    /// the header).
    fn smb2(&mut self, dir: Direction, m: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        if m.len() < 64 || u16le(m, 4) != Some(64) {
            self.malformed += 1;
            Self::event(SmbEvent::MalformedData, None, ev);
            return;
        }
        let status = u32le(m, 8).unwrap_or(0);
        let command = u16le(m, 12).unwrap_or(0);
        let flags = u32le(m, 16).unwrap_or(0);
        let msg_id = u64le(m, 24).unwrap_or(0);
        let is_async = flags & 2 != 0;
        let tree_id = if is_async {
            0
        } else {
            u32le(m, 36).unwrap_or(0)
        };
        let session_id = u64le(m, 40).unwrap_or(0);
        let is_resp = flags & 1 != 0;
        if Self::wrong_way(is_resp, dir, ev) {
            return;
        }
        let b = &m[64..];
        if !is_resp {
            self.smb2_request(m, b, command, msg_id, tree_id, session_id, ts, ev);
        } else {
            self.smb2_response(m, b, command, status, msg_id, tree_id, session_id, ts, ev);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn smb2_request(
        &mut self,
        m: &[u8],
        b: &[u8],
        command: u16,
        msg_id: u64,
        tree_id: u32,
        session_id: u64,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        match command {
            SMB2_READ => {
                let (Some(off), Some(fid)) = (u64le(b, 8), slice(b, 16, 16)) else {
                    return self.malformed(ev);
                };
                if self.reads.len() < MAX_TRACKED {
                    self.reads.insert(msg_id, (fid.to_vec(), off));
                }
                return;
            }
            SMB2_WRITE => {
                let (Some(doff), Some(len), Some(off), Some(fid)) =
                    (u16le(b, 2), u32le(b, 4), u64le(b, 8), slice(b, 16, 16))
                else {
                    return self.malformed(ev);
                };
                let data = m
                    .get(usize::from(doff)..)
                    .map(|d| &d[..d.len().min(len as usize)])
                    .unwrap_or(&[]);
                let fid = fid.to_vec();
                if !self.files.get(&fid).is_some_and(|f| f.pipe) {
                    self.file_data(&fid, Direction::ToServer, off, data, ts, 2, command, ev);
                    return;
                }
                let i = self.new_tx(ts, 2, command, msg_id, ev);
                self.set_ids(i, session_id, tree_id);
                self.pipe_data(i, Direction::ToServer, data, ts, ev);
                return;
            }
            // Suricata keeps transactions of these for renames and
            // deletions only.
            SMB2_GET_INFO => return,
            SMB2_SET_INFO if !(b.get(2) == Some(&1) && matches!(b.get(3), Some(10 | 13))) => return,
            _ => {}
        }
        let i = self.new_tx(ts, 2, command, msg_id, ev);
        self.set_ids(i, session_id, tree_id);
        match command {
            SMB2_NEGOTIATE => {
                if self.negotiated {
                    self.tx_event(i, SmbEvent::DuplicateNegotiate, ev);
                }
                let n = u16le(b, 2).unwrap_or(0) as usize;
                let Some(list) = slice(b, 36, n * 2) else {
                    self.tx_event(i, SmbEvent::NegotiateMalformedDialects, ev);
                    return;
                };
                let dialects = list
                    .chunks_exact(2)
                    .map(|c| dialect_name(u16::from_le_bytes([c[0], c[1]])))
                    .collect();
                let cg = slice(b, 12, 16).map(guid);
                self.txs[i].kind = SmbTxKind::Negotiate {
                    client_dialects: dialects,
                    client_guid: cg,
                    server_guid: None,
                    max_read: None,
                    max_write: None,
                };
            }
            SMB2_SESSION_SETUP => {
                let (Some(o), Some(l)) = (u16le(b, 12), u16le(b, 14)) else {
                    return self.malformed(ev);
                };
                let blob = slice(m, o.into(), l.into()).unwrap_or(&[]);
                self.session_setup(i, blob, None, ev);
            }
            SMB2_TREE_CONNECT => {
                let (Some(o), Some(l)) = (u16le(b, 4), u16le(b, 6)) else {
                    return self.malformed(ev);
                };
                let share = slice(m, o.into(), l.into()).map(utf16).unwrap_or_default();
                self.txs[i].kind = SmbTxKind::TreeConnect {
                    share,
                    pipe: None,
                    share_type: None,
                    service: [None, None],
                };
            }
            SMB2_CREATE => {
                let (Some(disp), Some(o), Some(l)) = (u32le(b, 36), u16le(b, 44), u16le(b, 46))
                else {
                    return self.malformed(ev);
                };
                let filename = slice(m, o.into(), l.into()).map(utf16).unwrap_or_default();
                self.txs[i].kind = SmbTxKind::Create {
                    filename,
                    disposition: disp,
                    times: None,
                    size: 0,
                    fid: Vec::new(),
                };
            }
            SMB2_CLOSE => {
                if let Some(fid) = slice(b, 8, 16) {
                    let fid = fid.to_vec();
                    self.close_file(&fid);
                }
            }
            SMB2_IOCTL => {
                let (Some(code), Some(fid), Some(io), Some(ic)) =
                    (u32le(b, 4), slice(b, 8, 16), u32le(b, 24), u32le(b, 28))
                else {
                    return self.malformed(ev);
                };
                self.txs[i].kind = SmbTxKind::Ioctl { function: code };
                let pipe = self.files.get(fid).is_some_and(|f| f.pipe);
                if code == FSCTL_PIPE_TRANSCEIVE || pipe {
                    if let Some(d) = slice(m, io as usize, ic as usize) {
                        if code == FSCTL_PIPE_TRANSCEIVE {
                            self.pipe_data(i, Direction::ToServer, d, ts, ev);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn smb2_response(
        &mut self,
        m: &[u8],
        b: &[u8],
        command: u16,
        status: u32,
        msg_id: u64,
        tree_id: u32,
        session_id: u64,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if command == SMB2_READ {
            let Some((fid, off)) = self.reads.remove(&msg_id) else {
                return;
            };
            if status != 0 {
                return;
            }
            let (Some(doff), Some(len)) = (b.get(2), u32le(b, 4)) else {
                return self.malformed(ev);
            };
            let data = m
                .get(usize::from(*doff)..)
                .map(|d| &d[..d.len().min(len as usize)])
                .unwrap_or(&[]);
            if self.files.get(&fid).is_some_and(|f| f.pipe) {
                self.pipe_read(data, ts, ev);
            } else {
                self.file_data(&fid, Direction::ToClient, off, data, ts, 2, command, ev);
            }
            return;
        }
        let mut found = self.find_open(2, msg_id);
        if found.is_none() && command == SMB2_NEGOTIATE {
            // An SMB1 negotiate answered with SMB2 (the multi-protocol
            // negotiate).
            found = self.txs.iter().position(|t| {
                t.version == 1 && t.command == u16::from(SMB1_COMMAND_NEGOTIATE) && !t.resp_done
            });
        }
        // A response to no request seen (or to one that has no
        // transaction, as Suricata keeps none for reads, writes to files
        // and GET_INFO): nothing to log.
        let Some(i) = found else {
            if command == SMB2_NEGOTIATE && status == 0 {
                self.dialect = u16le(b, 4).map(dialect_name);
                self.negotiated = true;
            }
            return;
        };
        self.smb2_response_body(i, m, b, command, status, tree_id, ts, ev);
        // A STATUS_PENDING interim response: the final one (async, same
        // message id) completes the transaction.
        if status == STATUS_PENDING {
            self.txs[i].resp_done = false;
        }
        if session_id != 0 {
            self.txs[i].session_id = session_id;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn smb2_response_body(
        &mut self,
        i: usize,
        m: &[u8],
        b: &[u8],
        command: u16,
        status: u32,
        tree_id: u32,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        {
            let t = &mut self.txs[i];
            t.status = Some(status);
            t.resp_done = true;
        }
        match command {
            SMB2_NEGOTIATE if status == 0 => {
                let d = u16le(b, 4).unwrap_or(0);
                self.dialect = Some(dialect_name(d));
                self.negotiated = true;
                let sg = slice(b, 8, 16).map(guid);
                let (mr, mw) = (u32le(b, 32), u32le(b, 36));
                match &mut self.txs[i].kind {
                    SmbTxKind::Negotiate {
                        server_guid,
                        max_read,
                        max_write,
                        ..
                    } => {
                        *server_guid = sg;
                        *max_read = mr;
                        *max_write = mw;
                    }
                    k => {
                        *k = SmbTxKind::Negotiate {
                            client_dialects: std::mem::take(&mut self.smb1_dialects),
                            client_guid: None,
                            server_guid: sg,
                            max_read: mr,
                            max_write: mw,
                        }
                    }
                }
            }
            SMB2_TREE_CONNECT if status == 0 => {
                let st = b.get(2).copied().unwrap_or(0);
                let pipe = st == 2;
                let t = &mut self.txs[i];
                t.tree_id = tree_id;
                if let SmbTxKind::TreeConnect {
                    share,
                    pipe: p,
                    share_type,
                    ..
                } = &mut t.kind
                {
                    *p = Some(pipe);
                    *share_type = Some(match st {
                        1 => "FILE",
                        2 => "PIPE",
                        3 => "PRINT",
                        _ => "UNKNOWN",
                    });
                    let tr = Tree {
                        share: share.clone(),
                        pipe,
                    };
                    if self.trees.len() < MAX_TRACKED {
                        self.trees.insert((2, tree_id), tr);
                    }
                }
            }
            SMB2_CREATE if status == 0 => {
                let times = [8, 16, 24, 32].map(|o| u64le(b, o).unwrap_or(0));
                let size = u64le(b, 48).unwrap_or(0);
                let Some(fid) = slice(b, 64, 16) else {
                    return self.malformed(ev);
                };
                let tree = (2, self.txs[i].tree_id);
                self.create_done(i, tree, fid.to_vec(), times, size);
            }
            SMB2_IOCTL if status == 0 => {
                if let SmbTxKind::Ioctl {
                    function: FSCTL_PIPE_TRANSCEIVE,
                } = self.txs[i].kind
                {
                    let (Some(oo), Some(oc)) = (u32le(b, 32), u32le(b, 36)) else {
                        return self.malformed(ev);
                    };
                    if let Some(d) = slice(m, oo as usize, oc as usize) {
                        self.pipe_data(i, Direction::ToClient, d, ts, ev);
                    }
                }
            }
            _ => {}
        }
    }

    fn set_ids(&mut self, i: usize, session_id: u64, tree_id: u32) {
        let t = &mut self.txs[i];
        t.session_id = session_id;
        t.tree_id = tree_id;
    }

    fn tx_event(&mut self, i: usize, e: SmbEvent, ev: &mut Vec<AppLayerEvent>) {
        let id = self.txs[i].common.id;
        Self::event(e, Some(id), ev);
    }

    /// A successful CREATE (SMB2) or NT_CREATE_ANDX (SMB1) answer to
    /// transaction `i`: its times, size and file id, and the file opened
    /// on the tree `tree` (version, tree id) remembered by its id.
    fn create_done(&mut self, i: usize, tree: (u8, u32), fid: Vec<u8>, times: [u64; 4], size: u64) {
        let tree = self.trees.get(&tree).cloned().unwrap_or_default();
        if let Some(SmbTxKind::Create {
            filename,
            times: t,
            size: s,
            fid: f,
            ..
        }) = self.txs.get_mut(i).map(|t| &mut t.kind)
        {
            *t = Some(times);
            *s = size;
            *f = fid.clone();
            let of = OpenFile {
                name: filename.clone(),
                share: tree.share,
                pipe: tree.pipe,
            };
            if self.files.len() < MAX_TRACKED {
                self.files.insert(fid, of);
            }
        }
    }

    fn malformed(&mut self, ev: &mut Vec<AppLayerEvent>) {
        self.malformed += 1;
        Self::event(SmbEvent::MalformedData, None, ev);
    }

    /// A SESSION_SETUP request's security blob (and SMB1 native strings).
    fn session_setup(
        &mut self,
        i: usize,
        blob: &[u8],
        native: Option<(Vec<u8>, Vec<u8>)>,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let ntlmssp = match parse_ntlmssp(blob) {
            Ok(n) => n,
            Err(MalformedNtlmssp) => {
                self.tx_event(i, SmbEvent::MalformedNtlmsspRequest, ev);
                None
            }
        };
        self.txs[i].kind = SmbTxKind::SessionSetup {
            ntlmssp,
            native: [native, None],
        };
    }

    /// Data of a read or write on a file: into the file transaction of
    /// that file and direction.
    #[allow(clippy::too_many_arguments)]
    fn file_data(
        &mut self,
        fid: &[u8],
        dir: Direction,
        off: u64,
        data: &[u8],
        ts: Timestamp,
        version: u8,
        command: u16,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let pos = self.txs.iter().position(|t| {
            matches!(&t.kind, SmbTxKind::File { fid: f, dir: d, .. } if f == fid && *d == dir)
                && !t.req_done
        });
        let i = match pos {
            Some(i) => i,
            None => {
                let of = self.files.get(fid).cloned().unwrap_or_default();
                let i = self.new_tx(ts, version, command, u64::MAX, ev);
                let t = &mut self.txs[i];
                t.req_done = false;
                t.resp_done = false;
                t.kind = SmbTxKind::File {
                    fid: fid.to_vec(),
                    dir,
                    name: of.name,
                    share: of.share,
                    buf: FileBuf::default(),
                };
                i
            }
        };
        let room = MAX_FLOW_FILE_DATA.saturating_sub(self.file_bytes);
        let mut overlap = false;
        if let SmbTxKind::File { buf, .. } = &mut self.txs[i].kind {
            let before = buf.held();
            let cap = MAX_FILE_DATA.min(before + room);
            overlap = buf.write(off, data, cap);
            self.file_bytes = self.file_bytes + buf.held() - before;
        }
        if overlap {
            self.tx_event(i, SmbEvent::FileOverlap, ev);
        }
    }

    fn close_file(&mut self, fid: &[u8]) {
        for t in &mut self.txs {
            if matches!(&t.kind, SmbTxKind::File { fid: f, .. } if f == fid) {
                t.req_done = true;
                t.resp_done = true;
            }
        }
        self.files.remove(fid);
    }

    /// DCERPC data written to (or answered on) a pipe by the transaction
    /// at `i`.
    fn pipe_data(
        &mut self,
        i: usize,
        dir: Direction,
        d: &[u8],
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let Some(call_id) = dcerpc_call_id(d) else {
            return;
        };
        self.dcerpc.feed_pdu(dir, d, ts, ev);
        let inner = self
            .dcerpc
            .transactions()
            .filter(|t| t.call_id == call_id)
            .last()
            .map(|t| t.id());
        if let Some(id) = inner {
            // A response goes with the transaction that carried its request.
            let owner = self.txs.iter().position(|t| t.dcerpc == Some(id));
            match owner {
                Some(o) if o != i => {}
                _ => self.txs[i].dcerpc = Some(id),
            }
        }
    }

    /// DCERPC data read from a pipe: the response of the transaction
    /// that carried the request of its call id.
    fn pipe_read(&mut self, d: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        if dcerpc_call_id(d).is_none() {
            return;
        }
        self.dcerpc.feed_pdu(Direction::ToClient, d, ts, ev);
    }

    /// One SMB1 message with its AndX chain.
    fn smb1(&mut self, dir: Direction, m: &[u8], ts: Timestamp, ev: &mut Vec<AppLayerEvent>) {
        if m.len() < 33 {
            return self.malformed(ev);
        }
        let mut command = m[4];
        let status = u32le(m, 5).unwrap_or(0);
        let flags = m[9];
        let flags2 = u16le(m, 10).unwrap_or(0);
        let unicode = flags2 & 0x8000 != 0;
        let tid = u16le(m, 24).unwrap_or(0);
        let pid = u16le(m, 26).unwrap_or(0);
        let uid = u16le(m, 28).unwrap_or(0);
        let mid = u16le(m, 30).unwrap_or(0);
        let is_resp = flags & 0x80 != 0;
        if Self::wrong_way(is_resp, dir, ev) {
            return;
        }
        let key = (u64::from(pid) << 16) | u64::from(mid);
        let mut at = 32;
        for n in 0..MAX_CHAIN {
            let Some(&wc) = m.get(at) else {
                return self.malformed(ev);
            };
            let wlen = usize::from(wc) * 2;
            let (Some(words), Some(bc)) = (slice(m, at + 1, wlen), u16le(m, at + 1 + wlen)) else {
                // Error responses may carry no words at all.
                if is_resp && n == 0 {
                    self.smb1_response(
                        m,
                        command,
                        status,
                        tid,
                        uid,
                        key,
                        &[],
                        &[],
                        0,
                        unicode,
                        ts,
                        ev,
                    );
                    return;
                }
                return self.malformed(ev);
            };
            let boff = at + 3 + wlen;
            let bytes = m
                .get(boff..boff + usize::from(bc))
                .unwrap_or_else(|| m.get(boff..).unwrap_or(&[]));
            if is_resp {
                self.smb1_response(
                    m, command, status, tid, uid, key, words, bytes, boff, unicode, ts, ev,
                );
            } else {
                self.smb1_request(
                    m, command, tid, uid, key, words, bytes, boff, unicode, ts, ev,
                );
            }
            let andx = matches!(
                command,
                0x24 | 0x2d | 0x2e | 0x2f | 0x73 | 0x74 | 0x75 | 0xa2
            );
            if !andx || wc < 2 || words[0] == 0xff {
                break;
            }
            let next = usize::from(u16le(words, 2).unwrap_or(0));
            if next <= at || next >= m.len() {
                break;
            }
            command = words[0];
            at = next;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn smb1_request(
        &mut self,
        m: &[u8],
        command: u8,
        tid: u16,
        uid: u16,
        key: u64,
        w: &[u8],
        bytes: &[u8],
        boff: usize,
        unicode: bool,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        let pipe_tree = self.trees.get(&(1, u32::from(tid))).is_some_and(|t| t.pipe);
        match command {
            SMB1_COMMAND_WRITE_ANDX => {
                let (Some(fid), Some(off), Some(hi), Some(lo), Some(doff)) = (
                    slice(w, 4, 2),
                    u32le(w, 6),
                    u16le(w, 18),
                    u16le(w, 20),
                    u16le(w, 22),
                ) else {
                    return self.malformed(ev);
                };
                let off_hi = if w.len() >= 28 {
                    u32le(w, 24).unwrap_or(0)
                } else {
                    0
                };
                let off = (u64::from(off_hi) << 32) | u64::from(off);
                let len = (usize::from(hi) << 16) | usize::from(lo);
                let data = m
                    .get(usize::from(doff)..)
                    .map(|d| &d[..d.len().min(len)])
                    .unwrap_or(&[]);
                let fid = fid.to_vec();
                if pipe_tree || self.files.get(&fid).is_some_and(|f| f.pipe) {
                    let i = self.new_tx(ts, 1, command.into(), key, ev);
                    self.set_ids(i, u64::from(uid), u32::from(tid));
                    self.pipe_data(i, Direction::ToServer, data, ts, ev);
                } else {
                    self.file_data(
                        &fid,
                        Direction::ToServer,
                        off,
                        data,
                        ts,
                        1,
                        command.into(),
                        ev,
                    );
                }
                return;
            }
            SMB1_COMMAND_READ_ANDX => {
                let (Some(fid), Some(off)) = (slice(w, 4, 2), u32le(w, 6)) else {
                    return self.malformed(ev);
                };
                let off_hi = if w.len() >= 24 {
                    u32le(w, 20).unwrap_or(0)
                } else {
                    0
                };
                if self.reads.len() < MAX_TRACKED {
                    let off = (u64::from(off_hi) << 32) | u64::from(off);
                    self.reads.insert(key | (1 << 40), (fid.to_vec(), off));
                }
                return;
            }
            _ => {}
        }
        if command == SMB1_COMMAND_TRANS2 {
            return;
        }
        if command == SMB1_COMMAND_TRANS {
            // A transaction only for TransactNmPipe (DCERPC on a pipe).
            let (Some(dc), Some(doff), Some(sc)) = (u16le(w, 22), u16le(w, 24), w.get(26)) else {
                return self.malformed(ev);
            };
            let d = slice(m, doff.into(), dc.into()).unwrap_or(&[]);
            if *sc >= 1 && u16le(w, 28) == Some(0x26) && dcerpc_call_id(d).is_some() {
                let i = self.new_tx(ts, 1, command.into(), key, ev);
                self.set_ids(i, u64::from(uid), u32::from(tid));
                self.pipe_data(i, Direction::ToServer, d, ts, ev);
            }
            return;
        }
        let i = self.new_tx(ts, 1, command.into(), key, ev);
        self.set_ids(i, u64::from(uid), u32::from(tid));
        match command {
            SMB1_COMMAND_NEGOTIATE => {
                if self.negotiated {
                    self.tx_event(i, SmbEvent::DuplicateNegotiate, ev);
                }
                let mut list = Vec::new();
                let mut p = 0;
                while p < bytes.len() {
                    if bytes[p] != 2 {
                        self.tx_event(i, SmbEvent::NegotiateMalformedDialects, ev);
                        break;
                    }
                    let Some((s, next)) = cstr(bytes, p + 1, false) else {
                        break;
                    };
                    list.push(String::from_utf8_lossy(&s).into_owned());
                    p = next;
                }
                self.smb1_dialects = list.clone();
                self.txs[i].kind = SmbTxKind::Negotiate {
                    client_dialects: list,
                    client_guid: None,
                    server_guid: None,
                    max_read: None,
                    max_write: None,
                };
            }
            SMB1_COMMAND_SESSION_SETUP_ANDX => {
                if w.len() == 24 {
                    let bl = usize::from(u16le(w, 14).unwrap_or(0));
                    let blob = bytes.get(..bl).unwrap_or(bytes);
                    let mut p = boff + blob.len();
                    if unicode && p % 2 == 1 {
                        p += 1;
                    }
                    let native = cstr(m, p, unicode).and_then(|(os, next)| {
                        let (lm, _) = cstr(m, next, unicode)?;
                        Some((os, lm))
                    });
                    self.session_setup(i, blob, native, ev);
                } else {
                    self.session_setup(i, &[], None, ev);
                }
            }
            SMB1_COMMAND_TREE_CONNECT_ANDX => {
                let pwlen = usize::from(u16le(w, 6).unwrap_or(0));
                let mut p = boff + pwlen;
                if unicode && p % 2 == 1 {
                    p += 1;
                }
                let Some((path, next)) = cstr(m, p, unicode) else {
                    return self.malformed(ev);
                };
                let service = cstr(m, next, false).map(|(s, _)| s);
                // Suricata keeps the path without its first character.
                let share = path.get(1..).unwrap_or(&[]).to_vec();
                self.txs[i].kind = SmbTxKind::TreeConnect {
                    share,
                    pipe: None,
                    share_type: None,
                    service: [service, None],
                };
            }
            SMB1_COMMAND_NT_CREATE_ANDX => {
                let (Some(nl), Some(disp)) = (u16le(w, 5), u32le(w, 35)) else {
                    return self.malformed(ev);
                };
                let mut p = boff;
                if unicode && p % 2 == 1 {
                    p += 1;
                }
                let raw = slice(m, p, usize::from(nl)).unwrap_or(&[]);
                let filename = if unicode {
                    utf16(raw)
                } else {
                    let mut v: Vec<u8> = raw.iter().copied().take_while(|&c| c != 0).collect();
                    v.truncate(MAX_NAME);
                    v
                };
                self.txs[i].kind = SmbTxKind::Create {
                    filename,
                    disposition: disp,
                    times: None,
                    size: 0,
                    fid: Vec::new(),
                };
            }
            SMB1_COMMAND_CLOSE => {
                if let Some(fid) = slice(w, 0, 2) {
                    let fid = fid.to_vec();
                    self.close_file(&fid);
                }
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn smb1_response(
        &mut self,
        m: &[u8],
        command: u8,
        status: u32,
        tid: u16,
        uid: u16,
        key: u64,
        w: &[u8],
        bytes: &[u8],
        boff: usize,
        unicode: bool,
        ts: Timestamp,
        ev: &mut Vec<AppLayerEvent>,
    ) {
        if command == SMB1_COMMAND_READ_ANDX {
            let Some((fid, off)) = self.reads.remove(&(key | (1 << 40))) else {
                return;
            };
            let (Some(lo), Some(doff)) = (u16le(w, 10), u16le(w, 12)) else {
                return;
            };
            let hi = u16le(w, 14).unwrap_or(0);
            let len = (usize::from(hi) << 16) | usize::from(lo);
            let data = m
                .get(usize::from(doff)..)
                .map(|d| &d[..d.len().min(len)])
                .unwrap_or(&[]);
            let pipe = self.files.get(&fid).is_some_and(|f| f.pipe)
                || self.trees.get(&(1, u32::from(tid))).is_some_and(|t| t.pipe);
            if pipe {
                self.pipe_read(data, ts, ev);
            } else {
                self.file_data(
                    &fid,
                    Direction::ToClient,
                    off,
                    data,
                    ts,
                    1,
                    command.into(),
                    ev,
                );
            }
            return;
        }
        // In an AndX chain each command has its transaction.
        let Some(i) = self.txs.iter().position(|t| {
            t.version == 1
                && t.key == key
                && t.command == u16::from(command)
                && !t.resp_done
                && !matches!(t.kind, SmbTxKind::File { .. })
        }) else {
            return;
        };
        {
            let t = &mut self.txs[i];
            t.status = Some(status);
            t.resp_done = true;
            if uid != 0 {
                t.session_id = u64::from(uid);
            }
            t.tree_id = u32::from(tid);
        }
        match command {
            SMB1_COMMAND_NEGOTIATE => {
                let idx = u16le(w, 0).unwrap_or(0xffff);
                if let Some(d) = self.smb1_dialects.get(usize::from(idx)) {
                    self.dialect = Some(d.clone());
                }
                self.negotiated = true;
                if w.len() >= 34 {
                    let sg = bytes.get(..16).map(guid);
                    if let SmbTxKind::Negotiate { server_guid, .. } = &mut self.txs[i].kind {
                        *server_guid = sg;
                    }
                }
            }
            SMB1_COMMAND_SESSION_SETUP_ANDX => {
                let bl = if w.len() >= 8 {
                    usize::from(u16le(w, 6).unwrap_or(0))
                } else {
                    0
                };
                let mut p = boff + bl.min(bytes.len());
                if unicode && p % 2 == 1 {
                    p += 1;
                }
                let native = cstr(m, p, unicode).and_then(|(os, next)| {
                    let (lm, _) = cstr(m, next, unicode)?;
                    Some((os, lm))
                });
                if let SmbTxKind::SessionSetup { native: n, .. } = &mut self.txs[i].kind {
                    n[1] = native;
                }
            }
            SMB1_COMMAND_TREE_CONNECT_ANDX if status == 0 => {
                let service = cstr(bytes, 0, false).map(|(s, _)| s);
                let pipe = service.as_deref() == Some(b"IPC");
                if let SmbTxKind::TreeConnect {
                    share,
                    pipe: p,
                    service: sv,
                    ..
                } = &mut self.txs[i].kind
                {
                    *p = Some(pipe);
                    sv[1] = service;
                    let tr = Tree {
                        share: share.clone(),
                        pipe,
                    };
                    if self.trees.len() < MAX_TRACKED {
                        self.trees.insert((1, u32::from(tid)), tr);
                    }
                }
            }
            SMB1_COMMAND_NT_CREATE_ANDX if status == 0 => {
                let Some(fid) = slice(w, 5, 2) else {
                    return self.malformed(ev);
                };
                let times = [11, 19, 27, 35].map(|o| u64le(w, o).unwrap_or(0));
                let size = u64le(w, 55).unwrap_or(0);
                self.create_done(i, (1, u32::from(tid)), fid.to_vec(), times, size);
            }
            SMB1_COMMAND_TRANS if status == 0 || status == 0x8000_0005 => {
                let (Some(dc), Some(doff)) = (u16le(w, 12), u16le(w, 14)) else {
                    return;
                };
                if let Some(d) = slice(m, doff.into(), dc.into()) {
                    self.pipe_data(i, Direction::ToClient, d, ts, ev);
                }
            }
            _ => {}
        }
    }

    /// A gap: the record in progress is lost; framing resumes at the next
    /// NBSS header followed by an SMB signature.
    pub fn on_gap(&mut self, dir: Direction, ev: &mut Vec<AppLayerEvent>) {
        let f = &mut self.framing[dir.index()];
        f.lost = true;
        f.tail.clear();
        f.rec = Vec::new();
        f.hdr_len = 0;
        f.skip = 0;
        self.dcerpc.finish(dir);
        let _ = ev;
    }

    /// The stream of `dir` ended: open sides are complete.
    pub fn finish(&mut self, dir: Direction) {
        for t in &mut self.txs {
            match dir {
                Direction::ToServer => t.req_done = true,
                Direction::ToClient => t.resp_done = true,
            }
            if matches!(t.kind, SmbTxKind::File { .. }) {
                t.req_done = true;
                t.resp_done = true;
            }
        }
        self.dcerpc.finish(dir);
    }

    /// Suricata's `smb` object for a transaction.
    pub fn eve(&self, tx: TxId) -> Option<Value> {
        self.tx(tx)?;
        Some(crate::jsonw::tree(&crate::jsonw::object(|w| {
            self.eve_write(tx, w)
        })))
    }

    /// The members of the `smb` object of `tx`, written to `w` (nothing
    /// for a transaction not held). In key order: the members of the
    /// transaction's kind go between the common ones, in the part
    /// ([`Before`]) where their keys sort.
    pub fn eve_write(&self, tx: TxId, w: &mut crate::jsonw::JsonText) {
        let Some(t) = self.tx(tx) else {
            return;
        };
        t.kind_members(Before::Command, w);
        w.field_str("command", &t.command_name());
        t.kind_members(Before::Dcerpc, w);
        if let Some(d) = t.dcerpc.filter(|d| self.dcerpc.tx(*d).is_some()) {
            w.field_obj("dcerpc", |w| self.dcerpc.eve_write(d, true, w));
        }
        w.field_str("dialect", self.dialect.as_deref().unwrap_or("unknown"));
        t.kind_members(Before::Id, w);
        w.field_u64("id", t.common.id + 1);
        t.kind_members(Before::SessionId, w);
        w.field_u64("session_id", t.session_id);
        t.kind_members(Before::Status, w);
        if let Some(s) = t.status {
            w.field_str("status", status_name(s));
            w.field_str("status_code", &format!("{s:#x}"));
        }
        w.field_u64("tree_id", t.tree_id);
    }
}

/// Where members of a transaction's kind sort among the common members
/// of the `smb` object (`command`, `dcerpc`, `dialect`, `id`,
/// `session_id`, `status`, `status_code`, `tree_id`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Before {
    Command,
    Dcerpc,
    Id,
    SessionId,
    Status,
}

impl SmbTx {
    /// The members of the transaction's kind whose keys sort in `part`.
    fn kind_members(&self, part: Before, w: &mut crate::jsonw::JsonText) {
        match (&self.kind, part) {
            (SmbTxKind::Generic, _) => {}
            (
                SmbTxKind::Negotiate {
                    client_dialects,
                    client_guid,
                    ..
                },
                Before::Command,
            ) => {
                w.field_strs("client_dialects", client_dialects);
                if let Some(g) = client_guid {
                    w.field_str("client_guid", g);
                }
            }
            (
                SmbTxKind::Negotiate {
                    server_guid,
                    max_read,
                    max_write,
                    ..
                },
                Before::SessionId,
            ) => {
                if let Some(r) = max_read {
                    w.field_u64("max_read_size", *r);
                }
                if let Some(x) = max_write {
                    w.field_u64("max_write_size", *x);
                }
                w.field_str("server_guid", server_guid.as_deref().unwrap_or_default());
            }
            (SmbTxKind::SessionSetup { ntlmssp, native }, Before::SessionId) => {
                if let Some(n) = ntlmssp {
                    w.field_obj("ntlmssp", |w| {
                        w.field_lossy("domain", &n.domain);
                        w.field_lossy("host", &n.host);
                        w.field_lossy("user", &n.user);
                        if let Some(v) = &n.version {
                            w.field_str("version", v);
                        }
                    });
                }
                // SMB1 records always carry both, empty when not parsed
                // (as the peer's do).
                for (k, n) in ["request", "response"].iter().zip(native) {
                    if n.is_none() && self.version != 1 {
                        continue;
                    }
                    let (os, lm) = n.as_ref().map_or((&[][..], &[][..]), |(a, b)| (a, b));
                    w.field_obj(k, |w| {
                        w.field_lossy("native_lm", lm);
                        w.field_lossy("native_os", os);
                    });
                }
            }
            (
                SmbTxKind::TreeConnect {
                    share,
                    pipe,
                    service,
                    ..
                },
                Before::SessionId,
            ) => {
                if *pipe == Some(true) {
                    w.field_lossy("named_pipe", share);
                }
                if self.version != 2 {
                    w.field_obj("service", |w| {
                        if let Some(r) = &service[0] {
                            w.field_lossy("request", r);
                        }
                        if let Some(r) = &service[1] {
                            w.field_lossy("response", r);
                        }
                    });
                }
            }
            (
                SmbTxKind::TreeConnect {
                    share,
                    pipe,
                    share_type,
                    ..
                },
                Before::Status,
            ) => {
                if *pipe != Some(true) {
                    w.field_lossy("share", share);
                }
                if self.version == 2 {
                    w.field_str("share_type", share_type.unwrap_or("UNKNOWN"));
                }
            }
            (SmbTxKind::Create { times, .. }, Before::Command) => {
                // The peer (Suricata 9) writes "normal" for directories
                // too: none of dev-mix's 1,724 creates says "directory".
                w.field_str("access", "normal");
                let tm = times.unwrap_or_default();
                w.field_i64("accessed", filetime_or_zero(tm[1]));
                w.field_i64("changed", filetime_or_zero(tm[3]));
            }
            (SmbTxKind::Create { times, .. }, Before::Dcerpc) => {
                let tm = times.unwrap_or_default();
                w.field_i64("created", filetime_or_zero(tm[0]));
            }
            (
                SmbTxKind::Create {
                    filename,
                    disposition,
                    fid,
                    ..
                },
                Before::Id,
            ) => {
                w.field_str("disposition", disposition_name(*disposition));
                if filename.is_empty() {
                    w.field_str("filename", "<share_root>");
                } else {
                    w.field_lossy("filename", filename);
                }
                w.field_str("fuid", &fuid(fid));
            }
            (SmbTxKind::Create { times, .. }, Before::SessionId) => {
                let tm = times.unwrap_or_default();
                w.field_i64("modified", filetime_or_zero(tm[2]));
            }
            (SmbTxKind::Create { size, .. }, Before::Status) => {
                w.field_u64("size", *size);
            }
            (SmbTxKind::Ioctl { function }, Before::Id) => {
                w.field_str("function", &ioctl_name(*function));
            }
            (SmbTxKind::File { fid, name, .. }, Before::Id) => {
                w.field_lossy("filename", name);
                w.field_str("fuid", &fuid(fid));
            }
            (SmbTxKind::File { share, .. }, Before::Status) => {
                w.field_lossy("share", share);
            }
            _ => {}
        }
    }
}

/// A FILETIME as Suricata logs it: 0 stays 0.
fn filetime_or_zero(v: u64) -> i64 {
    if v == 0 {
        0
    } else {
        filetime(v)
    }
}

/// A file id as Suricata prints it: SMB1's 16-bit id in hex, SMB2's as a
/// GUID.
fn fuid(fid: &[u8]) -> String {
    match fid.len() {
        0 => String::new(),
        2 => format!("{:04x}", u16::from_le_bytes([fid[0], fid[1]])),
        _ => guid(fid),
    }
}

/// The call id of a DCERPC connection-oriented PDU, when `d` starts one.
fn dcerpc_call_id(d: &[u8]) -> Option<u32> {
    if d.len() < 16 || d[0] != 5 || d[1] > 1 {
        return None;
    }
    let c: [u8; 4] = d[12..16].try_into().ok()?;
    Some(if d[4] & 0x10 != 0 {
        u32::from_le_bytes(c)
    } else {
        u32::from_be_bytes(c)
    })
}

/// Where an NBSS session message header followed by an SMB signature
/// starts in `b`.
fn find_sync(b: &[u8]) -> Option<usize> {
    (0..b.len().saturating_sub(7))
        .find(|&i| b[i] == 0 && matches!(b[i + 4], 0xfd..=0xff) && &b[i + 5..i + 8] == b"SMB")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dcerpc::tests as dce;
    use crate::dcerpc::{parse_uuid, PTYPE_BIND};

    const FID: [u8; 16] = [0x16, 0, 0, 0, 0x35, 1, 0, 0, 1, 0, 0, 0, 0x35, 0, 0, 0];
    const PIPE_FID: [u8; 16] = [7; 16];

    #[test]
    fn guids_print_their_fields_little_endian_as_suricata_does() {
        let b: Vec<u8> = (0..16).collect();
        assert_eq!(guid(&b), "03020100-0504-0706-0908-0b0a0f0e0d0c");
        assert_eq!(fuid(&FID), "00000016-0135-0000-0001-000000000035");
        assert_eq!(fuid(&[0x34, 0x12]), "1234");
        assert_eq!(guid(&b[..15]), "");
    }

    fn nbss(msg: &[u8]) -> Vec<u8> {
        let n = msg.len();
        let mut v = vec![0, (n >> 16) as u8, (n >> 8) as u8, n as u8];
        v.extend_from_slice(msg);
        v
    }

    fn smb2(cmd: u16, resp: bool, msg_id: u64, tree: u32, status: u32, body: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\xfeSMB");
        h[4] = 64;
        h[8..12].copy_from_slice(&status.to_le_bytes());
        h[12..14].copy_from_slice(&cmd.to_le_bytes());
        h[16] = u8::from(resp);
        h[24..32].copy_from_slice(&msg_id.to_le_bytes());
        h[36..40].copy_from_slice(&tree.to_le_bytes());
        h[40..48].copy_from_slice(&0x11u64.to_le_bytes());
        h.extend_from_slice(body);
        nbss(&h)
    }

    fn utf16le(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    fn tree_connect(msg_id: u64, path: &str) -> Vec<u8> {
        let p = utf16le(path);
        let mut b = vec![9, 0, 0, 0, 72, 0];
        b.extend_from_slice(&(p.len() as u16).to_le_bytes());
        b.extend(p);
        smb2(SMB2_TREE_CONNECT, false, msg_id, 0, 0, &b)
    }

    fn tree_connect_resp(msg_id: u64, tree: u32, share_type: u8) -> Vec<u8> {
        let mut b = vec![0u8; 16];
        b[0] = 16;
        b[2] = share_type;
        smb2(SMB2_TREE_CONNECT, true, msg_id, tree, 0, &b)
    }

    fn create(msg_id: u64, tree: u32, name: &str) -> Vec<u8> {
        let n = utf16le(name);
        let mut b = vec![0u8; 56];
        b[0] = 57;
        b[36] = 1;
        b[44..46].copy_from_slice(&120u16.to_le_bytes());
        b[46..48].copy_from_slice(&(n.len() as u16).to_le_bytes());
        b.extend(n);
        smb2(SMB2_CREATE, false, msg_id, tree, 0, &b)
    }

    fn create_resp(msg_id: u64, tree: u32, fid: &[u8; 16]) -> Vec<u8> {
        let mut b = vec![0u8; 88];
        b[0] = 89;
        b[8..16].copy_from_slice(&132_000_000_000_000_000u64.to_le_bytes());
        b[48] = 68;
        b[64..80].copy_from_slice(fid);
        smb2(SMB2_CREATE, true, msg_id, tree, 0, &b)
    }

    fn write(msg_id: u64, tree: u32, fid: &[u8; 16], off: u64, data: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 48];
        b[0] = 49;
        b[2..4].copy_from_slice(&112u16.to_le_bytes());
        b[4..8].copy_from_slice(&(data.len() as u32).to_le_bytes());
        b[8..16].copy_from_slice(&off.to_le_bytes());
        b[16..32].copy_from_slice(fid);
        b.extend_from_slice(data);
        smb2(SMB2_WRITE, false, msg_id, tree, 0, &b)
    }

    fn read(msg_id: u64, tree: u32, fid: &[u8; 16], off: u64) -> Vec<u8> {
        let mut b = vec![0u8; 48];
        b[0] = 49;
        b[4..8].copy_from_slice(&1024u32.to_le_bytes());
        b[8..16].copy_from_slice(&off.to_le_bytes());
        b[16..32].copy_from_slice(fid);
        smb2(SMB2_READ, false, msg_id, tree, 0, &b)
    }

    fn read_resp(msg_id: u64, tree: u32, data: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 16];
        b[0] = 17;
        b[2] = 80;
        b[4..8].copy_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(data);
        smb2(SMB2_READ, true, msg_id, tree, 0, &b)
    }

    fn close(msg_id: u64, tree: u32, fid: &[u8; 16]) -> Vec<u8> {
        let mut b = vec![0u8; 24];
        b[0] = 24;
        b[8..24].copy_from_slice(fid);
        smb2(SMB2_CLOSE, false, msg_id, tree, 0, &b)
    }

    fn state() -> SmbState {
        SmbState::new(&AppLayerConfig::default())
    }

    /// Feeds `(dir, bytes)` in order, whole or a byte at a time.
    fn run(s: &mut SmbState, steps: &[(Direction, Vec<u8>)], bytewise: bool) -> Vec<AppLayerEvent> {
        let mut ev = Vec::new();
        for (dir, data) in steps {
            if bytewise {
                for b in data {
                    s.feed(*dir, std::slice::from_ref(b), 1, &mut ev);
                }
            } else {
                s.feed(*dir, data, 1, &mut ev);
            }
        }
        ev
    }

    fn file_txs(s: &SmbState) -> Vec<&SmbTx> {
        s.transactions()
            .filter(|t| matches!(t.kind, SmbTxKind::File { .. }))
            .collect()
    }

    fn names(ev: &[AppLayerEvent]) -> Vec<&'static str> {
        ev.iter().map(|e| e.name()).collect()
    }

    const EICAR: &[u8] = b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";

    fn file_session() -> Vec<(Direction, Vec<u8>)> {
        use Direction::{ToClient as C, ToServer as S};
        vec![
            (S, tree_connect(1, "\\\\srv\\C$")),
            (C, tree_connect_resp(1, 5, 1)),
            (S, create(2, 5, "dir\\eicar.txt")),
            (C, create_resp(2, 5, &FID)),
            // Out of order: the second half first.
            (S, write(3, 5, &FID, 30, &EICAR[30..])),
            (S, write(4, 5, &FID, 0, &EICAR[..30])),
            (S, close(5, 5, &FID)),
        ]
    }

    /// Tree connect, create, two writes out of order and a close, whole
    /// or a byte at a time: the same transactions and file content.
    #[test]
    fn file_write_any_split() {
        for bytewise in [false, true] {
            let mut s = state();
            let ev = run(&mut s, &file_session(), bytewise);
            assert!(ev.is_empty(), "{ev:?}");
            let tc = s.tx(0).unwrap();
            assert_eq!(tc.version, 2);
            assert_eq!(
                tc.buffer(BufferId::SmbShare, Direction::ToServer),
                Some(&b"\\\\srv\\C$"[..])
            );
            assert_eq!(tc.buffer(BufferId::SmbNamedPipe, Direction::ToServer), None);
            assert_eq!(tc.buffer(BufferId::SmbShare, Direction::ToClient), None);
            let files = file_txs(&s);
            assert_eq!(files.len(), 1);
            let f = files[0];
            assert_eq!(
                f.buffer(BufferId::FileData, Direction::ToServer),
                Some(EICAR)
            );
            assert_eq!(f.buffer(BufferId::FileData, Direction::ToClient), None);
            assert_eq!(
                f.buffer(BufferId::FileName, Direction::ToServer),
                Some(&b"dir\\eicar.txt"[..])
            );
            assert!(f.req_done && f.resp_done, "closed");
            let e = s.eve(f.id()).unwrap();
            assert_eq!(e["fuid"], "00000016-0135-0000-0001-000000000035");
            assert_eq!(e["share"], "\\\\srv\\C$");
            let c = s.eve(1).unwrap();
            assert_eq!(c["command"], "SMB2_COMMAND_CREATE");
            assert_eq!(c["filename"], "dir\\eicar.txt");
            assert_eq!(c["disposition"], "FILE_OPEN");
            assert_eq!(c["size"], 68);
            assert_eq!(c["status"], "STATUS_SUCCESS");
        }
    }

    /// A write over bytes already written raises `file_overlap` on the
    /// file's transaction (same bytes or not, as Suricata); the first
    /// bytes are kept.
    #[test]
    fn overlap_event() {
        use Direction::{ToClient as C, ToServer as S};
        let mut s = state();
        let steps = vec![
            (S, tree_connect(1, "\\\\srv\\D")),
            (C, tree_connect_resp(1, 5, 1)),
            (S, create(2, 5, "f")),
            (C, create_resp(2, 5, &FID)),
            (S, write(3, 5, &FID, 0, b"X")),
        ];
        assert!(run(&mut s, &steps, false).is_empty());
        let ev = run(&mut s, &[(S, write(4, 5, &FID, 0, b"Y5O"))], false);
        assert_eq!(names(&ev), ["FILE_OVERLAP"]);
        let id = file_txs(&s)[0].id();
        assert_eq!(ev[0].tx(), Some(id));
        assert_eq!(
            s.tx(id).unwrap().buffer(BufferId::FileData, S),
            Some(&b"X5O"[..])
        );
        // Past the end: no overlap.
        assert!(run(&mut s, &[(S, write(5, 5, &FID, 3, b"!"))], false).is_empty());
    }

    #[test]
    fn file_buf_pieces() {
        let mut f = FileBuf::default();
        assert!(!f.write(10, b"klm", 100));
        assert!(!f.write(5, b"fgh", 100));
        assert_eq!(f.data(), b"");
        assert!(f.write(6, b"gh", 100), "over a held piece");
        assert!(!f.write(0, b"abcde", 100));
        assert_eq!(f.data(), b"abcdefgh");
        assert!(!f.write(8, b"ij", 100));
        assert_eq!(f.data(), b"abcdefghijklm");
        assert_eq!(f.held(), 13);
        // The cap.
        let mut f = FileBuf::default();
        f.write(0, &[1; 10], 4);
        assert_eq!(f.data().len(), 4);
        assert!(f.truncated);
    }

    /// A read of a file gives a file transaction to the client.
    #[test]
    fn file_read() {
        use Direction::{ToClient as C, ToServer as S};
        let mut s = state();
        let steps = vec![
            (S, tree_connect(1, "\\\\srv\\D")),
            (C, tree_connect_resp(1, 5, 1)),
            (S, create(2, 5, "r.bin")),
            (C, create_resp(2, 5, &FID)),
            (S, read(3, 5, &FID, 0)),
            (C, read_resp(3, 5, b"hello")),
        ];
        assert!(run(&mut s, &steps, true).is_empty());
        let f = file_txs(&s)[0];
        assert_eq!(f.buffer(BufferId::FileData, C), Some(&b"hello"[..]));
        assert_eq!(f.buffer(BufferId::FileData, S), None);
    }

    fn ioctl(msg_id: u64, tree: u32, fid: &[u8; 16], input: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 56];
        b[0] = 57;
        b[4..8].copy_from_slice(&FSCTL_PIPE_TRANSCEIVE.to_le_bytes());
        b[8..24].copy_from_slice(fid);
        b[24..28].copy_from_slice(&120u32.to_le_bytes());
        b[28..32].copy_from_slice(&(input.len() as u32).to_le_bytes());
        b.extend_from_slice(input);
        smb2(SMB2_IOCTL, false, msg_id, tree, 0, &b)
    }

    fn ioctl_resp(msg_id: u64, tree: u32, output: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 48];
        b[0] = 49;
        b[4..8].copy_from_slice(&FSCTL_PIPE_TRANSCEIVE.to_le_bytes());
        b[32..36].copy_from_slice(&112u32.to_le_bytes());
        b[36..40].copy_from_slice(&(output.len() as u32).to_le_bytes());
        b.extend_from_slice(output);
        smb2(SMB2_IOCTL, true, msg_id, tree, 0, &b)
    }

    /// DCERPC over a named pipe: bind by write, ack by read, request and
    /// response by ioctl. The SMB transactions point to the DCERPC ones:
    /// interface, opnum and stub data as over TCP.
    #[test]
    fn dcerpc_over_pipe() {
        use Direction::{ToClient as C, ToServer as S};
        for bytewise in [false, true] {
            let mut s = state();
            let steps = vec![
                (S, tree_connect(1, "\\\\srv\\IPC$")),
                (C, tree_connect_resp(1, 1, 2)),
                (S, create(2, 1, "netlogon")),
                (C, create_resp(2, 1, &PIPE_FID)),
                (
                    S,
                    write(
                        3,
                        1,
                        &PIPE_FID,
                        0,
                        &dce::bind(PTYPE_BIND, 3, 1, &[(0, dce::NETLOGON, 1)]),
                    ),
                ),
                (S, read(4, 1, &PIPE_FID, 0)),
                (C, read_resp(4, 1, &dce::bind_ack(1, &[0]))),
                (
                    S,
                    ioctl(
                        5,
                        1,
                        &PIPE_FID,
                        &dce::request(3, 2, 0, 26, b"\x01\x02\x03\x04"),
                    ),
                ),
                (C, ioctl_resp(5, 1, &dce::response(3, 2, b"\xaa"))),
            ];
            let ev = run(&mut s, &steps, bytewise);
            assert!(ev.is_empty(), "{ev:?}");
            let tc = s.tx(0).unwrap();
            assert_eq!(
                tc.buffer(BufferId::SmbNamedPipe, S),
                Some(&b"\\\\srv\\IPC$"[..])
            );
            assert_eq!(tc.buffer(BufferId::SmbShare, S), None);
            assert_eq!(s.eve(0).unwrap()["share_type"], "PIPE");
            // No file transactions on a pipe.
            assert!(file_txs(&s).is_empty());
            let io = s.transactions().find(|t| t.command == SMB2_IOCTL).unwrap();
            let inner = io.dcerpc.unwrap();
            let uuid = parse_uuid(dce::NETLOGON).unwrap();
            assert!(s.dcerpc.iface_matches(inner, &uuid, |_| true, false));
            assert_eq!(s.dcerpc.opnum(inner), Some(26));
            let e = s.eve(io.id()).unwrap();
            assert_eq!(e["function"], "FSCTL_PIPE_TRANSCEIVE");
            assert_eq!(e["dcerpc"]["request"], "REQUEST");
            assert_eq!(e["dcerpc"]["response"], "RESPONSE");
            assert_eq!(e["dcerpc"]["opnum"], 26);
            assert!(e["dcerpc"]["req"].get("opnum").is_none());
            assert!(e["dcerpc"].get("rpc_version").is_none());
            // The write carrying the bind points to the bind.
            let w = s.transactions().find(|t| t.command == SMB2_WRITE).unwrap();
            assert!(w.dcerpc.is_some());
        }
    }

    /// A gap inside a record: the framing is lost and found again at the
    /// next NBSS header followed by an SMB signature, even when that
    /// header straddles two chunks.
    #[test]
    fn gap_resync() {
        use Direction::{ToClient as C, ToServer as S};
        for split in [0, 3, 6] {
            let mut s = state();
            let mut ev = Vec::new();
            let first = tree_connect(1, "\\\\srv\\A");
            s.feed(S, &first[..20], 1, &mut ev);
            s.on_gap(S, &mut ev);
            let mut rest = b"garbage\x00\x00".to_vec();
            rest.extend(tree_connect(2, "\\\\srv\\B"));
            let cut = 9 + split;
            s.feed(S, &rest[..cut], 1, &mut ev);
            s.feed(S, &rest[cut..], 1, &mut ev);
            s.feed(C, &tree_connect_resp(2, 3, 1), 1, &mut ev);
            let txs: Vec<&SmbTx> = s.transactions().collect();
            assert_eq!(txs.len(), 1, "split {split}");
            assert_eq!(
                txs[0].buffer(BufferId::SmbShare, S),
                Some(&b"\\\\srv\\B"[..])
            );
            assert!(txs[0].resp_done);
        }
    }

    /// NTLMSSP AUTHENTICATE in a session setup: user, domain, host and
    /// version; fields pointing outside the message raise
    /// `malformed_ntlmssp_request`.
    #[test]
    fn ntlmssp_auth() {
        fn auth(domain: &str, user: &str, host: &str, bad: bool) -> Vec<u8> {
            let mut m = b"NTLMSSP\0".to_vec();
            m.extend_from_slice(&3u32.to_le_bytes());
            m.resize(72, 0);
            let flags: u32 = 1 | 0x0200_0000;
            m[60..64].copy_from_slice(&flags.to_le_bytes());
            m[64..72].copy_from_slice(&[6, 1, 0, 0, 0, 0, 0, 15]);
            for (at, v) in [(28, domain), (36, user), (44, host)] {
                let b = utf16le(v);
                let off = if bad && at == 36 {
                    5000
                } else {
                    m.len() as u32
                };
                m[at..at + 2].copy_from_slice(&(b.len() as u16).to_le_bytes());
                m[at + 4..at + 8].copy_from_slice(&off.to_le_bytes());
                m.extend(b);
            }
            // SPNEGO-ish wrapping before it.
            let mut blob = vec![0xa1, 0x82, 0x01, 0x00, 0x30];
            blob.extend(m);
            blob
        }
        fn setup(blob: &[u8]) -> Vec<u8> {
            let mut b = vec![0u8; 24];
            b[0] = 25;
            b[12..14].copy_from_slice(&88u16.to_le_bytes());
            b[14..16].copy_from_slice(&(blob.len() as u16).to_le_bytes());
            b.extend_from_slice(blob);
            smb2(SMB2_SESSION_SETUP, false, 1, 0, 0, &b)
        }
        let mut s = state();
        let ev = run(
            &mut s,
            &[(
                Direction::ToServer,
                setup(&auth("CORP", "alice", "WS1", false)),
            )],
            true,
        );
        assert!(ev.is_empty());
        let t = s.tx(0).unwrap();
        assert_eq!(
            t.buffer(BufferId::SmbNtlmsspUser, Direction::ToServer),
            Some(&b"alice"[..])
        );
        assert_eq!(
            t.buffer(BufferId::SmbNtlmsspDomain, Direction::ToServer),
            Some(&b"CORP"[..])
        );
        let e = s.eve(0).unwrap();
        assert_eq!(e["ntlmssp"]["host"], "WS1");
        assert_eq!(e["ntlmssp"]["version"], "6.1 build 0 rev 15");
        let ev = run(
            &mut s,
            &[(
                Direction::ToServer,
                setup(&auth("CORP", "alice", "WS1", true)),
            )],
            false,
        );
        assert_eq!(names(&ev), ["MALFORMED_NTLMSSP_REQUEST"]);
        assert_eq!(
            s.tx(1)
                .unwrap()
                .buffer(BufferId::SmbNtlmsspUser, Direction::ToServer),
            None
        );
    }

    fn smb1(cmd: u8, resp: bool, tid: u16, mid: u16, words: &[u8], bytes: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; 32];
        h[..4].copy_from_slice(b"\xffSMB");
        h[4] = cmd;
        h[9] = if resp { 0x98 } else { 0x18 };
        h[24..26].copy_from_slice(&tid.to_le_bytes());
        h[26..28].copy_from_slice(&0x1234u16.to_le_bytes());
        h[28..30].copy_from_slice(&0x800u16.to_le_bytes());
        h[30..32].copy_from_slice(&mid.to_le_bytes());
        h.push((words.len() / 2) as u8);
        h.extend_from_slice(words);
        h.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        h.extend_from_slice(bytes);
        nbss(&h)
    }

    /// SMB1: negotiate, tree connect to IPC$ (the path without its first
    /// character, as Suricata keeps it), the `IPC` service making it a
    /// pipe; NT_CREATE and WRITE_ANDX on a disk share give file data.
    #[test]
    fn smb1_session() {
        use Direction::{ToClient as C, ToServer as S};
        let neg = smb1(0x72, false, 0, 1, &[], b"\x02NT LM 0.12\0\x02SMB 2.002\0");
        let mut neg_r = vec![0u8; 34];
        neg_r[0] = 0;
        let neg_resp = smb1(0x72, true, 0, 1, &neg_r, &[0xaa; 16]);
        let tc_words = [0xff, 0, 0, 0, 0, 0, 1, 0];
        let tc = smb1(0x75, false, 0, 2, &tc_words, b"\0\\\\SRV\\IPC$\0?????\0");
        let tc_resp = smb1(0x75, true, 9, 2, &[0xff, 0, 0, 0, 0, 0], b"IPC\0");
        let tc2 = smb1(0x75, false, 0, 3, &tc_words, b"\0\\\\SRV\\DATA\0?????\0");
        let tc2_resp = smb1(0x75, true, 10, 3, &[0xff, 0, 0, 0, 0, 0], b"A:\0");
        let mut cw = vec![0u8; 48];
        cw[0] = 0xff;
        cw[5..7].copy_from_slice(&4u16.to_le_bytes());
        cw[35] = 5;
        let cr = smb1(0xa2, false, 10, 4, &cw, b"\\abc");
        let mut crw = vec![0u8; 68];
        crw[0] = 0xff;
        crw[5..7].copy_from_slice(&0x4006u16.to_le_bytes());
        let cr_resp = smb1(0xa2, true, 10, 4, &crw, &[]);
        // WRITE_ANDX (wc 14): data right after the byte count.
        let data = b"file-bytes";
        let mut ww = vec![0u8; 28];
        ww[0] = 0xff;
        ww[4..6].copy_from_slice(&0x4006u16.to_le_bytes());
        ww[20..22].copy_from_slice(&(data.len() as u16).to_le_bytes());
        ww[22..24].copy_from_slice(&(32u16 + 1 + 28 + 2).to_le_bytes());
        let wr = smb1(0x2f, false, 10, 5, &ww, data);
        let steps = vec![
            (S, neg),
            (C, neg_resp),
            (S, tc),
            (C, tc_resp),
            (S, tc2),
            (C, tc2_resp),
            (S, cr),
            (C, cr_resp),
            (S, wr),
        ];
        for bytewise in [false, true] {
            let mut s = state();
            let ev = run(&mut s, &steps, bytewise);
            assert!(ev.is_empty(), "{ev:?}");
            let e = s.eve(0).unwrap();
            assert_eq!(e["command"], "SMB1_COMMAND_NEGOTIATE_PROTOCOL");
            assert_eq!(e["dialect"], "NT LM 0.12");
            assert_eq!(e["client_dialects"][1], "SMB 2.002");
            let t = s.tx(1).unwrap();
            assert_eq!(t.version, 1);
            assert_eq!(
                t.buffer(BufferId::SmbNamedPipe, S),
                Some(&b"\\SRV\\IPC$"[..])
            );
            assert_eq!(s.eve(1).unwrap()["service"]["response"], "IPC");
            let t = s.tx(2).unwrap();
            assert_eq!(t.buffer(BufferId::SmbShare, S), Some(&b"\\SRV\\DATA"[..]));
            let f = file_txs(&s)[0];
            assert_eq!(f.buffer(BufferId::FileData, S), Some(&data[..]));
            let fe = s.eve(f.id()).unwrap();
            assert_eq!(fe["fuid"], "4006");
            assert_eq!(fe["filename"], "\\abc");
            assert_eq!(fe["command"], "SMB1_COMMAND_WRITE_ANDX");
        }
    }

    /// Malformed input: events, counters, no panic.
    #[test]
    fn malformed_records() {
        use Direction::{ToClient as C, ToServer as S};
        // Not SMB inside an NBSS message.
        let mut s = state();
        let ev = run(&mut s, &[(S, nbss(b"HELLO WORLD"))], false);
        assert_eq!(names(&ev), ["MALFORMED_DATA"]);
        assert_eq!(s.malformed, 1);
        // A response sent to the server, a request to the client.
        let ev = run(
            &mut s,
            &[(S, tree_connect_resp(1, 1, 1)), (C, tree_connect(2, "x"))],
            false,
        );
        assert_eq!(names(&ev), ["RESPONSE_TO_SERVER", "REQUEST_TO_CLIENT"]);
        // A bad NBSS type loses the framing; the next real record is
        // found again.
        let mut s = state();
        let mut d = vec![0x42, 0, 0, 0];
        d.extend(tree_connect(1, "\\\\a\\b"));
        let ev = run(&mut s, &[(S, d)], false);
        assert_eq!(names(&ev), ["MALFORMED_DATA"]);
        assert_eq!(s.transactions().count(), 1);
        // SMB3 transform header: skipped, counted.
        let mut s = state();
        let mut t = b"\xfdSMB".to_vec();
        t.extend([0u8; 48]);
        assert!(run(&mut s, &[(S, nbss(&t))], false).is_empty());
        assert_eq!(s.encrypted, 1);
        // A negotiate whose dialect count runs past the message.
        let mut s = state();
        let mut b = vec![0u8; 36];
        b[0] = 36;
        b[2] = 200;
        let ev = run(
            &mut s,
            &[(S, smb2(SMB2_NEGOTIATE, false, 0, 0, 0, &b))],
            false,
        );
        assert_eq!(names(&ev), ["NEGOTIATE_MALFORMED_DIALECTS"]);
    }

    /// A record longer than MAX_RECORD: `record_overflow`, the rest
    /// skipped, the next record parsed.
    #[test]
    fn record_overflow() {
        let mut s = state();
        let big = write(1, 5, &FID, 0, &vec![0x41; MAX_RECORD + 100]);
        let mut ev = Vec::new();
        for c in big.chunks(65536) {
            s.feed(Direction::ToServer, c, 1, &mut ev);
        }
        s.feed(
            Direction::ToServer,
            &tree_connect(2, "\\\\x\\y"),
            1,
            &mut ev,
        );
        assert_eq!(names(&ev), ["RECORD_OVERFLOW"]);
        assert!(s
            .transactions()
            .any(|t| t.buffer(BufferId::SmbShare, Direction::ToServer).is_some()));
        // The file data kept is capped.
        let f = file_txs(&s)[0];
        let SmbTxKind::File { buf, .. } = &f.kind else {
            unreachable!()
        };
        assert!(buf.held() <= MAX_FILE_DATA);
    }

    /// An SMB2 negotiate answered as pending then finally: one
    /// transaction, complete at the final response.
    #[test]
    fn pending_response() {
        use Direction::{ToClient as C, ToServer as S};
        let mut s = state();
        let mut b = vec![0u8; 56];
        b[0] = 57;
        b[4..8].copy_from_slice(&0x0006_0194u32.to_le_bytes());
        let req = smb2(SMB2_IOCTL, false, 9, 1, 0, &b);
        let pend = smb2(SMB2_IOCTL, true, 9, 1, STATUS_PENDING, &[0u8; 48]);
        run(&mut s, &[(S, req), (C, pend)], false);
        let t = s.tx(0).unwrap();
        assert_eq!(t.status, Some(STATUS_PENDING));
        assert!(!t.resp_done);
        let fin = smb2(SMB2_IOCTL, true, 9, 1, 0xc000_0225, &[0u8; 48]);
        run(&mut s, &[(C, fin)], false);
        assert_eq!(s.transactions().count(), 1);
        let t = s.tx(0).unwrap();
        assert!(t.resp_done);
        assert_eq!(s.eve(0).unwrap()["status"], "STATUS_NOT_FOUND");
        assert_eq!(s.eve(0).unwrap()["function"], "FSCTL_DFS_GET_REFERRALS");
    }
}
