//! Values and their encodings.

use crate::coll::{Hash, List, Set, Stream, ZSet};

/// Longest string Redis stores as `embstr` (OBJ_ENCODING_EMBSTR_SIZE_LIMIT).
pub const EMBSTR_SIZE_LIMIT: usize = 44;

/// A value owned outside the keyspace (decoded from a DUMP payload, copied out to be
/// serialized off the lock, or built by a command before it is stored).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(StrValue),
    List(Box<List>),
    Hash(Box<Hash>),
    Set(Box<Set>),
    ZSet(Box<ZSet>),
    Stream(Box<Stream>),
}

/// An owned string value, in the encoding Redis would pick for it.
#[derive(Clone, Debug, PartialEq)]
pub enum StrValue {
    /// A decimal integer that round-trips (`OBJECT ENCODING` says `int`).
    Int(i64),
    /// Bytes written whole and at most 44 long (`embstr`).
    Embstr(Box<[u8]>),
    /// Bytes longer than 44, or modified in place by APPEND/SETRANGE/SETBIT (`raw`).
    Raw(Vec<u8>),
}

/// A borrowed value: what a key holds, read in place (see [`crate::Entry::value`]), or
/// what a command is about to store (the entry copies it into its own block).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueRef<'a> {
    Str(StrRef<'a>),
    List(&'a List),
    Hash(&'a Hash),
    Set(&'a Set),
    ZSet(&'a ZSet),
    Stream(&'a Stream),
}

/// A borrowed string with its encoding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StrRef<'a> {
    Int(i64),
    Embstr(&'a [u8]),
    Raw(&'a [u8]),
}

impl<'a> StrRef<'a> {
    /// Encode freshly written bytes the way SET does (tryObjectEncoding), without copying.
    pub fn encode(b: &'a [u8]) -> StrRef<'a> {
        if b.len() <= 20 {
            if let Some(n) = parse_strict_i64(b) {
                return StrRef::Int(n);
            }
        }
        Self::created(b)
    }

    /// createStringObject: `embstr` up to 44 bytes, `raw` beyond; never `int`.
    pub fn created(b: &'a [u8]) -> StrRef<'a> {
        if b.len() <= EMBSTR_SIZE_LIMIT {
            StrRef::Embstr(b)
        } else {
            StrRef::Raw(b)
        }
    }

    /// The bytes of a non-integer string (`None` for `int`).
    pub fn as_slice(&self) -> Option<&'a [u8]> {
        match *self {
            StrRef::Int(_) => None,
            StrRef::Embstr(b) | StrRef::Raw(b) => Some(b),
        }
    }

    /// The string's bytes (integers rendered in decimal).
    pub fn to_bytes(&self) -> std::borrow::Cow<'a, [u8]> {
        match *self {
            StrRef::Int(n) => std::borrow::Cow::Owned(n.to_string().into_bytes()),
            StrRef::Embstr(b) | StrRef::Raw(b) => std::borrow::Cow::Borrowed(b),
        }
    }

    pub fn len(&self) -> usize {
        match *self {
            StrRef::Int(n) => int_len(n),
            StrRef::Embstr(b) | StrRef::Raw(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            StrRef::Int(_) => "int",
            StrRef::Embstr(_) => "embstr",
            StrRef::Raw(_) => "raw",
        }
    }

    /// An owned copy.
    pub fn to_str_value(&self) -> StrValue {
        match *self {
            StrRef::Int(n) => StrValue::Int(n),
            StrRef::Embstr(b) => StrValue::Embstr(b.into()),
            StrRef::Raw(b) => StrValue::Raw(b.to_vec()),
        }
    }
}

impl StrValue {
    /// Encode freshly written bytes the way SET does (tryObjectEncoding).
    pub fn from_bytes(b: &[u8]) -> StrValue {
        StrRef::encode(b).to_str_value()
    }

    /// createStringObject: `embstr` up to 44 bytes, `raw` beyond; never `int`.
    pub fn created(data: Vec<u8>) -> StrValue {
        if data.len() <= EMBSTR_SIZE_LIMIT {
            StrValue::Embstr(data.into_boxed_slice())
        } else {
            StrValue::Raw(data)
        }
    }

    /// Bytes modified in place (APPEND, SETRANGE, SETBIT...): always `raw`.
    pub fn raw(data: Vec<u8>) -> StrValue {
        StrValue::Raw(data)
    }

    /// A borrowed view.
    pub fn view(&self) -> StrRef<'_> {
        match self {
            StrValue::Int(n) => StrRef::Int(*n),
            StrValue::Embstr(b) => StrRef::Embstr(b),
            StrValue::Raw(v) => StrRef::Raw(v),
        }
    }
}

impl<'a> ValueRef<'a> {
    /// The `TYPE` name.
    pub fn type_name(&self) -> &'static str {
        match self {
            ValueRef::Str(_) => "string",
            ValueRef::List(_) => "list",
            ValueRef::Hash(_) => "hash",
            ValueRef::Set(_) => "set",
            ValueRef::ZSet(_) => "zset",
            ValueRef::Stream(_) => "stream",
        }
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            ValueRef::Str(s) => s.encoding(),
            ValueRef::List(l) => l.encoding(),
            ValueRef::Hash(h) => h.encoding(),
            ValueRef::Set(s) => s.encoding(),
            ValueRef::ZSet(z) => z.encoding(),
            ValueRef::Stream(_) => "stream",
        }
    }

    pub fn as_str(&self) -> Option<StrRef<'a>> {
        match *self {
            ValueRef::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&'a List> {
        match *self {
            ValueRef::List(l) => Some(l),
            _ => None,
        }
    }

    pub fn as_hash(&self) -> Option<&'a Hash> {
        match *self {
            ValueRef::Hash(h) => Some(h),
            _ => None,
        }
    }

    pub fn as_set(&self) -> Option<&'a Set> {
        match *self {
            ValueRef::Set(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_zset(&self) -> Option<&'a ZSet> {
        match *self {
            ValueRef::ZSet(z) => Some(z),
            _ => None,
        }
    }

    pub fn as_stream(&self) -> Option<&'a Stream> {
        match *self {
            ValueRef::Stream(s) => Some(s),
            _ => None,
        }
    }

    /// An owned copy.
    pub fn to_value(&self) -> Value {
        match *self {
            ValueRef::Str(s) => Value::Str(s.to_str_value()),
            ValueRef::List(l) => Value::List(Box::new(l.clone())),
            ValueRef::Hash(h) => Value::Hash(Box::new(h.clone())),
            ValueRef::Set(s) => Value::Set(Box::new(s.clone())),
            ValueRef::ZSet(z) => Value::ZSet(Box::new(z.clone())),
            ValueRef::Stream(s) => Value::Stream(Box::new(s.clone())),
        }
    }
}

impl Value {
    /// A borrowed view.
    pub fn view(&self) -> ValueRef<'_> {
        match self {
            Value::Str(s) => ValueRef::Str(s.view()),
            Value::List(l) => ValueRef::List(l),
            Value::Hash(h) => ValueRef::Hash(h),
            Value::Set(s) => ValueRef::Set(s),
            Value::ZSet(z) => ValueRef::ZSet(z),
            Value::Stream(s) => ValueRef::Stream(s),
        }
    }
}

impl<'a> From<StrRef<'a>> for ValueRef<'a> {
    fn from(s: StrRef<'a>) -> Self {
        ValueRef::Str(s)
    }
}

impl<'a> From<&'a Value> for ValueRef<'a> {
    fn from(v: &'a Value) -> Self {
        v.view()
    }
}

