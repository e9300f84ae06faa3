//! Loading an RDB file into the keyspace (rdbLoad), with Redis's log lines, at start-up
//! and for DEBUG RELOAD. A damaged file is refused as Redis refuses it: the server stops
//! rather than run with part of a dataset.

use super::unix_secs;
use crate::config::value::strerror;
use crate::log;
use crate::server::Server;
use engine::rdb::file::{
    load, loaded_access, AuxInfo, LoadError, LoadOptions, LoadSummary, LoadedKey,
};
use engine::{Changes, Entry, Event, Locked};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// Why nothing was loaded, when the caller decides what follows (the process has already
/// exited for the errors Redis exits on).
pub enum NotLoaded {
    /// No file.
    Missing,
    /// Could not be opened or read, or refused before any key (signature, version).
    Failed(std::io::Error),
}

/// How to treat a key the dataset already has.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Duplicates {
    /// Fatal, as in Redis ("Duplicated key found in RDB file").
    Refuse,
    /// The file's key replaces it (DEBUG RELOAD MERGE).
    Replace,
}

/// rdbReportError's fatal path: log, then stop the process.
fn fatal(lines: &[String]) -> ! {
    for l in lines {
        log::warning(l);
    }
    log::warning("Terminating server after rdb file reading failure.");
    std::process::exit(1);
}

/// "Internal error in RDB reading offset N, function at rdb.c:LINE -> reason", the offset
/// as Redis knows it (advanced every `loading-process-events-interval-bytes`).
fn internal(srv: &Server, offset: u64, line: u32, reason: &str) -> String {
    let step = srv
        .config
        .get_i64("loading-process-events-interval-bytes")
        .max(1) as u64;
    format!(
        "Internal error in RDB reading offset {}, function at rdb.c:{line} -> {reason}",
        offset / step * step
    )
}

/// Put a loaded key into shards `keys` holds; false for a duplicate refused.
pub fn insert(keys: &mut Locked<'_>, db: usize, entry: Entry, dups: Duplicates) -> bool {
    let key = entry.key().to_vec();
    if dups == Duplicates::Refuse && keys.peek_in(db, &key).is_some() {
        return false;
    }
    keys.insert_entry_in(db, &key, entry, Event::NONE);
    true
}

/// How the tables of the databases are sized while loading.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Presize {
    /// From the file's RESIZEDB hints, locking each shard in turn (nothing held).
    Lock,
    /// Not at all: the caller holds the shards (DEBUG RELOAD).
    No,
}

/// Load `dbfilename`, handing each key to `put` (false: a duplicate refused).
pub fn load_file(
    srv: &Server,
    presize: Presize,
    put: impl FnMut(usize, Entry) -> bool,
) -> Result<LoadSummary, NotLoaded> {
    let filename = srv.config.get("dbfilename");
    let buf = match std::fs::read(&filename) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(NotLoaded::Missing),
        Err(e) => return Err(NotLoaded::Failed(e)),
    };
    load_bytes(srv, &buf, presize, put)
}

