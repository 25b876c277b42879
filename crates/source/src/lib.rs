//! vigil-source: offline packet sources.
//!
//! [`PcapSource`] reads classic pcap (micro- or nanosecond, either byte
//! order) and pcapng (several sections and interfaces, EPB, SPB and the
//! obsolete packet block, `if_tsresol` / `if_tsoffset` honoured) from one
//! file, or from every regular file of a directory in byte-wise name order,
//! as one stream of packets. Parsing is done by `pcap-parser`: a regular
//! file is mapped and its blocks parsed in place, a FIFO or device is read
//! through `pcap-parser`'s streaming readers. Packet data is lent straight
//! out of the mapping or the reader's buffer, so nothing is allocated or
//! copied per packet. A packet of a mapped file also comes with a
//! [`Lent`]: a shared handle on the window of the mapping that holds its
//! bytes, which a consumer may keep instead of copying them.
//!
//! ```no_run
//! # fn main() -> Result<(), vigil_source::SourceError> {
//! let mut src = vigil_source::PcapSource::open(std::path::Path::new("capture.pcap"))?;
//! while let Some(pkt) = src.next_packet()? {
//!     println!("{} {}.{:09} {} bytes", pkt.index, pkt.ts.secs, pkt.ts.nanos, pkt.data.len());
//! }
//! # Ok(()) }
//! ```

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pcap_parser::nom;
use pcap_parser::pcapng::{parse_block_be, parse_block_le, parse_sectionheaderblock, Block};
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{
    parse_pcap_frame, parse_pcap_frame_be, parse_pcap_frame_modified, parse_pcap_header,
    LegacyPcapBlock, LegacyPcapReader, PcapBlockOwned, PcapError, PcapHeader, PcapNGReader,
};

/// Initial size of the per-file read buffer.
pub const INITIAL_BUFFER: usize = 256 * 1024;
/// The buffer grows (doubling) to hold a bigger record, up to this size; a
/// record bigger than this is an error.
pub const MAX_BUFFER: usize = 64 * 1024 * 1024;

/// A mapped capture is lent out in windows of this many bytes (a
/// multiple of any page size). A window's pages are let go of once the
/// reader is past it and no [`Lent`] handle on it is left, so that the
/// file's pages do not add up in the process's resident memory.
pub const LEND_WINDOW: usize = 1 << 20;

/// A packet timestamp: seconds since the Unix epoch and nanoseconds
/// (always below 1e9). Ordered by time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    pub secs: i64,
    pub nanos: u32,
}

impl Timestamp {
    pub const ZERO: Timestamp = Timestamp { secs: 0, nanos: 0 };

    /// `nanos` of 1e9 or more carry into `secs`.
    pub fn new(secs: i64, nanos: u32) -> Self {
        Timestamp {
            secs: secs.saturating_add(i64::from(nanos / 1_000_000_000)),
            nanos: nanos % 1_000_000_000,
        }
    }

    /// `micros` of 1e6 or more carry into `secs`.
    pub fn from_micros(secs: i64, micros: u32) -> Self {
        Timestamp {
            secs: secs.saturating_add(i64::from(micros / 1_000_000)),
            nanos: (micros % 1_000_000) * 1000,
        }
    }

    /// Nanoseconds since the epoch.
    pub fn as_nanos(&self) -> i128 {
        i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos)
    }
}

/// One packet, lent from the source's buffer until the next call to
/// [`PcapSource::next_packet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawPacket<'a> {
    pub ts: Timestamp,
    /// Link type (LINKTYPE_*) of the file or pcapng interface.
    pub linktype: u32,
    /// Captured bytes (may be shorter than `orig_len`).
    pub data: &'a [u8],
    /// Length of the packet on the wire.
    pub orig_len: u32,
    /// 1-based position across the whole input (Suricata's `pcap_cnt`).
    pub index: u64,
    /// Where `data` lies in the mapped file, when the file is mapped and
    /// the packet lies within one window of it.
    pub lent: Option<Lent<'a>>,
}

/// One [`LEND_WINDOW`] of a mapped capture file. Packets lent from it
/// stay readable as long as a handle on it is kept; when the last handle
/// is dropped (the reader's own included), its pages are let go
/// (`MADV_DONTNEED`: a later read would fetch them from the file again).
pub struct MapWindow {
    map: Arc<memmap2::Mmap>,
    start: usize,
    len: usize,
}

impl MapWindow {
    /// `len` bytes from `off`, counted from the window's start (as a
    /// [`Lent`] gave them).
    ///
    /// # Panics
    /// When the range is not within the window.
    pub fn bytes(&self, off: u32, len: u32) -> &[u8] {
        let (off, len) = (off as usize, len as usize);
        assert!(off + len <= self.len, "range outside the lent window");
        &self.map[self.start + off..self.start + off + len]
    }
}

impl std::fmt::Debug for MapWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapWindow")
            .field("start", &self.start)
            .field("len", &self.len)
            .finish()
    }
}

impl Drop for MapWindow {
    fn drop(&mut self) {
        release(&self.map, self.start, self.len);
    }
}

