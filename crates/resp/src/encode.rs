//! Reply encoders for RESP2 and RESP3.
//!
//! [`ReplyBuf`] appends encoded replies to one output buffer; the connection writes the whole
//! buffer once per event-loop iteration. Each method emits what Redis 7.0 emits for the
//! client's protocol version (e.g. a null is `$-1` in RESP2 and `_` in RESP3, a map is a flat
//! array in RESP2).

use crate::fmt::fmt_g17;

/// Protocol version negotiated with HELLO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Proto {
    #[default]
    Resp2,
    Resp3,
}

/// An output buffer plus the protocol its replies are encoded in.
#[derive(Debug, Default)]
pub struct ReplyBuf {
    pub out: Vec<u8>,
    pub proto: Proto,
}

impl ReplyBuf {
    pub fn new(proto: Proto) -> Self {
        ReplyBuf {
            out: Vec::new(),
            proto,
        }
    }

    pub fn resp3(&self) -> bool {
        self.proto == Proto::Resp3
    }

    /// Raw protocol bytes, already encoded.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    fn line(&mut self, prefix: u8, n: i64) {
        let mut digits = itoa::Buffer::new();
        self.out.push(prefix);
        self.out.extend_from_slice(digits.format(n).as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// `+OK`-style status line.
    pub fn simple(&mut self, s: &str) {
        self.out.push(b'+');
        self.out.extend_from_slice(s.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn ok(&mut self) {
        self.out.extend_from_slice(b"+OK\r\n");
    }

    /// An error line. `msg` carries its code (`ERR ...`, `WRONGTYPE ...`); a message without
    /// one gets `ERR ` in front, as Redis's addReplyError does. CR and LF become spaces.
    pub fn error(&mut self, msg: &str) {
        self.error_bytes(msg.as_bytes());
    }

    /// [`ReplyBuf::error`] for a message that quotes a client's bytes: they reach the wire
    /// unchanged (Redis builds such texts with `%s`, not as UTF-8), except CR and LF, which
    /// become spaces as Redis's addReplyErrorFormat and rejectCommandFormat make them.
    pub fn error_bytes(&mut self, msg: &[u8]) {
        self.out.push(b'-');
        let first = msg.split(|&b| b == b' ').next().unwrap_or(b"");
        let has_code = !first.is_empty() && first.iter().all(u8::is_ascii_uppercase);
        if !has_code {
            self.out.extend_from_slice(b"ERR ");
        }
        for &b in msg {
            self.out
                .push(if b == b'\r' || b == b'\n' { b' ' } else { b });
        }
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn int(&mut self, n: i64) {
        self.line(b':', n);
    }

    pub fn bulk(&mut self, s: &[u8]) {
        self.line(b'$', s.len() as i64);
        self.out.extend_from_slice(s);
        self.out.extend_from_slice(b"\r\n");
    }

    /// Bulk string of an integer's decimal text.
    pub fn bulk_int(&mut self, n: i64) {
        let mut digits = itoa::Buffer::new();
        self.bulk(digits.format(n).as_bytes());
    }

    pub fn null(&mut self) {
        self.out.extend_from_slice(match self.proto {
            Proto::Resp2 => b"$-1\r\n",
            Proto::Resp3 => b"_\r\n",
        });
    }

    pub fn null_array(&mut self) {
        self.out.extend_from_slice(match self.proto {
            Proto::Resp2 => b"*-1\r\n",
            Proto::Resp3 => b"_\r\n",
        });
    }

    pub fn array(&mut self, n: usize) {
        self.line(b'*', n as i64);
    }

    pub fn map(&mut self, n: usize) {
        match self.proto {
            Proto::Resp2 => self.line(b'*', 2 * n as i64),
            Proto::Resp3 => self.line(b'%', n as i64),
        }
    }

    pub fn set(&mut self, n: usize) {
        match self.proto {
            Proto::Resp2 => self.line(b'*', n as i64),
            Proto::Resp3 => self.line(b'~', n as i64),
        }
    }

    /// Out-of-band push (RESP3 `>`); RESP2 clients see a plain array.
    pub fn push(&mut self, n: usize) {
        match self.proto {
            Proto::Resp2 => self.line(b'*', n as i64),
            Proto::Resp3 => self.line(b'>', n as i64),
        }
    }

    pub fn bool(&mut self, b: bool) {
        self.out.extend_from_slice(match (self.proto, b) {
            (Proto::Resp2, true) => b":1\r\n",
            (Proto::Resp2, false) => b":0\r\n",
            (Proto::Resp3, true) => b"#t\r\n",
            (Proto::Resp3, false) => b"#f\r\n",
        });
    }

    /// A double as Redis's addReplyDouble sends it (`%.17g`).
    pub fn double(&mut self, d: f64) {
        let text = if d.is_infinite() {
            if d > 0.0 { "inf" } else { "-inf" }.to_string()
        } else {
            fmt_g17(d)
        };
        match self.proto {
            Proto::Resp2 => self.bulk(text.as_bytes()),
            Proto::Resp3 => {
                self.out.push(b',');
                self.out.extend_from_slice(text.as_bytes());
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A pre-formatted double: a bulk string in RESP2, `,` in RESP3.
    pub fn double_text(&mut self, text: &[u8]) {
        match self.proto {
            Proto::Resp2 => self.bulk(text),
            Proto::Resp3 => {
                self.out.push(b',');
                self.out.extend_from_slice(text);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Verbatim string (`=len\r\ntxt:...`) in RESP3, a bulk string in RESP2.
    pub fn verbatim(&mut self, s: &[u8], ext: &str) {
        match self.proto {
            Proto::Resp2 => self.bulk(s),
            Proto::Resp3 => {
                self.line(b'=', s.len() as i64 + 4);
                let mut e = [b' '; 3];
                for (i, b) in ext.bytes().take(3).enumerate() {
                    e[i] = b;
                }
                self.out.extend_from_slice(&e);
                self.out.push(b':');
                self.out.extend_from_slice(s);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    pub fn big_number(&mut self, digits: &str) {
        match self.proto {
            Proto::Resp2 => self.bulk(digits.as_bytes()),
            Proto::Resp3 => {
                self.out.push(b'(');
                self.out.extend_from_slice(digits.as_bytes());
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Array of bulk strings.
    pub fn bulk_array<I, T>(&mut self, items: I)
    where
        I: ExactSizeIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        self.array(items.len());
        for it in items {
            self.bulk(it.as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_and_maps() {
        let mut r = ReplyBuf::new(Proto::Resp2);
        r.null();
        r.map(2);
        r.double(1.5);
        assert_eq!(r.out, b"$-1\r\n*4\r\n$3\r\n1.5\r\n");
        let mut r = ReplyBuf::new(Proto::Resp3);
        r.null();
        r.map(2);
        r.double(1.5);
        assert_eq!(r.out, b"_\r\n%2\r\n,1.5\r\n");
    }

    #[test]
    fn errors_get_a_code() {
        let mut r = ReplyBuf::default();
        r.error("WRONGTYPE x");
        r.error("wrong number");
        r.error("ERR a\r\nb");
        assert_eq!(r.out, b"-WRONGTYPE x\r\n-ERR wrong number\r\n-ERR a  b\r\n");
    }

    #[test]
    fn error_bytes_keep_the_clients_bytes() {
        let mut r = ReplyBuf::default();
        r.error_bytes(b"ERR bad '\xff\xc3\x80\x00'");
        r.error_bytes(b"NOGROUP a\rb\n");
        assert_eq!(
            r.out,
            b"-ERR bad '\xff\xc3\x80\x00'\r\n-NOGROUP a b \r\n".to_vec()
        );
    }
}
