//! The RDB file around the values (rdbSaveRio / rdbLoadRioWithLoadingCtx of Redis 7.0):
//! the `REDIS0010` signature, AUX fields, SELECTDB and RESIZEDB, one record per key
//! (EXPIRETIME_MS, type, key, value), EOF and the CRC64 of everything before it.
//!
//! Writing is split so that a snapshot can be produced shard by shard: [`FileWriter`]
//! owns the file-level framing and the running checksum, [`write_shard`] turns one shard's
//! keys into the bytes of their records (a chunk) that the writer appends under the right
//! SELECTDB. Reading ([`load`]) runs over the whole file and hands each live key to a sink.
//!
//! Values go through [`super::object_type`], [`super::write_object`] and
//! [`super::Reader::read_object`], the same code as DUMP/RESTORE: a new value type (streams,
//! `RDB_TYPE_STREAM_LISTPACKS_2`) is added there and files carry it with no change here.

use super::{crc64, write_len, write_object, write_string, RdbError, Reader};
use crate::entry::{Entry, NO_EXPIRE};
use crate::evict::access;
use crate::shard::Shard;
use crate::value::Value;
use std::io::{self, Write};

/// Opcodes (rdb.h).
pub const OPCODE_FUNCTION2: u8 = 245;
pub const OPCODE_FUNCTION: u8 = 246;
pub const OPCODE_MODULE_AUX: u8 = 247;
pub const OPCODE_IDLE: u8 = 248;
pub const OPCODE_FREQ: u8 = 249;
pub const OPCODE_AUX: u8 = 250;
pub const OPCODE_RESIZEDB: u8 = 251;
pub const OPCODE_EXPIRETIME_MS: u8 = 252;
pub const OPCODE_EXPIRETIME: u8 = 253;
pub const OPCODE_SELECTDB: u8 = 254;
pub const OPCODE_EOF: u8 = 255;

/// An AUX field's value: Redis saves numbers as their decimal text (integer-encoded).
pub enum AuxValue<'a> {
    Str(&'a str),
    Int(i64),
}

/// What a key's access field is saved as: Redis writes IDLE under an LRU
/// `maxmemory-policy`, FREQ under an LFU one, nothing otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    None,
    Idle,
    Freq,
}

/// How records are written.
#[derive(Clone, Copy, Debug)]
pub struct SaveOptions {
    /// LZF for strings (`rdbcompression`).
    pub compress: bool,
    pub access: Access,
}

/// The records of every key of `shard` (rdbSaveKeyValuePair), appended to `out`. Returns
/// the number of keys written. Keys past their TTL but not yet collected are written, as
/// Redis writes them (the loader drops them).
pub fn write_shard(out: &mut Vec<u8>, shard: &Shard, opts: SaveOptions) -> usize {
    for e in shard.iter() {
        write_entry(out, e, opts);
    }
    shard.len()
}

/// One key's record.
pub fn write_entry(out: &mut Vec<u8>, e: &Entry, opts: SaveOptions) {
    if e.expire_at() != NO_EXPIRE {
        out.push(OPCODE_EXPIRETIME_MS);
        out.extend_from_slice(&e.expire_at().to_le_bytes());
    }
    match opts.access {
        Access::None => {}
        Access::Idle => {
            out.push(OPCODE_IDLE);
            write_len(out, u64::from(access::idle_seconds(e.lru())));
        }
        Access::Freq => {
            out.push(OPCODE_FREQ);
            out.push(access::lfu_counter(e.lru()) as u8);
        }
    }
    out.push(super::object_type(e.value()));
    write_string(out, e.key(), opts.compress);
    write_object(out, e.value(), opts.compress);
}