/// Lets go of the pages of `len` bytes of `map` from `start` (a multiple
/// of [`LEND_WINDOW`], so page-aligned).
fn release(map: &memmap2::Mmap, start: usize, len: usize) {
    if len == 0 || start >= map.len() {
        return;
    }
    // SAFETY: a read-only mapping of a file: dropping its pages only makes
    // a later access read them from the file again, so the bytes any
    // reference into the range sees stay the same. `start` is a multiple
    // of LEND_WINDOW, so page-aligned, and the range is within the map.
    let _ = unsafe {
        map.unchecked_advise_range(
            memmap2::UncheckedAdvice::DontNeed,
            start,
            len.min(map.len() - start),
        )
    };
}

/// A packet's bytes as a range of a [`MapWindow`]: `window.bytes(off,
/// len)` is the packet's data.
#[derive(Clone, Copy)]
pub struct Lent<'a> {
    pub window: &'a Arc<MapWindow>,
    pub off: u32,
}

impl std::fmt::Debug for Lent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lent")
            .field("window", &self.window.start)
            .field("off", &self.off)
            .finish()
    }
}

impl PartialEq for Lent<'_> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(self.window, other.window) && self.off == other.off
    }
}

impl Eq for Lent<'_> {}

/// Errors of a packet source; every message starts with the file's path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    #[error("{}: no such file or directory", .path.display())]
    NotFound { path: PathBuf },
    #[error("{}: permission denied", .path.display())]
    PermissionDenied { path: PathBuf },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: file is empty, not a pcap or pcapng file", .path.display())]
    Empty { path: PathBuf },
    #[error("{}: not a pcap or pcapng file", .path.display())]
    NotPcap { path: PathBuf },
    #[error("{}: truncated file: {what}", .path.display())]
    Truncated { path: PathBuf, what: &'static str },
    #[error("{}: malformed capture at byte offset {offset}: {detail}", .path.display())]
    Malformed {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error("{}: record at byte offset {offset} does not fit in {limit} bytes", .path.display())]
    RecordTooLarge {
        path: PathBuf,
        offset: u64,
        limit: usize,
    },
}

impl SourceError {
    /// The file (or directory) the error is about.
    pub fn path(&self) -> &Path {
        match self {
            SourceError::NotFound { path }
            | SourceError::PermissionDenied { path }
            | SourceError::Io { path, .. }
            | SourceError::Empty { path }
            | SourceError::NotPcap { path }
            | SourceError::Truncated { path, .. }
            | SourceError::Malformed { path, .. }
            | SourceError::RecordTooLarge { path, .. } => path,
        }
    }

    fn io(path: &Path, e: io::Error) -> Self {
        let path = path.to_path_buf();
        match e.kind() {
            io::ErrorKind::NotFound => SourceError::NotFound { path },
            io::ErrorKind::PermissionDenied => SourceError::PermissionDenied { path },
            _ => SourceError::Io { path, source: e },
        }
    }
}

/// Reads packets from a pcap/pcapng file or a directory of them.
pub struct PcapSource {
    files: Vec<(PathBuf, Option<u64>)>,
    next_file: usize,
    cur: Option<FileReader>,
    /// Bytes of the packet lent last time, consumed at the next call.
    pending_consume: usize,
    index: u64,
    truncated: u64,
    total_bytes: u64,
    done_bytes: u64,
    last_ts: Timestamp,
}

impl PcapSource {
    /// Opens a capture file, or a directory whose regular files are read in
    /// byte-wise name order. The first file is opened (and its header
    /// checked) here.
    pub fn open(path: &Path) -> Result<Self, SourceError> {
        let meta = fs::metadata(path).map_err(|e| SourceError::io(path, e))?;
        let mut files = Vec::new();
        if meta.is_dir() {
            for entry in fs::read_dir(path).map_err(|e| SourceError::io(path, e))? {
                let entry = entry.map_err(|e| SourceError::io(path, e))?;
                let p = entry.path();
                let m = fs::metadata(&p).map_err(|e| SourceError::io(&p, e))?;
                if m.is_file() {
                    files.push((p, Some(m.len())));
                }
            }
            files.sort_by_key(|f| name_bytes(&f.0));
        } else {
            // Regular files have a known size; FIFOs and devices do not.
            let size = meta.is_file().then_some(meta.len());
            files.push((path.to_path_buf(), size));
        }
        let total_bytes = files.iter().filter_map(|f| f.1).sum();
        let mut src = PcapSource {
            files,
            next_file: 0,
            cur: None,
            pending_consume: 0,
            index: 0,
            truncated: 0,
            total_bytes,
            done_bytes: 0,
            last_ts: Timestamp::ZERO,
        };
        src.open_next()?;
        Ok(src)
    }

