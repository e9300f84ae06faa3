//! Values and their encodings.

/// Longest string Redis stores as `embstr` (OBJ_ENCODING_EMBSTR_SIZE_LIMIT).
pub const EMBSTR_SIZE_LIMIT: usize = 44;

/// A stored value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(StrValue),
}

/// A string value, in the encoding Redis would pick for it. 24 bytes: the three variants
/// share the space of one `Vec` (see the size test below).
#[derive(Clone, Debug, PartialEq)]
pub enum StrValue {
    /// A decimal integer that round-trips (`OBJECT ENCODING` says `int`).
    Int(i64),
    /// Bytes written whole and at most 44 long (`embstr`), exactly sized.
    Embstr(Box<[u8]>),
    /// Bytes longer than 44, or modified in place by APPEND/SETRANGE/SETBIT (`raw`); a
    /// `Vec` so appends are amortized.
    Raw(Vec<u8>),
}

impl StrValue {
    /// Encode freshly written bytes the way SET does (tryObjectEncoding).
    pub fn from_bytes(b: &[u8]) -> StrValue {
        if b.len() <= 20 {
            if let Some(n) = parse_strict_i64(b) {
                return StrValue::Int(n);
            }
        }
        Self::created(b.to_vec())
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

    /// The bytes of a non-integer string (`None` for `int`).
    pub fn as_slice(&self) -> Option<&[u8]> {
        match self {
            StrValue::Int(_) => None,
            StrValue::Embstr(b) => Some(b),
            StrValue::Raw(v) => Some(v),
        }
    }

    /// Turn the value into `raw` (if it is not already) and give its bytes for in-place
    /// modification.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        if !matches!(self, StrValue::Raw(_)) {
            let data = std::mem::replace(self, StrValue::Int(0)).into_vec();
            *self = StrValue::Raw(data);
        }
        match self {
            StrValue::Raw(v) => v,
            _ => unreachable!("made raw above"),
        }
    }

    /// The string's bytes (integers rendered in decimal).
    pub fn to_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            StrValue::Int(n) => std::borrow::Cow::Owned(n.to_string().into_bytes()),
            StrValue::Embstr(b) => std::borrow::Cow::Borrowed(b),
            StrValue::Raw(v) => std::borrow::Cow::Borrowed(v),
        }
    }

    /// Take the bytes out for in-place modification.
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            StrValue::Int(n) => n.to_string().into_bytes(),
            StrValue::Embstr(b) => b.into_vec(),
            StrValue::Raw(v) => v,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            StrValue::Int(n) => int_len(*n),
            StrValue::Embstr(b) => b.len(),
            StrValue::Raw(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            StrValue::Int(_) => "int",
            StrValue::Embstr(_) => "embstr",
            StrValue::Raw(_) => "raw",
        }
    }

    /// Heap bytes this value holds (for memory accounting estimates).
    pub fn heap_size(&self) -> usize {
        match self {
            StrValue::Int(_) => 0,
            StrValue::Embstr(b) => b.len(),
            StrValue::Raw(v) => v.capacity(),
        }
    }
}

impl Value {
    /// The `TYPE` name.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
        }
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
        }
    }

    pub fn as_str(&self) -> Option<&StrValue> {
        match self {
            Value::Str(s) => Some(s),
        }
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
        assert!(std::mem::size_of::<crate::Entry>() <= 64);
    }

    #[test]
    fn encodings() {
        assert_eq!(StrValue::from_bytes(b"123").encoding(), "int");
        assert_eq!(StrValue::from_bytes(b"0123").encoding(), "embstr");
        assert_eq!(StrValue::from_bytes(&[b'a'; 44]).encoding(), "embstr");
        assert_eq!(StrValue::from_bytes(&[b'a'; 45]).encoding(), "raw");
        assert_eq!(
            StrValue::from_bytes(b"-9223372036854775808").encoding(),
            "int"
        );
        assert_eq!(StrValue::Int(-120).len(), 4);
        assert_eq!(StrValue::Int(0).len(), 1);
    }
}