/// objectSetLRUOrLFU: the access field of a loaded key from its IDLE or FREQ (whichever
/// the current policy uses), or a new key's.
pub fn loaded_access(idle: Option<u64>, freq: Option<u8>) -> u32 {
    if access::lfu() {
        freq.map_or_else(access::fresh, access::lfu_with)
    } else {
        idle.map_or_else(access::fresh, |i| {
            access::lru_aged(i64::try_from(i).unwrap_or(i64::MAX))
        })
    }
}

/// Writes an RDB file: header, chunks of key records under their database, footer.
pub struct FileWriter<W: Write> {
    w: W,
    crc: u64,
    checksum: bool,
    /// The database the last chunk went to.
    current_db: Option<usize>,
    /// Databases already announced with RESIZEDB.
    announced: Vec<bool>,
    written: u64,
}

impl<W: Write> FileWriter<W> {
    /// Start a file: the signature and the AUX fields, in the order given.
    pub fn new(
        w: W,
        checksum: bool,
        databases: usize,
        aux: &[(&str, AuxValue<'_>)],
    ) -> io::Result<FileWriter<W>> {
        let mut fw = FileWriter {
            w,
            crc: 0,
            checksum,
            current_db: None,
            announced: vec![false; databases],
            written: 0,
        };
        let mut head = format!("REDIS{:04}", super::RDB_VERSION).into_bytes();
        for (k, v) in aux {
            head.push(OPCODE_AUX);
            write_string(&mut head, k.as_bytes(), false);
            match v {
                AuxValue::Str(s) => write_string(&mut head, s.as_bytes(), false),
                AuxValue::Int(n) => write_string(&mut head, n.to_string().as_bytes(), false),
            }
        }
        fw.put(&head)?;
        Ok(fw)
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.checksum {
            self.crc = crc64(self.crc, bytes);
        }
        self.written += bytes.len() as u64;
        self.w.write_all(bytes)
    }

    /// Append key records of database `db`. The first chunk of a database is preceded by
    /// SELECTDB and RESIZEDB (with `sizes`, the database's key and TTL counts, a hint for
    /// the loader); a later one after another database's by SELECTDB alone. An empty
    /// chunk writes nothing.
    pub fn chunk(&mut self, db: usize, sizes: (u64, u64), records: &[u8]) -> io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        if self.current_db != Some(db) {
            let mut op = vec![OPCODE_SELECTDB];
            write_len(&mut op, db as u64);
            if !self.announced[db] {
                self.announced[db] = true;
                op.push(OPCODE_RESIZEDB);
                write_len(&mut op, sizes.0);
                write_len(&mut op, sizes.1);
            }
            self.put(&op)?;
            self.current_db = Some(db);
        }
        self.put(records)
    }

    /// EOF and the checksum (0 when checksums are off); returns the sink.
    pub fn finish(mut self) -> io::Result<W> {
        self.put(&[OPCODE_EOF])?;
        let crc = if self.checksum { self.crc } else { 0 };
        self.w.write_all(&crc.to_le_bytes())?;
        Ok(self.w)
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }
}

// ---------------------------------------------------------------- loading

/// A key read from a file.
pub struct LoadedKey<'a> {
    pub db: usize,
    pub key: &'a [u8],
    pub value: Value,
    /// Absolute Unix time in ms, or [`NO_EXPIRE`].
    pub expire_at: i64,
    /// From the IDLE opcode (seconds), if present.
    pub idle: Option<u64>,
    /// From the FREQ opcode, if present.
    pub freq: Option<u8>,
}

/// What the loader reports along the way (Redis logs these at NOTICE).
pub enum AuxInfo<'a> {
    /// `redis-ver`.
    Version(&'a [u8]),
    /// `ctime` (Unix seconds).
    Ctime(i64),
    /// `used-mem` (bytes).
    UsedMem(i64),
    /// `aof-base` / `aof-preamble` set.
    AofBase,
    AofPreamble,
    /// A `%`-prefixed informational field.
    Info(&'a [u8], &'a [u8]),
    /// RESIZEDB: the keys database `db` holds in the file (a hint to size its tables).
    ResizeDb {
        db: usize,
        keys: u64,
    },
}

