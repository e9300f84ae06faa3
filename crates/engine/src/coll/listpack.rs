//! Redis's listpack, byte for byte: the compact encoding of small hashes, sorted sets and
//! list nodes. Keeping the same bytes makes DUMP/RDB payloads identical to Redis's and the
//! memory per element as small as Redis's.
//!
//! ```text
//! [total bytes: u32 LE][element count: u16 LE, 65535 = count it][entries...][0xFF]
//! entry = [encoding + data][backlen: the encoding+data size, 1-5 bytes, read backwards]
//! ```
//!
//! Strings that parse as integers (Redis's strict `string2ll`) are stored as integers, as
//! Redis stores them. Positions are byte offsets of an entry's first byte; the end
//! position (of the 0xFF) is where appends go.

use crate::value::parse_strict_i64;

const HEADER: usize = 6;
const EOF: u8 = 0xFF;
const COUNT_UNKNOWN: u16 = u16::MAX;

/// One element: an integer or a string, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl<'a> Item<'a> {
    /// The element's bytes as a client sees them (integers in decimal).
    pub fn to_vec(&self) -> Vec<u8> {
        match *self {
            Item::Int(n) => n.to_string().into_bytes(),
            Item::Str(s) => s.to_vec(),
        }
    }

    /// Does the element equal these client bytes?
    pub fn eq_bytes(&self, b: &[u8]) -> bool {
        match *self {
            Item::Str(s) => s == b,
            Item::Int(n) => parse_strict_i64(b) == Some(n),
        }
    }

    /// As an integer, if it is stored as one.
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            Item::Int(n) => Some(n),
            Item::Str(_) => None,
        }
    }

    /// The length of its client bytes.
    pub fn byte_len(&self) -> usize {
        match *self {
            Item::Int(n) => crate::value::StrRef::Int(n).len(),
            Item::Str(s) => s.len(),
        }
    }
}

/// A listpack: its exact bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Listpack {
    buf: Vec<u8>,
}

impl std::fmt::Debug for Listpack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|i| String::from_utf8_lossy(&i.to_vec()).into_owned()),
            )
            .finish()
    }
}

impl Default for Listpack {
    fn default() -> Self {
        Self::new()
    }
}

/// The encoding of one element to insert: header bytes (and for strings the data).
struct Encoded<'a> {
    head: [u8; 9],
    head_len: usize,
    data: &'a [u8],
}

impl Encoded<'_> {
    fn of(b: &[u8]) -> Encoded<'_> {
        if b.len() <= 20 {
            if let Some(n) = parse_strict_i64(b) {
                return Encoded::int(n);
            }
        }
        Encoded::string(b)
    }

    fn int(v: i64) -> Encoded<'static> {
        let mut head = [0u8; 9];
        let head_len = if (0..=127).contains(&v) {
            head[0] = v as u8;
            1
        } else if (-4096..=4095).contains(&v) {
            let u = if v < 0 { (1i64 << 13) + v } else { v } as u64;
            head[0] = ((u >> 8) as u8) | 0xC0;
            head[1] = u as u8;
            2
        } else if (-32768..=32767).contains(&v) {
            head[0] = 0xF1;
            head[1..3].copy_from_slice(&(v as i16).to_le_bytes());
            3
        } else if (-8_388_608..=8_388_607).contains(&v) {
            head[0] = 0xF2;
            head[1..4].copy_from_slice(&(v as i32).to_le_bytes()[..3]);
            4
        } else if (i64::from(i32::MIN)..=i64::from(i32::MAX)).contains(&v) {
            head[0] = 0xF3;
            head[1..5].copy_from_slice(&(v as i32).to_le_bytes());
            5
        } else {
            head[0] = 0xF4;
            head[1..9].copy_from_slice(&v.to_le_bytes());
            9
        };
        Encoded {
            head,
            head_len,
            data: &[],
        }
    }

    fn string(b: &[u8]) -> Encoded<'_> {
        let mut head = [0u8; 9];
        let len = b.len();
        let head_len = if len < 64 {
            head[0] = 0x80 | len as u8;
            1
        } else if len < 4096 {
            head[0] = 0xE0 | (len >> 8) as u8;
            head[1] = len as u8;
            2
        } else {
            head[0] = 0xF0;
            head[1..5].copy_from_slice(&(len as u32).to_le_bytes());
            5
        };
        Encoded {
            head,
            head_len,
            data: b,
        }
    }

    /// Encoding + data size (what the backlen holds).
    fn size(&self) -> usize {
        self.head_len + self.data.len()
    }

    /// The whole entry, backlen included.
    fn entry_size(&self) -> usize {
        self.size() + backlen_size(self.size())
    }

    fn write(&self, out: &mut [u8]) {
        let n = self.head_len;
        out[..n].copy_from_slice(&self.head[..n]);
        out[n..n + self.data.len()].copy_from_slice(self.data);
        write_backlen(&mut out[self.size()..], self.size());
    }
}

fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

fn write_backlen(out: &mut [u8], l: usize) {
    let l = l as u64;
    match backlen_size(l as usize) {
        1 => out[0] = l as u8,
        n => {
            // Most significant 7-bit group first; every byte but the first has bit 7 set.
            for (i, b) in out[..n].iter_mut().enumerate() {
                let shift = 7 * (n - 1 - i);
                let g = ((l >> shift) & 127) as u8;
                *b = if i == 0 { (l >> shift) as u8 } else { g | 128 };
            }
        }
    }
}

/// Size of encoding + data of the entry starting with `p` (None: malformed or EOF).
fn encoded_size(p: &[u8]) -> Option<usize> {
    let b = *p.first()?;
    let n = match b {
        0x00..=0x7F => 1,
        0x80..=0xBF => 1 + (b & 0x3F) as usize,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 2 + ((((b & 0x0F) as usize) << 8) | *p.get(1)? as usize),
        0xF0 => 5 + u32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as usize,
        0xF1 => 3,
        0xF2 => 4,
        0xF3 => 5,
        0xF4 => 9,
        _ => return None,
    };
    Some(n)
}

fn decode(p: &[u8]) -> Item<'_> {
    let b = p[0];
    match b {
        0x00..=0x7F => Item::Int(i64::from(b)),
        0x80..=0xBF => Item::Str(&p[1..1 + (b & 0x3F) as usize]),
        0xC0..=0xDF => {
            let u = ((u64::from(b & 0x1F)) << 8) | u64::from(p[1]);
            let v = if u >= 1 << 12 {
                u as i64 - (1 << 13)
            } else {
                u as i64
            };
            Item::Int(v)
        }
        0xE0..=0xEF => {
            let len = (((b & 0x0F) as usize) << 8) | p[1] as usize;
            Item::Str(&p[2..2 + len])
        }
        0xF0 => {
            let len = u32::from_le_bytes(p[1..5].try_into().expect("4 bytes")) as usize;
            Item::Str(&p[5..5 + len])
        }
        0xF1 => Item::Int(i64::from(i16::from_le_bytes([p[1], p[2]]))),
        0xF2 => {
            let u = u32::from_le_bytes([p[1], p[2], p[3], 0]);
            Item::Int(i64::from(((u << 8) as i32) >> 8))
        }
        0xF3 => Item::Int(i64::from(i32::from_le_bytes(
            p[1..5].try_into().expect("4 bytes"),
        ))),
        _ => Item::Int(i64::from_le_bytes(p[1..9].try_into().expect("8 bytes"))),
    }
}

impl Listpack {
    pub fn new() -> Listpack {
        Listpack::with_capacity(HEADER + 1)
    }

    /// An empty listpack with room for `bytes` bytes before it reallocates (Redis's
    /// lpNew(capacity), used for a stream's tail node).
    pub fn with_capacity(bytes: usize) -> Listpack {
        let mut buf = Vec::with_capacity(bytes.max(HEADER + 1));
        buf.extend_from_slice(&((HEADER + 1) as u32).to_le_bytes());
        buf.extend_from_slice(&0u16.to_le_bytes());
        buf.push(EOF);
        Listpack { buf }
    }

    /// Adopt bytes read from a DUMP payload or an RDB file after checking every entry
    /// (Redis's deep integrity check): None if they are not a well-formed listpack.
    pub fn from_bytes(buf: Vec<u8>) -> Option<Listpack> {
        if buf.len() < HEADER + 1 {
            return None;
        }
        let total = u32::from_le_bytes(buf[0..4].try_into().ok()?) as usize;
        if total != buf.len() || *buf.last()? != EOF {
            return None;
        }
        let count = u16::from_le_bytes([buf[4], buf[5]]);
        let mut at = HEADER;
        let mut n = 0usize;
        while buf[at] != EOF {
            let size = encoded_size(&buf[at..])?;
            let bl = backlen_size(size);
            let end = at.checked_add(size)?.checked_add(bl)?;
            if end > buf.len() - 1 {
                return None;
            }
            let mut back = [0u8; 5];
            write_backlen(&mut back, size);
            if buf[at + size..end] != back[..bl] {
                return None;
            }
            at = end;
            n += 1;
        }
        if at != buf.len() - 1 || (count != COUNT_UNKNOWN && count as usize != n) {
            return None;
        }
        let mut lp = Listpack { buf };
        lp.set_count(n);
        Some(lp)
    }

