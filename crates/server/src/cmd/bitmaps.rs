//! Bitmap commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO
//! (Redis's bitops.c). Bit 0 is the most significant bit of the first byte.

use super::args::{self, is, SYNTAX_ERR, WRONGTYPE};
use super::strings::read_str;
use super::{Ctx, Handler};
use engine::locked::EntryMut;
use engine::{Event, Locked, StrRef, NO_EXPIRE};
use std::borrow::Cow;
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("setbit", setbit),
    ("getbit", getbit),
    ("bitcount", bitcount),
    ("bitpos", bitpos),
    ("bitop", bitop),
    ("bitfield", bitfield),
    ("bitfield_ro", bitfield_ro),
];

const BIT_OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";
const BIT_VALUE_ERR: &str = "ERR bit is not an integer or out of range";
const BITFIELD_TYPE_ERR: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// getBitOffsetFromArgument: a bit offset below 8 * proto-max-bulk-len; with `hash_bits`
/// (BITFIELD) a `#N` offset means N * bits.
fn bit_offset(ctx: &Ctx, arg: &[u8], hash_bits: Option<u32>) -> Result<u64, &'static str> {
    let (digits, mul) = match (arg.first(), hash_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], Some(bits)),
        _ => (arg, None),
    };
    let mut n = engine::value::parse_strict_i64(digits).ok_or(BIT_OFFSET_ERR)?;
    if let Some(bits) = mul {
        // Redis multiplies in a C long long; keep its wrap-around.
        n = n.wrapping_mul(i64::from(bits));
    }
    let max = ctx.srv.config.hot.proto_max_bulk_len.load(Relaxed);
    if n < 0 || (n >> 3) >= max {
        return Err(BIT_OFFSET_ERR);
    }
    Ok(n as u64)
}

/// lookupStringForBitCommand: the string at `key` (created empty if missing, which records
/// `new`), held for modification with `event`, and whether it was created.
fn string_for_bits<'k>(
    keys: &'k mut Locked,
    key: &[u8],
    event: Event,
) -> Result<(EntryMut<'k>, bool), &'static str> {
    let exists = match keys.modify(key, Event::NONE) {
        None => false,
        Some(e) if e.value().as_str().is_some() => true,
        Some(_) => return Err(WRONGTYPE),
    };
    if !exists {
        keys.insert(key, StrRef::Raw(&[]), NO_EXPIRE, Event::NONE);
    }
    let e = keys.modify(key, event).ok_or(WRONGTYPE)?;
    Ok((e, !exists))
}

/// The bytes of `e` made `raw` and zero-padded so that bit `maxbit` exists, and whether
/// they grew. Marking the change is the caller's: Redis's lookupStringForBitCommand
/// reports creation or growth as `dirty`, which counts only with a write.
fn bits_upto<'e>(e: &'e mut EntryMut<'_>, maxbit: u64) -> (&'e mut Vec<u8>, bool) {
    let need = (maxbit >> 3) as usize + 1;
    let data = e.make_raw_unmarked();
    let grown = data.len() < need;
    if grown {
        data.resize(need, 0);
    }
    (data, grown)
}

fn setbit(ctx: &mut Ctx, argv: &[&[u8]]) {
    let offset = match bit_offset(ctx, argv[2], None) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let on = match engine::value::parse_strict_i64(argv[3]) {
        Some(v @ (0 | 1)) => v as u8,
        _ => return ctx.out.error(BIT_VALUE_ERR),
    };
    let (mut e, created) = match string_for_bits(ctx.keys, argv[1], Event::string("setbit")) {
        Ok(e) => e,
        Err(e) => return ctx.out.error(e),
    };
    let (data, grown) = bits_upto(&mut e, offset);
    let byte = (offset >> 3) as usize;
    let shift = 7 - (offset & 7) as u32;
    let old = (data[byte] >> shift) & 1;
    data[byte] = (data[byte] & !(1 << shift)) | (on << shift);
    // Setting a bit to what it was is no change (unless the string was created or grown).
    if created || grown || old != on {
        e.mark_changed();
    }
    ctx.out.int(i64::from(old));
}

