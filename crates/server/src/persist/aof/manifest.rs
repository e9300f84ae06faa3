//! The manifest of Redis 7.0's multi-part AOF (`appendonly.aof.manifest` in
//! `appenddirname`): one line per file, `file <name> seq <n> type <b|h|i>`, the base first,
//! then history files, then the incremental files in order. Read and written as Redis
//! 7.0.15 does (aofLoadManifestFromFile, getAofManifestAsString, writeAofManifestFile).

use crate::config::value::strerror;
use crate::log;
use crate::persist::save::SaveFailed;
use std::fs::File;
use std::io::Write;
use std::path::Path;

pub const BASE: u8 = b'b';
pub const HISTORY: u8 = b'h';
pub const INCR: u8 = b'i';

/// MANIFEST_MAX_LINE.
const MAX_LINE: usize = 1024;

/// One file of the AOF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub name: String,
    pub seq: i64,
    pub kind: u8,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<FileInfo>,
    pub history: Vec<FileInfo>,
    pub incr: Vec<FileInfo>,
    pub base_seq: i64,
    pub incr_seq: i64,
}

/// Why a manifest was refused: Redis's text, and the line it was reading.
#[derive(Debug, PartialEq, Eq)]
pub struct ManifestError {
    pub line: Option<(usize, String)>,
    pub reason: &'static str,
}

/// `<filename>.manifest`.
pub fn name(aof_filename: &str) -> String {
    format!("{aof_filename}.manifest")
}

impl Manifest {
    /// aofLoadManifestFromFile's rules.
    pub fn parse(text: &[u8]) -> Result<Manifest, ManifestError> {
        let mut am = Manifest::default();
        let mut maxseq = 0i64;
        let err = |line: Option<(usize, String)>, reason| Err(ManifestError { line, reason });
        if text.is_empty() {
            return err(None, "Found an empty AOF manifest");
        }
        let mut rest = text;
        let mut linenum = 0;
        while !rest.is_empty() {
            // fgets with a buffer of MAX_LINE+1: at most MAX_LINE bytes, up to '\n'.
            let take = rest
                .iter()
                .take(MAX_LINE)
                .position(|&b| b == b'\n')
                .map_or(rest.len().min(MAX_LINE), |i| i + 1);
            let buf = &rest[..take];
            rest = &rest[take..];
            linenum += 1;
            if buf[0] == b'#' {
                continue;
            }
            if !buf.contains(&b'\n') {
                return err(None, "The AOF manifest file contains too long line");
            }
            let line = String::from_utf8_lossy(buf)
                .trim_matches([' ', '\t', '\r', '\n'])
                .to_string();
            let at = || Some((linenum, line.clone()));
            if line.is_empty() {
                return err(at(), "Invalid AOF manifest file format");
            }
            let argv = match resp::parse::split_args(line.as_bytes()) {
                Some(a) if a.len() >= 6 && a.len() % 2 == 0 => a,
                _ => return err(at(), "Invalid AOF manifest file format"),
            };
            let mut info = FileInfo {
                name: String::new(),
                seq: 0,
                kind: 0,
            };
            for pair in argv.chunks(2) {
                let key = String::from_utf8_lossy(&pair[0]);
                if key.eq_ignore_ascii_case("file") {
                    info.name = String::from_utf8_lossy(&pair[1]).into_owned();
                    if info.name.contains('/') {
                        return err(at(), "File can't be a path, just a filename");
                    }
                } else if key.eq_ignore_ascii_case("seq") {
                    info.seq = atoll(&pair[1]);
                } else if key.eq_ignore_ascii_case("type") {
                    info.kind = pair[1].first().copied().unwrap_or(0);
                }
            }
            if info.name.is_empty() || info.seq == 0 || info.kind == 0 {
                return err(at(), "Invalid AOF manifest file format");
            }
            match info.kind {
                BASE => {
                    if am.base.is_some() {
                        return err(at(), "Found duplicate base file information");
                    }
                    am.base_seq = info.seq;
                    am.base = Some(info);
                }
                HISTORY => am.history.push(info),
                INCR => {
                    if info.seq <= maxseq {
                        return err(at(), "Found a non-monotonic sequence number");
                    }
                    maxseq = info.seq;
                    am.incr_seq = info.seq;
                    am.incr.push(info);
                }
                _ => return err(at(), "Unknown AOF file type"),
            }
        }
        Ok(am)
    }

