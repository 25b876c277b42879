//! Hyperscan (Debian's Vectorscan build of it) in block mode through its
//! literal API (`hs_compile_lit_multi`), behind the `hyperscan` feature.
//!
//! A minimal FFI: the crates.io binding (`hyperscan` 0.3) takes literals as
//! Rust `String`s, which cannot carry the non-UTF-8 bytes of binary
//! patterns, so the handful of C functions needed are declared here.
//! Hyperscan folds case itself (`HS_FLAG_CASELESS` per nocase pattern), so
//! no confirmation is needed.
//!
//! Detection only asks which patterns occur in a buffer
//! ([`PrefilterEngine::scan_ids`]), so the database it scans is compiled
//! with `HS_FLAG_SINGLEMATCH` on every literal, as Suricata compiles its
//! own: each literal is reported at most once per scan, instead of once
//! per occurrence (a frequent short literal such as `|00 00|` cost a
//! callback per occurrence, and a literal once reported is not confirmed
//! again). Every occurrence with its end offset ([`PrefilterEngine::scan_batch`],
//! for the shared engine test vectors and any caller that needs offsets) comes from a second database of
//! the same literals without the flag, compiled on first use.
//! Scratch space is per thread, as in Suricata: one process-wide
//! prototype is grown (`hs_alloc_scratch`) to fit every database compiled
//! or loaded, and each scanning thread keeps its own clone of it, renewed
//! when a database built since needs more. A scan takes no lock and
//! touches no line another worker writes (a per-engine pool behind a mutex
//! cost two atomic read-modify-writes per scan and, with several workers,
//! bounced those lines between their cores). A scan started from inside
//! another's callback on the same thread falls back to a clone of the
//! process-wide prototype, kept in the engine's pool. No engine keeps a
//! scratch of its own (one per engine cost its memory for nothing).
//!
//! Vectorscan 5.4.9's literal API rejects a literal whose first byte is NUL
//! as "empty"; an engine with such a literal compiles all of its literals
//! through the regex API instead, every byte hex-escaped (as Suricata does
//! for all its patterns). Each engine is one database, so a buffer is
//! scanned once: a second database for the NUL literals alone cost a
//! second pass over every buffer (on dev-mix with ET Open, 980,742 scans
//! instead of 652,684, a fifth of the worker's Hyperscan instructions).
//!
//! Compiled databases can be cached on disk ([`HyperscanEngine::with_cache`],
//! Suricata 8's `detect.sgh-mpm-caching`): one file per database, named by
//! a hash of everything the compile depends on (see [`DbKey`]), written
//! with `hs_serialize_database` behind a header that carries the key, the
//! payload's length and a checksum, and stored atomically (temporary file,
//! then rename). A file that fails any check, or that the library refuses
//! to deserialize, is ignored: the database is compiled and the file
//! rewritten. [`prune_cache`] bounds the directory.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use crate::{BuildError, Pattern, PrefilterEngine, PrefilterMatch};

#[repr(C)]
struct HsDatabase {
    _private: [u8; 0],
}
#[repr(C)]
struct HsScratch {
    _private: [u8; 0],
}
#[repr(C)]
struct HsCompileError {
    message: *mut c_char,
    expression: c_int,
}

/// `hs_platform_info_t`.
#[repr(C)]
#[derive(Default)]
struct HsPlatformInfo {
    tune: c_uint,
    cpu_features: c_ulonglong,
    reserved1: c_ulonglong,
    reserved2: c_ulonglong,
}

type MatchHandler = unsafe extern "C" fn(
    id: c_uint,
    from: c_ulonglong,
    to: c_ulonglong,
    flags: c_uint,
    context: *mut c_void,
) -> c_int;

const HS_SUCCESS: c_int = 0;
const HS_FLAG_CASELESS: c_uint = 1;
/// Report each expression at most once per scan.
const HS_FLAG_SINGLEMATCH: c_uint = 8;
const HS_MODE_BLOCK: c_uint = 1;

#[link(name = "hs")]
extern "C" {
    fn hs_compile_lit_multi(
        expressions: *const *const c_char,
        flags: *const c_uint,
        ids: *const c_uint,
        lens: *const usize,
        elements: c_uint,
        mode: c_uint,
        platform: *const c_void,
        db: *mut *mut HsDatabase,
        error: *mut *mut HsCompileError,
    ) -> c_int;
    fn hs_compile_multi(
        expressions: *const *const c_char,
        flags: *const c_uint,
        ids: *const c_uint,
        elements: c_uint,
        mode: c_uint,
        platform: *const c_void,
        db: *mut *mut HsDatabase,
        error: *mut *mut HsCompileError,
    ) -> c_int;
    fn hs_free_compile_error(error: *mut HsCompileError) -> c_int;
    fn hs_free_database(db: *mut HsDatabase) -> c_int;
    fn hs_database_size(db: *const HsDatabase, size: *mut usize) -> c_int;
    fn hs_alloc_scratch(db: *const HsDatabase, scratch: *mut *mut HsScratch) -> c_int;
    fn hs_clone_scratch(src: *const HsScratch, dest: *mut *mut HsScratch) -> c_int;
    fn hs_free_scratch(scratch: *mut HsScratch) -> c_int;
    fn hs_scan(
        db: *const HsDatabase,
        data: *const c_char,
        length: c_uint,
        flags: c_uint,
        scratch: *mut HsScratch,
        on_event: MatchHandler,
        context: *mut c_void,
    ) -> c_int;
    fn hs_valid_platform() -> c_int;
    fn hs_version() -> *const c_char;
    fn hs_populate_platform(platform: *mut HsPlatformInfo) -> c_int;
    fn hs_serialize_database(
        db: *const HsDatabase,
        bytes: *mut *mut c_char,
        length: *mut usize,
    ) -> c_int;
    fn hs_deserialize_database(
        bytes: *const c_char,
        length: usize,
        db: *mut *mut HsDatabase,
    ) -> c_int;
}