/// Load the RDB at the start of `buf` (a file, or an AOF's RDB base or preamble), handing
/// each key to `put`; the summary says where the RDB ended.
pub fn load_bytes(
    srv: &Server,
    buf: &[u8],
    presize: Presize,
    mut put: impl FnMut(usize, Entry) -> bool,
) -> Result<LoadSummary, NotLoaded> {
    let p = &srv.persist;
    let opts = LoadOptions {
        databases: srv.keyspace.len(),
        checksum: srv.config.get_bool("rdbchecksum") && !srv.stats.skip_checksum(),
        now_ms: engine::wall_ms(),
        limits: srv.config.hot.coll_limits(),
    };
    let info = |a: AuxInfo<'_>| match a {
        AuxInfo::Version(v) => log::notice(&format!(
            "Loading RDB produced by version {}",
            String::from_utf8_lossy(v)
        )),
        AuxInfo::Ctime(t) => log::notice(&format!("RDB age {} seconds", (unix_secs() - t).max(0))),
        AuxInfo::UsedMem(m) => log::notice(&format!(
            "RDB memory usage when created {:.2} Mb",
            m as f64 / (1024.0 * 1024.0)
        )),
        AuxInfo::AofBase => log::notice("RDB is base AOF"),
        AuxInfo::AofPreamble => log::notice("RDB has an AOF tail"),
        AuxInfo::Info(k, v) => log::notice(&format!(
            "RDB '{}': {}",
            String::from_utf8_lossy(k),
            String::from_utf8_lossy(v)
        )),
        AuxInfo::ResizeDb { db, keys } => {
            // A key takes several bytes of the file: a damaged hint sizes nothing huge.
            if presize == Presize::Lock && db < srv.keyspace.len() {
                srv.keyspace.db(db).reserve(keys.min(buf.len() as u64 / 4));
            }
        }
    };
    // `key-load-delay` (microseconds per key, for tests): a slow load.
    let delay = srv.config.get_i64("key-load-delay").max(0) as u64;
    let mut delayed = 0u64;
    let sink = |k: LoadedKey<'_>| {
        if delay > 0 {
            delayed += delay;
            if delayed >= 1000 {
                std::thread::sleep(std::time::Duration::from_micros(delayed));
                delayed = 0;
            }
        }
        let lru = loaded_access(k.idle, k.freq);
        put(k.db, Entry::from_value(k.key, k.value, k.expire_at, lru))
    };
    let result = load(buf, &opts, info, sink);
    let failure = match result {
        Ok(summary) => {
            if summary.unchecked {
                log::warning("RDB file was saved with checksum disabled: no check performed.");
            }
            log::notice(&format!(
                "Done loading RDB, keys loaded: {}, keys expired: {}.",
                summary.loaded, summary.expired
            ));
            p.last_load_loaded.store(summary.loaded, Relaxed);
            p.last_load_expired.store(summary.expired, Relaxed);
            return Ok(summary);
        }
        Err(f) => f,
    };
    let eof = |srv: &Server| -> Vec<String> {
        vec![
            "Short read or OOM loading DB. Unrecoverable error, aborting now.".into(),
            internal(srv, failure.offset, 3240, "Unexpected EOF reading RDB file"),
        ]
    };
    match failure.error {
        LoadError::Signature => {
            log::warning("Wrong signature trying to load DB from file");
            Err(NotLoaded::Failed(std::io::Error::from_raw_os_error(
                libc::EINVAL,
            )))
        }
        LoadError::Version(v) => {
            log::warning(&format!("Can't handle RDB format version {v}"));
            Err(NotLoaded::Failed(std::io::Error::from_raw_os_error(
                libc::EINVAL,
            )))
        }
        LoadError::Eof => fatal(&eof(srv)),
        LoadError::Corrupt(reason) => fatal(&[internal(srv, failure.offset, 2317, &reason)]),
        LoadError::Checksum { expected, got } => fatal(&[
            format!("Wrong RDB checksum expected: ({expected:x}) but got ({got:x}). Aborting now."),
            internal(srv, failure.offset, 3216, "RDB CRC error"),
        ]),
        LoadError::TooManyDbs => {
            log::warning(&format!(
                "FATAL: Data file was created with a Redis server configured to handle more than {} databases. Exiting\n",
                srv.keyspace.len()
            ));
            std::process::exit(1);
        }
        LoadError::Functions => {
            let mut lines =
                vec!["Failed loading library, Skein does not support functions yet".to_string()];
            lines.extend(eof(srv));
            fatal(&lines)
        }
        LoadError::Module(name) => fatal(&[internal(
            srv,
            failure.offset,
            2627,
            &format!(
                "The RDB file contains module data I can't load: no matching module type '{name}'"
            ),
        )]),
        LoadError::Duplicate { db, key } => {
            log::warning(&format!(
                "RDB has duplicated key '{}' in DB {db}",
                String::from_utf8_lossy(&key)
            ));
            log::warning("Guru Meditation: Duplicated key found in RDB file");
            std::process::exit(1);
        }
    }
}

/// loadDataFromDisk: load `dir`/`dbfilename` at start-up if it exists; exit on errors.
/// The caller set `loading` before clients could connect: they get -LOADING until this
/// returns. Each key's shard is locked only to insert it.
pub fn at_startup(srv: &Server) {
    if srv.config.get_bool("appendonly") {
        // With the AOF on, it alone is the dataset (loadDataFromDisk).
        super::aof::load::at_startup(srv);
        super::aof::open_on_start(srv);
        srv.persist.loading.store(false, Relaxed);
        return;
    }
    let start = Instant::now();
    let result = load_file(srv, Presize::Lock, startup_sink(srv));
    srv.persist.loading.store(false, Relaxed);
    match result {
        Ok(_) => log::notice(&format!(
            "DB loaded from disk: {:.3} seconds",
            start.elapsed().as_secs_f64()
        )),
        Err(NotLoaded::Missing) => {}
        Err(NotLoaded::Failed(e)) => {
            log::warning(&format!(
                "Fatal error loading the DB: {}. Exiting.",
                strerror(&e)
            ));
            std::process::exit(1);
        }
    }
}

/// Where keys loaded at start-up go: each key's shard is locked only to insert it, and a
/// duplicate is refused.
pub fn startup_sink(srv: &Server) -> impl FnMut(usize, Entry) -> bool + '_ {
    let mut changes = Changes::default();
    // Loaded keys are not changes anyone consumes: only counted, nothing kept.
    changes.keep_events(false);
    changes.want_informational(0);
    move |db, entry| {
        let mut keys = srv.keyspace.lock_key(db, entry.key(), &mut changes);
        let ok = insert(&mut keys, db, entry, Duplicates::Refuse);
        keys.release();
        ok
    }
}