fn getbit(ctx: &mut Ctx, argv: &[&[u8]]) {
    let offset = match bit_offset(ctx, argv[2], None) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    match read_str(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.int(0),
        Ok(Some(s)) => {
            let data = s.to_bytes();
            let byte = (offset >> 3) as usize;
            let bit = data.get(byte).map_or(0, |b| (b >> (7 - (offset & 7))) & 1);
            ctx.out.int(i64::from(bit));
        }
    }
}

fn popcount(bytes: &[u8]) -> i64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut n: u64 = 0;
    for c in &mut chunks {
        n += u64::from(u64::from_ne_bytes(c.try_into().expect("8 bytes")).count_ones());
    }
    for b in chunks.remainder() {
        n += u64::from(b.count_ones());
    }
    n as i64
}

/// redisBitpos: the first bit equal to `bit`; for 1 bits -1 if none, for 0 bits the
/// position just past the end if none (the string is taken as zero-padded).
fn first_bit(bytes: &[u8], bit: bool) -> i64 {
    let skip = if bit { 0u8 } else { 0xff };
    match bytes.iter().position(|&b| b != skip) {
        Some(i) => {
            let b = bytes[i];
            let within = if bit {
                b.leading_zeros()
            } else {
                b.leading_ones()
            };
            (i as i64) * 8 + i64::from(within)
        }
        None if bit => -1,
        None => bytes.len() as i64 * 8,
    }
}

/// A BIT|BYTE range unit keyword.
fn range_unit(arg: &[u8]) -> Option<bool> {
    if is(arg, "bit") {
        Some(true)
    } else if is(arg, "byte") {
        Some(false)
    } else {
        None
    }
}

/// A normalized range of a BITCOUNT/BITPOS: byte `start..=end`, plus the masks of the
/// bits outside a BIT range in its first and last bytes.
struct ByteRange {
    start: i64,
    end: i64,
    first_mask: u8,
    last_mask: u8,
}

