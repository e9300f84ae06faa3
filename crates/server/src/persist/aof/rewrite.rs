//! BGREWRITEAOF without fork (rewriteAppendOnlyFileBackground and
//! backgroundRewriteDoneHandler of Redis 7.0, on the BGSAVE machinery):
//!
//! 1. a new incremental file is created and listed in the manifest (it is empty, so the
//!    manifest is valid before and after the cut);
//! 2. the cut: a copy-on-write snapshot is installed with every shard held, and at that
//!    instant the writer writes what the stream holds to the old file and switches to the
//!    new one: a write is in the snapshot exactly when its record went to the old files;
//! 3. the `skein-aofrw` thread writes the snapshot as the new base (RDB format, AUX
//!    `aof-base` 1) to a temporary file;
//! 4. done: the base is renamed into the directory, the old base and incremental files
//!    become history in a new manifest (written atomically), and history is removed.
//!
//! Turning the AOF on at run time (CONFIG SET appendonly yes) is the same rewrite with the
//! stream attached at the cut and the records after it going to a temporary incremental
//! file, renamed and listed when the base is done.

use super::{flush, manifest, path, start_appending, ON, WAIT_REWRITE};
use crate::config::value::strerror;
use crate::log;
use crate::persist::save::{self, SaveFailed, Target};
use crate::persist::unix_secs;
use crate::server::Server;
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

/// What INFO says about rewrites.
pub struct State {
    /// Unix time the running rewrite started, or -1.
    pub started: AtomicI64,
    pub scheduled: AtomicBool,
    pub last_ok: AtomicBool,
    pub last_secs: AtomicI64,
    pub rewrites: AtomicU64,
    pub consecutive_failures: AtomicU64,
}

impl Default for State {
    fn default() -> Self {
        State {
            started: AtomicI64::new(-1),
            scheduled: AtomicBool::new(false),
            last_ok: AtomicBool::new(true),
            last_secs: AtomicI64::new(-1),
            rewrites: AtomicU64::new(0),
            consecutive_failures: AtomicU64::new(0),
        }
    }
}

impl State {
    pub fn in_progress(&self) -> bool {
        self.started.load(Relaxed) >= 0
    }
}

/// getTempIncrAofName.
fn temp_incr_name(srv: &Server) -> String {
    format!("temp-{}.incr", srv.config.get("appendfilename"))
}

fn temp_base_name() -> String {
    format!("temp-rewriteaof-bg-{}.aof", std::process::id())
}

/// A base written synchronously from the whole dataset (the server starts with no AOF):
/// nothing writes meanwhile.
pub fn write_base_now(srv: &Server, to: &Path, rdb: bool) -> Result<(), save::SaveFailed> {
    let mut changes = engine::Changes::default();
    let mut plan = engine::Plan::new();
    plan.all();
    let mut keys = srv.keyspace.lock(&mut plan, 0, &mut changes);
    let tmp = format!("temp-rewriteaof-{}.aof", std::process::id());
    if rdb {
        let to = to.to_string_lossy();
        return save::write_held(srv, &mut keys, &tmp, Target::AofBase(&to));
    }
    let rdb_tmp = format!("{tmp}.rdb");
    save::write_held(srv, &mut keys, &tmp, Target::AofBase(&rdb_tmp))?;
    drop(keys);
    to_commands(srv, &rdb_tmp, &tmp, to)
}

