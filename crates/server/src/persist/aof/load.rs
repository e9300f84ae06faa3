//! Loading the AOF at start-up (loadAppendOnlyFiles, loadSingleAppendOnlyFile): the base
//! (RDB, or commands) and the incremental files the manifest lists, each command run by
//! a client of its own as Redis's fake AOF client runs it. Redis's log lines, its
//! `aof-load-truncated` rule (only the last file may end short) and its refusals.

use super::manifest::{self, Manifest};
use crate::cmd::ClientState;
use crate::config::value::strerror;
use crate::log;
use crate::server::Server;
use resp::ReplyBuf;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

/// CLIENT_ID_AOF: the id of the client that replays the AOF (the dispatcher lets it run
/// while the server is loading).
pub const AOF_CLIENT_ID: u64 = u64::MAX;

/// AOF_ANNOTATION_LINE_MAX_LEN: fgets reads at most one less.
const LINE_MAX: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    NotExist,
    Empty,
    OpenErr,
    Failed,
    Truncated,
}

/// The client commands of the AOF run as.
struct Replayer {
    client: ClientState,
    out: ReplyBuf,
    _poll: mio::Poll,
}

impl Replayer {
    /// A replaying client on `worker` (the thread it runs on: its per-worker counters).
    fn new(worker: usize) -> std::io::Result<Replayer> {
        let (client, poll) = internal_client(AOF_CLIENT_ID, worker)?;
        Ok(Replayer {
            client,
            out: ReplyBuf::default(),
            _poll: poll,
        })
    }
}

/// A client with no connection (the AOF's replaying client, a replica's master client),
/// counted as `worker`'s; the poll its mailbox needs lives as long as it.
pub fn internal_client(id: u64, worker: usize) -> std::io::Result<(ClientState, mio::Poll)> {
    let poll = mio::Poll::new()?;
    let mailbox = Arc::new(crate::net::mailbox::Mailbox::new(
        poll.registry(),
        mio::Token(0),
    )?);
    let info = Arc::new(crate::clients::ClientInfo::new(
        id,
        crate::clients::ClientAddr {
            addr: String::new(),
            laddr: String::new(),
            fd: -1,
            is_unix: false,
        },
        0,
        0,
        mailbox,
    ));
    Ok((ClientState::detached(id, 0, worker, info), poll))
}

/// fgets: the next line (up to '\n', at most LINE_MAX-1 bytes) from `pos`, or None at
/// the end.
fn fgets<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    if *pos >= buf.len() {
        return None;
    }
    let rest = &buf[*pos..];
    let n = rest
        .iter()
        .take(LINE_MAX - 1)
        .position(|&b| b == b'\n')
        .map_or(rest.len().min(LINE_MAX - 1), |i| i + 1);
    *pos += n;
    Some(&rest[..n])
}

/// atoi / strtol of the digits after the first byte.
fn number(line: &[u8]) -> i64 {
    manifest::atoll(&line[1..])
}

enum Stop {
    /// The file ended inside a command (or a MULTI without EXEC): `valid` bytes are good.
    Short,
    Format,
    Failed,
}

