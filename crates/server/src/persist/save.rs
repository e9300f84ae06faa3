//! Writing RDB files: the temporary file, fsync and rename of rdbSave with Redis's log
//! lines; a save with every shard held (SAVE, SHUTDOWN, FLUSHALL, DEBUG RELOAD); BGSAVE on
//! a thread of its own over a copy-on-write snapshot.

use super::{dirty_total, unix_secs};
use crate::config::value::strerror;
use crate::log;
use crate::server::Server;
use engine::rdb::file::{write_shard, Access, AuxValue, FileWriter, SaveOptions};
use engine::snapshot::Snapshot;
use engine::Locked;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

pub type Writer = FileWriter<BufWriter<File>>;

/// Why a save failed (already logged).
#[derive(Debug)]
pub struct SaveFailed;

fn cwd() -> String {
    std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}

/// What a file written by [`write_file`] is, for its AUX fields, its final name and
/// Redis's log lines.
#[derive(Clone, Copy)]
pub enum Target<'a> {
    /// `dbfilename` (rdbSave).
    Rdb,
    /// An AOF base in RDB format, renamed to this path (rewriteAppendOnlyFile).
    AofBase(&'a str),
}

/// rdbSave / rewriteAppendOnlyFile: write `tmp` through `fill` (header and footer around
/// it), flush, fsync, rename it to its final name, fsync the directory. Logs as Redis
/// does.
pub fn write_file(
    srv: &Server,
    tmp: &str,
    target: Target<'_>,
    fill: impl FnOnce(&mut Writer) -> io::Result<()>,
) -> Result<(), SaveFailed> {
    let aof = matches!(target, Target::AofBase(_));
    let filename = match target {
        Target::Rdb => srv.config.get("dbfilename"),
        Target::AofBase(p) => p.to_string(),
    };
    let f = match File::create(tmp) {
        Ok(f) => f,
        Err(e) if aof => {
            log::warning(&format!(
                "Opening the temp file for AOF rewrite in rewriteAppendOnlyFile(): {}",
                strerror(&e)
            ));
            return Err(SaveFailed);
        }
        Err(e) => {
            log::warning(&format!(
                "Failed opening the temp RDB file {tmp} (in server root dir {}) for saving: {}",
                cwd(),
                strerror(&e)
            ));
            return Err(SaveFailed);
        }
    };
    let result = (|| -> Result<(), (&'static str, io::Error)> {
        let sink = BufWriter::with_capacity(1 << 20, f);
        let mut fw = rdb_writer(srv, sink, aof).map_err(|e| ("rdbSaveRio", e))?;
        fill(&mut fw).map_err(|e| ("rdbSaveRio", e))?;
        let mut sink = fw.finish().map_err(|e| ("rdbSaveRio", e))?;
        sink.flush().map_err(|e| ("fflush", e))?;
        let f = sink.into_inner().map_err(|e| ("fflush", e.into_error()))?;
        f.sync_all().map_err(|e| ("fsync", e))?;
        Ok(())
    })();
    let failed = |line: String| {
        log::warning(&line);
        let _ = std::fs::remove_file(tmp);
        Err(SaveFailed)
    };
    if let Err((op, e)) = result {
        let e = strerror(&e);
        return failed(if aof {
            format!("Write error writing append only file on disk: {e}")
        } else {
            format!("Write error saving DB on disk({op}): {e}")
        });
    }
    if let Err(e) = std::fs::rename(tmp, &filename) {
        let e = strerror(&e);
        return failed(if aof {
            format!("Error moving temp append only file on the final destination: {e}")
        } else {
            format!(
                "Error moving temp DB file {tmp} on the final destination {filename} (in server root dir {}): {e}",
                cwd()
            )
        });
    }
    if aof {
        // The manifest written next fsyncs the AOF directory.
        return Ok(());
    }
    // fsyncFileDir: make the rename durable.
    if let Ok(d) = File::open(".") {
        if let Err(e) = d.sync_all() {
            log::warning(&format!(
                "Write error saving DB on disk(fsyncFileDir): {}",
                strerror(&e)
            ));
            return Err(SaveFailed);
        }
    }
    log::notice("DB saved on disk");
    Ok(())
}

