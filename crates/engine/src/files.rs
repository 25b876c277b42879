//! The `fileinfo` records of a finished transaction and Suricata's
//! file-store v2 (`<dir>/<first two hex digits of the SHA-256>/<SHA-256>`),
//! over the file tracking of [`vigil_applayer::files`].

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use vigil_applayer::files::{self, FileTracker};
use vigil_applayer::{AppLayerState, Direction, TxId};
use vigil_detect::app::TxCheck;
use vigil_detect::{DetectEngine, TxDetectState};

type AppDir = Direction;

/// Files written to the file store so far (their `file_id`s).
static STORED: AtomicU64 = AtomicU64::new(0);

/// One `fileinfo` record: the object, and whether the file went to the
/// client (the record then names the server as its source).
pub(crate) struct FileRecord {
    pub json: String,
    pub to_client: bool,
}

/// The sids of the `filestore` rules that fired on the transaction in
/// `dir` (Suricata's `fileinfo.sid`).
fn store_sids(detect: &DetectEngine, txd: Option<&TxDetectState>, dir: AppDir) -> Vec<u32> {
    let Some(t) = txd else {
        return Vec::new();
    };
    let mut sids: Vec<u32> = t
        .fired
        .iter()
        .filter_map(|&(r, d)| {
            let r = detect.rules.get(r as usize)?;
            let a = r.app.as_ref()?;
            (a.checks.contains(&TxCheck::FileStore) && (d == dir || a.both_dirs)).then_some(r.sid)
        })
        .collect();
    sids.sort_unstable();
    sids.dedup();
    sids
}

/// Writes a file's data as `<dir>/<sha256[..2]>/<sha256>` (once: a file
/// already stored is kept). Returns the file's store id.
fn store(dir: &Path, data: &[u8]) -> Option<u64> {
    let sha = files::HashKind::Sha256.digest(data);
    let sub = dir.join(&sha[..2]);
    std::fs::create_dir_all(&sub).ok()?;
    let path = sub.join(&sha);
    if !path.exists() {
        let tmp = sub.join(format!("{sha}.tmp"));
        std::fs::write(&tmp, data).ok()?;
        std::fs::rename(&tmp, &path).ok()?;
    }
    Some(STORED.fetch_add(1, Ordering::Relaxed) + 1)
}

/// The `fileinfo` records of a finished transaction (`eof`: the flow
/// ended, so an unfinished file is truncated); `tx_json` is the
/// transaction's own record (`"http":{...}`), added to each as Suricata
/// does; files of a side a `filestore` rule fired on go to `store_dir`.
pub(crate) fn file_records(
    state: &AppLayerState,
    tx: TxId,
    eof: bool,
    tx_json: Option<(&str, &str)>,
    detect: &DetectEngine,
    txd: Option<&TxDetectState>,
    store_dir: Option<&Path>,
) -> Vec<FileRecord> {
    let mut out = Vec::new();
    let flags = files::enabled();
    for dir in [Direction::ToServer, Direction::ToClient] {
        let list = files::tx_files(state, tx, dir);
        if list.is_empty() {
            continue;
        }
        let complete = files::side_complete(state, tx, dir);
        let adir = match dir {
            Direction::ToServer => AppDir::ToServer,
            Direction::ToClient => AppDir::ToClient,
        };
        let sids = store_sids(detect, txd, adir);
        let want_store = store_dir.is_some() && !sids.is_empty();
        for f in &list {
            let t: FileTracker = files::track(f, flags, want_store, complete, eof);
            let stored = match (store_dir, t.stored_data()) {
                (Some(d), Some(data)) if t.state == files::FileState::Closed => store(d, data),
                _ => None,
            };
            let mut obj = t.eve(tx, stored);
            if let (false, Some(m)) = (sids.is_empty(), obj.as_object_mut()) {
                m.insert("sid".into(), serde_json::Value::from(sids.clone()));
            }
            let mut json = serde_json::to_string(&obj).unwrap_or_default();
            if let Some((key, obj)) = tx_json {
                json.push_str(",\"");
                json.push_str(key);
                json.push_str("\":");
                json.push_str(obj);
            }
            out.push(FileRecord {
                json,
                to_client: dir == Direction::ToClient,
            });
        }
    }
    out
}