// The C library's allocator: `hs_serialize_database` allocates its buffer
// with the misc allocator, which is malloc() unless `hs_set_misc_allocator`
// installs another (Vigil never does).
extern "C" {
    fn free(p: *mut c_void);
}

/// The library's version string.
pub fn version() -> String {
    // SAFETY: hs_version returns a pointer to a static NUL-terminated
    // string owned by the library.
    unsafe { CStr::from_ptr(hs_version()) }
        .to_string_lossy()
        .into_owned()
}

/// True when the library runs on this processor.
pub fn available() -> bool {
    // SAFETY: no arguments; only inspects the CPU.
    unsafe { hs_valid_platform() == HS_SUCCESS }
}

struct Scratch(*mut HsScratch);

// SAFETY: a scratch region is plain memory owned by this handle; Hyperscan
// only requires that one thread use it at a time, which the pool (a
// scratch is popped by one scan and pushed back after it), the prototype's
// mutex and the thread-local slot guarantee.
unsafe impl Send for Scratch {}

/// The process-wide prototype scratch: it fits every database built so
/// far. Each build bumps [`SCRATCH_GEN`] after growing it.
static PROTO_SCRATCH: Mutex<Scratch> = Mutex::new(Scratch(ptr::null_mut()));
/// How many times the prototype was grown; a thread's clone older than
/// this may not fit a database built since.
static SCRATCH_GEN: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's clone of the prototype and its generation.
    static LOCAL_SCRATCH: std::cell::RefCell<(u64, Scratch)> =
        const { std::cell::RefCell::new((0, Scratch(ptr::null_mut()))) };
}

/// Grows the process-wide prototype to fit `dbs`.
fn grow_proto(dbs: &[Database]) -> Result<(), BuildError> {
    let mut proto = PROTO_SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
    for db in dbs {
        // SAFETY: `db` is a live compiled database; the prototype is null
        // or a scratch from hs_alloc_scratch, which grows it in place or
        // replaces it; the mutex keeps every other thread off it.
        if unsafe { hs_alloc_scratch(db.0, &mut proto.0) } != HS_SUCCESS {
            return Err(BuildError("Hyperscan: cannot allocate scratch".into()));
        }
    }
    SCRATCH_GEN.fetch_add(1, Ordering::Release);
    Ok(())
}

/// Runs `f` with this thread's scratch, cloned anew from the prototype
/// when the prototype has grown since; `None` when the thread's scratch is
/// in use (a scan from inside a scan's callback) or cannot be cloned.
fn with_local_scratch<R>(f: impl FnOnce(*mut HsScratch) -> R) -> Option<R> {
    LOCAL_SCRATCH
        .try_with(|slot| {
            let mut slot = slot.try_borrow_mut().ok()?;
            let gen = SCRATCH_GEN.load(Ordering::Acquire);
            if slot.1 .0.is_null() || slot.0 != gen {
                let proto = PROTO_SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
                let mut s = Scratch(ptr::null_mut());
                // SAFETY: the prototype is a valid scratch (the mutex keeps
                // it from being grown meanwhile), only read by the clone.
                if proto.0.is_null() || unsafe { hs_clone_scratch(proto.0, &mut s.0) } != HS_SUCCESS
                {
                    return None;
                }
                // The generation read before the clone: a growth since
                // then only makes the next scan clone again.
                *slot = (gen, s);
            }
            Some(f(slot.1 .0))
        })
        .ok()
        .flatten()
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the pointer came from hs_alloc_scratch or
            // hs_clone_scratch and is freed once, here.
            unsafe {
                hs_free_scratch(self.0);
            }
        }
    }
}

/// A compiled database, freed on drop.
struct Database(*mut HsDatabase);

impl Drop for Database {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a successful compile and is freed
        // once, here; no scan can be running while its engine is dropped.
        unsafe {
            hs_free_database(self.0);
        }
    }
}

pub struct HyperscanEngine {
    /// The database detection scans ([`PrefilterEngine::scan_ids`]):
    /// every literal single-match, so each is reported once per buffer
    /// (literal API, or regex API when a literal starts with NUL; none
    /// without patterns). It reports literal indexes: see `member_ends`.
    db: Option<Database>,
    /// The same literals reporting every occurrence, for
    /// [`PrefilterEngine::scan_batch`]; compiled (or read from the cache)
    /// on first use, which detection never makes.
    every: OnceLock<Option<Database>>,
    /// What `every` is compiled from: the literals' bytes end to end,
    /// where each ends, its case flag; the API and the cache.
    lit_bytes: Box<[u8]>,
    lit_ends: Box<[u32]>,
    lit_nocase: Box<[bool]>,
    regex: bool,
    cache: Option<PathBuf>,
    /// Clones of the process-wide prototype for scans that cannot use
    /// their thread's scratch (one nested in another's callback).
    pool: Mutex<Vec<Scratch>>,
    /// Caller ids behind each Hyperscan literal id, flat: literal `i`'s
    /// are `member_ids[member_ends[i - 1]..member_ends[i]]` (most
    /// literals have one; a `Vec` each cost 28 bytes per literal, this
    /// 8).
    member_ends: Box<[u32]>,
    member_ids: Box<[u32]>,
    count: usize,
    db_bytes: usize,
    /// Databases read from the cache rather than compiled.
    cached: usize,
}