/// An RDB file's writer over `sink`, its header and AUX fields written (`aof_base`: the
/// base of an AOF).
pub fn rdb_writer<W: Write>(srv: &Server, sink: W, aof_base: bool) -> io::Result<FileWriter<W>> {
    let mem = crate::memory::alloc_stats().allocated as i64;
    let aux = [
        ("redis-ver", AuxValue::Str(crate::REDIS_VERSION)),
        ("redis-bits", AuxValue::Int(64)),
        ("ctime", AuxValue::Int(unix_secs())),
        ("used-mem", AuxValue::Int(mem)),
        ("aof-base", AuxValue::Int(i64::from(aof_base))),
    ];
    let checksum = srv.config.get_bool("rdbchecksum");
    FileWriter::new(sink, checksum, srv.keyspace.len(), &aux)
}

/// `rdbcompression`, and the access field Redis saves under the `maxmemory-policy`.
pub fn save_options(srv: &Server) -> SaveOptions {
    let policy = srv.config.get("maxmemory-policy");
    SaveOptions {
        compress: srv.config.get_bool("rdbcompression"),
        access: if policy.ends_with("-lru") {
            Access::Idle
        } else if policy.ends_with("-lfu") {
            Access::Freq
        } else {
            Access::None
        },
    }
}

/// Save with every shard held by `keys` (SAVE, SHUTDOWN, FLUSHALL, DEBUG RELOAD): the
/// dataset cannot change while it is written. `pending` is the dirty count the running
/// command has recorded but not yet added. On success the dirty counter restarts.
pub fn save_held(srv: &Server, keys: &mut Locked<'_>, pending: u64) -> Result<(), SaveFailed> {
    let tmp = format!("temp-{}.rdb", std::process::id());
    write_held(srv, keys, &tmp, Target::Rdb)?;
    let p = &srv.persist;
    super::reset_dirty(srv, pending);
    p.lastsave.store(unix_secs(), Relaxed);
    p.last_bgsave_ok.store(true, Relaxed);
    Ok(())
}

/// Write every key of the shards `keys` holds (all of them) to `target` through `tmp`.
pub fn write_held(
    srv: &Server,
    keys: &mut Locked<'_>,
    tmp: &str,
    target: Target<'_>,
) -> Result<(), SaveFailed> {
    let opts = save_options(srv);
    write_file(srv, tmp, target, |fw| {
        let mut buf = Vec::new();
        for db in 0..srv.keyspace.len() {
            let sizes = (keys.len_in(db) as u64, keys.expires_len_in(db) as u64);
            let mut result = Ok(());
            keys.walk_in(db, |shard| {
                buf.clear();
                write_shard(&mut buf, shard, opts);
                result = fw.chunk(db, sizes, &buf);
                result.is_ok()
            });
            result?;
        }
        Ok(())
    })
}

/// rdbSaveBackground: install a snapshot now (the point in time the file will hold) and
/// write it out on a thread of its own. Fails if a BGSAVE runs already.
pub fn start_bgsave(srv: &Server) -> Result<(), SaveFailed> {
    let p = &srv.persist;
    let Some(this) = p.this.get().and_then(std::sync::Weak::upgrade) else {
        return Err(SaveFailed);
    };
    if p.bgsave_in_progress() {
        return Err(SaveFailed);
    }
    p.saves.fetch_add(1, Relaxed);
    let now = unix_secs();
    p.lastbgsave_try.store(now, Relaxed);
    let before = dirty_total(srv);
    let Some(snap) = srv.keyspace.begin_snapshot(save_options(srv)) else {
        return Err(SaveFailed);
    };
    p.dirty_before_bgsave.store(before, Relaxed);
    let sizes = db_sizes(srv);
    p.save_keys_total
        .store(sizes.iter().map(|s| s.0).sum(), Relaxed);
    p.bgsave_started.store(now, Relaxed);
    let spawned = std::thread::Builder::new()
        .name("skein-bgsave".into())
        .spawn({
            let snap = snap.clone();
            move || bgsave_thread(&this, &snap, &sizes, now)
        });
    if let Err(e) = spawned {
        srv.keyspace.end_snapshot();
        p.bgsave_started.store(-1, Relaxed);
        p.last_bgsave_ok.store(false, Relaxed);
        log::warning(&format!("Can't save in background: fork: {}", strerror(&e)));
        return Err(SaveFailed);
    }
    log::notice(&format!(
        "Background saving started by pid {}",
        std::process::id()
    ));
    Ok(())
}

/// RESIZEDB hints: each database's key and TTL counts now (the loader only uses them to
/// size its tables).
pub fn db_sizes(srv: &Server) -> Vec<(u64, u64)> {
    srv.keyspace
        .dbs()
        .iter()
        .map(|d| {
            (0..d.shard_count()).fold((0, 0), |(n, e), i| {
                let s = d.read_shard(i);
                (n + s.len() as u64, e + s.expires_len() as u64)
            })
        })
        .collect()
}