/// Why a file could not be loaded, with the facts Redis's messages need.
#[derive(Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The first 5 bytes are not `REDIS`.
    Signature,
    /// A version this server cannot read.
    Version(i64),
    /// The file ended early (Redis: "Short read ...", "Unexpected EOF reading RDB file").
    Eof,
    /// Corrupt content; the reason as Redis reports it.
    Corrupt(String),
    /// The checksum does not match.
    Checksum { expected: u64, got: u64 },
    /// SELECTDB names a database this server does not have.
    TooManyDbs,
    /// Function libraries (Skein has no scripting engine yet).
    Functions,
    /// Module data (no modules in Skein).
    Module(String),
    /// The sink refused a key (a duplicate).
    Duplicate { db: usize, key: Vec<u8> },
}

/// Counters of a finished load.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LoadSummary {
    pub loaded: u64,
    pub expired: u64,
    /// Whether the file's checksum was 0 (saved with `rdbchecksum no`) and so not checked.
    pub unchecked: bool,
    /// Bytes the RDB took, checksum included (an AOF tail may follow).
    pub consumed: u64,
}

/// How to load.
pub struct LoadOptions {
    pub databases: usize,
    /// Verify the checksum (`rdbchecksum`).
    pub checksum: bool,
    /// Keys whose expiry is before this time (ms) are dropped (Redis does so as a master).
    pub now_ms: i64,
    pub limits: crate::coll::Limits,
}

/// Where [`load`] was when it failed (bytes consumed), for Redis's "offset" in messages.
pub struct Failure {
    pub error: LoadError,
    pub offset: u64,
}

fn eof_or_corrupt(e: RdbError, what: &str) -> LoadError {
    match e {
        RdbError::Truncated => LoadError::Eof,
        RdbError::Corrupt => LoadError::Corrupt(what.to_string()),
        RdbError::UnsupportedType(t) => {
            LoadError::Corrupt(format!("Unknown RDB encoding type {t}"))
        }
    }
}