    /// getAofManifestAsString.
    pub fn format(&self) -> String {
        let mut out = String::new();
        for f in self.base.iter().chain(&self.history).chain(&self.incr) {
            let name = if needs_repr(&f.name) {
                repr(&f.name)
            } else {
                f.name.clone()
            };
            out.push_str(&format!(
                "file {name} seq {} type {}\n",
                f.seq, f.kind as char
            ));
        }
        out
    }

    /// getNewBaseFileNameAndMarkPreAsHistory.
    pub fn new_base(&mut self, aof_filename: &str, rdb: bool) -> String {
        if let Some(mut old) = self.base.take() {
            old.kind = HISTORY;
            self.history.insert(0, old);
        }
        self.base_seq += 1;
        let name = format!(
            "{aof_filename}.{}.base.{}",
            self.base_seq,
            if rdb { "rdb" } else { "aof" }
        );
        self.base = Some(FileInfo {
            name: name.clone(),
            seq: self.base_seq,
            kind: BASE,
        });
        name
    }

    /// getNewIncrAofName.
    pub fn new_incr(&mut self, aof_filename: &str) -> String {
        self.incr_seq += 1;
        let name = format!("{aof_filename}.{}.incr.aof", self.incr_seq);
        self.incr.push(FileInfo {
            name: name.clone(),
            seq: self.incr_seq,
            kind: INCR,
        });
        name
    }

    /// getLastIncrAofName: the last incremental file, or a new one.
    pub fn last_incr(&mut self, aof_filename: &str) -> String {
        match self.incr.last() {
            Some(f) => f.name.clone(),
            None => self.new_incr(aof_filename),
        }
    }

    /// markRewrittenIncrAofAsHistory: every incremental file but the last one (the one
    /// being written, when `keep_last`) becomes history.
    pub fn rewritten_incr_to_history(&mut self, keep_last: bool) {
        let keep = usize::from(keep_last).min(self.incr.len());
        let moved: Vec<FileInfo> = self.incr.drain(..self.incr.len() - keep).collect();
        for mut f in moved {
            f.kind = HISTORY;
            self.history.insert(0, f);
        }
    }
}

/// atoll: leading digits (with a sign), 0 if none.
pub fn atoll(b: &[u8]) -> i64 {
    let s = String::from_utf8_lossy(b);
    let s = s.trim_start();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let n: i64 = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| {
            n.wrapping_mul(10).wrapping_add(i64::from(d - b'0'))
        });
    if neg {
        -n
    } else {
        n
    }
}

/// sdsneedsrepr.
fn needs_repr(s: &str) -> bool {
    s.bytes().any(|c| {
        matches!(c, b'\\' | b'"' | b'\n' | b'\r' | b'\t' | 7 | 8)
            || !(0x20..0x7f).contains(&c)
            || c == b' '
    })
}

/// sdscatrepr.
fn repr(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.bytes() {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            c if (0x20..0x7f).contains(&c) => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

/// aofLoadManifestFromDisk: the manifest in `dir`, or an empty one when the directory or
/// the manifest does not exist. A damaged manifest stops the server with Redis's report.
pub fn load_from_disk(dir: &str, aof_filename: &str) -> Manifest {
    let path = Path::new(dir).join(name(aof_filename));
    if !Path::new(dir).is_dir() || !path.exists() {
        return Manifest::default();
    }
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) => {
            log::warning(&format!(
                "Fatal error: can't open the AOF manifest file {} for reading: {}",
                path.display(),
                strerror(&e)
            ));
            std::process::exit(1);
        }
    };
    match Manifest::parse(&text) {
        Ok(m) => m,
        Err(e) => {
            log::warning("\n*** FATAL AOF MANIFEST FILE ERROR ***\n");
            if let Some((n, line)) = e.line {
                log::warning(&format!("Reading the manifest file, at line {n}\n"));
                log::warning(&format!(">>> '{line}'\n"));
            }
            log::warning(&format!("{}\n", e.reason));
            std::process::exit(1);
        }
    }
}

