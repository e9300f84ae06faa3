//! Property tests for the reply encoders: any sequence of replies `ReplyBuf` writes is
//! well-formed RESP2 or RESP3, read back by a strict reply parser written here (not the
//! crate's code), and decodes to what each encoder promises for that protocol.

use proptest::prelude::*;
use resp::{Proto, ReplyBuf};

/// A reply as a handler would write it.
#[derive(Clone, Debug)]
enum R {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    BulkInt(i64),
    Null,
    NullArray,
    Bool(bool),
    Double(f64),
    Verbatim(Vec<u8>, String),
    BigNumber(String),
    BulkArray(Vec<Vec<u8>>),
    Array(Vec<R>),
    Map(Vec<(R, R)>),
    Set(Vec<R>),
    Push(Vec<R>),
}

/// A reply as read off the wire.
#[derive(Clone, Debug, PartialEq)]
enum V {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Vec<u8>),
    NilBulk,
    NilArray,
    Null,
    Bool(bool),
    Double(f64),
    Verbatim(Vec<u8>, Vec<u8>),
    BigNumber(Vec<u8>),
    Array(Vec<V>),
    Map(Vec<(V, V)>),
    Set(Vec<V>),
    Push(Vec<V>),
}

fn write(r: &R, out: &mut ReplyBuf) {
    match r {
        R::Simple(s) => out.simple(s),
        R::Error(s) => out.error(s),
        R::Int(n) => out.int(*n),
        R::Bulk(b) => out.bulk(b),
        R::BulkInt(n) => out.bulk_int(*n),
        R::Null => out.null(),
        R::NullArray => out.null_array(),
        R::Bool(b) => out.bool(*b),
        R::Double(d) => out.double(*d),
        R::Verbatim(b, ext) => out.verbatim(b, ext),
        R::BigNumber(d) => out.big_number(d),
        R::BulkArray(items) => out.bulk_array(items.iter()),
        R::Array(items) => {
            out.array(items.len());
            items.iter().for_each(|i| write(i, out));
        }
        R::Map(pairs) => {
            out.map(pairs.len());
            for (k, v) in pairs {
                write(k, out);
                write(v, out);
            }
        }
        R::Set(items) => {
            out.set(items.len());
            items.iter().for_each(|i| write(i, out));
        }
        R::Push(items) => {
            out.push(items.len());
            items.iter().for_each(|i| write(i, out));
        }
    }
}

/// The text a double is sent as (`%.17g`, `inf`, `-inf`).
fn double_text(d: f64) -> Vec<u8> {
    if d.is_infinite() {
        return if d > 0.0 {
            b"inf".to_vec()
        } else {
            b"-inf".to_vec()
        };
    }
    resp::fmt::fmt_g17(d).into_bytes()
}

/// What the client must read for `r` in protocol `p`.
fn expected(r: &R, p: Proto) -> V {
    let resp3 = p == Proto::Resp3;
    let all = |items: &[R]| items.iter().map(|i| expected(i, p)).collect::<Vec<_>>();
    match r {
        R::Simple(s) => V::Simple(s.clone().into_bytes()),
        R::Error(s) => {
            let first = s.split(' ').next().unwrap_or("");
            let coded = !first.is_empty() && first.bytes().all(|b| b.is_ascii_uppercase());
            let body: Vec<u8> = s
                .bytes()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b })
                .collect();
            V::Error(if coded {
                body
            } else {
                [b"ERR ".to_vec(), body].concat()
            })
        }
        R::Int(n) => V::Int(*n),
        R::Bulk(b) => V::Bulk(b.clone()),
        R::BulkInt(n) => V::Bulk(n.to_string().into_bytes()),
        R::Null if resp3 => V::Null,
        R::Null => V::NilBulk,
        R::NullArray if resp3 => V::Null,
        R::NullArray => V::NilArray,
        R::Bool(b) if resp3 => V::Bool(*b),
        R::Bool(b) => V::Int(*b as i64),
        R::Double(d) if resp3 => V::Double(*d),
        R::Double(d) => V::Bulk(double_text(*d)),
        R::Verbatim(b, ext) if resp3 => {
            let mut e = ext.as_bytes()[..ext.len().min(3)].to_vec();
            e.resize(3, b' ');
            V::Verbatim(e, b.clone())
        }
        R::Verbatim(b, _) => V::Bulk(b.clone()),
        R::BigNumber(d) if resp3 => V::BigNumber(d.clone().into_bytes()),
        R::BigNumber(d) => V::Bulk(d.clone().into_bytes()),
        R::BulkArray(items) => V::Array(items.iter().map(|b| V::Bulk(b.clone())).collect()),
        R::Array(items) => V::Array(all(items)),
        R::Map(pairs) if resp3 => V::Map(
            pairs
                .iter()
                .map(|(k, v)| (expected(k, p), expected(v, p)))
                .collect(),
        ),
        R::Map(pairs) => V::Array(
            pairs
                .iter()
                .flat_map(|(k, v)| [expected(k, p), expected(v, p)])
                .collect(),
        ),
        R::Set(items) if resp3 => V::Set(all(items)),
        R::Push(items) if resp3 => V::Push(all(items)),
        R::Set(items) | R::Push(items) => V::Array(all(items)),
    }
}

