//! Readers of the compact encodings of older RDB files, each checked the way Redis's deep
//! integrity validation checks it: the ziplist (Redis 3.2 to 6.2's small hashes, sorted
//! sets and quicklist nodes: `RDB_TYPE_*_ZIPLIST`, `RDB_TYPE_LIST_QUICKLIST`) and the
//! zipmap (`RDB_TYPE_HASH_ZIPMAP`, Redis 2.4 and earlier). Hostile bytes give None, never a
//! panic. One reader for every type.

use crate::coll::listpack::Item;

const ZIP_END: u8 = 0xFF;
const ZIP_BIG_PREVLEN: u8 = 254;
const ZL_HEADER: usize = 10;

fn le_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(..4)?.try_into().ok()?))
}

/// One ziplist entry at `p`: (its item, its total size), checked against `buf`'s end.
fn zl_entry(buf: &[u8], p: usize) -> Option<(u32, Item<'_>, usize)> {
    // The end byte is excluded: an entry must stop before it.
    let body = buf.get(..buf.len() - 1)?;
    let (prevlen, plen) = match *body.get(p)? {
        ZIP_BIG_PREVLEN => (le_u32(body.get(p + 1..)?)?, 5),
        ZIP_END => return None,
        b => (u32::from(b), 1),
    };
    let e = p + plen;
    let enc = *body.get(e)?;
    let (hlen, item_len, int): (usize, usize, Option<u8>) = match enc >> 6 {
        0 => (1, usize::from(enc & 0x3f), None),
        1 => (
            2,
            (usize::from(enc & 0x3f) << 8) | usize::from(*body.get(e + 1)?),
            None,
        ),
        2 => {
            let b = body.get(e + 1..e + 5)?;
            (5, u32::from_be_bytes(b.try_into().ok()?) as usize, None)
        }
        _ => match enc {
            0xC0 => (1, 2, Some(enc)),
            0xD0 => (1, 4, Some(enc)),
            0xE0 => (1, 8, Some(enc)),
            0xF0 => (1, 3, Some(enc)),
            0xFE => (1, 1, Some(enc)),
            0xF1..=0xFD => (1, 0, Some(enc)),
            _ => return None,
        },
    };
    let d = e + hlen;
    let end = d.checked_add(item_len)?;
    let data = body.get(d..end)?;
    let item = match int {
        None => Item::Str(data),
        Some(0xC0) => Item::Int(i64::from(i16::from_le_bytes(data.try_into().ok()?))),
        Some(0xD0) => Item::Int(i64::from(i32::from_le_bytes(data.try_into().ok()?))),
        Some(0xE0) => Item::Int(i64::from_le_bytes(data.try_into().ok()?)),
        Some(0xF0) => Item::Int(i64::from(
            i32::from_le_bytes([0, data[0], data[1], data[2]]) >> 8,
        )),
        Some(0xFE) => Item::Int(i64::from(data[0] as i8)),
        Some(imm) => Item::Int(i64::from(imm & 0x0f) - 1),
    };
    Some((prevlen, item, end - p))
}

/// Every entry of a ziplist, after checking its header, each entry's bounds and back
/// link, its tail offset and its count (ziplistValidateIntegrity, deep).
pub(super) fn ziplist_items(buf: &[u8]) -> Option<Vec<Item<'_>>> {
    if buf.len() < ZL_HEADER + 1 {
        return None;
    }
    let bytes = le_u32(buf)? as usize;
    let tail = le_u32(&buf[4..])? as usize;
    let count = u16::from_le_bytes([buf[8], buf[9]]);
    if bytes != buf.len() || buf[bytes - 1] != ZIP_END || tail > bytes - 1 {
        return None;
    }
    let mut items = Vec::new();
    let mut p = ZL_HEADER;
    let mut prev_size = 0usize;
    let mut last = ZL_HEADER;
    while buf[p] != ZIP_END {
        let (prevlen, item, size) = zl_entry(buf, p)?;
        if prevlen as usize != prev_size {
            return None;
        }
        items.push(item);
        last = p;
        prev_size = size;
        p += size;
    }
    if p != bytes - 1 || last != tail {
        return None;
    }
    if count != u16::MAX && usize::from(count) != items.len() {
        return None;
    }
    Some(items)
}

