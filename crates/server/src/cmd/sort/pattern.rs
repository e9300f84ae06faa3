//! SORT's BY and GET patterns (sort.c's lookupKeyByPattern): `#` is the element itself;
//! otherwise the first `*` (of the pattern as a C string) is replaced by the element to
//! name a key, whose string value is the result, or, with `->field` after the `*`, that
//! field of the hash at the key. Anything else (no `*`, a missing key, another type, a
//! missing field) gives nothing.

use super::score::c_str;
use engine::coll::listpack::Item;
use engine::{Locked, StrRef, ValueRef};

/// A pattern, split once for all the elements it is applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern<'a> {
    /// `#`: the element.
    Element,
    /// No `*`: never a value.
    Constant,
    /// `prefix*postfix`, or `prefix*postfix->field`.
    Key {
        prefix: &'a [u8],
        postfix: &'a [u8],
        field: Option<&'a [u8]>,
    },
}

/// What a pattern found: a string (or hash field) stored as bytes or as an integer.
#[derive(Clone, Copy, Debug)]
pub enum Found<'a> {
    Bytes(&'a [u8]),
    Int(i64),
}

impl<'a> Pattern<'a> {
    pub fn parse(p: &'a [u8]) -> Pattern<'a> {
        // Redis compares the sds's first two bytes with "#\0" (its terminator counts).
        if p.first() == Some(&b'#') && p.get(1).is_none_or(|&b| b == 0) {
            return Pattern::Element;
        }
        let c = c_str(p);
        let Some(star) = c.iter().position(|&b| b == b'*') else {
            return Pattern::Constant;
        };
        // strstr(star+1, "->") within the C string, with a field that does not start
        // with its end; the field itself runs to the end of the whole argument.
        let arrow = c[star + 1..]
            .windows(2)
            .position(|w| w == b"->")
            .map(|i| star + 1 + i)
            .filter(|&f| f + 2 < c.len());
        let (postfix, field) = match arrow {
            Some(f) => (&p[star + 1..f], Some(&p[f + 2..])),
            None => (&p[star + 1..], None),
        };
        Pattern::Key {
            prefix: &p[..star],
            postfix,
            field,
        }
    }

    /// Does applying it look keys up?
    pub fn reads_keys(&self) -> bool {
        matches!(self, Pattern::Key { .. })
    }

    /// Apply the pattern to `elem` (a read lookup of the key it names, as Redis's
    /// lookupKeyRead: hit or miss counted, `keymiss` announced) and give `f` what it found.
    /// `name` is scratch space for the key's name.
    pub fn apply<R>(
        &self,
        keys: &mut Locked,
        elem: &[u8],
        name: &mut Vec<u8>,
        f: impl FnOnce(Option<Found<'_>>) -> R,
    ) -> R {
        let (prefix, postfix, field) = match *self {
            Pattern::Element => return f(Some(Found::Bytes(elem))),
            Pattern::Constant => return f(None),
            Pattern::Key {
                prefix,
                postfix,
                field,
            } => (prefix, postfix, field),
        };
        name.clear();
        name.extend_from_slice(prefix);
        name.extend_from_slice(elem);
        name.extend_from_slice(postfix);
        let found = match (keys.get(name).map(|e| e.value()), field) {
            (Some(ValueRef::Str(s)), None) => Some(match s {
                StrRef::Int(n) => Found::Int(n),
                StrRef::Embstr(b) | StrRef::Raw(b) => Found::Bytes(b),
            }),
            (Some(ValueRef::Hash(h)), Some(field)) => h.get(field).map(|it| match it {
                Item::Int(n) => Found::Int(n),
                Item::Str(b) => Found::Bytes(b),
            }),
            _ => None,
        };
        f(found)
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern::{self, *};

    fn key<'a>(prefix: &'a [u8], postfix: &'a [u8], field: Option<&'a [u8]>) -> Pattern<'a> {
        Key {
            prefix,
            postfix,
            field,
        }
    }

    #[test]
    fn splits_as_lookup_key_by_pattern() {
        assert_eq!(Pattern::parse(b"#"), Element);
        assert_eq!(Pattern::parse(b"#\0x*"), Element);
        assert_eq!(Pattern::parse(b"#*"), key(b"#", b"", None));
        assert_eq!(Pattern::parse(b"nostar"), Constant);
        assert_eq!(Pattern::parse(b"a\0*"), Constant);
        assert_eq!(Pattern::parse(b"w_*"), key(b"w_", b"", None));
        assert_eq!(Pattern::parse(b"w_*_x*"), key(b"w_", b"_x*", None));
        assert_eq!(Pattern::parse(b"h_*->f"), key(b"h_", b"", Some(b"f")));
        assert_eq!(Pattern::parse(b"h_*->"), key(b"h_", b"->", None));
        assert_eq!(Pattern::parse(b"h->_*"), key(b"h->_", b"", None));
        assert_eq!(
            Pattern::parse(b"h_*x->f->g"),
            key(b"h_", b"x", Some(b"f->g"))
        );
        assert_eq!(Pattern::parse(b"h_*->\0f"), key(b"h_", b"->\0f", None));
        assert_eq!(Pattern::parse(b"h_*->f\0g"), key(b"h_", b"", Some(b"f\0g")));
    }
}