fn bgsave_thread(srv: &Server, snap: &Arc<Snapshot>, sizes: &[(u64, u64)], started: i64) {
    let tmp = format!("temp-bg-{}.rdb", std::process::id());
    let ks = &srv.keyspace;
    let result = write_snapshot(srv, snap, sizes, &tmp, Target::Rdb);
    let aborted = snap.is_aborted();
    let p = &srv.persist;
    p.last_cow_writes.store(snap.cow_writes(), Relaxed);
    p.last_cow_bytes.store(snap.cow_bytes(), Relaxed);
    ks.end_snapshot();
    match result {
        _ if aborted => {
            let _ = std::fs::remove_file(&tmp);
            log::warning("Background saving terminated by signal 10");
        }
        Ok(()) => {
            log::notice("Background saving terminated with success");
            // Changes made during the save are still to be saved.
            let before = p.dirty_before_bgsave.load(Relaxed);
            let at = p.dirty_at_save.load(Relaxed);
            p.dirty_at_save.store(at.max(before), Relaxed);
            p.lastsave.store(unix_secs(), Relaxed);
            p.last_bgsave_ok.store(true, Relaxed);
        }
        Err(SaveFailed) => {
            log::warning("Background saving error");
            p.last_bgsave_ok.store(false, Relaxed);
        }
    }
    p.last_bgsave_secs.store(unix_secs() - started, Relaxed);
    p.bgsave_started.store(-1, Relaxed);
}

/// Write the installed snapshot `snap` out shard by shard to `target` through `tmp` (the
/// saver's side of the copy-on-write rule: shards written out by writers are drained
/// before each shard it takes). The caller ends the snapshot.
pub fn write_snapshot(
    srv: &Server,
    snap: &Arc<Snapshot>,
    sizes: &[(u64, u64)],
    tmp: &str,
    target: Target<'_>,
) -> Result<(), SaveFailed> {
    write_file(srv, tmp, target, |fw| walk_snapshot(srv, snap, sizes, fw))
}

/// The saver's walk of [`write_snapshot`], into any RDB writer (a file, or a replica's
/// socket).
pub fn walk_snapshot<W: Write>(
    srv: &Server,
    snap: &Arc<Snapshot>,
    sizes: &[(u64, u64)],
    fw: &mut FileWriter<W>,
) -> io::Result<()> {
    let ks = &srv.keyspace;
    {
        // One walk takes every shard's side, unless a SWAPDB moved one not taken to a shard
        // the walk had passed: then walk again (each pass takes what it finds).
        loop {
            for db in 0..ks.len() {
                let d = ks.db(db);
                for i in 0..d.shard_count() {
                    if snap.is_aborted() {
                        return Err(io::Error::other("snapshot abandoned"));
                    }
                    for c in snap.drain() {
                        fw.chunk(c.db, sizes[c.db], &c.records)?;
                    }
                    let chunk = {
                        let shard = d.read_shard(i);
                        snap.take(db, i, &shard)
                    };
                    if let Some(c) = chunk {
                        fw.chunk(c.db, sizes[c.db], &c.records)?;
                        key_save_delay(srv, c.keys);
                    }
                }
            }
            if snap.all_taken() || snap.is_aborted() {
                break;
            }
        }
        // Every shard is taken now: whatever writers wrote out is queued.
        for c in snap.drain() {
            fw.chunk(c.db, sizes[c.db], &c.records)?;
        }
        if snap.is_aborted() {
            return Err(io::Error::other("snapshot abandoned"));
        }
        Ok(())
    }
}

/// `rdb-key-save-delay` (microseconds per key, for tests): slow the saver thread down,
/// after each shard it wrote out.
fn key_save_delay(srv: &Server, keys: usize) {
    let delay = srv.config.get_i64("rdb-key-save-delay");
    if delay > 0 && keys > 0 {
        std::thread::sleep(std::time::Duration::from_micros(delay as u64 * keys as u64));
    }
}

/// Abandon a running BGSAVE (killRDBChild): nothing more is written out and its thread
/// removes its temporary file once it can take the shard it waits for (the caller may
/// hold every shard, so this does not wait).
pub fn kill_bgsave(srv: &Server) {
    if let Some(snap) = srv.keyspace.snapshot() {
        snap.abort();
    }
}