/// writeAofManifestFile: a temporary file, fsync, rename, fsync of the directory; logs
/// Redis's lines on failure.
pub fn persist(dir: &str, aof_filename: &str, am: &Manifest) -> Result<(), SaveFailed> {
    let name = name(aof_filename);
    let tmp_name = format!("temp-{name}");
    let path = Path::new(dir).join(&name);
    let tmp = Path::new(dir).join(&tmp_name);
    let mut f = match File::create(&tmp) {
        Ok(f) => f,
        Err(e) => {
            log::warning(&format!(
                "Can't open the AOF manifest file {tmp_name}: {}",
                strerror(&e)
            ));
            return Err(SaveFailed);
        }
    };
    if let Err(e) = f.write_all(am.format().as_bytes()) {
        log::warning(&format!(
            "Error trying to write the temporary AOF manifest file {tmp_name}: {}",
            strerror(&e)
        ));
        return Err(SaveFailed);
    }
    if let Err(e) = f.sync_data() {
        log::warning(&format!(
            "Fail to fsync the temp AOF file {tmp_name}: {}.",
            strerror(&e)
        ));
        return Err(SaveFailed);
    }
    if let Err(e) = std::fs::rename(&tmp, &path) {
        log::warning(&format!(
            "Error trying to rename the temporary AOF manifest file {tmp_name} into {name}: {}",
            strerror(&e)
        ));
        return Err(SaveFailed);
    }
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        log::warning(&format!(
            "Fail to fsync AOF directory {}: {}.",
            path.display(),
            strerror(&e)
        ));
        return Err(SaveFailed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_redis_layout() {
        let text = "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.incr.aof seq 1 type h\nfile appendonly.aof.4.incr.aof seq 4 type i\nfile appendonly.aof.5.incr.aof seq 5 type i\n";
        let m = Manifest::parse(text.as_bytes()).unwrap();
        assert_eq!(m.format(), text);
        assert_eq!((m.base_seq, m.incr_seq), (2, 5));
        let mut m2 = m.clone();
        assert_eq!(
            m2.new_base("appendonly.aof", true),
            "appendonly.aof.3.base.rdb"
        );
        m2.rewritten_incr_to_history(true);
        assert_eq!(
            m2.format(),
            "file appendonly.aof.3.base.rdb seq 3 type b\nfile appendonly.aof.4.incr.aof seq 4 type h\nfile appendonly.aof.2.base.rdb seq 2 type h\nfile appendonly.aof.1.incr.aof seq 1 type h\nfile appendonly.aof.5.incr.aof seq 5 type i\n"
        );
    }

    #[test]
    fn refuses_as_redis() {
        let reason = |t: &str| Manifest::parse(t.as_bytes()).unwrap_err().reason;
        assert_eq!(reason(""), "Found an empty AOF manifest");
        assert_eq!(
            reason("file a seq 1 type i"),
            "The AOF manifest file contains too long line"
        );
        assert_eq!(reason("file a seq 1\n"), "Invalid AOF manifest file format");
        assert_eq!(
            reason("file a/b seq 1 type i\n"),
            "File can't be a path, just a filename"
        );
        assert_eq!(
            reason("file a seq 2 type i\nfile b seq 1 type i\n"),
            "Found a non-monotonic sequence number"
        );
        assert_eq!(reason("file a seq 1 type x\n"), "Unknown AOF file type");
        assert_eq!(
            reason("file a seq 1 type b\nfile b seq 2 type b\n"),
            "Found duplicate base file information"
        );
        // Comments are skipped; quoted names are read.
        let m = Manifest::parse(b"# hi\nfile \"a b\" seq 1 type i\n").unwrap();
        assert_eq!(m.incr[0].name, "a b");
        assert_eq!(m.format(), "file \"a b\" seq 1 type i\n");
    }
}
