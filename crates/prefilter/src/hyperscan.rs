//! Hyperscan (Debian's Vectorscan build of it) in block mode through its
//! literal API (`hs_compile_lit_multi`), behind the `hyperscan` feature.
//!
//! A minimal FFI: the crates.io binding (`hyperscan` 0.3) takes literals as
//! Rust `String`s, which cannot carry the non-UTF-8 bytes of binary
//! patterns, so the handful of C functions needed are declared here.
//! Hyperscan folds case itself (`HS_FLAG_CASELESS` per nocase pattern) and
//! reports every end offset of every literal, so no confirmation is needed.
//! Scratch space is per concurrent caller: a small pool, cloned from a
//! prototype when empty.
//!
//! Vectorscan 5.4.9's literal API rejects a literal whose first byte is NUL
//! as "empty"; such literals go into a second, small database compiled
//! through the regex API with every byte hex-escaped (as Suricata does for
//! all its patterns), and both databases are scanned.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::ptr;
use std::sync::Mutex;

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

type MatchHandler = unsafe extern "C" fn(
    id: c_uint,
    from: c_ulonglong,
    to: c_ulonglong,
    flags: c_uint,
    context: *mut c_void,
) -> c_int;

const HS_SUCCESS: c_int = 0;
const HS_FLAG_CASELESS: c_uint = 1;
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
    fn hs_scratch_size(scratch: *const HsScratch, size: *mut usize) -> c_int;
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
// scratch is popped by one scan and pushed back after it) guarantees.
unsafe impl Send for Scratch {}

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
    /// The literal database, then (if any literal starts with NUL) the
    /// regex-API one; each reports ids into `members`.
    dbs: Vec<Database>,
    /// Prototype scratch (fits every database), cloned for each additional
    /// concurrent caller.
    proto: Scratch,
    pool: Mutex<Vec<Scratch>>,
    /// Caller ids behind each Hyperscan literal id.
    members: Vec<Vec<u32>>,
    count: usize,
    db_bytes: usize,
    scratch_bytes: usize,
}

// SAFETY: compiled databases are immutable and Hyperscan documents them as
// safe to share between threads; scratch space (the only mutable state) is
// handed out by the Mutex-protected pool, one scan at a time.
unsafe impl Send for HyperscanEngine {}
// SAFETY: see Send: scans take a scratch from the pool, never share one.
unsafe impl Sync for HyperscanEngine {}

impl std::fmt::Debug for HyperscanEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperscanEngine")
            .field("literals", &self.members.len())
            .field("databases", &self.dbs.len())
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

/// Compiles `(id, bytes, nocase)` literals into one block-mode database:
/// through the literal API, or with `regex` through the regex API with
/// every byte hex-escaped.
fn compile(lits: &[(u32, &[u8], bool)], regex: bool) -> Result<Database, BuildError> {
    let flags: Vec<c_uint> = lits
        .iter()
        .map(|l| if l.2 { HS_FLAG_CASELESS } else { 0 })
        .collect();
    let ids: Vec<c_uint> = lits.iter().map(|l| l.0).collect();
    let mut db: *mut HsDatabase = ptr::null_mut();
    let mut err: *mut HsCompileError = ptr::null_mut();
    let rc = if regex {
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
        let (plain, nul): (Vec<_>, Vec<_>) = lits
            .iter()
            .enumerate()
            .map(|(i, l)| (i as u32, l.0, l.1))
            .partition(|l| l.1[0] != 0);
        let mut dbs = Vec::new();
        for (set, regex) in [(plain, false), (nul, true)] {
            if !set.is_empty() {
                dbs.push(compile(&set, regex)?);
            }
        }
        let mut proto = Scratch(ptr::null_mut());
        let (mut db_bytes, mut scratch_bytes) = (0, 0);
        for db in &dbs {
            let mut n = 0;
            // SAFETY: `db` is a database just compiled; the scratch is
            // null or one allocated here (hs_alloc_scratch grows it to fit
            // this database too); out-pointers point to live locals.
            unsafe {
                if hs_alloc_scratch(db.0, &mut proto.0) != HS_SUCCESS
                    || hs_database_size(db.0, &mut n) != HS_SUCCESS
                {
                    return Err(BuildError("Hyperscan: cannot allocate scratch".into()));
                }
            }
            db_bytes += n;
        }
        if !proto.0.is_null() {
            // SAFETY: a valid scratch and a live out-pointer.
            unsafe { hs_scratch_size(proto.0, &mut scratch_bytes) };
        }
        Ok(HyperscanEngine {
            dbs,
            proto,
            pool: Mutex::new(Vec::new()),
            members,
            count,
            db_bytes,
            scratch_bytes,
        })
    }

    /// Bytes of the compiled database and of one scratch region.
    pub fn sizes(&self) -> (usize, usize) {
        (self.db_bytes, self.scratch_bytes)
    }

    fn take_scratch(&self) -> Scratch {
        if let Some(s) = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return s;
        }
        let mut s = Scratch(ptr::null_mut());
        // SAFETY: the prototype is a valid scratch for this database and is
        // only read by hs_clone_scratch.
        let rc = unsafe { hs_clone_scratch(self.proto.0, &mut s.0) };
        assert!(rc == HS_SUCCESS, "hs_clone_scratch failed: out of memory");
        s
    }

    fn scan(&self, hay: &[u8], emit: &mut dyn FnMut(u32, usize)) {
        if self.dbs.is_empty() || hay.is_empty() {
            return;
        }
        let scratch = self.take_scratch();
        let members = &self.members;
        let mut f = |lit: u32, end: usize| {
            for &id in &members[lit as usize] {
                emit(id, end);
            }
        };
        // Block mode takes a u32 length; Vigil's buffers are far shorter.
        let len = c_uint::try_from(hay.len()).expect("buffer too large for Hyperscan");
        let mut ctx = Ctx { f: &mut f };
        for db in &self.dbs {
            // SAFETY: db and scratch are valid (the scratch fits every
            // database) and the scratch is ours alone for this call;
            // data/len describe a live slice; the callback gets `ctx`,
            // which outlives the call. A panic in the sink aborts at the
            // extern "C" boundary rather than unwinding through C.
            unsafe {
                hs_scan(
                    db.0,
                    hay.as_ptr().cast(),
                    len,
                    0,
                    scratch.0,
                    on_match,
                    (&mut ctx as *mut Ctx<'_>).cast(),
                );
            }
        }
        self.pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(scratch);
    }
}

impl PrefilterEngine for HyperscanEngine {
    fn name(&self) -> &'static str {
        "hs"
    }

    fn scan_batch(&self, batch: &[&[u8]], sink: &mut dyn FnMut(PrefilterMatch)) {
        for (bi, hay) in batch.iter().enumerate() {
            self.scan(hay, &mut |pattern, end| {
                sink(PrefilterMatch {
                    buffer: bi as u32,
                    pattern,
                    end: end as u32,
                })
            });
        }
    }

    fn scan_ids(&self, hay: &[u8], sink: &mut dyn FnMut(u32)) {
        self.scan(hay, &mut |id, _| sink(id));
    }

    fn heap_bytes(&self) -> usize {
        self.db_bytes
            + self.scratch_bytes
            + self.members.iter().map(|m| 24 + m.len() * 4).sum::<usize>()
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

    #[test]
    fn reports_version() {
        assert!(version().starts_with('5'), "{}", version());
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
            assert_eq!(h.join().unwrap(), 400);
        }
    }
}