/// Redis's index conversion shared by BITCOUNT and BITPOS.
fn normalize_range(strlen: i64, mut start: i64, mut end: i64, isbit: bool) -> ByteRange {
    let totlen = if isbit { strlen << 3 } else { strlen };
    if start < 0 {
        start += totlen;
    }
    if end < 0 {
        end += totlen;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= totlen {
        end = totlen - 1;
    }
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    if isbit && start <= end {
        first_mask = !((1u32 << (8 - (start & 7))) - 1) as u8;
        last_mask = ((1u32 << (7 - (end & 7))) - 1) as u8;
        start >>= 3;
        end >>= 3;
    }
    ByteRange {
        start,
        end,
        first_mask,
        last_mask,
    }
}

fn bitcount(ctx: &mut Ctx, argv: &[&[u8]]) {
    let data = match read_str(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.int(0),
        Ok(Some(s)) => s.to_bytes(),
    };
    let strlen = data.len() as i64;
    let r = match argv.len() {
        2 => ByteRange {
            start: 0,
            end: strlen - 1,
            first_mask: 0,
            last_mask: 0,
        },
        4 | 5 => {
            let (start, end) = match (args::int(argv[2]), args::int(argv[3])) {
                (Err(e), _) | (_, Err(e)) => return ctx.out.error(e),
                (Ok(s), Ok(e)) => (s, e),
            };
            if start < 0 && end < 0 && start > end {
                return ctx.out.int(0);
            }
            let isbit = match argv.get(4) {
                None => false,
                Some(a) => match range_unit(a) {
                    Some(b) => b,
                    None => return ctx.out.error(SYNTAX_ERR),
                },
            };
            normalize_range(strlen, start, end, isbit)
        }
        _ => return ctx.out.error(SYNTAX_ERR),
    };
    if r.start > r.end {
        return ctx.out.int(0);
    }
    let (s, e) = (r.start as usize, r.end as usize);
    let mut count = popcount(&data[s..=e]);
    count -= i64::from((data[s] & r.first_mask).count_ones());
    count -= i64::from((data[e] & r.last_mask).count_ones());
    ctx.out.int(count);
}

fn bitpos(ctx: &mut Ctx, argv: &[&[u8]]) {
    let bit = match args::int(argv[2]) {
        Err(e) => return ctx.out.error(e),
        Ok(b @ (0 | 1)) => b == 1,
        Ok(_) => return ctx.out.error("ERR The bit argument must be 1 or 0."),
    };
    let data = match read_str(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.int(if bit { -1 } else { 0 }),
        Ok(Some(s)) => s.to_bytes(),
    };
    let strlen = data.len() as i64;
    let mut end_given = false;
    let r = match argv.len() {
        3 => ByteRange {
            start: 0,
            end: strlen - 1,
            first_mask: 0,
            last_mask: 0,
        },
        4..=6 => {
            let start = match args::int(argv[3]) {
                Ok(s) => s,
                Err(e) => return ctx.out.error(e),
            };
            let isbit = match argv.get(5) {
                None => false,
                Some(a) => match range_unit(a) {
                    Some(b) => b,
                    None => return ctx.out.error(SYNTAX_ERR),
                },
            };
            let end = match argv.get(4) {
                Some(a) => match args::int(a) {
                    Ok(e) => {
                        end_given = true;
                        e
                    }
                    Err(e) => return ctx.out.error(e),
                },
                None if isbit => (strlen << 3) + 7,
                None => strlen - 1,
            };
            normalize_range(strlen, start, end, isbit)
        }
        _ => return ctx.out.error(SYNTAX_ERR),
    };
    if r.start > r.end {
        return ctx.out.int(-1);
    }
    ctx.out.int(bitpos_in_range(&data, &r, bit, end_given));
}

/// The search of bitposCommand over a non-empty range, including its handling of
/// partial first and last bytes.
fn bitpos_in_range(p: &[u8], r: &ByteRange, bit: bool, end_given: bool) -> i64 {
    let mut start = r.start as usize;
    let end = r.end as usize;
    let mut bytes = end - start + 1;
    let edge = |b: u8, mask: u8| if bit { b & !mask } else { b | mask };
    let pos = 'search: {
        if r.first_mask != 0 {
            let mut tmp = edge(p[start], r.first_mask);
            if r.last_mask != 0 && bytes == 1 {
                tmp = edge(tmp, r.last_mask);
            }
            let pos = first_bit(&[tmp], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'search pos;
            }
            start += 1;
            bytes -= 1;
        }
        let curbytes = bytes - usize::from(r.last_mask != 0);
        if curbytes > 0 {
            let pos = first_bit(&p[start..start + curbytes], bit);
            if bytes == curbytes || (pos != -1 && pos != (curbytes as i64) << 3) {
                break 'search pos;
            }
            start += curbytes;
            bytes -= curbytes;
        }
        first_bit(&[edge(p[end], r.last_mask)], bit)
    };
    if end_given && !bit && pos == (bytes as i64) << 3 {
        return -1;
    }
    if pos != -1 {
        pos + ((start as i64) << 3)
    } else {
        pos
    }
}

#[derive(Clone, Copy, PartialEq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