    /// The next packet, or `None` at the end of the input. The packet's data
    /// stays valid until the next call.
    pub fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, SourceError> {
        if self.pending_consume != 0 {
            if let Some(cur) = self.cur.as_mut() {
                cur.reader.get().consume(self.pending_consume);
            }
            self.pending_consume = 0;
        }
        let pkt = loop {
            let Some(cur) = self.cur.as_mut() else {
                if self.next_file >= self.files.len() {
                    return Ok(None);
                }
                self.open_next()?;
                continue;
            };
            match cur.step(self.last_ts)? {
                Step::Packet(p) => break p,
                Step::Skip(n) => cur.reader.get().consume(n),
                Step::End { truncated } => {
                    if truncated {
                        self.truncated += 1;
                    }
                    self.done_bytes += cur.size.unwrap_or(cur.reader.get_ref().consumed() as u64);
                    self.cur = None;
                }
            }
        };
        let cur = self.cur.as_mut().expect("current file");
        // A mapped file is read from its first byte: the reader's data
        // starts at the file offset it has consumed.
        let at = cur.reader.get_ref().consumed() + pkt.off;
        let lent_off = cur.lend(at, pkt.len);
        let cur = self.cur.as_ref().expect("current file");
        self.pending_consume = pkt.consume;
        self.index += 1;
        self.last_ts = pkt.ts;
        let data = &cur.reader.get_ref().data()[pkt.off..pkt.off + pkt.len];
        let lent = lent_off.and_then(|off| {
            let window = cur.window.as_ref()?;
            debug_assert_eq!(window.bytes(off, data.len() as u32), data);
            Some(Lent { window, off })
        });
        Ok(Some(RawPacket {
            ts: pkt.ts,
            linktype: pkt.linktype,
            data,
            orig_len: pkt.orig_len,
            index: self.index,
            lent,
        }))
    }

    /// Records cut short by the end of their file (each ends its file with
    /// a warning rather than an error).
    pub fn truncated_records(&self) -> u64 {
        self.truncated
    }

    /// Size of all input files in bytes (for a progress bar; FIFOs and
    /// devices count 0).
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Bytes of input consumed so far.
    pub fn bytes_read(&self) -> u64 {
        let cur = self
            .cur
            .as_ref()
            .map_or(0, |c| c.reader.get_ref().consumed() as u64);
        self.done_bytes + cur + self.pending_consume as u64
    }

    /// Packets returned so far (the index of the last one).
    pub fn packets_read(&self) -> u64 {
        self.index
    }

    /// The files of the input, in reading order.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|f| f.0.as_path())
    }

    /// The file being read, if any.
    pub fn current_file(&self) -> Option<&Path> {
        self.cur.as_ref().map(|c| c.path.as_path())
    }

    fn open_next(&mut self) -> Result<(), SourceError> {
        if let Some((path, size)) = self.files.get(self.next_file) {
            self.next_file += 1;
            self.cur = Some(FileReader::open(path, *size)?);
        }
        Ok(())
    }
}

#[cfg(unix)]
fn name_bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.file_name()
        .map(|n| n.as_bytes().to_vec())
        .unwrap_or_default()
}

#[cfg(not(unix))]
fn name_bytes(p: &Path) -> Vec<u8> {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned().into_bytes())
        .unwrap_or_default()
}

/// A `File` that keeps the last I/O error, which pcap-parser reduces to
/// `ReadError`.
/// Also replays the magic bytes read to sniff the format (no seeking, so
/// FIFOs work).
struct FileIn {
    file: File,
    prefix: [u8; 4],
    prefix_pos: usize,
    prefix_len: usize,
    err: Arc<Mutex<Option<io::Error>>>,
}

impl Read for FileIn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        if self.prefix_pos < self.prefix_len {
            n = (self.prefix_len - self.prefix_pos).min(buf.len());
            buf[..n].copy_from_slice(&self.prefix[self.prefix_pos..self.prefix_pos + n]);
            self.prefix_pos += n;
        }
        // The readers' constructors read once: fill past the prefix too.
        let buf = &mut buf[n..];
        if buf.is_empty() {
            return Ok(n);
        }
        loop {
            match self.file.read(buf) {
                Ok(m) => return Ok(n + m),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let kind = e.kind();
                    if let Ok(mut slot) = self.err.lock() {
                        *slot = Some(e);
                    }
                    if n > 0 {
                        return Ok(n);
                    }
                    return Err(kind.into());
                }
            }
        }
    }
}

/// A regular file mapped for reading, or `None` where it cannot be (then
/// it is read with `read`). Empty files are not mapped.
fn map_file(file: &File) -> Option<Arc<memmap2::Mmap>> {
    if file.metadata().ok()?.len() == 0 {
        return None;
    }
    // SAFETY: the mapping is read-only. Another process truncating the
    // file while it is read would make the next access fault (SIGBUS); a
    // capture is not truncated under its reader in normal use, and one
    // still being written is read up to the size it had when opened.
    let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
    // Read once from front to back: let the kernel read ahead.
    let _ = map.advise(memmap2::Advice::Sequential);
    Some(Arc::new(map))
}

type LegacyParseFn = fn(&[u8]) -> nom::IResult<&[u8], LegacyPcapBlock<'_>, PcapError<&[u8]>>;

/// pcap-parser's parsing of a mapped file in place: the blocks the
/// streaming readers would give, with their bytes in the mapping rather
/// than copied into a buffer (with the copy into the batch, a fifth of
/// the reader thread's samples on dev-mix). The whole file is at hand, so a
/// record cut short is the end of the file (`UnexpectedEof`), as it is
/// for the streaming readers once their input is exhausted.
struct MapReader {
    map: Arc<memmap2::Mmap>,
    pos: usize,
    kind: MapKind,
}

enum MapKind {
    /// The file header, until it was given out, and the record parser
    /// it calls for.
    Legacy {
        header: Option<PcapHeader>,
        parse: LegacyParseFn,
    },
    /// The current section's byte order.
    Ng { big_endian: bool },
}

