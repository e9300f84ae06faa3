//! The little RESP the generator needs: encode a request, find where a reply ends.

/// What kind of reply ended, as far as hit/miss counting cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A null (`$-1`, `*-1`, `_`): a miss for a read.
    Null,
    /// An error reply.
    Error,
    /// Anything else: a hit for a read.
    Value,
    /// An out-of-band RESP3 push: not the answer to a request.
    Push,
}

/// Appends `*N\r\n$len\r\narg\r\n...`.
pub fn encode<'a>(out: &mut Vec<u8>, args: impl ExactSizeIterator<Item = &'a [u8]>) {
    push_header(out, b'*', args.len());
    for a in args {
        push_header(out, b'$', a.len());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

pub fn push_header(out: &mut Vec<u8>, kind: u8, n: usize) {
    out.push(kind);
    push_decimal(out, n);
    out.extend_from_slice(b"\r\n");
}

fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

fn line(buf: &[u8], from: usize) -> Option<(&[u8], usize)> {
    let rest = buf.get(from..)?;
    let i = rest.windows(2).position(|w| w == b"\r\n")?;
    Some((&rest[..i], from + i + 2))
}

fn int(s: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("bad length in reply: {:?}", String::from_utf8_lossy(s)))
}

/// Parses one reply at `buf[from..]`. `Ok(None)`: incomplete. `Err`: not RESP.
pub fn parse(buf: &[u8], from: usize) -> Result<Option<(usize, Reply)>, String> {
    let Some(&kind) = buf.get(from) else {
        return Ok(None);
    };
    let Some((head, mut pos)) = line(buf, from + 1) else {
        return Ok(None);
    };
    let reply = match kind {
        b'+' | b':' | b',' | b'#' | b'(' => Reply::Value,
        b'-' => Reply::Error,
        b'_' => Reply::Null,
        b'$' | b'=' | b'!' => {
            let n = int(head)?;
            if n < 0 {
                return Ok(Some((pos, Reply::Null)));
            }
            let end = pos + n as usize + 2;
            if buf.len() < end {
                return Ok(None);
            }
            return Ok(Some((
                end,
                if kind == b'!' {
                    Reply::Error
                } else {
                    Reply::Value
                },
            )));
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = int(head)?;
            if n < 0 {
                return Ok(Some((pos, Reply::Null)));
            }
            let items = if kind == b'%' || kind == b'|' {
                n * 2
            } else {
                n
            };
            for _ in 0..items {
                match parse(buf, pos)? {
                    Some((next, _)) => pos = next,
                    None => return Ok(None),
                }
            }
            match kind {
                b'>' => Reply::Push,
                // An attribute map comes before the reply it describes.
                b'|' => return parse(buf, pos),
                _ => Reply::Value,
            }
        }
        other => {
            return Err(format!(
                "unexpected byte {other:#04x} at the start of a reply"
            ))
        }
    };
    Ok(Some((pos, reply)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_a_request() {
        let mut out = Vec::new();
        encode(&mut out, [&b"SET"[..], b"k", b""].into_iter());
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    }

    #[test]
    fn finds_reply_ends() {
        let cases: &[(&[u8], Reply)] = &[
            (b"+OK\r\n", Reply::Value),
            (b"-ERR x\r\n", Reply::Error),
            (b":12\r\n", Reply::Value),
            (b"$-1\r\n", Reply::Null),
            (b"_\r\n", Reply::Null),
            (b"$3\r\na\r\n\r\n", Reply::Value),
            (b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", Reply::Value),
            (b"%1\r\n+a\r\n,1.5\r\n", Reply::Value),
            (b">2\r\n+a\r\n+b\r\n", Reply::Push),
            (b"|1\r\n+k\r\n+v\r\n$-1\r\n", Reply::Null),
            (b"*-1\r\n", Reply::Null),
        ];
        for (wire, kind) in cases {
            assert_eq!(parse(wire, 0), Ok(Some((wire.len(), *kind))), "{wire:?}");
            for cut in 0..wire.len() {
                assert_eq!(parse(&wire[..cut], 0), Ok(None), "{wire:?} cut at {cut}");
            }
        }
        assert!(parse(b"?x\r\n", 0).is_err());
        assert!(parse(b"$x\r\n", 0).is_err());
    }

    #[test]
    fn parses_from_an_offset() {
        let wire = b"+OK\r\n$2\r\nhi\r\n";
        assert_eq!(parse(wire, 0), Ok(Some((5, Reply::Value))));
        assert_eq!(parse(wire, 5), Ok(Some((wire.len(), Reply::Value))));
    }
}