/// A strict RESP reader: every header is well-formed, every length exact, every line ends
/// in CRLF, and RESP3-only types appear only when `p` is RESP3.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    p: Proto,
}

impl Reader<'_> {
    fn line(&mut self) -> Result<&[u8], String> {
        let rest = &self.buf[self.pos..];
        let cr = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("unterminated line")?;
        let line = &rest[..cr];
        if line.iter().any(|&b| b == b'\r' || b == b'\n') {
            return Err(format!("CR or LF inside a line: {line:?}"));
        }
        self.pos += cr + 2;
        Ok(line)
    }

    fn int(&mut self) -> Result<i64, String> {
        let l = self.line()?;
        let s = std::str::from_utf8(l).map_err(|e| e.to_string())?;
        let n: i64 = s.parse().map_err(|_| format!("bad integer {s:?}"))?;
        if n.to_string() != s {
            return Err(format!("non-canonical integer {s:?}"));
        }
        Ok(n)
    }

    fn len(&mut self) -> Result<usize, String> {
        let n = self.int()?;
        usize::try_from(n).map_err(|_| format!("negative length {n}"))
    }

    fn blob(&mut self, n: usize) -> Result<Vec<u8>, String> {
        let end = self.pos + n;
        if self.buf.len() < end + 2 || &self.buf[end..end + 2] != b"\r\n" {
            return Err("blob not followed by CRLF".into());
        }
        let b = self.buf[self.pos..end].to_vec();
        self.pos = end + 2;
        Ok(b)
    }

    fn items(&mut self, n: usize) -> Result<Vec<V>, String> {
        (0..n).map(|_| self.value()).collect()
    }

    fn value(&mut self) -> Result<V, String> {
        let t = *self.buf.get(self.pos).ok_or("missing reply")?;
        self.pos += 1;
        let resp3 = self.p == Proto::Resp3;
        if !resp3 && !b"+-:$*".contains(&t) {
            return Err(format!("RESP3 type {:?} in a RESP2 reply", t as char));
        }
        Ok(match t {
            b'+' => V::Simple(self.line()?.to_vec()),
            b'-' => {
                let l = self.line()?.to_vec();
                let code_len = l.iter().position(|&b| b == b' ').unwrap_or(l.len());
                if code_len == 0 || !l[..code_len].iter().all(|b| b.is_ascii_uppercase()) {
                    return Err(format!("error without a code: {l:?}"));
                }
                V::Error(l)
            }
            b':' => V::Int(self.int()?),
            b'$' => match self.int()? {
                -1 if !resp3 => V::NilBulk,
                n => {
                    let n = usize::try_from(n).map_err(|_| format!("bad bulk length {n}"))?;
                    V::Bulk(self.blob(n)?)
                }
            },
            b'*' => match self.int()? {
                -1 if !resp3 => V::NilArray,
                n => {
                    let n = usize::try_from(n).map_err(|_| format!("bad array length {n}"))?;
                    V::Array(self.items(n)?)
                }
            },
            b'_' => match self.line()? {
                b"" => V::Null,
                l => return Err(format!("null with a body {l:?}")),
            },
            b'#' => match self.line()? {
                b"t" => V::Bool(true),
                b"f" => V::Bool(false),
                l => return Err(format!("bad boolean {l:?}")),
            },
            b',' => {
                let l = self.line()?;
                let s = std::str::from_utf8(l).map_err(|e| e.to_string())?;
                let d: f64 = s.parse().map_err(|_| format!("bad double {s:?}"))?;
                V::Double(d)
            }
            b'(' => {
                let l = self.line()?.to_vec();
                let digits = l.strip_prefix(b"-").unwrap_or(&l);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return Err(format!("bad big number {l:?}"));
                }
                V::BigNumber(l)
            }
            b'=' => {
                let n = self.len()?;
                let b = self.blob(n)?;
                if b.len() < 4 || b[3] != b':' {
                    return Err(format!("verbatim without a format: {b:?}"));
                }
                V::Verbatim(b[..3].to_vec(), b[4..].to_vec())
            }
            b'%' => {
                let n = self.len()?;
                let mut pairs = Vec::with_capacity(n);
                for _ in 0..n {
                    pairs.push((self.value()?, self.value()?));
                }
                V::Map(pairs)
            }
            b'~' => {
                let n = self.len()?;
                V::Set(self.items(n)?)
            }
            b'>' => {
                let n = self.len()?;
                V::Push(self.items(n)?)
            }
            other => return Err(format!("unknown type byte {other:?}")),
        })
    }
}