impl MapReader {
    /// Checks the file header (classic pcap) or the first section header
    /// (pcapng) as the streaming readers' constructors do.
    fn new(map: Arc<memmap2::Mmap>, ng: bool) -> Result<Self, PcapError<&'static [u8]>> {
        let owned = |e: nom::Err<PcapError<&[u8]>>| match e {
            nom::Err::Error(e) | nom::Err::Failure(e) => e.to_owned_vec(),
            nom::Err::Incomplete(nom::Needed::Size(n)) => PcapError::Incomplete(n.into()),
            nom::Err::Incomplete(nom::Needed::Unknown) => PcapError::Incomplete(0),
        };
        let kind = if ng {
            parse_sectionheaderblock(&map[..]).map_err(owned)?;
            MapKind::Ng { big_endian: false }
        } else {
            let (_, header) = parse_pcap_header(&map[..]).map_err(owned)?;
            let parse: LegacyParseFn = if header.is_modified_format() {
                parse_pcap_frame_modified
            } else if header.is_bigendian() {
                parse_pcap_frame_be
            } else {
                parse_pcap_frame
            };
            MapKind::Legacy {
                header: Some(header),
                parse,
            }
        };
        Ok(MapReader { map, pos: 0, kind })
    }
}

/// The error for a file whose header (classic pcap) or first section
/// header (pcapng) pcap-parser refused: cut short, or not what its magic
/// said.
fn header_error(path: &Path, ng: bool, e: &PcapError<&[u8]>) -> SourceError {
    let path = path.to_path_buf();
    match e {
        PcapError::Incomplete(_) => SourceError::Truncated {
            path,
            what: if ng {
                "incomplete section header block"
            } else {
                "incomplete file header"
            },
        },
        _ if ng => SourceError::Malformed {
            path,
            offset: 0,
            detail: "invalid section header block".into(),
        },
        _ => SourceError::NotPcap { path },
    }
}

/// A parse error as the streaming readers give it once their input is
/// exhausted: a record wanting more bytes is cut short.
fn cut(e: nom::Err<PcapError<&[u8]>>) -> PcapError<&[u8]> {
    match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => e,
        nom::Err::Incomplete(_) => PcapError::UnexpectedEof,
    }
}

impl PcapReaderIterator for MapReader {
    fn next(&mut self) -> Result<(usize, PcapBlockOwned<'_>), PcapError<&[u8]>> {
        let data = self.map.get(self.pos..).unwrap_or_default();
        match &mut self.kind {
            MapKind::Legacy { header, parse } => {
                if let Some(h) = header.take() {
                    return Ok((h.size(), PcapBlockOwned::from(h)));
                }
                if data.is_empty() {
                    return Err(PcapError::Eof);
                }
                let (rem, b) = parse(data).map_err(cut)?;
                Ok((data.len() - rem.len(), PcapBlockOwned::from(b)))
            }
            MapKind::Ng { big_endian } => {
                if data.is_empty() {
                    return Err(PcapError::Eof);
                }
                let parse = if *big_endian {
                    parse_block_be
                } else {
                    parse_block_le
                };
                let (rem, b) = parse(data).map_err(cut)?;
                if let Block::SectionHeader(ref shb) = b {
                    *big_endian = shb.big_endian();
                }
                Ok((data.len() - rem.len(), PcapBlockOwned::from(b)))
            }
        }
    }
    fn consume(&mut self, offset: usize) {
        self.pos = self.pos.saturating_add(offset).min(self.map.len());
    }
    fn consume_noshift(&mut self, offset: usize) {
        self.consume(offset);
    }
    fn consumed(&self) -> usize {
        self.pos
    }
    fn refill(&mut self) -> Result<(), PcapError<&[u8]>> {
        Ok(())
    }
    fn position(&self) -> usize {
        self.pos
    }
    fn grow(&mut self, _new_size: usize) -> bool {
        false
    }
    fn data(&self) -> &[u8] {
        self.map.get(self.pos..).unwrap_or_default()
    }
    fn reader_exhausted(&self) -> bool {
        true
    }
}

enum AnyReader {
    Legacy(LegacyPcapReader<FileIn>),
    Ng(PcapNGReader<FileIn>),
    /// A mapped regular file, either format.
    Map(MapReader),
}