impl<'a> From<&'a StrValue> for ValueRef<'a> {
    fn from(s: &'a StrValue) -> Self {
        ValueRef::Str(s.view())
    }
}

fn int_len(n: i64) -> usize {
    let mut len = if n < 0 { 2 } else { 1 };
    let mut v = n.unsigned_abs();
    while v >= 10 {
        v /= 10;
        len += 1;
    }
    len
}

/// Redis's `string2ll`: optional '-', digits, no leading zeros, no '+', no spaces.
pub fn parse_strict_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some(0i64.wrapping_sub(v as i64))
        }
    } else {
        i64::try_from(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<StrValue>(), 24);
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<crate::Entry>(), 8);
        assert_eq!(std::mem::size_of::<Option<crate::Entry>>(), 8);
    }

    #[test]
    fn encodings() {
        assert_eq!(StrRef::encode(b"123").encoding(), "int");
        assert_eq!(StrRef::encode(b"0123").encoding(), "embstr");
        assert_eq!(StrRef::encode(&[b'a'; 44]).encoding(), "embstr");
        assert_eq!(StrRef::encode(&[b'a'; 45]).encoding(), "raw");
        assert_eq!(StrRef::encode(b"-9223372036854775808").encoding(), "int");
        assert_eq!(StrRef::Int(-120).len(), 4);
        assert_eq!(StrRef::Int(0).len(), 1);
        assert_eq!(StrRef::encode(b"0123"), StrRef::Embstr(b"0123"));
        assert_eq!(StrRef::created(b"12"), StrRef::Embstr(b"12"));
        assert_eq!(StrValue::from_bytes(b"7").view(), StrRef::Int(7));
    }
}