/// loadSingleAppendOnlyFile, its commands run on `worker`.
fn load_single(srv: &Server, name: &str, old_style: bool, last: bool, worker: usize) -> Status {
    let path = super::path(srv, name);
    let buf = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            log::warning(&format!(
                "The append log file {name} doesn't exist: {}",
                strerror(&e)
            ));
            return Status::NotExist;
        }
        Err(e) => {
            log::warning(&format!(
                "Fatal error: can't open the append log file {name} for reading: {}",
                strerror(&e)
            ));
            return Status::OpenErr;
        }
    };
    if buf.is_empty() {
        return Status::Empty;
    }
    let mut pos = 0usize;
    if buf.starts_with(b"REDIS") {
        log::notice(if old_style {
            "Reading RDB preamble from AOF file..."
        } else {
            "Reading RDB base file on AOF loading..."
        });
        let sink = crate::persist::load::startup_sink(srv);
        match crate::persist::load::load_bytes(srv, &buf, crate::persist::load::Presize::Lock, sink)
        {
            Ok(summary) => pos = summary.consumed as usize,
            Err(_) => {
                log::warning(&if old_style {
                    format!("Error reading the RDB preamble of the AOF file {name}, AOF loading aborted")
                } else {
                    format!("Error reading the RDB base file {name}, AOF loading aborted")
                });
                return Status::Failed;
            }
        }
        if old_style {
            log::notice("Reading the remaining AOF tail...");
        }
    }
    let mut r = match Replayer::new(worker) {
        Ok(r) => r,
        Err(e) => {
            log::warning(&format!(
                "Unrecoverable error reading the append only file {name}: {}",
                strerror(&e)
            ));
            return Status::Failed;
        }
    };
    let truncate_ok = srv.config.get_bool("aof-load-truncated");
    let mut valid = pos;
    let mut before_multi = pos;
    let result = replay(
        srv,
        &buf,
        &mut pos,
        &mut valid,
        &mut before_multi,
        &mut r,
        name,
    );
    let multi_left = r.client.in_multi();
    r.client.leave(srv);
    let stop = match result {
        Ok(()) if multi_left => {
            log::warning(&format!(
                "Revert incomplete MULTI/EXEC transaction in AOF file {name}"
            ));
            valid = before_multi;
            Stop::Short
        }
        Ok(()) => return Status::Ok,
        Err(s) => s,
    };
    match stop {
        Stop::Failed => Status::Failed,
        Stop::Format => {
            log::warning(&format!(
                "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
            ));
            Status::Failed
        }
        Stop::Short => {
            if truncate_ok {
                log::warning(&format!(
                    "!!! Warning: short read while loading the AOF file {name}!!!"
                ));
                log::warning(&format!(
                    "!!! Truncating the AOF {name} at offset {valid} !!!"
                ));
                // Only the last file may be cut (the caller refuses a short earlier one).
                let cut = if last {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_len(valid as u64))
                } else {
                    Ok(())
                };
                match cut {
                    Ok(()) => {
                        log::warning(&format!(
                            "AOF {name} loaded anyway because aof-load-truncated is enabled"
                        ));
                        return Status::Truncated;
                    }
                    Err(e) => log::warning(&format!(
                        "Error truncating the AOF file {name}: {}",
                        strerror(&e)
                    )),
                }
            }
            log::warning(&format!(
                "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
            ));
            Status::Failed
        }
    }
}

/// Run the commands of `buf` from `pos`; `valid` follows the end of the last command
/// read, `before_multi` where the last MULTI began.
fn replay(
    srv: &Server,
    buf: &[u8],
    pos: &mut usize,
    valid: &mut usize,
    before_multi: &mut usize,
    r: &mut Replayer,
    name: &str,
) -> Result<(), Stop> {
    let delay = srv.config.get_i64("key-load-delay").max(0) as u64;
    let mut args: Vec<&[u8]> = Vec::new();
    while let Some(line) = fgets(buf, pos) {
        if line[0] == b'#' {
            continue;
        }
        if line[0] != b'*' {
            return Err(Stop::Format);
        }
        if line.len() == 1 {
            return Err(Stop::Short);
        }
        let argc = number(line);
        if argc < 1 {
            return Err(Stop::Format);
        }
        args.clear();
        for _ in 0..argc {
            let Some(l) = fgets(buf, pos) else {
                return Err(Stop::Short);
            };
            if l[0] != b'$' {
                return Err(Stop::Format);
            }
            let len = number(l);
            if len < 0 {
                return Err(Stop::Format);
            }
            let end = pos.saturating_add(len as usize);
            if end > buf.len() {
                return Err(Stop::Short);
            }
            args.push(&buf[*pos..end]);
            *pos = end;
            if *pos + 2 > buf.len() {
                return Err(Stop::Short);
            }
            *pos += 2;
        }
        let Some(cmd) = srv.commands.lookup(&args) else {
            log::warning(&format!(
                "Unknown command '{}' reading the append only file {name}",
                String::from_utf8_lossy(args[0])
            ));
            return Err(Stop::Failed);
        };
        if cmd.fullname == "multi" {
            *before_multi = *valid;
        }
        crate::dispatch::execute_inline(srv, &mut r.client, &mut r.out, &args);
        r.out.out.clear();
        *valid = *pos;
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_micros(delay));
        }
    }
    Ok(())
}

/// aofUpgradePrepare: an `appendfilename` of an earlier Redis in `dir` becomes the base
/// of a new AOF directory.
fn upgrade(srv: &Server, am: &mut Manifest) {
    let dir = srv.config.get("appenddirname");
    let filename = srv.config.get("appendfilename");
    if super::create_dir(srv).is_err() {
        std::process::exit(1);
    }
    am.base = Some(manifest::FileInfo {
        name: filename.clone(),
        seq: 1,
        kind: manifest::BASE,
    });
    am.base_seq = 1;
    if manifest::persist(&dir, &filename, am).is_err() {
        std::process::exit(1);
    }
    if let Err(e) = std::fs::rename(&filename, super::path(srv, &filename)) {
        log::warning(&format!(
            "Error trying to move the old AOF file {filename} into dir {dir}: {}",
            strerror(&e)
        ));
        std::process::exit(1);
    }
    log::notice(&format!(
        "Successfully migrated an old-style AOF file ({filename}) into the AOF directory ({dir})."
    ));
}