impl AnyReader {
    fn get(&mut self) -> &mut dyn PcapReaderIterator {
        match self {
            AnyReader::Legacy(r) => r,
            AnyReader::Ng(r) => r,
            AnyReader::Map(r) => r,
        }
    }
    fn get_ref(&self) -> &dyn PcapReaderIterator {
        match self {
            AnyReader::Legacy(r) => r,
            AnyReader::Ng(r) => r,
            AnyReader::Map(r) => r,
        }
    }
    fn is_ng(&self) -> bool {
        match self {
            AnyReader::Legacy(_) => false,
            AnyReader::Ng(_) => true,
            AnyReader::Map(r) => matches!(r.kind, MapKind::Ng { .. }),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Iface {
    linktype: u32,
    snaplen: u32,
    units_per_sec: u64,
    tsoffset: i64,
}

/// What the current file's blocks mean so far.
struct Format {
    /// Classic pcap: link type from the file header.
    linktype: u32,
    nanos: bool,
    /// pcapng: byte order and interfaces of the current section.
    big_endian: bool,
    ifaces: Vec<Iface>,
}

struct PacketAt {
    off: usize,
    len: usize,
    consume: usize,
    ts: Timestamp,
    linktype: u32,
    orig_len: u32,
}

enum Step {
    Packet(PacketAt),
    /// A block that is not a packet; consume this many bytes.
    Skip(usize),
    End {
        truncated: bool,
    },
}

struct FileReader {
    path: PathBuf,
    size: Option<u64>,
    reader: AnyReader,
    capacity: usize,
    io_err: Arc<Mutex<Option<io::Error>>>,
    fmt: Format,
    /// The window of the mapping the last packet started in.
    window: Option<Arc<MapWindow>>,
    /// The first window that was neither lent nor let go of.
    next_window: usize,
}

const PCAPNG_MAGIC: u32 = 0x0a0d_0d0a;
const OPB_TYPE: u32 = 2;

impl FileReader {
    fn open(path: &Path, size: Option<u64>) -> Result<Self, SourceError> {
        let mut file = File::open(path).map_err(|e| SourceError::io(path, e))?;
        let mut magic = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match file.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(SourceError::io(path, e)),
            }
        }
        if got == 0 {
            return Err(SourceError::Empty {
                path: path.to_path_buf(),
            });
        }
        let prefix = magic;
        let magic = u32::from_le_bytes(magic);
        let ng = match magic {
            _ if got < 4 => {
                return Err(SourceError::NotPcap {
                    path: path.to_path_buf(),
                })
            }
            PCAPNG_MAGIC => true,
            0xa1b2_c3d4 | 0xa1b2_3c4d | 0xa1b2_cd34 | 0xd4c3_b2a1 | 0x4d3c_b2a1 => false,
            _ => {
                return Err(SourceError::NotPcap {
                    path: path.to_path_buf(),
                })
            }
        };
        let fmt = || Format {
            linktype: 0,
            nanos: false,
            big_endian: false,
            ifaces: Vec::new(),
        };
        // A regular file is parsed in place, mapped.
        if let Some(map) = size.and_then(|_| map_file(&file)) {
            let reader = MapReader::new(map, ng).map_err(|e| header_error(path, ng, &e))?;
            return Ok(FileReader {
                path: path.to_path_buf(),
                size,
                reader: AnyReader::Map(reader),
                capacity: 0,
                io_err: Arc::new(Mutex::new(None)),
                fmt: fmt(),
                window: None,
                next_window: 0,
            });
        }
        let mut capacity = INITIAL_BUFFER;
        let mut first = Some(file);
        loop {
            let io_err = Arc::new(Mutex::new(None));
            let input = match first.take() {
                Some(file) => FileIn {
                    file,
                    prefix,
                    prefix_pos: 0,
                    prefix_len: 4,
                    err: io_err.clone(),
                },
                // Retrying with a bigger buffer: start again from the top.
                None => FileIn {
                    file: File::open(path).map_err(|e| SourceError::io(path, e))?,
                    prefix,
                    prefix_pos: 0,
                    prefix_len: 0,
                    err: io_err.clone(),
                },
            };
            let res = if ng {
                PcapNGReader::new(capacity, input).map(AnyReader::Ng)
            } else {
                LegacyPcapReader::new(capacity, input).map(AnyReader::Legacy)
            };
            match res {
                Ok(reader) => {
                    return Ok(FileReader {
                        path: path.to_path_buf(),
                        size,
                        reader,
                        capacity,
                        io_err,
                        fmt: fmt(),
                        window: None,
                        next_window: 0,
                    });
                }
                Err(PcapError::Incomplete(_))
                    if size.is_some_and(|s| s > capacity as u64) && capacity < MAX_BUFFER =>
                {
                    // A section header bigger than the buffer.
                    capacity = (capacity * 2).min(MAX_BUFFER);
                }
                Err(PcapError::ReadError) => return Err(Self::read_error(path, &io_err)),
                Err(e) => return Err(header_error(path, ng, &e)),
            }
        }
    }

    /// Makes the window holding file offset `at` the current one, and
    /// gives the packet's offset in it when its `len` bytes lie within it.
    /// Windows the reader passed without a packet starting in them are let
    /// go of here; the window before is let go of when its last handle is
    /// dropped.
    fn lend(&mut self, at: usize, len: usize) -> Option<u32> {
        let AnyReader::Map(MapReader { map, .. }) = &self.reader else {
            return None;
        };
        let w = at / LEND_WINDOW;
        if self.window.as_ref().map(|x| x.start / LEND_WINDOW) != Some(w) {
            self.window = None;
            while self.next_window < w {
                release(map, self.next_window * LEND_WINDOW, LEND_WINDOW);
                self.next_window += 1;
            }
            let start = w * LEND_WINDOW;
            self.window = Some(Arc::new(MapWindow {
                map: map.clone(),
                start,
                len: LEND_WINDOW.min(map.len().saturating_sub(start)),
            }));
            self.next_window = self.next_window.max(w + 1);
        }
        let off = at - w * LEND_WINDOW;
        let window = self.window.as_ref()?;
        (off + len <= window.len).then_some(off as u32)
    }

    fn read_error(path: &Path, slot: &Mutex<Option<io::Error>>) -> SourceError {
        let e = slot
            .lock()
            .ok()
            .and_then(|mut s| s.take())
            .unwrap_or_else(|| io::Error::other("read error"));
        SourceError::io(path, e)
    }

    fn malformed(&self, detail: impl Into<String>) -> SourceError {
        SourceError::Malformed {
            path: self.path.clone(),
            offset: self.reader.get_ref().consumed() as u64,
            detail: detail.into(),
        }
    }

    /// Whether every byte of the file is already in the buffer.
    fn all_read(&self) -> bool {
        let r = self.reader.get_ref();
        match self.size {
            Some(size) => (r.consumed() + r.data().len()) as u64 >= size,
            None => r.reader_exhausted(),
        }
    }

    /// Makes room for a record that does not fit in the buffer.
    fn grow(&mut self) -> Result<Option<Step>, SourceError> {
        if self.all_read() {
            // The parser wants more than what is left of the file.
            return Ok(Some(Step::End { truncated: true }));
        }
        if self.capacity >= MAX_BUFFER {
            return Err(SourceError::RecordTooLarge {
                path: self.path.clone(),
                offset: self.reader.get_ref().consumed() as u64,
                limit: MAX_BUFFER,
            });
        }
        self.capacity = (self.capacity * 2).min(MAX_BUFFER);
        self.reader.get().grow(self.capacity);
        self.refill()?;
        Ok(None)
    }

    fn refill(&mut self) -> Result<(), SourceError> {
        if self.reader.get().refill().is_err() {
            return Err(Self::read_error(&self.path, &self.io_err));
        }
        Ok(())
    }

    /// pcapng: the length of the block at the front of the buffer, when it
    /// is below the 12 bytes every block has (type, length, trailing
    /// length). pcap-parser does not check this for every block type (a
    /// process information block of length 4 to 11 underflows its
    /// `length - 12`), so such a block is refused here.
    fn short_ng_block(&self) -> Option<u32> {
        if !self.reader.is_ng() {
            return None;
        }
        let d = self.reader.get_ref().data();
        let head: [u8; 8] = d.get(..8)?.try_into().ok()?;
        let ty = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        if ty == 0x0A0D_0D0A {
            // A section header: its own byte order, checked by the parser.
            return None;
        }
        let len = [head[4], head[5], head[6], head[7]];
        let len = if self.fmt.big_endian {
            u32::from_be_bytes(len)
        } else {
            u32::from_le_bytes(len)
        };
        (len < 12).then_some(len)
    }

    /// A classic pcap record of a mapped file, parsed by pcap-parser's
    /// record parser straight into a [`PacketAt`]: the common case,
    /// without the generic path's block enum, its drop and the reader's
    /// dynamic calls (about a third of reading a packet). `None` when the
    /// file is not a mapped classic pcap past its header, or the record
    /// does not parse whole: the generic path then deals with it (and its
    /// errors) as before.
    fn step_mapped_legacy(&self) -> Option<Step> {
        let AnyReader::Map(MapReader {
            map,
            pos,
            kind:
                MapKind::Legacy {
                    header: None,
                    parse,
                },
        }) = &self.reader
        else {
            return None;
        };
        let data = map.get(*pos..)?;
        let (rem, b) = parse(data).ok()?;
        let consume = data.len() - rem.len();
        if consume > MAX_BUFFER {
            return None;
        }
        Some(Step::Packet(self.fmt.legacy_packet(
            &b,
            data.as_ptr() as usize,
            consume,
        )))
    }

    /// Parses the next block.
    fn step(&mut self, last_ts: Timestamp) -> Result<Step, SourceError> {
        if let Some(step) = self.step_mapped_legacy() {
            return Ok(step);
        }
        loop {
            if let Some(len) = self.short_ng_block() {
                return Err(
                    self.malformed(format!("block length {len} is below the 12-byte minimum"))
                );
            }
            let base = self.reader.get_ref().data().as_ptr() as usize;
            let res = match self.reader.get().next() {
                // The streaming readers cannot hold a bigger block; a
                // mapped file is held to the same limit.
                Ok((consume, _)) if consume > MAX_BUFFER => {
                    return Err(SourceError::RecordTooLarge {
                        path: self.path.clone(),
                        offset: self.reader.get_ref().consumed() as u64,
                        limit: MAX_BUFFER,
                    })
                }
                Ok((consume, block)) => Ok(self.fmt.handle(&block, base, consume, last_ts)),
                Err(e) => Err(match e {
                    PcapError::Eof => ReadIssue::Eof,
                    PcapError::UnexpectedEof => ReadIssue::UnexpectedEof,
                    PcapError::Incomplete(_) => ReadIssue::Incomplete,
                    PcapError::BufferTooSmall => ReadIssue::TooSmall,
                    PcapError::ReadError => ReadIssue::ReadError,
                    PcapError::HeaderNotRecognized => ReadIssue::Bad("unrecognized block".into()),
                    PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind) => {
                        ReadIssue::Bad(format!("invalid block ({kind:?})"))
                    }
                }),
            };
            match res {
                Ok(Ok(step)) => return Ok(step),
                Ok(Err(detail)) => return Err(self.malformed(detail)),
                Err(ReadIssue::Eof) => return Ok(Step::End { truncated: false }),
                Err(ReadIssue::UnexpectedEof) => {
                    let leftover = !self.reader.get_ref().data().is_empty();
                    return Ok(Step::End {
                        truncated: leftover,
                    });
                }
                Err(ReadIssue::Incomplete) => {
                    let before = self.reader.get_ref().data().len();
                    self.refill()?;
                    let r = self.reader.get_ref();
                    if r.data().len() == before && !r.reader_exhausted() {
                        // No room to read more: the record is bigger than the buffer.
                        if let Some(step) = self.grow()? {
                            return Ok(step);
                        }
                    }
                }
                Err(ReadIssue::TooSmall) => {
                    if let Some(step) = self.grow()? {
                        return Ok(step);
                    }
                }
                Err(ReadIssue::ReadError) => {
                    return Err(Self::read_error(&self.path, &self.io_err))
                }
                Err(ReadIssue::Bad(detail)) => return Err(self.malformed(detail)),
            }
        }
    }
}