/// `aof-use-rdb-preamble no`: turn the RDB written at `rdb_tmp` into a base of commands
/// at `tmp` (fsynced), renamed to `to`.
fn to_commands(srv: &Server, rdb_tmp: &str, tmp: &str, to: &Path) -> Result<(), SaveFailed> {
    let result = (|| -> std::io::Result<()> {
        let rdb = std::fs::read(rdb_tmp)?;
        let f = std::fs::File::create(tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let ts = srv.config.get_bool("aof-timestamp-enabled").then(unix_secs);
        super::commands::from_rdb(
            &mut w,
            &rdb,
            srv.keyspace.len(),
            srv.config.hot.coll_limits(),
            ts,
        )?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(tmp, to)
    })();
    let _ = std::fs::remove_file(rdb_tmp);
    result.map_err(|e| {
        log::warning(&format!(
            "Write error writing append only file on disk: {}",
            strerror(&e)
        ));
        let _ = std::fs::remove_file(tmp);
        SaveFailed
    })
}

/// Why a rewrite could not start.
pub enum NotStarted {
    /// A BGSAVE (or another snapshot) runs: schedule it.
    Busy,
    Failed,
}

/// rewriteAppendOnlyFileBackground.
pub fn start(srv: &Server) -> Result<(), NotStarted> {
    let aof = &srv.persist.aof;
    let rw = &aof.rw;
    if rw.in_progress() || srv.persist.bgsave_in_progress() || srv.keyspace.snapshot().is_some() {
        return Err(NotStarted::Busy);
    }
    let dir = srv.config.get("appenddirname");
    let filename = srv.config.get("appendfilename");
    if super::create_dir(srv).is_err() {
        rw.last_ok.store(false, Relaxed);
        return Err(NotStarted::Failed);
    }
    // Turning on (state OFF): the stream is attached at the cut, into a temporary file.
    let turning_on = aof.state() != ON;
    let always = srv.config.get("appendfsync") == "always";
    // 1. The new incremental file, listed before anything is written to it.
    let mut inner = aof.inner.lock();
    if aof.is_on() {
        flush(srv, &mut inner, always);
    }
    let mut am = inner.manifest.clone();
    let name = if turning_on {
        temp_incr_name(srv)
    } else {
        am.new_incr(&filename)
    };
    let file = match OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path(srv, &name))
    {
        Ok(f) => f,
        Err(e) => {
            log::warning(&format!(
                "Can't open the append-only file {name}: {}",
                strerror(&e)
            ));
            rw.last_ok.store(false, Relaxed);
            return Err(NotStarted::Failed);
        }
    };
    if !turning_on {
        if manifest::persist(&dir, &filename, &am).is_err() {
            rw.last_ok.store(false, Relaxed);
            return Err(NotStarted::Failed);
        }
        // Listed: from now on the manifest names it (empty until the cut).
        inner.manifest = am;
    }
    log::notice(&format!(
        "Creating AOF incr file {name} on background rewrite"
    ));
    drop(inner);
    // 2. The cut.
    let mut file = Some(file);
    let snap = srv.keyspace.begin_snapshot_at(save::save_options(srv), || {
        let mut inner = aof.inner.lock();
        if turning_on {
            inner.file = file.take();
            inner.incr_size = 0;
            inner.fsync_offset = 0;
            start_appending(srv, &mut inner, WAIT_REWRITE);
        } else {
            flush(srv, &mut inner, false);
            let old = std::mem::replace(&mut inner.file, file.take());
            inner.retiring = old;
            inner.incr_size = 0;
            inner.fsync_offset = 0;
            srv.propagation.forget_db();
        }
    });
    let Some(snap) = snap else {
        // A snapshot began meanwhile: the new file stays listed (and written from the
        // next rewrite on); nothing was cut.
        return Err(NotStarted::Busy);
    };
    rw.rewrites.fetch_add(1, Relaxed);
    rw.scheduled.store(false, Relaxed);
    let now = unix_secs();
    rw.started.store(now, Relaxed);
    let sizes = save::db_sizes(srv);
    let Some(this) = srv.persist.server() else {
        srv.keyspace.end_snapshot();
        rw.started.store(-1, Relaxed);
        return Err(NotStarted::Failed);
    };
    let rdb = srv.config.get_bool("aof-use-rdb-preamble");
    let spawned = std::thread::Builder::new()
        .name("skein-aofrw".into())
        .spawn(move || {
            let srv = &*this;
            let tmp = temp_base_name();
            let written = if rdb {
                tmp.clone()
            } else {
                format!("{tmp}.rdb")
            };
            let mut result =
                save::write_snapshot(srv, &snap, &sizes, &written, Target::AofBase(&written));
            let aborted = snap.is_aborted();
            srv.keyspace.end_snapshot();
            if result.is_ok() && !rdb {
                result = to_commands(srv, &written, &tmp, Path::new(&tmp));
            }
            done(srv, result.is_ok() && !aborted, aborted, now, rdb);
        });
    if let Err(e) = spawned {
        srv.keyspace.end_snapshot();
        rw.started.store(-1, Relaxed);
        rw.last_ok.store(false, Relaxed);
        log::warning(&format!(
            "Can't rewrite append only file in background: fork: {}",
            strerror(&e)
        ));
        return Err(NotStarted::Failed);
    }
    log::notice(&format!(
        "Background append only file rewriting started by pid {}",
        std::process::id()
    ));
    Ok(())
}