// SAFETY: compiled databases are immutable and Hyperscan documents them as
// safe to share between threads (the every-occurrence one is set once,
// behind a OnceLock); scratch space (the only mutable state) is a
// thread's own clone, or handed out by the Mutex-protected pool, or
// allocated for one scan: never used by two scans at a time.
unsafe impl Send for HyperscanEngine {}
// SAFETY: see Send: scans never share a scratch.
unsafe impl Sync for HyperscanEngine {}

impl std::fmt::Debug for HyperscanEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperscanEngine")
            .field("literals", &self.member_ends.len())
            .field("databases", &self.databases())
            .field("db_bytes", &self.db_bytes)
            .finish()
    }
}

fn take_error(rc: c_int, err: *mut HsCompileError) -> BuildError {
    let msg = if err.is_null() {
        format!("compile failed ({rc})")
    } else {
        // SAFETY: on failure `err` points to a compile error whose message
        // is a NUL-terminated string; we copy it and free the error once.
        unsafe {
            let m = CStr::from_ptr((*err).message)
                .to_string_lossy()
                .into_owned();
            hs_free_compile_error(err);
            m
        }
    };
    BuildError(format!("Hyperscan: {msg}"))
}

/// How a database is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Api {
    /// Through the regex API, every byte hex-escaped (else the literal
    /// API).
    regex: bool,
    /// `HS_FLAG_SINGLEMATCH` on every literal: each is reported at most
    /// once per scan (what detection needs to know: which patterns occur).
    single: bool,
}

impl Api {
    fn flags(self, nocase: bool) -> c_uint {
        let mut f = if nocase { HS_FLAG_CASELESS } else { 0 };
        if self.single {
            f |= HS_FLAG_SINGLEMATCH;
        }
        f
    }
}

/// Compiles `(id, bytes, nocase)` literals into one block-mode database,
/// as `api` says.
fn compile(lits: &[(u32, &[u8], bool)], api: Api) -> Result<Database, BuildError> {
    // An empty database cannot be compiled; callers never ask for one.
    debug_assert!(!lits.is_empty());
    let flags: Vec<c_uint> = lits.iter().map(|l| api.flags(l.2)).collect();
    let ids: Vec<c_uint> = lits.iter().map(|l| l.0).collect();
    let mut db: *mut HsDatabase = ptr::null_mut();
    let mut err: *mut HsCompileError = ptr::null_mut();
    let rc = if api.regex {
        let escaped: Vec<std::ffi::CString> = lits
            .iter()
            .map(|l| {
                let s: String = l.1.iter().map(|b| format!("\\x{b:02x}")).collect();
                std::ffi::CString::new(s).expect("hex escapes have no NUL")
            })
            .collect();
        let exprs: Vec<*const c_char> = escaped.iter().map(|e| e.as_ptr()).collect();
        // SAFETY: the three arrays have `lits.len()` elements and outlive
        // the call; each expression is a NUL-terminated string kept alive
        // by `escaped`; out-pointers point to live locals.
        unsafe {
            hs_compile_multi(
                exprs.as_ptr(),
                flags.as_ptr(),
                ids.as_ptr(),
                lits.len() as c_uint,
                HS_MODE_BLOCK,
                ptr::null(),
                &mut db,
                &mut err,
            )
        }
    } else {
        let exprs: Vec<*const c_char> = lits.iter().map(|l| l.1.as_ptr().cast()).collect();
        let lens: Vec<usize> = lits.iter().map(|l| l.1.len()).collect();
        // SAFETY: the four arrays have `lits.len()` elements and outlive
        // the call; each expression pointer is valid for its length;
        // out-pointers point to live locals.
        unsafe {
            hs_compile_lit_multi(
                exprs.as_ptr(),
                flags.as_ptr(),
                ids.as_ptr(),
                lens.as_ptr(),
                lits.len() as c_uint,
                HS_MODE_BLOCK,
                ptr::null(),
                &mut db,
                &mut err,
            )
        }
    };
    if rc != HS_SUCCESS {
        return Err(take_error(rc, err));
    }
    Ok(Database(db))
}

/// Key of a compiled database in the cache: FNV-1a (128-bit) of a format
/// tag, the library's version, this machine's platform (as
/// `hs_populate_platform` reports it: the compile tunes for it), the mode,
/// the API (literal or regex) and every literal's id, flags (case,
/// single match), length and bytes, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DbKey(pub u128);

const FNV128_OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const FNV128_PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

fn fnv128(h: u128, bytes: &[u8]) -> u128 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ b as u128).wrapping_mul(FNV128_PRIME))
}