fn bitop(ctx: &mut Ctx, argv: &[&[u8]]) {
    let op = if is(argv[1], "and") {
        BitOp::And
    } else if is(argv[1], "or") {
        BitOp::Or
    } else if is(argv[1], "xor") {
        BitOp::Xor
    } else if is(argv[1], "not") {
        BitOp::Not
    } else {
        return ctx.out.error(SYNTAX_ERR);
    };
    if op == BitOp::Not && argv.len() != 4 {
        return ctx
            .out
            .error("ERR BITOP NOT must be called with a single source key.");
    }
    let dest = argv[2];
    let srcs = &argv[3..];
    let mut inputs: Vec<Vec<u8>> = Vec::with_capacity(srcs.len());
    for k in srcs {
        match read_str(ctx.keys, k) {
            Err(e) => return ctx.out.error(e),
            Ok(v) => inputs.push(v.map(|s| s.to_bytes().into_owned()).unwrap_or_default()),
        }
    }
    let maxlen = inputs.iter().map(Vec::len).max().unwrap_or(0);
    if maxlen == 0 {
        // Nothing to delete is no change (Redis's dirty counter and stream skip it).
        ctx.keys.remove(dest, Event::DEL);
        return ctx.out.int(0);
    }
    let res = combine(op, &inputs, maxlen);
    ctx.keys
        .insert(dest, StrRef::Raw(&res), NO_EXPIRE, Event::string("set"));
    ctx.out.int(maxlen as i64);
}

/// The BITOP result: inputs zero-padded to `maxlen`.
fn combine(op: BitOp, inputs: &[Vec<u8>], maxlen: usize) -> Vec<u8> {
    let mut res = inputs[0].clone();
    res.resize(maxlen, 0);
    if op == BitOp::Not {
        res.iter_mut().for_each(|b| *b = !*b);
        return res;
    }
    for src in &inputs[1..] {
        let pad = maxlen - src.len();
        let tail = res.len() - pad;
        for (r, s) in res[..tail].iter_mut().zip(src) {
            match op {
                BitOp::And => *r &= s,
                BitOp::Or => *r |= s,
                _ => *r ^= s,
            }
        }
        if op == BitOp::And {
            res[tail..].fill(0);
        }
    }
    res
}

// ---- BITFIELD ----

#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq)]
enum FieldOp {
    Get,
    Set,
    Incrby,
}

struct Field {
    op: FieldOp,
    offset: u64,
    value: i64,
    overflow: Overflow,
    bits: u32,
    signed: bool,
}

/// getBitfieldTypeFromArgument: `i1`..`i64` or `u1`..`u63`.
fn field_type(arg: &[u8]) -> Result<(bool, u32), &'static str> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(BITFIELD_TYPE_ERR),
    };
    // Redis reads the type as a C string: it ends at the first NUL byte.
    let rest = &arg[1..];
    let rest = &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())];
    match engine::value::parse_strict_i64(rest) {
        Some(n) if n >= 1 && n <= if signed { 64 } else { 63 } => Ok((signed, n as u32)),
        _ => Err(BITFIELD_TYPE_ERR),
    }
}

/// Parse the subcommands; Err is the error reply.
fn parse_fields(ctx: &Ctx, argv: &[&[u8]]) -> Result<Vec<Field>, &'static str> {
    let mut fields = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < argv.len() {
        let rem = argv.len() - j - 1;
        let sub = argv[j];
        let op = if is(sub, "get") && rem >= 2 {
            FieldOp::Get
        } else if is(sub, "set") && rem >= 3 {
            FieldOp::Set
        } else if is(sub, "incrby") && rem >= 3 {
            FieldOp::Incrby
        } else if is(sub, "overflow") && rem >= 1 {
            let t = argv[j + 1];
            overflow = if is(t, "wrap") {
                Overflow::Wrap
            } else if is(t, "sat") {
                Overflow::Sat
            } else if is(t, "fail") {
                Overflow::Fail
            } else {
                return Err("ERR Invalid OVERFLOW type specified");
            };
            j += 2;
            continue;
        } else {
            return Err(SYNTAX_ERR);
        };
        let (signed, bits) = field_type(argv[j + 1])?;
        let offset = bit_offset(ctx, argv[j + 2], Some(bits))?;
        let value = if op == FieldOp::Get {
            0
        } else {
            args::int(argv[j + 3])?
        };
        fields.push(Field {
            op,
            offset,
            value,
            overflow,
            bits,
            signed,
        });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    Ok(fields)
}