/// backgroundRewriteDoneHandler.
fn done(srv: &Server, ok: bool, killed: bool, started: i64, rdb: bool) {
    let aof = &srv.persist.aof;
    let rw = &aof.rw;
    let tmp = temp_base_name();
    if ok {
        log::notice("Background AOF rewrite terminated with success");
        if install(srv, &tmp, rdb).is_ok() {
            rw.last_ok.store(true, Relaxed);
            rw.consecutive_failures.store(0, Relaxed);
            log::notice("Background AOF rewrite finished successfully");
        } else {
            rw.last_ok.store(false, Relaxed);
            rw.consecutive_failures.fetch_add(1, Relaxed);
        }
    } else if killed {
        log::warning("Background AOF rewrite terminated by signal 10");
    } else {
        rw.last_ok.store(false, Relaxed);
        rw.consecutive_failures.fetch_add(1, Relaxed);
        log::warning("Background AOF rewrite terminated with error");
    }
    let _ = std::fs::remove_file(&tmp);
    let _ = std::fs::remove_file(format!("{tmp}.rdb"));
    if aof.state() == WAIT_REWRITE {
        // Still waiting to be switched on: start over from a fresh temporary file.
        let _ = std::fs::remove_file(path(srv, &temp_incr_name(srv)));
        rw.scheduled.store(true, Relaxed);
    }
    rw.last_secs.store(unix_secs() - started, Relaxed);
    rw.started.store(-1, Relaxed);
}

/// Rename the new base (and, when turning on, the temporary incremental file) into the
/// directory, write the new manifest, remove history.
fn install(srv: &Server, tmp: &str, rdb: bool) -> Result<(), SaveFailed> {
    let aof = &srv.persist.aof;
    let dir = srv.config.get("appenddirname");
    let filename = srv.config.get("appendfilename");
    let mut inner = aof.inner.lock();
    let mut am = inner.manifest.clone();
    let base = am.new_base(&filename, rdb);
    let base_path = path(srv, &base);
    if let Err(e) = std::fs::rename(tmp, &base_path) {
        log::warning(&format!(
            "Error trying to rename the temporary AOF base file {tmp} into {}: {}",
            base_path.display(),
            strerror(&e)
        ));
        return Err(SaveFailed);
    }
    log::notice(&format!(
        "Successfully renamed the temporary AOF base file {tmp} into {base}"
    ));
    let waiting = aof.state() == WAIT_REWRITE;
    let mut new_incr = None;
    if waiting {
        let temp = path(srv, &temp_incr_name(srv));
        let name = am.new_incr(&filename);
        let p = path(srv, &name);
        if let Err(e) = std::fs::rename(&temp, &p) {
            log::warning(&format!(
                "Error trying to rename the temporary AOF incr file {} into {}: {}",
                temp.display(),
                p.display(),
                strerror(&e)
            ));
            let _ = std::fs::remove_file(&base_path);
            return Err(SaveFailed);
        }
        log::notice(&format!(
            "Successfully renamed the temporary AOF incr file {} into {name}",
            temp_incr_name(srv)
        ));
        new_incr = Some(p);
    }
    am.rewritten_incr_to_history(inner.file.is_some());
    if manifest::persist(&dir, &filename, &am).is_err() {
        let _ = std::fs::remove_file(&base_path);
        if let Some(p) = new_incr {
            let _ = std::fs::remove_file(p);
        }
        return Err(SaveFailed);
    }
    inner.manifest = am;
    let size = super::file_size(&base_path) + inner.incr_size;
    aof.current_size.store(size, Relaxed);
    aof.base_size.store(size, Relaxed);
    if waiting {
        aof.state.store(ON, Relaxed);
    }
    delete_history(srv, &mut inner);
    Ok(())
}