    /// The exact bytes (what DUMP and RDB write).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Total bytes (Redis's lpBytes).
    pub fn bytes_len(&self) -> usize {
        self.buf.len()
    }

    /// Bytes held by the allocation (at its size class).
    pub fn allocated(&self) -> usize {
        crate::mem::vec::<u8>(self.buf.capacity())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match u16::from_le_bytes([self.buf[4], self.buf[5]]) {
            COUNT_UNKNOWN => self.iter().count(),
            n => n as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buf[HEADER] == EOF
    }

    fn set_count(&mut self, n: usize) {
        let c = if n >= COUNT_UNKNOWN as usize {
            COUNT_UNKNOWN
        } else {
            n as u16
        };
        self.buf[4..6].copy_from_slice(&c.to_le_bytes());
    }

    fn set_total(&mut self) {
        let t = self.buf.len() as u32;
        self.buf[0..4].copy_from_slice(&t.to_le_bytes());
    }

    /// Position of the first element (None if empty).
    pub fn first(&self) -> Option<usize> {
        (self.buf[HEADER] != EOF).then_some(HEADER)
    }

    /// Position of the last element (None if empty).
    pub fn last(&self) -> Option<usize> {
        self.prev(self.end())
    }

    /// The end position (the 0xFF), where an insert appends.
    pub fn end(&self) -> usize {
        self.buf.len() - 1
    }

    /// Position of the element after the one at `at` (None past the last).
    pub fn next(&self, at: usize) -> Option<usize> {
        let size = encoded_size(&self.buf[at..]).expect("valid listpack");
        let n = at + size + backlen_size(size);
        (self.buf[n] != EOF).then_some(n)
    }

    /// Position of the element before `at` (`at` may be the end position).
    pub fn prev(&self, at: usize) -> Option<usize> {
        if at <= HEADER {
            return None;
        }
        // Decode the backlen ending at at-1, backwards.
        let mut p = at - 1;
        let mut val: usize = 0;
        let mut shift = 0;
        loop {
            let b = self.buf[p];
            val |= ((b & 127) as usize) << shift;
            if b & 128 == 0 {
                break;
            }
            shift += 7;
            p -= 1;
        }
        Some(p - val)
    }

    /// The element at position `at`.
    pub fn get(&self, at: usize) -> Item<'_> {
        decode(&self.buf[at..])
    }

    /// Position of the element at `index` (negative counts from the end), if in range.
    pub fn seek(&self, index: i64) -> Option<usize> {
        let len = self.len() as i64;
        let i = if index < 0 { len + index } else { index };
        if i < 0 || i >= len {
            return None;
        }
        if i <= len / 2 {
            let mut at = self.first()?;
            for _ in 0..i {
                at = self.next(at)?;
            }
            Some(at)
        } else {
            let mut at = self.last()?;
            for _ in 0..(len - 1 - i) {
                at = self.prev(at)?;
            }
            Some(at)
        }
    }