fn get_unsigned(p: &[u8], mut offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for _ in 0..bits {
        let byte = p.get((offset >> 3) as usize).copied().unwrap_or(0);
        v = (v << 1) | u64::from((byte >> (7 - (offset & 7))) & 1);
        offset += 1;
    }
    v
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let mut v = get_unsigned(p, offset, bits) as i64;
    if bits < 64 && v & (1i64 << (bits - 1)) != 0 {
        v |= -1i64 << bits;
    }
    v
}

fn set_unsigned(p: &mut [u8], mut offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        let bit = ((value >> (bits - 1 - j)) & 1) as u8;
        let byte = &mut p[(offset >> 3) as usize];
        let shift = 7 - (offset & 7);
        *byte = (*byte & !(1 << shift)) | (bit << shift);
        offset += 1;
    }
}

/// checkUnsignedBitfieldOverflow: (overflowed, value to store instead if any).
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> (bool, Option<u64>) {
    let max = (1u64 << bits) - 1; // bits <= 63
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = value.wrapping_neg() as i64;
    let limit_sat = if value > max || (incr > 0 && incr > maxincr) {
        max
    } else if incr < 0 && incr < minincr {
        0
    } else {
        return (false, None);
    };
    let limit = match ow {
        Overflow::Wrap => Some(value.wrapping_add(incr as u64) & max),
        Overflow::Sat => Some(limit_sat),
        Overflow::Fail => None,
    };
    (true, limit)
}

/// checkSignedBitfieldOverflow: (overflowed, value to store instead if any).
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> (bool, Option<i64>) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let limit_sat = if value > max
        || (bits != 64 && incr > maxincr)
        || (value >= 0 && incr > 0 && incr > maxincr)
    {
        max
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        min
    } else {
        return (false, None);
    };
    let limit = match ow {
        Overflow::Wrap => {
            let mut c = (value as u64).wrapping_add(incr as u64);
            if bits < 64 {
                let mask = u64::MAX << bits;
                if c & (1u64 << (bits - 1)) != 0 {
                    c |= mask;
                } else {
                    c &= !mask;
                }
            }
            Some(c as i64)
        }
        Overflow::Sat => Some(limit_sat),
        Overflow::Fail => None,
    };
    (true, limit)
}

/// Run one SET or INCRBY on `p`; None when OVERFLOW FAIL stops it.
fn write_field(p: &mut [u8], f: &Field) -> Option<i64> {
    if f.signed {
        let old = get_signed(p, f.offset, f.bits);
        let (base, incr) = match f.op {
            FieldOp::Incrby => (old, f.value),
            _ => (f.value, 0),
        };
        let (over, limit) = signed_overflow(base, incr, f.bits, f.overflow);
        if over && f.overflow == Overflow::Fail {
            return None;
        }
        let new = limit.unwrap_or(base.wrapping_add(incr));
        set_unsigned(p, f.offset, f.bits, new as u64);
        Some(if f.op == FieldOp::Incrby { new } else { old })
    } else {
        let old = get_unsigned(p, f.offset, f.bits);
        let (base, incr) = match f.op {
            FieldOp::Incrby => (old, f.value),
            _ => (f.value as u64, 0),
        };
        let (over, limit) = unsigned_overflow(base, incr, f.bits, f.overflow);
        if over && f.overflow == Overflow::Fail {
            return None;
        }
        let new = limit.unwrap_or(base.wrapping_add(incr as u64));
        set_unsigned(p, f.offset, f.bits, new);
        Some(if f.op == FieldOp::Incrby {
            new as i64
        } else {
            old as i64
        })
    }
}

fn read_field(p: &[u8], f: &Field) -> i64 {
    if f.signed {
        get_signed(p, f.offset, f.bits)
    } else {
        get_unsigned(p, f.offset, f.bits) as i64
    }
}