/// loadAppendOnlyFiles, the commands run on `worker`.
fn load_files(srv: &Server, am: &mut Manifest, worker: usize) -> Status {
    let dir = srv.config.get("appenddirname");
    let filename = srv.config.get("appendfilename");
    if Path::new(&filename).is_file() {
        let base_is_old = am
            .base
            .as_ref()
            .is_some_and(|b| b.name == filename && am.incr.is_empty());
        if !Path::new(&dir).is_dir()
            || (am.base.is_none() && am.incr.is_empty())
            || (base_is_old && !super::path(srv, &filename).exists())
        {
            upgrade(srv, am);
        }
    }
    if am.base.is_none() && am.incr.is_empty() {
        return Status::NotExist;
    }
    let files: Vec<_> = am.base.iter().chain(&am.incr).cloned().collect();
    let mut total = 0u64;
    for f in &files {
        match std::fs::metadata(super::path(srv, &f.name)) {
            Ok(m) => total += m.len(),
            Err(e) => {
                log::warning(&format!(
                    "Unable to obtain the AOF file {} length. stat: {}",
                    f.name,
                    strerror(&e)
                ));
                return Status::Failed;
            }
        }
    }
    if total == 0 {
        return Status::Empty;
    }
    let count = files.len();
    let mut ret = Status::Ok;
    for (i, f) in files.iter().enumerate() {
        let last = i + 1 == count;
        let is_base = f.kind == manifest::BASE;
        let start = Instant::now();
        ret = load_single(srv, &f.name, is_base && f.name == filename, last, worker);
        if ret == Status::Ok || (ret == Status::Truncated && last) {
            log::notice(&format!(
                "DB loaded from {} file {}: {:.3} seconds",
                if is_base { "base" } else { "incr" },
                f.name,
                start.elapsed().as_secs_f64()
            ));
        }
        if ret == Status::Empty && !is_base {
            ret = Status::Ok;
        }
        if ret == Status::Truncated && !last {
            ret = Status::Failed;
            log::warning("Fatal error: the truncated file is not the last file");
        }
        if matches!(ret, Status::OpenErr | Status::Failed) {
            return ret;
        }
    }
    let aof = &srv.persist.aof;
    aof.current_size.store(total, Relaxed);
    let base = am
        .base
        .as_ref()
        .map_or(0, |b| super::file_size(&super::path(srv, &b.name)));
    aof.base_size.store(base, Relaxed);
    ret
}

/// loadDataFromDisk with `appendonly yes`: load the AOF directory; exit on failure.
pub fn at_startup(srv: &Server) {
    let start = Instant::now();
    let mut am = manifest::load_from_disk(
        &srv.config.get("appenddirname"),
        &srv.config.get("appendfilename"),
    );
    let ret = load_files(srv, &mut am, 0);
    srv.persist.aof.inner.lock().manifest = am;
    // Redis's fake client runs each command's procedure without call(): replayed
    // commands count in no command statistics.
    crate::stats::forget_calls(srv, 0);
    match ret {
        Status::Failed | Status::OpenErr => std::process::exit(1),
        Status::NotExist => {}
        _ => log::notice(&format!(
            "DB loaded from append only file: {:.3} seconds",
            start.elapsed().as_secs_f64()
        )),
    }
}

/// DEBUG LOADAOF, once the caller emptied the dataset: the manifest is read from disk
/// again (aofLoadManifestFromDisk), history files are removed (aofDelHistoryFiles), and
/// the files are loaded with their commands run on `worker`, the caller's thread.
/// Anything but `Ok` or `Empty` is a failure Redis exits on.
pub fn reload(srv: &Server, worker: usize) -> Status {
    let mut am = {
        let mut inner = srv.persist.aof.inner.lock();
        inner.manifest = manifest::load_from_disk(
            &srv.config.get("appenddirname"),
            &srv.config.get("appendfilename"),
        );
        super::rewrite::delete_history(srv, &mut inner);
        inner.manifest.clone()
    };
    let ret = load_files(srv, &mut am, worker);
    srv.persist.aof.inner.lock().manifest = am;
    ret
}