    /// Every element, front to back.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            lp: self,
            at: self.first(),
        }
    }

    /// Insert `v` before the element at `at` (or append at [`Listpack::end`]); returns the
    /// new element's position.
    pub fn insert(&mut self, at: usize, v: &[u8]) -> usize {
        let enc = Encoded::of(v);
        self.insert_encoded(at, &enc)
    }

    /// Insert an integer element before `at`.
    pub fn insert_int(&mut self, at: usize, v: i64) -> usize {
        self.insert_encoded(at, &Encoded::int(v))
    }

    fn insert_encoded(&mut self, at: usize, enc: &Encoded) -> usize {
        let n = enc.entry_size();
        let count = self.len();
        self.room_for(n);
        let old_len = self.buf.len();
        self.buf.resize(old_len + n, 0);
        self.buf.copy_within(at..old_len, at + n);
        enc.write(&mut self.buf[at..at + n]);
        self.set_total();
        self.set_count(count + 1);
        at
    }

    /// Append `items` at the end in one move (integers as given, strings encoded as
    /// [`Listpack::insert`] would): the bytes of pushing them one by one, without moving
    /// the end marker for each (a stream entry is ten or so elements).
    pub fn extend<'a>(&mut self, items: impl Iterator<Item = Item<'a>> + Clone) {
        let enc = |i: Item<'a>| match i {
            Item::Int(n) => Encoded::int(n),
            Item::Str(b) => Encoded::of(b),
        };
        let (bytes, added) = items
            .clone()
            .fold((0, 0), |(b, n), i| (b + enc(i).entry_size(), n + 1));
        let count = self.len();
        self.room_for(bytes);
        self.buf.pop(); // the end marker, written back after the items
        for i in items {
            let e = enc(i);
            let at = self.buf.len();
            self.buf.resize(at + e.entry_size(), 0);
            e.write(&mut self.buf[at..]);
        }
        self.buf.push(EOF);
        self.set_total();
        self.set_count(count + added);
    }

    pub fn push_back(&mut self, v: &[u8]) {
        self.insert(self.end(), v);
    }

    pub fn push_front(&mut self, v: &[u8]) {
        self.insert(HEADER, v);
    }

    /// Remove the element at `at`; the element that followed now sits at `at` (None if
    /// it was the last).
    pub fn delete(&mut self, at: usize) -> Option<usize> {
        self.delete_range(at, 1)
    }

    /// Remove `n` elements starting at `at`; returns the position of what followed.
    pub fn delete_range(&mut self, at: usize, n: usize) -> Option<usize> {
        let count = self.len();
        let mut end = at;
        let mut removed = 0;
        while removed < n && self.buf[end] != EOF {
            let size = encoded_size(&self.buf[end..]).expect("valid listpack");
            end += size + backlen_size(size);
            removed += 1;
        }
        self.buf.drain(at..end);
        self.fit();
        self.set_total();
        self.set_count(count - removed);
        (self.buf[at] != EOF).then_some(at)
    }

    /// Replace the element at `at` with `v`; returns its position (unchanged).
    pub fn replace(&mut self, at: usize, v: &[u8]) -> usize {
        let enc = Encoded::of(v);
        self.replace_encoded(at, &enc)
    }

    pub fn replace_int(&mut self, at: usize, v: i64) -> usize {
        self.replace_encoded(at, &Encoded::int(v))
    }

    fn replace_encoded(&mut self, at: usize, enc: &Encoded) -> usize {
        let old = encoded_size(&self.buf[at..]).expect("valid listpack");
        let old_end = at + old + backlen_size(old);
        let n = enc.entry_size();
        if n != old_end - at {
            self.buf.splice(at..old_end, std::iter::repeat_n(0, n));
            self.fit();
            self.set_total();
        }
        enc.write(&mut self.buf[at..at + n]);
        at
    }

    /// Position of the first element equal to `v`, looking at every `skip + 1`-th element
    /// from `from` (Redis's lpFind: skip 1 looks at the fields of field/value pairs).
    pub fn find(&self, from: Option<usize>, v: &[u8], skip: usize) -> Option<usize> {
        let as_int = if v.len() <= 20 {
            parse_strict_i64(v)
        } else {
            None
        };
        let mut at = from;
        while let Some(p) = at {
            let hit = match self.get(p) {
                Item::Int(n) => as_int == Some(n),
                Item::Str(s) => as_int.is_none() && s == v,
            };
            if hit {
                return Some(p);
            }
            at = self.next(p);
            for _ in 0..skip {
                at = at.and_then(|q| self.next(q));
            }
        }
        None
    }

    /// Remove unused capacity.
    pub fn shrink(&mut self) {
        self.fit();
    }

    fn room_for(&mut self, n: usize) {
        crate::mem::reserve_in_class(&mut self.buf, n);
    }

    fn fit(&mut self) {
        crate::mem::shrink_to_class(&mut self.buf);
    }
}

/// Front-to-back iteration over a listpack's elements.
pub struct Iter<'a> {
    lp: &'a Listpack,
    at: Option<usize>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Item<'a>;

    fn next(&mut self) -> Option<Item<'a>> {
        let at = self.at?;
        self.at = self.lp.next(at);
        Some(self.lp.get(at))
    }
}

