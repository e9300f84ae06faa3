//! Redis's RDB value serialization (format version 10, what Redis 7.0 writes and reads):
//! lengths, strings (integer, LZF and plain encodings), object types, the CRC64 Redis
//! uses, and the DUMP payload built from them. Used by DUMP/RESTORE now and by
//! persistence later.
//!
//! Decoding never trusts the input: every read is bounds-checked, claimed lengths are
//! checked against the bytes present before anything is allocated, and types Skein does not
//! store yet are rejected with [`RdbError::UnsupportedType`].

pub mod file;
mod hash;
mod list;
pub mod lzf;
mod set;
mod stream;
mod ziplist;
mod zset;

use crate::coll::Limits;
use crate::value::{parse_strict_i64, StrRef, StrValue, Value, ValueRef};
use std::borrow::Cow;

/// The RDB format version Redis 7.0 writes.
pub const RDB_VERSION: u16 = 10;

/// Object types (rdb.h).
pub const TYPE_STRING: u8 = 0;
pub const TYPE_LIST: u8 = 1;
pub const TYPE_SET: u8 = 2;
pub const TYPE_ZSET: u8 = 3;
pub const TYPE_HASH: u8 = 4;
pub const TYPE_ZSET_2: u8 = 5;
pub const TYPE_MODULE: u8 = 6;
pub const TYPE_MODULE_2: u8 = 7;
pub const TYPE_HASH_ZIPMAP: u8 = 9;
pub const TYPE_LIST_ZIPLIST: u8 = 10;
pub const TYPE_SET_INTSET: u8 = 11;
pub const TYPE_ZSET_ZIPLIST: u8 = 12;
pub const TYPE_HASH_ZIPLIST: u8 = 13;
pub const TYPE_LIST_QUICKLIST: u8 = 14;
pub const TYPE_STREAM_LISTPACKS: u8 = 15;
pub const TYPE_HASH_LISTPACK: u8 = 16;
pub const TYPE_ZSET_LISTPACK: u8 = 17;
pub const TYPE_LIST_QUICKLIST_2: u8 = 18;
pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;

/// Length encodings.
const LEN_6BIT: u8 = 0;
const LEN_14BIT: u8 = 1;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;
const ENCVAL: u8 = 3;

/// Special string encodings (after an ENCVAL length byte).
const ENC_INT8: u64 = 0;
const ENC_INT16: u64 = 1;
const ENC_INT32: u64 = 2;
const ENC_LZF: u64 = 3;

/// Redis does not try to compress strings of 20 bytes or less.
const COMPRESS_MIN_LEN: usize = 21;
/// Redis tries the integer encodings on strings of at most 11 bytes.
const INT_ENCODING_MAX_LEN: usize = 11;

/// Redis's CRC64 (Jones polynomial, reflected; `src/crc64.c`).
static CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

/// `crc64(crc, data)` as Redis computes it, continuing from `crc` (0 to start).
pub fn crc64(crc: u64, data: &[u8]) -> u64 {
    // The algorithm has no final xor and is reflected, so the register is the value.
    let mut d = CRC64.digest_with_initial(crc.reverse_bits());
    d.update(data);
    d.finalize()
}

/// Why a payload could not be decoded. Every variant means "Bad data format" to a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdbError {
    /// The input ended before the value did.
    Truncated,
    /// An impossible length, encoding or compressed stream.
    Corrupt,
    /// A valid object type Skein cannot hold yet (or not an object type at all).
    UnsupportedType(u8),
}

// ---------------------------------------------------------------- encoding