/// aofDelHistoryFiles (unless `aof-disable-auto-gc`).
pub(super) fn delete_history(srv: &Server, inner: &mut super::Inner) {
    if srv.config.get_bool("aof-disable-auto-gc") || inner.manifest.history.is_empty() {
        return;
    }
    for f in std::mem::take(&mut inner.manifest.history) {
        log::notice(&format!(
            "Removing the history file {} in the background",
            f.name
        ));
        let _ = std::fs::remove_file(path(srv, &f.name));
    }
    let _ = manifest::persist(
        &srv.config.get("appenddirname"),
        &srv.config.get("appendfilename"),
        &inner.manifest,
    );
}

/// CONFIG SET appendonly no / SHUTDOWN: abandon a running rewrite (killAppendOnlyChild).
pub fn abandon(srv: &Server) {
    if srv.persist.aof.rw.in_progress() {
        log::notice(&format!(
            "Killing running AOF rewrite child: {}",
            std::process::id()
        ));
        if let Some(snap) = srv.keyspace.snapshot() {
            snap.abort();
        }
    }
}

/// startAppendOnly (CONFIG SET appendonly yes): a rewrite that attaches the stream at its
/// cut.
pub fn turn_on(srv: &Server) -> Result<(), SaveFailed> {
    match start(srv) {
        Ok(()) => Ok(()),
        Err(NotStarted::Busy) => {
            // A BGSAVE runs: the rewrite starts when it ends, and the stream is read from
            // then on.
            srv.persist.aof.rw.scheduled.store(true, Relaxed);
            log::warning("AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.");
            Ok(())
        }
        Err(NotStarted::Failed) => {
            log::warning("Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. Check the above logs for more info about the error.");
            Err(SaveFailed)
        }
    }
}

/// From the `skein-aof` thread and the cron: a scheduled rewrite, or the automatic one
/// (`auto-aof-rewrite-percentage` growth over the base once past
/// `auto-aof-rewrite-min-size`).
pub fn cron(srv: &Server) {
    let aof = &srv.persist.aof;
    let rw = &aof.rw;
    if rw.in_progress() || srv.persist.bgsave_in_progress() || srv.persist.is_loading() {
        return;
    }
    let wants_on = srv.config.get_bool("appendonly");
    if rw.scheduled.load(Relaxed) && (aof.is_on() || wants_on) {
        let _ = start(srv);
        return;
    }
    if aof.state() != ON {
        return;
    }
    let perc = srv.config.get_i64("auto-aof-rewrite-percentage");
    let min = srv.config.get_i64("auto-aof-rewrite-min-size").max(0) as u64;
    let current = aof.current_size.load(Relaxed);
    if perc > 0 && current > min {
        let base = aof.base_size.load(Relaxed).max(1);
        let growth = (current * 100 / base) as i64 - 100;
        if growth >= perc && !limited(srv) {
            log::notice(&format!(
                "Starting automatic rewriting of AOF on {growth}% growth"
            ));
            let _ = start(srv);
        }
    }
}

/// aofRewriteLimited: after 3 failures in a row, wait 1, 2, 4... up to 60 minutes.
fn limited(srv: &Server) -> bool {
    use std::sync::atomic::AtomicI64 as A;
    static NEXT_DELAY_MIN: A = A::new(0);
    static NEXT_AT: A = A::new(0);
    if srv.persist.aof.rw.consecutive_failures.load(Relaxed) < 3 {
        NEXT_DELAY_MIN.store(0, Relaxed);
        NEXT_AT.store(0, Relaxed);
        return false;
    }
    let now = unix_secs();
    let at = NEXT_AT.load(Relaxed);
    if at != 0 {
        if now < at {
            return true;
        }
        NEXT_AT.store(0, Relaxed);
        return false;
    }
    let d = NEXT_DELAY_MIN.load(Relaxed);
    let d = if d == 0 { 1 } else { (d * 2).min(60) };
    NEXT_DELAY_MIN.store(d, Relaxed);
    NEXT_AT.store(now + d * 60, Relaxed);
    log::warning(&format!("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in {d} minutes"));
    true
}