impl<'a> Iter<'a> {
    /// The position of the element the next call returns.
    pub fn position(&self) -> Option<usize> {
        self.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(lp: &Listpack) -> Vec<Vec<u8>> {
        lp.iter().map(|i| i.to_vec()).collect()
    }

    #[test]
    fn extend_is_pushing_one_by_one() {
        let long = vec![b'x'; 300];
        let items = [
            Item::Int(0),
            Item::Int(-5000),
            Item::Int(i64::MAX),
            Item::Str(b"12"),
            Item::Str(b"word"),
            Item::Str(&long),
        ];
        let mut a = Listpack::new();
        a.push_back(b"first");
        let mut b = a.clone();
        for i in items {
            match i {
                Item::Int(n) => {
                    a.insert_int(a.end(), n);
                }
                Item::Str(s) => a.push_back(s),
            }
        }
        b.extend(items.iter().copied());
        assert_eq!(a.as_bytes(), b.as_bytes());
        assert_eq!(b.len(), 7);
    }

    #[test]
    fn empty_is_redis_bytes() {
        assert_eq!(Listpack::new().as_bytes(), &[7, 0, 0, 0, 0, 0, 0xFF]);
    }

    #[test]
    fn known_encodings() {
        // HSET h a 1 in Redis 7.0: DUMP holds this listpack.
        let mut lp = Listpack::new();
        lp.push_back(b"a");
        lp.push_back(b"1");
        assert_eq!(
            lp.as_bytes(),
            &[12, 0, 0, 0, 2, 0, 0x81, b'a', 2, 0x01, 1, 0xFF]
        );
    }

    #[test]
    fn round_trips_every_width() {
        let vals: Vec<Vec<u8>> = [
            "0",
            "127",
            "128",
            "-1",
            "-4096",
            "4095",
            "4096",
            "-32768",
            "32767",
            "40000",
            "-8388608",
            "8388607",
            "8388608",
            "2147483647",
            "-2147483648",
            "2147483648",
            "9223372036854775807",
            "-9223372036854775808",
            "007",
            "-0",
            "+1",
            "",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .chain([
            vec![b'x'; 63],
            vec![b'y'; 64],
            vec![b'z'; 4095],
            vec![b'w'; 4096],
        ])
        .chain([vec![b'q'; 20000]])
        .collect();
        let mut lp = Listpack::new();
        for v in &vals {
            lp.push_back(v);
        }
        assert_eq!(items(&lp), vals);
        assert_eq!(lp.len(), vals.len());
        let copy = Listpack::from_bytes(lp.as_bytes().to_vec()).expect("valid");
        assert_eq!(copy, lp);
        // Backwards walk sees the same elements.
        let mut back = Vec::new();
        let mut at = lp.last();
        while let Some(p) = at {
            back.push(lp.get(p).to_vec());
            at = lp.prev(p);
        }
        back.reverse();
        assert_eq!(back, vals);
        assert_eq!(lp.get(lp.seek(-1).unwrap()).to_vec(), vec![b'q'; 20000]);
        assert_eq!(lp.get(lp.seek(1).unwrap()), Item::Int(127));
        assert!(lp.seek(vals.len() as i64).is_none());
    }

    #[test]
    fn edit_in_the_middle() {
        let mut lp = Listpack::new();
        for v in ["a", "b", "c"] {
            lp.push_back(v.as_bytes());
        }
        let b = lp.find(lp.first(), b"b", 0).unwrap();
        lp.replace(b, &[b'B'; 300]);
        lp.insert(b, b"12");
        assert_eq!(
            items(&lp),
            vec![
                b"a".to_vec(),
                b"12".to_vec(),
                vec![b'B'; 300],
                b"c".to_vec()
            ]
        );
        let at = lp.find(lp.first(), b"12", 0).unwrap();
        assert_eq!(
            lp.delete_range(at, 2).map(|p| lp.get(p)),
            Some(Item::Str(b"c"))
        );
        assert_eq!(items(&lp), vec![b"a".to_vec(), b"c".to_vec()]);
        assert!(Listpack::from_bytes(lp.as_bytes().to_vec()).is_some());
        lp.delete(lp.first().unwrap());
        lp.delete(lp.first().unwrap());
        assert!(lp.is_empty());
        assert_eq!(lp.as_bytes(), Listpack::new().as_bytes());
    }

    #[test]
    fn rejects_corrupt() {
        let mut lp = Listpack::new();
        lp.push_back(b"hello");
        let mut b = lp.as_bytes().to_vec();
        b[6] = 0x90; // claims 16 bytes of string
        assert!(Listpack::from_bytes(b).is_none());
        assert!(Listpack::from_bytes(vec![1, 2, 3]).is_none());
    }
}