/// Version and platform, hashed once per process.
fn environment_hash() -> u128 {
    static H: OnceLock<u128> = OnceLock::new();
    *H.get_or_init(|| {
        let mut p = HsPlatformInfo::default();
        // SAFETY: `p` is a live, properly laid out hs_platform_info_t.
        let rc = unsafe { hs_populate_platform(&mut p) };
        let mut h = fnv128(FNV128_OFFSET, b"vigil-hs-db-v1\0");
        h = fnv128(h, version().as_bytes());
        h = fnv128(h, &rc.to_le_bytes());
        h = fnv128(h, &p.tune.to_le_bytes());
        h = fnv128(h, &p.cpu_features.to_le_bytes());
        h = fnv128(h, &p.reserved1.to_le_bytes());
        fnv128(h, &p.reserved2.to_le_bytes())
    })
}

impl DbKey {
    /// The key of the database [`compile`] makes of `lits` with `api`.
    fn of(lits: &[(u32, &[u8], bool)], api: Api) -> DbKey {
        let mut h = fnv128(environment_hash(), &HS_MODE_BLOCK.to_le_bytes());
        h = fnv128(h, &[api.regex as u8]);
        h = fnv128(h, &(lits.len() as u64).to_le_bytes());
        for (id, bytes, nocase) in lits {
            h = fnv128(h, &id.to_le_bytes());
            h = fnv128(h, &api.flags(*nocase).to_le_bytes());
            h = fnv128(h, &(bytes.len() as u64).to_le_bytes());
            h = fnv128(h, bytes);
        }
        DbKey(h)
    }

    fn file_name(self) -> String {
        format!("{:032x}.hsdb", self.0)
    }
}

/// Header of a cache file: magic, key, payload length, payload checksum.
const MAGIC: &[u8; 8] = b"VGLHSDB1";
const HEADER: usize = 8 + 16 + 8 + 8;
/// Cache files, and temporary files left by a crashed writer, older than
/// this are removed by [`prune_cache`].
pub const CACHE_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);
/// [`prune_cache`] removes the least recently used files past this total.
pub const CACHE_MAX_BYTES: u64 = 256 << 20;

/// A checksum of the serialized bytes, 8 at a time (detects truncation and
/// corruption, not tampering).
fn checksum(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    let step = |h: u64, w: u64| {
        let h = (h ^ w).wrapping_mul(0x0100_0000_01b3);
        h ^ (h >> 29)
    };
    for c in &mut chunks {
        h = step(h, u64::from_le_bytes(c.try_into().expect("8-byte chunk")));
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    step(h, u64::from_le_bytes(tail))
}

/// The database stored under `key` in `dir`, if a valid one is there.
fn load(dir: &Path, key: DbKey) -> Option<Database> {
    let path = dir.join(key.file_name());
    let data = std::fs::read(&path).ok()?;
    let (head, payload) = data.split_at_checked(HEADER)?;
    let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    if &head[..8] != MAGIC
        || u128::from_le_bytes(head[8..24].try_into().expect("16 bytes")) != key.0
        || word(24) != payload.len() as u64
        || word(32) != checksum(payload)
    {
        return None;
    }
    let mut db: *mut HsDatabase = ptr::null_mut();
    // SAFETY: `payload` is a live slice of `payload.len()` bytes; the
    // library validates the serialized form (magic, version, platform,
    // length) before building a database; the out-pointer is a live local.
    let rc = unsafe { hs_deserialize_database(payload.as_ptr().cast(), payload.len(), &mut db) };
    if rc != HS_SUCCESS || db.is_null() {
        return None;
    }
    // Mark it recently used for [`prune_cache`] (best effort).
    if let Ok(f) = std::fs::File::options().append(true).open(&path) {
        let _ = f.set_modified(SystemTime::now());
    }
    Some(Database(db))
}

/// Stores `db` under `key` in `dir`: written to a temporary file of this
/// process and thread, then renamed over the final name, so that readers
/// (other threads, other processes) see a whole file or none. Errors are
/// ignored: the cache only saves time.
fn store(dir: &Path, key: DbKey, db: &Database) {
    let mut bytes: *mut c_char = ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: `db` is a valid database; out-pointers are live locals.
    let rc = unsafe { hs_serialize_database(db.0, &mut bytes, &mut len) };
    if rc != HS_SUCCESS || bytes.is_null() {
        return;
    }
    // SAFETY: on success `bytes` points to `len` initialized bytes that we
    // own until freed below.
    let payload = unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), len) };
    let mut out = Vec::with_capacity(HEADER + len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&key.0.to_le_bytes());
    out.extend_from_slice(&(len as u64).to_le_bytes());
    out.extend_from_slice(&checksum(payload).to_le_bytes());
    out.extend_from_slice(payload);
    // SAFETY: `bytes` was allocated by hs_serialize_database with the misc
    // allocator (malloc: Vigil installs no other) and is freed once, here;
    // `payload` is not used after this.
    unsafe { free(bytes.cast()) };
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".tmp-{:032x}-{}-{}",
        key.0,
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::create_dir_all(dir).and_then(|_| {
        // No fsync: a file cut short by a crash fails the length or
        // checksum test and is recompiled.
        std::fs::File::create(&tmp)?.write_all(&out)
    });
    if written
        .and_then(|_| std::fs::rename(&tmp, dir.join(key.file_name())))
        .is_err()
    {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The database of `lits`: from `cache` when a valid copy is stored there,
/// else compiled (and stored). The second value tells a cache hit.
fn compile_cached(
    lits: &[(u32, &[u8], bool)],
    api: Api,
    cache: Option<&Path>,
) -> Result<(Database, bool), BuildError> {
    let Some(dir) = cache else {
        return Ok((compile(lits, api)?, false));
    };
    let key = DbKey::of(lits, api);
    if let Some(db) = load(dir, key) {
        return Ok((db, true));
    }
    let db = compile(lits, api)?;
    store(dir, key, &db);
    Ok((db, false))
}

/// What [`prune_cache`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    pub files: usize,
    pub bytes: u64,
}