/// rdbSaveLen.
pub fn write_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push((len as u8) | (LEN_6BIT << 6));
    } else if len < 1 << 14 {
        out.push(((len >> 8) as u8) | (LEN_14BIT << 6));
        out.push(len as u8);
    } else if len <= u64::from(u32::MAX) {
        out.push(LEN_32BIT);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(LEN_64BIT);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// rdbEncodeInteger: the INT8/16/32 encodings, or false if `n` needs more than 32 bits.
fn write_encoded_int(out: &mut Vec<u8>, n: i64) -> bool {
    let tag = ENCVAL << 6;
    if let Ok(v) = i8::try_from(n) {
        out.push(tag | ENC_INT8 as u8);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i16::try_from(n) {
        out.push(tag | ENC_INT16 as u8);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i32::try_from(n) {
        out.push(tag | ENC_INT32 as u8);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        return false;
    }
    true
}

/// rdbSaveRawString: integer encoding for short canonical integers, LZF for longer strings
/// when `compress` is on and it saves at least 4 bytes, plain otherwise.
pub fn write_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= INT_ENCODING_MAX_LEN {
        if let Some(n) = parse_strict_i64(s) {
            if write_encoded_int(out, n) {
                return;
            }
        }
    }
    if compress && s.len() >= COMPRESS_MIN_LEN {
        if let Some(c) = lzf::compress(s, s.len() - 4) {
            out.push((ENCVAL << 6) | ENC_LZF as u8);
            write_len(out, c.len() as u64);
            write_len(out, s.len() as u64);
            out.extend_from_slice(&c);
            return;
        }
    }
    write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// rdbSaveLongLongAsStringObject: an integer as INT8/16/32, else as its decimal text.
pub fn write_int_string(out: &mut Vec<u8>, n: i64) {
    if !write_encoded_int(out, n) {
        let text = n.to_string();
        write_len(out, text.len() as u64);
        out.extend_from_slice(text.as_bytes());
    }
}

/// rdbSaveObjectType.
pub fn object_type(v: ValueRef<'_>) -> u8 {
    match v {
        ValueRef::Str(_) => TYPE_STRING,
        ValueRef::List(l) => list::object_type(l),
        ValueRef::Hash(h) => hash::object_type(h),
        ValueRef::Set(s) => set::object_type(s),
        ValueRef::ZSet(z) => zset::object_type(z),
        ValueRef::Stream(s) => stream::object_type(s),
    }
}

/// rdbSaveObject (without the type byte).
pub fn write_object(out: &mut Vec<u8>, v: ValueRef<'_>, compress: bool) {
    match v {
        ValueRef::Str(StrRef::Int(n)) => write_int_string(out, n),
        ValueRef::Str(StrRef::Embstr(data) | StrRef::Raw(data)) => {
            write_string(out, data, compress)
        }
        ValueRef::List(l) => list::write(out, l, compress),
        ValueRef::Hash(h) => hash::write(out, h, compress),
        ValueRef::Set(s) => set::write(out, s, compress),
        ValueRef::ZSet(z) => zset::write(out, z, compress),
        ValueRef::Stream(s) => stream::write(out, s, compress),
    }
}

/// The DUMP payload: type, object, RDB version (2 bytes LE), CRC64 of all that (8 bytes LE).
pub fn dump_payload(v: ValueRef<'_>, compress: bool) -> Vec<u8> {
    let mut out = vec![object_type(v)];
    write_object(&mut out, v, compress);
    seal_payload(&mut out);
    out
}

/// End a DUMP-style payload (DUMP, FUNCTION DUMP): the RDB version (2 bytes LE) and the
/// CRC64 of everything before (8 bytes LE).
pub fn seal_payload(out: &mut Vec<u8>) {
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// verifyDumpPayload: long enough, a version this server reads, and (unless `skip_crc`) a
/// matching checksum.
pub fn verify_payload(p: &[u8], skip_crc: bool) -> bool {
    if p.len() < 10 {
        return false;
    }
    let footer = &p[p.len() - 10..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return false;
    }
    if skip_crc {
        return true;
    }
    crc64(0, &p[..p.len() - 8]).to_le_bytes() == footer[2..]
}

/// Decode a DUMP payload's value. Like Redis, the reader runs over the whole payload
/// (footer included) and does not require the value to end where the footer starts.
pub fn load_payload(p: &[u8]) -> Result<Value, RdbError> {
    load_payload_with(p, &Limits::default())
}

/// [`load_payload`] converting values past the given encoding thresholds (RESTORE passes
/// the server's configuration).
pub fn load_payload_with(p: &[u8], limits: &Limits) -> Result<Value, RdbError> {
    let mut r = Reader::new(p).with_limits(*limits);
    let t = r.read_object_type()?;
    r.read_object(t)
}

/// The elements of a compact encoding as pairs (a hash's field/value, a sorted set's
/// member/score): a non-zero, even count, no first element twice, and every second one
/// accepted by `value_ok` (lpPairsValidateIntegrityAndDups).
fn check_pairs<'a>(
    items: impl Iterator<Item = crate::coll::listpack::Item<'a>>,
    value_ok: impl Fn(crate::coll::listpack::Item<'a>) -> bool,
) -> Result<(), RdbError> {
    let mut seen = std::collections::HashSet::new();
    let mut n = 0usize;
    for (i, item) in items.enumerate() {
        let ok = if i % 2 == 0 {
            seen.insert(item.to_vec())
        } else {
            value_ok(item)
        };
        if !ok {
            return Err(RdbError::Corrupt);
        }
        n += 1;
    }
    if n == 0 || n % 2 == 1 {
        return Err(RdbError::Corrupt);
    }
    Ok(())
}

// ---------------------------------------------------------------- decoding

/// A string as stored: an integer encoding or bytes (borrowed when stored plain).
#[derive(Clone, Debug, PartialEq)]
pub enum RdbString<'a> {
    Int(i64),
    Bytes(Cow<'a, [u8]>),
}

impl<'a> RdbString<'a> {
    /// The string's bytes as loaded with RDB_LOAD_PLAIN (an integer encoding as its
    /// decimal text).
    pub fn into_bytes(self) -> Cow<'a, [u8]> {
        match self {
            RdbString::Int(n) => Cow::Owned(n.to_string().into_bytes()),
            RdbString::Bytes(b) => b,
        }
    }

    /// The value Redis would hold after loading it (tryObjectEncoding).
    pub fn into_str_value(self) -> StrValue {
        match self {
            RdbString::Int(n) => StrValue::Int(n),
            RdbString::Bytes(b) => StrValue::from_bytes(&b),
        }
    }
}

/// A bounds-checked cursor over RDB bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// The encoding thresholds values are converted against after loading.
    limits: Limits,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            limits: Limits::default(),
        }
    }

    /// Load against these encoding thresholds (the server's configuration).
    pub fn with_limits(mut self, limits: Limits) -> Reader<'a> {
        self.limits = limits;
        self
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn read_u8(&mut self) -> Result<u8, RdbError> {
        let b = *self.buf.get(self.pos).ok_or(RdbError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    /// The next `n` bytes (checked against what is present before anything is allocated).
    pub fn read_bytes(&mut self, n: u64) -> Result<&'a [u8], RdbError> {
        if n > self.remaining() as u64 {
            return Err(RdbError::Truncated);
        }
        let n = n as usize;
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn read_array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        let s = self.read_bytes(N as u64)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// rdbLoadLenByRef: (length or encoding number, whether it is a special encoding).
    pub fn read_len_enc(&mut self) -> Result<(u64, bool), RdbError> {
        let b = self.read_u8()?;
        match b >> 6 {
            ENCVAL => Ok((u64::from(b & 0x3f), true)),
            LEN_6BIT => Ok((u64::from(b & 0x3f), false)),
            LEN_14BIT => {
                let lo = self.read_u8()?;
                Ok(((u64::from(b & 0x3f) << 8) | u64::from(lo), false))
            }
            _ if b == LEN_32BIT => Ok((u64::from(u32::from_be_bytes(self.read_array()?)), false)),
            _ if b == LEN_64BIT => Ok((u64::from_be_bytes(self.read_array()?), false)),
            _ => Err(RdbError::Corrupt),
        }
    }

    /// rdbLoadLen: a plain length (an encoding marker here is read as its number, as
    /// Redis does).
    pub fn read_len(&mut self) -> Result<u64, RdbError> {
        self.read_len_enc().map(|(n, _)| n)
    }

    /// rdbGenericLoadStringObject.
    pub fn read_string(&mut self) -> Result<RdbString<'a>, RdbError> {
        let (len, encoded) = self.read_len_enc()?;
        if !encoded {
            return Ok(RdbString::Bytes(Cow::Borrowed(self.read_bytes(len)?)));
        }
        match len {
            ENC_INT8 => Ok(RdbString::Int(i64::from(i8::from_le_bytes(
                self.read_array()?,
            )))),
            ENC_INT16 => Ok(RdbString::Int(i64::from(i16::from_le_bytes(
                self.read_array()?,
            )))),
            ENC_INT32 => Ok(RdbString::Int(i64::from(i32::from_le_bytes(
                self.read_array()?,
            )))),
            ENC_LZF => {
                let clen = self.read_len()?;
                let len = self.read_len()?;
                let data = self.read_bytes(clen)?;
                let len = usize::try_from(len).map_err(|_| RdbError::Corrupt)?;
                lzf::decompress(data, len)
                    .map(|v| RdbString::Bytes(Cow::Owned(v)))
                    .ok_or(RdbError::Corrupt)
            }
            _ => Err(RdbError::Corrupt),
        }
    }

    /// rdbLoadObjectType: one byte that must name an object type.
    pub fn read_object_type(&mut self) -> Result<u8, RdbError> {
        let t = self.read_u8()?;
        if matches!(t, 0..=7 | 9..=19) {
            Ok(t)
        } else {
            Err(RdbError::UnsupportedType(t))
        }
    }

    /// rdbLoadObject for the types Skein stores; the others are refused.
    pub fn read_object(&mut self, t: u8) -> Result<Value, RdbError> {
        match t {
            TYPE_STRING => Ok(Value::Str(self.read_string()?.into_str_value())),
            TYPE_LIST | TYPE_LIST_ZIPLIST | TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
                list::read(self, t)
            }
            TYPE_HASH | TYPE_HASH_ZIPMAP | TYPE_HASH_ZIPLIST | TYPE_HASH_LISTPACK => {
                hash::read(self, t)
            }
            TYPE_SET | TYPE_SET_INTSET => set::read(self, t),
            TYPE_ZSET | TYPE_ZSET_2 | TYPE_ZSET_ZIPLIST | TYPE_ZSET_LISTPACK => zset::read(self, t),
            TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 => stream::read(self, t),
            other => Err(RdbError::UnsupportedType(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(b: &[u8]) -> Value {
        Value::Str(StrValue::from_bytes(b))
    }

    #[test]
    fn crc_matches_redis() {
        // src/crc64.c's self test.
        assert_eq!(crc64(0, b"123456789"), 0xe9c6d914c4b8d9ca);
        let whole = crc64(0, b"hello world");
        assert_eq!(crc64(crc64(0, b"hello "), b"world"), whole);
    }

    #[test]
    fn lengths_round_trip() {
        for n in [
            0u64,
            63,
            64,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            write_len(&mut out, n);
            let mut r = Reader::new(&out);
            assert_eq!(r.read_len_enc().unwrap(), (n, false));
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn redis_dump_bytes() {
        // Payloads from redis-server 7.0.15 (DUMP after SET).
        assert_eq!(
            dump_payload(s(b"bar").view(), true),
            b"\x00\x03bar\x0a\x00\xe6\xbeI`\xeef\xfd\x17".to_vec()
        );
        assert_eq!(
            dump_payload(s(&[b'a'; 30]).view(), true),
            b"\x00\xc3\x09\x1e\x01aa\xe0\x11\x00\x01aa\x0a\x00Es|\xbb+d{\xbb".to_vec()
        );
    }

    #[test]
    fn values_round_trip() {
        let cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"0".to_vec(),
            b"-128".to_vec(),
            b"127".to_vec(),
            b"128".to_vec(),
            b"-32769".to_vec(),
            b"2147483647".to_vec(),
            b"2147483648".to_vec(),
            b"-9223372036854775808".to_vec(),
            b"007".to_vec(),
            vec![b'x'; 100],
            (0..=255u8).collect(),
            b"abcabcabcabcabcabcabcabcabc".to_vec(),
        ];
        for c in cases {
            let v = s(&c);
            let p = dump_payload(v.view(), true);
            assert!(verify_payload(&p, false));
            assert_eq!(load_payload(&p).unwrap(), v, "{c:?}");
        }
        let raw = Value::Str(StrValue::raw(b"12".to_vec()));
        assert_eq!(
            load_payload(&dump_payload(raw.view(), true)).unwrap(),
            Value::Str(StrValue::Int(12))
        );
    }

    #[test]
    fn hostile_payloads_error() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let good = dump_payload(s(&[b'q'; 200]).view(), true);
        for _ in 0..20_000 {
            let mut p = good.clone();
            let n = rng.gen_range(1..4);
            for _ in 0..n {
                let i = rng.gen_range(0..p.len());
                p[i] = rng.gen();
            }
            p.truncate(rng.gen_range(0..=p.len()));
            let _ = load_payload(&p);
            let _ = verify_payload(&p, true);
        }
        for t in [8u8, 20, 200] {
            assert_eq!(load_payload(&[t, 0, 0]), Err(RdbError::UnsupportedType(t)));
        }
        // A 64-bit length far beyond the input.
        assert_eq!(
            load_payload(b"\x00\x81\xff\xff\xff\xff\xff\xff\xff\xff"),
            Err(RdbError::Truncated)
        );
        // LZF claiming a huge expansion.
        assert!(load_payload(b"\x00\xc3\x02\x81\x00\x00\x10\x00\x00\x00\x00\x00\x00a").is_err());
    }
}