enum ReadIssue {
    Eof,
    UnexpectedEof,
    Incomplete,
    TooSmall,
    ReadError,
    Bad(String),
}

impl Format {
    /// A classic pcap record's packet: its bytes as an offset from `base`
    /// (the address of the start of the reader's data), its time in the
    /// file header's resolution and the file's link type.
    fn legacy_packet(&self, b: &LegacyPcapBlock<'_>, base: usize, consume: usize) -> PacketAt {
        let secs = i64::from(b.ts_sec);
        let ts = if self.nanos {
            Timestamp::new(secs, b.ts_usec)
        } else {
            Timestamp::from_micros(secs, b.ts_usec)
        };
        PacketAt {
            off: b.data.as_ptr() as usize - base,
            len: b.data.len(),
            consume,
            ts,
            linktype: self.linktype,
            orig_len: b.origlen,
        }
    }

    /// Interprets one block. `base` is the address of the start of the
    /// reader's data, so that packet bytes can be found again as an offset.
    fn handle(
        &mut self,
        block: &PcapBlockOwned<'_>,
        base: usize,
        consume: usize,
        last_ts: Timestamp,
    ) -> Result<Step, String> {
        let at = |data: &[u8], ts: Timestamp, linktype: u32, orig_len: u32| {
            Step::Packet(PacketAt {
                off: data.as_ptr() as usize - base,
                len: data.len(),
                consume,
                ts,
                linktype,
                orig_len,
            })
        };
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.linktype = h.network.0 as u32;
                self.nanos = h.is_nanosecond_precision();
                Ok(Step::Skip(consume))
            }
            PcapBlockOwned::Legacy(b) => Ok(Step::Packet(self.legacy_packet(b, base, consume))),
            PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                self.big_endian = shb.big_endian();
                self.ifaces.clear();
                Ok(Step::Skip(consume))
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                let units_per_sec = ts_resolution(idb.if_tsresol)
                    .ok_or_else(|| format!("invalid if_tsresol {:#x}", idb.if_tsresol))?;
                // pcap-parser reads if_tsoffset little-endian whatever the
                // section's byte order: decode it here.
                let tsoffset = idb
                    .options
                    .iter()
                    .rev()
                    .find(|o| o.code.0 == 14 && o.len == 8 && o.value.len() >= 8)
                    .map_or(0, |o| {
                        let v: [u8; 8] = o.value[..8].try_into().expect("8 bytes");
                        if self.big_endian {
                            i64::from_be_bytes(v)
                        } else {
                            i64::from_le_bytes(v)
                        }
                    });
                self.ifaces.push(Iface {
                    linktype: u32::from(idb.linktype.0 as u16),
                    snaplen: idb.snaplen,
                    units_per_sec,
                    tsoffset,
                });
                Ok(Step::Skip(consume))
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                let iface = self.iface(epb.if_id)?;
                let ts = iface.ts(epb.ts_high, epb.ts_low);
                let caplen = (epb.caplen as usize).min(epb.data.len());
                Ok(at(&epb.data[..caplen], ts, iface.linktype, epb.origlen))
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                // No timestamp: keep the previous packet's.
                let iface = self.iface(0)?;
                let mut caplen = (spb.origlen as usize).min(spb.data.len());
                if iface.snaplen != 0 {
                    caplen = caplen.min(iface.snaplen as usize);
                }
                Ok(at(
                    &spb.data[..caplen],
                    last_ts,
                    iface.linktype,
                    spb.origlen,
                ))
            }
            PcapBlockOwned::NG(Block::Unknown(ub)) => {
                let block_type = if self.big_endian {
                    ub.block_type.swap_bytes()
                } else {
                    ub.block_type
                };
                if block_type != OPB_TYPE {
                    return Ok(Step::Skip(consume));
                }
                // Obsolete packet block: if_id u16, drops u16, ts_high,
                // ts_low, caplen, origlen, data.
                let d = ub.data;
                if d.len() < 20 {
                    return Err("obsolete packet block too short".into());
                }
                let u16_at = |i: usize| {
                    let b = [d[i], d[i + 1]];
                    if self.big_endian {
                        u16::from_be_bytes(b)
                    } else {
                        u16::from_le_bytes(b)
                    }
                };
                let u32_at = |i: usize| {
                    let b = [d[i], d[i + 1], d[i + 2], d[i + 3]];
                    if self.big_endian {
                        u32::from_be_bytes(b)
                    } else {
                        u32::from_le_bytes(b)
                    }
                };
                let iface = self.iface(u32::from(u16_at(0)))?;
                let ts = iface.ts(u32_at(4), u32_at(8));
                let caplen = u32_at(12) as usize;
                let orig_len = u32_at(16);
                let data = d[20..]
                    .get(..caplen)
                    .ok_or("obsolete packet block: captured length exceeds block")?;
                Ok(at(data, ts, iface.linktype, orig_len))
            }
            PcapBlockOwned::NG(_) => Ok(Step::Skip(consume)),
        }
    }

    fn iface(&self, id: u32) -> Result<Iface, String> {
        self.ifaces.get(id as usize).copied().ok_or_else(|| {
            format!(
                "packet for interface {id}, but the section describes {} interface(s)",
                self.ifaces.len()
            )
        })
    }
}