fn bitfield_generic(ctx: &mut Ctx, argv: &[&[u8]], ro_command: bool) {
    let fields = match parse_fields(ctx, argv) {
        Ok(f) => f,
        Err(e) => return ctx.out.error(e),
    };
    let key = argv[1];
    let highest = fields
        .iter()
        .filter(|f| f.op != FieldOp::Get)
        .map(|f| f.offset + u64::from(f.bits) - 1)
        .max();
    let Some(highest) = highest else {
        // Only reads: a missing key reads as zeros.
        let data: Cow<[u8]> = match read_str(ctx.keys, key) {
            Err(e) => return ctx.out.error(e),
            Ok(None) => Cow::Borrowed(&[]),
            Ok(Some(s)) => s.to_bytes(),
        };
        ctx.out.array(fields.len());
        for f in &fields {
            ctx.out.int(read_field(&data, f));
        }
        return;
    };
    if ro_command {
        return ctx
            .out
            .error("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let (mut e, created) = match string_for_bits(ctx.keys, key, Event::string("setbit")) {
        Ok(e) => e,
        Err(e) => return ctx.out.error(e),
    };
    let (data, grown) = bits_upto(&mut e, highest);
    // A write counts when the string was created or grown, or it changed the field; one
    // that OVERFLOW FAIL stopped never does (Redis's `changes`).
    let dirty = created || grown;
    let mut changed = false;
    ctx.out.array(fields.len());
    for f in &fields {
        if f.op == FieldOp::Get {
            ctx.out.int(read_field(data, f));
        } else {
            let before = read_field(data, f);
            match write_field(data, f) {
                Some(v) => {
                    ctx.out.int(v);
                    changed |= dirty || read_field(data, f) != before;
                }
                None => ctx.out.null(),
            }
        }
    }
    if changed {
        e.mark_changed();
    }
}

fn bitfield(ctx: &mut Ctx, argv: &[&[u8]]) {
    bitfield_generic(ctx, argv, false);
}

fn bitfield_ro(ctx: &mut Ctx, argv: &[&[u8]]) {
    bitfield_generic(ctx, argv, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bit_semantics() {
        assert_eq!(first_bit(&[0, 0], true), -1);
        assert_eq!(first_bit(&[0xff, 0xff], false), 16);
        assert_eq!(first_bit(&[0, 0x10], true), 11);
        assert_eq!(first_bit(&[0xff, 0xfe], false), 15);
    }

    #[test]
    fn signed_wrap_and_sat() {
        assert_eq!(
            signed_overflow(127, 1, 8, Overflow::Wrap),
            (true, Some(-128))
        );
        assert_eq!(signed_overflow(127, 1, 8, Overflow::Sat), (true, Some(127)));
        assert_eq!(signed_overflow(-128, -1, 8, Overflow::Fail), (true, None));
        assert_eq!(signed_overflow(5, 1, 8, Overflow::Wrap), (false, None));
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Wrap),
            (true, Some(i64::MIN))
        );
    }

    #[test]
    fn unsigned_wrap_and_sat() {
        assert_eq!(
            unsigned_overflow(255, 1, 8, Overflow::Wrap),
            (true, Some(0))
        );
        assert_eq!(unsigned_overflow(0, -1, 8, Overflow::Sat), (true, Some(0)));
        assert_eq!(
            unsigned_overflow(u64::MAX, 0, 8, Overflow::Wrap),
            (true, Some(255))
        );
    }

    #[test]
    fn combine_pads_with_zeros() {
        let a = vec![0xffu8, 0x0f];
        let b = vec![0x0fu8];
        assert_eq!(
            combine(BitOp::And, &[a.clone(), b.clone()], 2),
            vec![0x0f, 0]
        );
        assert_eq!(
            combine(BitOp::Or, &[a.clone(), b.clone()], 2),
            vec![0xff, 0x0f]
        );
        assert_eq!(
            combine(BitOp::Xor, &[b.clone(), a.clone()], 2),
            vec![0xf0, 0x0f]
        );
        assert_eq!(combine(BitOp::Not, &[b], 1), vec![0xf0]);
    }
}