/// Bounds the cache directory `dir`: removes database files (and stale
/// temporary files) not used for `max_age`, then the least recently used
/// databases until the rest total at most `max_bytes`. Errors are
/// ignored.
pub fn prune_cache(dir: &Path, max_age: Duration, max_bytes: u64) -> Pruned {
    let mut pruned = Pruned::default();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return pruned;
    };
    let now = SystemTime::now();
    let mut kept: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    for entry in rd.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = name.ends_with(".hsdb") || name.starts_with(".tmp-");
        let Ok(meta) = entry.metadata() else { continue };
        if !ours || !meta.is_file() {
            continue;
        }
        let mtime = meta.modified().unwrap_or(now);
        let age = now.duration_since(mtime).unwrap_or_default();
        // A temporary file is being written for at most seconds.
        let limit = if name.starts_with(".tmp-") {
            max_age.min(Duration::from_secs(3600))
        } else {
            max_age
        };
        if age > limit {
            if std::fs::remove_file(entry.path()).is_ok() {
                pruned.files += 1;
                pruned.bytes += meta.len();
            }
        } else if !name.starts_with(".tmp-") {
            kept.push((mtime, meta.len(), entry.path()));
        }
    }
    let mut total: u64 = kept.iter().map(|k| k.1).sum();
    kept.sort();
    for (_, len, path) in kept {
        if total <= max_bytes {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            pruned.files += 1;
            pruned.bytes += len;
        }
        total -= len;
    }
    pruned
}

struct Ctx<'a> {
    f: &'a mut dyn FnMut(u32, usize),
}