/// Units per second of an `if_tsresol` byte: 10^n, or 2^n with the top bit
/// set. (pcap-parser 0.16's `ts_resolution` rejects every 2^n value.)
fn ts_resolution(tsresol: u8) -> Option<u64> {
    let n = u32::from(tsresol & 0x7f);
    if tsresol & 0x80 == 0 {
        10u64.checked_pow(n)
    } else {
        1u64.checked_shl(n).filter(|_| n < 64)
    }
}

impl Iface {
    fn ts(&self, high: u32, low: u32) -> Timestamp {
        let raw = (u64::from(high) << 32) | u64::from(low);
        let res = self.units_per_sec.max(1);
        let secs = i64::try_from(raw / res).unwrap_or(i64::MAX);
        let nanos = (u128::from(raw % res) * 1_000_000_000 / u128::from(res)) as u32;
        Timestamp {
            secs: secs.saturating_add(self.tsoffset),
            nanos,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_file_reads_back_whole_and_an_empty_one_is_not_mapped() {
        let path = std::env::temp_dir().join(format!("vigil-mapped-{}", std::process::id()));
        let bytes: Vec<u8> = (0..LEND_WINDOW * 7 / 2)
            .map(|i| (i % 251) as u8 ^ (i >> 20) as u8)
            .collect();
        fs::write(&path, &bytes).unwrap();
        let m = map_file(&File::open(&path).unwrap()).expect("a regular file maps");
        assert!(m[..] == bytes[..], "bytes read through the mapping differ");
        fs::remove_file(&path).unwrap();
        fs::write(&path, b"").unwrap();
        assert!(map_file(&File::open(&path).unwrap()).is_none());
        fs::remove_file(&path).unwrap();
    }

    /// A classic pcap of `n` records of 1,000 to 2,999 bytes, each filled
    /// with bytes derived from its number.
    fn numbered_pcap(n: u32) -> Vec<u8> {
        let mut f = Vec::new();
        for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        for i in 0..n {
            let len = 1000 + (i * 7919) % 2000;
            for v in [1_700_000_000 + i, i, len, len] {
                f.extend_from_slice(&v.to_le_bytes());
            }
            f.extend((0..len).map(|k| (i as u8).wrapping_mul(31) ^ k as u8));
        }
        f
    }

    #[test]
    fn packets_of_a_mapped_file_are_lent_by_window_and_windows_go_when_dropped() {
        let path = std::env::temp_dir().join(format!("vigil-lent-{}.pcap", std::process::id()));
        let n = 3000;
        let file = numbered_pcap(n);
        assert!(file.len() > 5 * LEND_WINDOW);
        fs::write(&path, &file).unwrap();
        let mut src = PcapSource::open(&path).unwrap();
        let mut kept: Option<(Arc<MapWindow>, u32, Vec<u8>)> = None;
        let mut passed: Vec<std::sync::Weak<MapWindow>> = Vec::new();
        let (mut lent, mut spanning) = (0u32, 0usize);
        while let Some(p) = src.next_packet().unwrap() {
            let i = (p.index - 1) as u32;
            let want: Vec<u8> = (0..p.data.len())
                .map(|k| (i as u8).wrapping_mul(31) ^ k as u8)
                .collect();
            assert_eq!(p.data, &want[..]);
            match p.lent {
                Some(l) => {
                    lent += 1;
                    assert_eq!(l.window.bytes(l.off, p.data.len() as u32), p.data);
                    if passed
                        .last()
                        .and_then(|w| w.upgrade())
                        .is_none_or(|w| !Arc::ptr_eq(&w, l.window))
                    {
                        passed.push(Arc::downgrade(l.window));
                        // The reader is past the window before the last:
                        // it went, unless a handle on it is kept.
                        let k = passed.len().saturating_sub(3);
                        if passed.len() >= 3 {
                            assert_eq!(passed[k].upgrade().is_some(), k == 1, "window {k}");
                        }
                    }
                    // Keep one packet of the second window past the end.
                    if passed.len() == 2 && kept.is_none() {
                        kept = Some((l.window.clone(), l.off, p.data.to_vec()));
                    }
                }
                None => {
                    // Only a packet that runs into the next window is not lent.
                    spanning += 1;
                }
            }
        }
        assert!(spanning >= 1 && spanning <= passed.len());
        assert_eq!(lent as usize + spanning, n as usize);
        assert!(passed.len() >= 5);
        drop(src);
        // Every window went when the reader did, but the one still held,
        // which still reads back the packet it lent.
        for (k, w) in passed.iter().enumerate() {
            assert_eq!(w.upgrade().is_some(), k == 1, "window {k}");
        }
        let (w, off, data) = kept.unwrap();
        assert_eq!(w.bytes(off, data.len() as u32), &data[..]);
        drop(w);
        assert!(passed[1].upgrade().is_none());
        fs::remove_file(&path).unwrap();
    }
}