/// Field/value pairs of a zipmap (zipmapValidateIntegrity, deep): a count byte, then
/// `len field len free value [free bytes]`, lengths in one byte or 254 + 4 bytes.
pub(super) fn zipmap_pairs(zm: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    const BIGLEN: u8 = 254;
    let size = zm.len();
    if size < 2 || zm[size - 1] != ZIP_END {
        return None;
    }
    // A position must stay within [2, size-1] (zipmapValidateIntegrity's OUT_OF_RANGE).
    let in_range = |p: usize| p >= 2 && p < size;
    let read_len = |p: usize| -> Option<(usize, usize)> {
        match *zm.get(p)? {
            b if b < BIGLEN => Some((usize::from(b), 1)),
            _ => Some((le_u32(zm.get(p + 1..)?)? as usize, 5)),
        }
    };
    let mut pairs = Vec::new();
    let mut p = 1usize;
    while *zm.get(p)? != ZIP_END {
        let (flen, s) = read_len(p)?;
        if !in_range(p + s) {
            return None;
        }
        let f = p + s;
        p = f.checked_add(flen)?;
        if !in_range(p) {
            return None;
        }
        let (vlen, s) = read_len(p)?;
        if !in_range(p + s) {
            return None;
        }
        p += s;
        let free = usize::from(zm[p]);
        p += 1;
        let v = p;
        p = p.checked_add(vlen)?.checked_add(free)?;
        if !in_range(p) {
            return None;
        }
        pairs.push((&zm[f..f + flen], &zm[v..v + vlen]));
    }
    if pairs.is_empty() || (zm[0] != BIGLEN && usize::from(zm[0]) != pairs.len()) {
        return None;
    }
    Some(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every truncation is refused; byte changes never panic.
    fn hostile(good: &[u8], parses: impl Fn(&[u8]) -> bool) {
        for cut in 0..good.len() {
            assert!(!parses(&good[..cut]));
        }
        for i in 0..good.len() {
            for v in [0u8, 1, 0x7f, 0xfe, 0xff] {
                let mut z = good.to_vec();
                z[i] = v;
                parses(&z);
            }
        }
    }

    #[test]
    fn redis_ziplist() {
        // A Redis 6.2 ziplist of "a" "1" "bb" "-300" "c" "hello".
        let zl = [
            0x22, 0, 0, 0, 0x1a, 0, 0, 0, 6, 0, //
            0x00, 0x01, b'a', //
            0x03, 0xf2, //
            0x02, 0x02, b'b', b'b', //
            0x04, 0xc0, 0xd4, 0xfe, //
            0x04, 0x01, b'c', //
            0x03, 0x05, b'h', b'e', b'l', b'l', b'o', //
            0xff,
        ];
        let items = ziplist_items(&zl).unwrap();
        assert_eq!(
            items,
            vec![
                Item::Str(b"a"),
                Item::Int(1),
                Item::Str(b"bb"),
                Item::Int(-300),
                Item::Str(b"c"),
                Item::Str(b"hello")
            ]
        );
        hostile(&zl, |b| ziplist_items(b).is_some());
    }

    #[test]
    fn redis_zipmap() {
        // count 2, "f" -> "v1" (free 1), "g" -> "" .
        let zm = [2, 1, b'f', 2, 1, b'v', b'1', 0, 1, b'g', 0, 0, 0xff];
        let pairs = zipmap_pairs(&zm).unwrap();
        assert_eq!(pairs, vec![(&b"f"[..], &b"v1"[..]), (&b"g"[..], &b""[..])]);
        hostile(&zm, |b| zipmap_pairs(b).is_some());
    }
}