/// Load a whole RDB file. `info` hears the AUX fields Redis logs; `sink` gets each live
/// key (and returns false to refuse a duplicate). Expired keys are counted, not passed.
pub fn load(
    buf: &[u8],
    opts: &LoadOptions,
    mut info: impl FnMut(AuxInfo<'_>),
    mut sink: impl FnMut(LoadedKey<'_>) -> bool,
) -> Result<LoadSummary, Failure> {
    let mut r = Reader::new(buf).with_limits(opts.limits);
    let fail = |r: &Reader<'_>, error| Failure {
        error,
        offset: r.position() as u64,
    };
    let sig = r.read_bytes(9).map_err(|_| fail(&r, LoadError::Eof))?;
    if &sig[..5] != b"REDIS" {
        return Err(fail(&r, LoadError::Signature));
    }
    // atoi of the four digits.
    let digits: Vec<u8> = sig[5..]
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    let version: i64 = std::str::from_utf8(&digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if !(1..=i64::from(super::RDB_VERSION)).contains(&version) {
        return Err(fail(&r, LoadError::Version(version)));
    }
    let mut summary = LoadSummary::default();
    let mut db = 0usize;
    let mut expire_at = NO_EXPIRE;
    let mut idle = None;
    let mut freq = None;
    macro_rules! tryr {
        ($e:expr, $what:expr) => {
            $e.map_err(|e| fail(&r, eof_or_corrupt(e, $what)))?
        };
    }
    loop {
        let t = tryr!(r.read_u8(), "");
        match t {
            OPCODE_EXPIRETIME => {
                let b = tryr!(r.read_bytes(4), "");
                let secs = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                expire_at = i64::from(secs) * 1000;
                continue;
            }
            OPCODE_EXPIRETIME_MS => {
                let b = tryr!(r.read_bytes(8), "");
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                expire_at = i64::from_le_bytes(a);
                continue;
            }
            OPCODE_FREQ => {
                freq = Some(tryr!(r.read_u8(), ""));
                continue;
            }
            OPCODE_IDLE => {
                idle = Some(tryr!(r.read_len(), ""));
                continue;
            }
            OPCODE_EOF => break,
            OPCODE_SELECTDB => {
                let d = tryr!(r.read_len(), "");
                if d >= opts.databases as u64 {
                    return Err(fail(&r, LoadError::TooManyDbs));
                }
                db = d as usize;
                continue;
            }
            OPCODE_RESIZEDB => {
                let keys = tryr!(r.read_len(), "");
                tryr!(r.read_len(), "");
                info(AuxInfo::ResizeDb { db, keys });
                continue;
            }
            OPCODE_AUX => {
                let k = tryr!(r.read_string(), "").into_bytes();
                let v = tryr!(r.read_string(), "").into_bytes();
                aux(&k, &v, &mut info);
                continue;
            }
            OPCODE_MODULE_AUX => {
                let id = tryr!(r.read_len(), "");
                return Err(fail(&r, LoadError::Module(module_name(id))));
            }
            OPCODE_FUNCTION | OPCODE_FUNCTION2 => {
                return Err(fail(&r, LoadError::Functions));
            }
            _ => {}
        }
        if !matches!(t, 0..=7 | 9..=19) {
            return Err(fail(
                &r,
                LoadError::Corrupt(format!("Unknown RDB encoding type {t}")),
            ));
        }
        if t == super::TYPE_MODULE || t == super::TYPE_MODULE_2 {
            let id = tryr!(r.read_len(), "");
            return Err(fail(&r, LoadError::Module(module_name(id))));
        }
        let key = tryr!(r.read_string(), "").into_bytes();
        let value = tryr!(r.read_object(t), "Bad data format");
        if expire_at != NO_EXPIRE && expire_at < opts.now_ms {
            summary.expired += 1;
        } else {
            let k = LoadedKey {
                db,
                key: &key,
                value,
                expire_at,
                idle,
                freq,
            };
            if !sink(k) {
                return Err(fail(
                    &r,
                    LoadError::Duplicate {
                        db,
                        key: key.into_owned(),
                    },
                ));
            }
            summary.loaded += 1;
        }
        expire_at = NO_EXPIRE;
        idle = None;
        freq = None;
    }
    let expected = crc64(0, &buf[..r.position()]);
    let b = r.read_bytes(8).map_err(|_| fail(&r, LoadError::Eof))?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    let got = u64::from_le_bytes(a);
    if version >= 5 && opts.checksum {
        if got == 0 {
            summary.unchecked = true;
        } else if got != expected {
            return Err(fail(&r, LoadError::Checksum { expected, got }));
        }
    }
    summary.consumed = r.position() as u64;
    Ok(summary)
}

fn aux(k: &[u8], v: &[u8], info: &mut impl FnMut(AuxInfo<'_>)) {
    let num = || {
        std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .unwrap_or(0)
    };
    if k.first() == Some(&b'%') {
        info(AuxInfo::Info(k, v));
    } else if k.eq_ignore_ascii_case(b"redis-ver") {
        info(AuxInfo::Version(v));
    } else if k.eq_ignore_ascii_case(b"ctime") {
        info(AuxInfo::Ctime(num()));
    } else if k.eq_ignore_ascii_case(b"used-mem") {
        info(AuxInfo::UsedMem(num()));
    } else if k.eq_ignore_ascii_case(b"aof-preamble") && num() != 0 {
        info(AuxInfo::AofPreamble);
    } else if k.eq_ignore_ascii_case(b"aof-base") && num() != 0 {
        info(AuxInfo::AofBase);
    }
}

/// moduleTypeNameByID: the 9-character name in a module type id's top 54 bits.
fn module_name(id: u64) -> String {
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut id = id >> 10;
    let mut name = [0u8; 9];
    for j in (0..9).rev() {
        name[j] = CHARSET[(id & 63) as usize];
        id >>= 6;
    }
    String::from_utf8_lossy(&name).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::hash_key;
    use crate::value::ValueRef;

    fn file(keys: &[(&[u8], &[u8], i64)], checksum: bool) -> Vec<u8> {
        let mut shard = Shard::default();
        for (k, v, exp) in keys {
            shard.insert_entry(
                hash_key(k),
                Entry::new(k, ValueRef::Str(crate::value::StrRef::encode(v)), *exp, 0),
                crate::ttl_map::TtlBit::NONE,
            );
        }
        let mut fw = FileWriter::new(
            Vec::new(),
            checksum,
            16,
            &[
                ("redis-ver", AuxValue::Str("7.0.15")),
                ("redis-bits", AuxValue::Int(64)),
            ],
        )
        .unwrap();
        let mut chunk = Vec::new();
        let opts = SaveOptions {
            compress: true,
            access: Access::None,
        };
        write_shard(&mut chunk, &shard, opts);
        fw.chunk(3, (shard.len() as u64, shard.expires_len() as u64), &chunk)
            .unwrap();
        fw.finish().unwrap()
    }

    fn opts(now: i64) -> LoadOptions {
        LoadOptions {
            databases: 16,
            checksum: true,
            now_ms: now,
            limits: Default::default(),
        }
    }

    type Keys = Vec<(usize, Vec<u8>, i64)>;

    fn load_all(buf: &[u8], now: i64) -> Result<(LoadSummary, Keys), LoadError> {
        let mut got = Vec::new();
        load(
            buf,
            &opts(now),
            |_| {},
            |k| {
                got.push((k.db, k.key.to_vec(), k.expire_at));
                true
            },
        )
        .map(|s| (s, got))
        .map_err(|f| f.error)
    }

    #[test]
    fn round_trip_and_expiry() {
        let buf = file(
            &[
                (b"a", b"1", NO_EXPIRE),
                (b"b", &[b'x'; 100], 5_000),
                (b"c", b"v", 10),
            ],
            true,
        );
        assert_eq!(&buf[..9], b"REDIS0010");
        let (s, mut got) = load_all(&buf, 1_000).unwrap();
        got.sort();
        assert_eq!(s.loaded, 2);
        assert_eq!(s.expired, 1);
        assert_eq!(
            got,
            vec![(3, b"a".to_vec(), NO_EXPIRE), (3, b"b".to_vec(), 5_000)]
        );
    }

    #[test]
    fn refuses_damage() {
        let buf = file(
            &[(b"a", b"1", NO_EXPIRE), (b"key", b"value", NO_EXPIRE)],
            true,
        );
        for n in 0..buf.len() {
            assert!(load_all(&buf[..n], 0).is_err(), "truncated at {n}");
        }
        assert_eq!(
            load_all(&buf[..buf.len() - 3], 0).unwrap_err(),
            LoadError::Eof
        );
        let mut bad = buf.clone();
        let at = bad.len() - 12;
        bad[at] ^= 1;
        assert!(load_all(&bad, 0).is_err());
        let mut sig = buf.clone();
        sig[0] = b'X';
        assert_eq!(load_all(&sig, 0).unwrap_err(), LoadError::Signature);
        let mut ver = buf.clone();
        ver[5..9].copy_from_slice(b"0011");
        assert_eq!(load_all(&ver, 0).unwrap_err(), LoadError::Version(11));
        // Without a checksum, nothing is verified and the file still loads.
        let plain = file(&[(b"a", b"1", NO_EXPIRE)], false);
        assert_eq!(&plain[plain.len() - 8..], &[0u8; 8]);
        assert!(load_all(&plain, 0).unwrap().0.unchecked);
    }
}