unsafe extern "C" fn on_match(
    id: c_uint,
    _from: c_ulonglong,
    to: c_ulonglong,
    _flags: c_uint,
    context: *mut c_void,
) -> c_int {
    // SAFETY: `context` is the `&mut Ctx` that `scan` passed to hs_scan,
    // alive and not otherwise borrowed for the duration of the scan.
    let ctx = unsafe { &mut *(context as *mut Ctx<'_>) };
    (ctx.f)(id, to as usize);
    0
}

impl HyperscanEngine {
    /// Compiles the patterns. Empty patterns are ignored; patterns with the
    /// same bytes and case flag share one literal.
    pub fn new(patterns: &[Pattern]) -> Result<Self, BuildError> {
        Self::with_cache(patterns, None)
    }

    /// [`HyperscanEngine::new`], reading the compiled databases from the
    /// cache directory `cache` when they are there, and storing those it
    /// compiles (see the module docs).
    pub fn with_cache(patterns: &[Pattern], cache: Option<&Path>) -> Result<Self, BuildError> {
        if !available() {
            return Err(BuildError("Hyperscan does not support this CPU".into()));
        }
        let mut index: std::collections::HashMap<(&[u8], bool), usize> = Default::default();
        let mut lits: Vec<(&[u8], bool)> = Vec::new();
        let mut members: Vec<Vec<u32>> = Vec::new();
        let mut count = 0;
        for p in patterns.iter().filter(|p| !p.bytes.is_empty()) {
            count += 1;
            let nocase = p.nocase && p.bytes.iter().any(u8::is_ascii_alphabetic);
            let slot = *index.entry((&p.bytes, nocase)).or_insert_with(|| {
                lits.push((&p.bytes, nocase));
                members.push(Vec::new());
                lits.len() - 1
            });
            members[slot].push(p.id);
        }
        let all: Vec<_> = lits
            .iter()
            .enumerate()
            .map(|(i, l)| (i as u32, l.0, l.1))
            .collect();
        // One database per engine, so one pass over each buffer: with a
        // literal that starts with NUL, every literal goes through the
        // regex API (hex-escaped, as Suricata compiles all of its).
        let regex = all.iter().any(|l| l.1[0] == 0);
        let mut db = None;
        let mut cached = 0;
        let mut db_bytes = 0;
        if !all.is_empty() {
            let api = Api {
                regex,
                single: true,
            };
            let (d, hit) = compile_cached(&all, api, cache)?;
            cached += usize::from(hit);
            // SAFETY: `d` is a database just compiled or loaded; the
            // out-pointer points to a live local.
            if unsafe { hs_database_size(d.0, &mut db_bytes) } != HS_SUCCESS {
                return Err(BuildError("Hyperscan: cannot size the database".into()));
            }
            // The scans use clones of the process-wide prototype, grown
            // here to fit this database too.
            grow_proto(std::slice::from_ref(&d))?;
            db = Some(d);
        }
        let mut lit_ends = Vec::with_capacity(lits.len());
        let mut lit_bytes = Vec::new();
        for (b, _) in &lits {
            lit_bytes.extend_from_slice(b);
            lit_ends.push(lit_bytes.len() as u32);
        }
        Ok(HyperscanEngine {
            db,
            every: OnceLock::new(),
            lit_bytes: lit_bytes.into(),
            lit_ends: lit_ends.into(),
            lit_nocase: lits.iter().map(|l| l.1).collect(),
            regex,
            cache: cache.map(Path::to_path_buf),
            pool: Mutex::new(Vec::new()),
            member_ends: members
                .iter()
                .scan(0u32, |n, m| {
                    *n += m.len() as u32;
                    Some(*n)
                })
                .collect(),
            member_ids: members.concat().into(),
            count,
            db_bytes,
            cached,
        })
    }

    /// How many of the engine's databases came from the cache.
    pub fn cached_databases(&self) -> usize {
        self.cached
    }

    /// How many databases detection scans (one; none without patterns).
    pub fn databases(&self) -> usize {
        usize::from(self.db.is_some())
    }

    /// The every-occurrence database, compiled on first use (`None`: no
    /// patterns, or it could not be built).
    fn every_db(&self) -> Option<&Database> {
        self.every
            .get_or_init(|| {
                self.db.as_ref()?;
                let mut start = 0usize;
                let lits: Vec<(u32, &[u8], bool)> = self
                    .lit_ends
                    .iter()
                    .zip(self.lit_nocase.iter())
                    .enumerate()
                    .map(|(i, (&end, &nocase))| {
                        let b = &self.lit_bytes[start..end as usize];
                        start = end as usize;
                        (i as u32, b, nocase)
                    })
                    .collect();
                let api = Api {
                    regex: self.regex,
                    single: false,
                };
                match compile_cached(&lits, api, self.cache.as_deref()) {
                    Ok((db, _)) if grow_proto(std::slice::from_ref(&db)).is_ok() => Some(db),
                    // The same literals compiled single-match, so this only
                    // fails on resources: occurrences are then reported once
                    // per literal (see `scan_batch`).
                    _ => {
                        eprintln!(
                            "vigil: Hyperscan: cannot build the every-occurrence database; \
                             reporting each pattern once per buffer"
                        );
                        None
                    }
                }
            })
            .as_ref()
    }

    fn take_scratch(&self) -> Scratch {
        if let Some(s) = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return s;
        }
        let proto = PROTO_SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = Scratch(ptr::null_mut());
        // SAFETY: the process-wide prototype was grown for this engine's
        // database when it was built (and only grows), so it fits it; the
        // mutex keeps it from being grown meanwhile; hs_clone_scratch only
        // reads it.
        let rc = unsafe { hs_clone_scratch(proto.0, &mut s.0) };
        assert!(rc == HS_SUCCESS, "hs_clone_scratch failed: out of memory");
        s
    }

    /// Scans `hay` with `db` (the engine's `db` or `every`), calling `emit`
    /// with each caller id found and the match's end.
    fn scan(&self, db: &Database, hay: &[u8], emit: &mut dyn FnMut(u32, usize)) {
        if hay.is_empty() {
            return;
        }
        let (ends, ids) = (&self.member_ends, &self.member_ids);
        let mut f = |lit: u32, end: usize| {
            let lit = lit as usize;
            let from = if lit == 0 { 0 } else { ends[lit - 1] as usize };
            for &id in &ids[from..ends[lit] as usize] {
                emit(id, end);
            }
        };
        // Block mode takes a u32 length; Vigil's buffers are far shorter.
        let len = c_uint::try_from(hay.len()).expect("buffer too large for Hyperscan");
        let mut ctx = Ctx { f: &mut f };
        let mut run = |scratch: *mut HsScratch| {
            // SAFETY: db and scratch are valid (the scratch fits the
            // database: the thread's clone of the prototype grown for every
            // database built, or one allocated for this one) and the scratch
            // is ours alone for this call; data/len describe a live slice;
            // the callback gets `ctx`, which outlives the call. A panic in
            // the sink aborts at the extern "C" boundary rather than
            // unwinding through C.
            unsafe {
                hs_scan(
                    db.0,
                    hay.as_ptr().cast(),
                    len,
                    0,
                    scratch,
                    on_match,
                    (&mut ctx as *mut Ctx<'_>).cast(),
                );
            }
        };
        if with_local_scratch(&mut run).is_some() {
            return;
        }
        if self.db.as_ref().is_some_and(|d| std::ptr::eq(d, db)) {
            let scratch = self.take_scratch();
            run(scratch.0);
            self.pool
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(scratch);
            return;
        }
        // A nested scan of the every-occurrence database (only tests and
        // callers that need offsets scan it): a scratch of its own.
        let mut s = Scratch(ptr::null_mut());
        // SAFETY: `db` is a live database; the out-pointer is a live local.
        if unsafe { hs_alloc_scratch(db.0, &mut s.0) } == HS_SUCCESS {
            run(s.0);
        }
    }
}

impl PrefilterEngine for HyperscanEngine {
    fn name(&self) -> &'static str {
        "hs"
    }

    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) {
        let Some(db) = self.every_db().or(self.db.as_ref()) else {
            return;
        };
        for (bi, hay) in batch.iter().enumerate() {
            self.scan(db, hay, &mut |pattern, end| {
                sink(PrefilterMatch {
                    buffer: bi as u32,
                    pattern,
                    end: end as u32,
                })
            });
        }
    }

    /// Each pattern found once per buffer: the single-match database.
    fn scan_ids(&self, hay: &[u8], sink: &mut dyn FnMut(u32)) {
        if let Some(db) = &self.db {
            self.scan(db, hay, &mut |id, _| sink(id));
        }
    }

    /// The database and the id lists; not the scratch, which is one per
    /// scanning thread for all engines.
    fn heap_bytes(&self) -> usize {
        self.db_bytes
            + (self.member_ends.len() + self.member_ids.len()) * 4
            + self.lit_bytes.len()
            + self.lit_ends.len() * 5
    }

    fn pattern_count(&self) -> usize {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors;

    #[test]
    fn shared_vectors() {
        vectors::check_engine(|p| {
            Box::new(HyperscanEngine::new(p).unwrap_or_else(|e| panic!("{e} {p:?}")))
        });
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vigil-hs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn db_files(dir: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.retain(|p| p.extension().is_some_and(|e| e == "hsdb"));
        v.sort();
        v
    }

    #[test]
    fn cached_engines_match_like_compiled_ones() {
        let dir = temp_dir("vectors");
        // First build of each vector set compiles and stores; the second
        // reads the cache. Both must pass the shared vectors.
        vectors::check_engine(|p| {
            let fresh = HyperscanEngine::with_cache(p, Some(&dir)).unwrap();
            let again = HyperscanEngine::with_cache(p, Some(&dir)).unwrap();
            assert_eq!(again.cached_databases(), again.databases(), "{p:?}");
            assert_eq!(again.pattern_count(), fresh.pattern_count());
            Box::new(again)
        });
        assert!(!db_files(&dir).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn sample_patterns() -> Vec<Pattern> {
        let mut v: Vec<Pattern> = (0..200u32)
            .map(|i| Pattern {
                id: i,
                bytes: format!("pattern-{i}-{}", i * 7919).into_bytes(),
                nocase: i % 3 == 0,
            })
            .collect();
        // One literal starting with NUL: the database is compiled through
        // the regex API.
        v.push(Pattern {
            id: 999,
            bytes: b"\x00\x01zz".to_vec(),
            nocase: false,
        });
        v
    }

    fn ids(e: &HyperscanEngine, hay: &[u8]) -> Vec<u32> {
        let mut v = Vec::new();
        e.scan_ids(hay, &mut |id| v.push(id));
        v.sort();
        v
    }

    #[test]
    fn corrupt_cache_files_are_recompiled_and_replaced() {
        let dir = temp_dir("corrupt");
        let p = sample_patterns();
        let hay = b"xx PATTERN-3-23757 pattern-10-79190 \x00\x01zz pattern-3-23757".to_vec();
        let fresh = HyperscanEngine::with_cache(&p, Some(&dir)).unwrap();
        assert_eq!((fresh.cached_databases(), fresh.databases()), (0, 1));
        let want = ids(&fresh, &hay);
        // Pattern 3 (nocase) twice, but single-match: once.
        assert_eq!(want, [3, 10, 999]);
        let files = db_files(&dir);
        assert_eq!(files.len(), 1);
        let good: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
        // Truncated, a flipped payload byte, a flipped header byte, empty,
        // and a valid header over a payload the library rejects.
        let mut bad_payload = good[0].clone();
        let mid = HEADER + (bad_payload.len() - HEADER) / 2;
        bad_payload[mid] ^= 0x55;
        let mut bad_key = good[0].clone();
        bad_key[12] ^= 1;
        let mut garbage = good[0][..HEADER].to_vec();
        let junk = vec![0xa5u8; 4096];
        garbage[24..32].copy_from_slice(&(junk.len() as u64).to_le_bytes());
        garbage[32..40].copy_from_slice(&checksum(&junk).to_le_bytes());
        garbage.extend_from_slice(&junk);
        let cases = [
            good[0][..good[0].len() / 2].to_vec(),
            bad_payload,
            bad_key,
            Vec::new(),
            garbage,
        ];
        for (i, bad) in cases.into_iter().enumerate() {
            std::fs::write(&files[0], &bad).unwrap();
            let e = HyperscanEngine::with_cache(&p, Some(&dir)).unwrap();
            assert_eq!(
                e.cached_databases(),
                0,
                "case {i}: the bad file is not used"
            );
            assert_eq!(ids(&e, &hay), want, "case {i}");
            // The file was rewritten with a good copy.
            assert_eq!(std::fs::read(&files[0]).unwrap(), good[0], "case {i}");
            let e = HyperscanEngine::with_cache(&p, Some(&dir)).unwrap();
            assert_eq!(e.cached_databases(), 1, "case {i}");
            assert_eq!(ids(&e, &hay), want, "case {i}");
        }
        // No temporary files left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn different_pattern_lists_get_different_keys() {
        let lit = |id: u32, b: &'static [u8], nc: bool| (id, b, nc);
        let base = vec![lit(1, b"abc", false), lit(2, b"def", true)];
        let variants = [
            base.clone(),
            vec![lit(1, b"abc", false), lit(2, b"deg", true)],
            vec![lit(1, b"abc", false), lit(2, b"def", false)],
            vec![lit(1, b"abc", false), lit(3, b"def", true)],
            vec![lit(2, b"def", true), lit(1, b"abc", false)],
            vec![lit(1, b"abc", false)],
            vec![lit(1, b"ab", false), lit(2, b"cdef", true)],
            vec![lit(1, b"abcdef", false), lit(2, b"", true)],
        ];
        let api = |regex, single| Api { regex, single };
        let mut keys: Vec<DbKey> = variants
            .iter()
            .map(|v| DbKey::of(v, api(false, false)))
            .collect();
        keys.push(DbKey::of(&base, api(true, false)));
        keys.push(DbKey::of(&base, api(false, true)));
        keys.push(DbKey::of(&base, api(true, true)));
        let distinct: std::collections::HashSet<DbKey> = keys.iter().copied().collect();
        assert_eq!(distinct.len(), keys.len(), "{keys:?}");
        // And the same list always gets the same key.
        assert_eq!(DbKey::of(&base, api(false, false)), keys[0]);
    }

    #[test]
    fn prune_removes_old_and_least_recently_used_files() {
        let dir = temp_dir("prune");
        std::fs::create_dir_all(&dir).unwrap();
        let now = SystemTime::now();
        let day = Duration::from_secs(24 * 3600);
        let mk = |name: &str, len: usize, age: Duration| {
            let p = dir.join(name);
            std::fs::write(&p, vec![0u8; len]).unwrap();
            let f = std::fs::File::options().append(true).open(&p).unwrap();
            f.set_modified(now - age).unwrap();
        };
        mk("a.hsdb", 100, 40 * day);
        mk("b.hsdb", 100, 3 * day);
        mk("c.hsdb", 100, 2 * day);
        mk("d.hsdb", 100, day);
        mk(".tmp-x-1-0", 10, 2 * day);
        mk("other.txt", 100, 400 * day);
        let r = prune_cache(&dir, CACHE_MAX_AGE, 250);
        assert_eq!(
            r,
            Pruned {
                files: 3,
                bytes: 210
            }
        );
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["c.hsdb", "d.hsdb", "other.txt"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reports_version() {
        assert!(version().starts_with('5'), "{}", version());
    }

    fn pat(id: u32, b: &[u8], nocase: bool) -> Pattern {
        Pattern {
            id,
            bytes: b.to_vec(),
            nocase,
        }
    }

    #[test]
    fn thread_scratch_renewed_for_databases_built_later() {
        let pat = |id, b: &[u8]| pat(id, b, false);
        let small = HyperscanEngine::new(&[pat(1, b"ab")]).unwrap();
        let mut n = 0;
        small.scan_ids(b"xxabxx", &mut |_| n += 1);
        assert_eq!(n, 1);
        // The every-occurrence database, built now, is bigger than what
        // the thread's scratch was cloned for at first use.
        let mut every = 0;
        small.scan_batch(&[b"abab"], &mut |_| every += 1);
        assert_eq!(every, 2);
        // A bigger database built after this thread cloned its scratch:
        // the clone is renewed before it is used with it.
        let many: Vec<Pattern> = (0..2000u32)
            .map(|i| pat(i, format!("needle{i:05}x{}", i * 7919).as_bytes()))
            .chain([pat(9999, b"\x00\x00zz")])
            .collect();
        let big = HyperscanEngine::new(&many).unwrap();
        let mut ids = Vec::new();
        big.scan_ids(
            b"..needle01234x9772046.. needle00007x55433 \0\0zz",
            &mut |id| ids.push(id),
        );
        ids.sort();
        assert_eq!(ids, [7, 1234, 9999]);
        assert_eq!(big.databases(), 1);
        let mut n = 0;
        small.scan_ids(b"abab", &mut |_| n += 1);
        assert_eq!(n, 1, "single match: once per buffer");
        let mut all = Vec::new();
        big.scan_batch(&[b"needle00007x55433 needle00007x55433"], &mut |m| {
            all.push((m.pattern, m.end))
        });
        assert_eq!(all, [(7, 17), (7, 35)]);
    }

    #[test]
    fn scan_inside_a_callback_uses_another_scratch() {
        let pat = |id, b: &[u8]| pat(id, b, true);
        let outer = HyperscanEngine::new(&[pat(1, b"outer")]).unwrap();
        let inner = HyperscanEngine::new(&[pat(2, b"inner")]).unwrap();
        let mut seen = Vec::new();
        outer.scan_ids(b"OUTER .. outer", &mut |id| {
            seen.push(id);
            inner.scan_ids(b"inner inner", &mut |j| seen.push(j));
        });
        // Single match: each pattern once per scanned buffer.
        assert_eq!(seen, [1, 2]);
        // The same nesting on the every-occurrence databases.
        let mut seen = Vec::new();
        outer.scan_batch(&[b"OUTER .. outer"], &mut |m| {
            seen.push(m.pattern);
            inner.scan_batch(&[b"inner inner"], &mut |j| seen.push(j.pattern));
        });
        assert_eq!(seen, [1, 2, 2, 1, 2, 2]);
    }

    #[test]
    fn concurrent_scans_use_separate_scratch() {
        let p = vec![Pattern {
            id: 3,
            bytes: b"needle".to_vec(),
            nocase: true,
        }];
        let e = std::sync::Arc::new(HyperscanEngine::new(&p).unwrap());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let e = e.clone();
                std::thread::spawn(move || {
                    let mut n = 0;
                    for _ in 0..200 {
                        e.scan_ids(b"hay NEEDLE hay needle", &mut |_| n += 1);
                    }
                    n
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 200);
        }
    }
}