/// Read exactly `count` replies that fill `buf`.
fn read_all(buf: &[u8], p: Proto, count: usize) -> Result<Vec<V>, String> {
    let mut r = Reader { buf, pos: 0, p };
    let out = r.items(count)?;
    if r.pos != buf.len() {
        return Err(format!("{} trailing bytes", buf.len() - r.pos));
    }
    Ok(out)
}

/// Text without CR or LF (status lines cannot carry them; handlers never send them).
fn line_text() -> impl Strategy<Value = String> {
    "[ -~]{0,20}"
}

fn leaf() -> impl Strategy<Value = R> {
    prop_oneof![
        line_text().prop_map(R::Simple),
        prop_oneof![
            "[A-Z]{1,10} [ -~\r\n]{0,20}",
            "[a-z ][ -~\r\n]{0,20}",
            "[ -~\r\n]{0,20}"
        ]
        .prop_map(R::Error),
        any::<i64>().prop_map(R::Int),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(R::Bulk),
        any::<i64>().prop_map(R::BulkInt),
        Just(R::Null),
        Just(R::NullArray),
        any::<bool>().prop_map(R::Bool),
        prop_oneof![
            any::<f64>().prop_filter("NaN", |d| !d.is_nan()),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(0.0),
            Just(-0.0),
            Just(1e17),
            Just(0.1),
            -1e6f64..1e6,
        ]
        .prop_map(R::Double),
        (prop::collection::vec(any::<u8>(), 0..40), "[a-z]{0,5}")
            .prop_map(|(b, e)| R::Verbatim(b, e)),
        "-?[1-9][0-9]{0,40}".prop_map(R::BigNumber),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..10), 0..5)
            .prop_map(R::BulkArray),
    ]
}

fn reply() -> impl Strategy<Value = R> {
    leaf().prop_recursive(3, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(R::Array),
            prop::collection::vec((inner.clone(), inner.clone()), 0..4).prop_map(R::Map),
            prop::collection::vec(inner.clone(), 0..6).prop_map(R::Set),
            prop::collection::vec(inner, 0..4).prop_map(R::Push),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn replies_are_wellformed(replies in prop::collection::vec(reply(), 1..8)) {
        for p in [Proto::Resp2, Proto::Resp3] {
            let mut out = ReplyBuf::new(p);
            replies.iter().for_each(|r| write(r, &mut out));
            let got = read_all(&out.out, p, replies.len())
                .map_err(|e| TestCaseError::fail(format!("{p:?}: {e}: {:?}",
                    String::from_utf8_lossy(&out.out))))?;
            let want: Vec<V> = replies.iter().map(|r| expected(r, p)).collect();
            prop_assert_eq!(got, want, "{:?}", p);
        }
    }
}

/// The reader is strict: it refuses what is not RESP, so the property above means something.
#[test]
fn reader_rejects_malformed() {
    for (bad, p) in [
        (&b"$3\r\nab\r\n"[..], Proto::Resp2),
        (b"*2\r\n:1\r\n", Proto::Resp2),
        (b"_\r\n", Proto::Resp2),
        (b":01\r\n", Proto::Resp2),
        (b"-oops\r\n", Proto::Resp2),
        (b"#x\r\n", Proto::Resp3),
        (b"=3\r\nabc\r\n", Proto::Resp3),
        (b"+a\rb\r\n", Proto::Resp2),
        (b":1\r\n:2\r\n", Proto::Resp2),
    ] {
        assert!(
            read_all(bad, p, 1).is_err(),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}
