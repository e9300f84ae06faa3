//! Property tests for the request parser: arbitrary argument vectors, encoded as RESP
//! multibulk requests or as inline lines (where an inline line can carry them), parse back
//! to the same arguments, also when the byte stream arrives in arbitrary pieces and is
//! parsed incrementally the way a connection does.

use proptest::prelude::*;
use proptest::sample::Index;
use resp::{Limits, Parsed, RequestParser};

type Command = Vec<Vec<u8>>;

/// `*N\r\n$len\r\narg\r\n...`
fn multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// How one argument is written on an inline line.
#[derive(Clone, Copy, Debug)]
enum Quoting {
    Bare,
    Double,
    Single,
}

fn bare_ok(a: &[u8]) -> bool {
    !a.is_empty()
        && a.iter()
            .all(|&b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\'')
}

fn single_ok(a: &[u8]) -> bool {
    a.iter().all(|&b| (0x20..=0x7e).contains(&b) && b != b'\\')
}

/// Write `a` as requested, falling back to double quotes (which can carry any byte).
fn inline_arg(a: &[u8], q: Quoting, out: &mut Vec<u8>) {
    match q {
        Quoting::Bare if bare_ok(a) => out.extend_from_slice(a),
        Quoting::Single if single_ok(a) => {
            out.push(b'\'');
            for &b in a {
                if b == b'\'' {
                    out.push(b'\\');
                }
                out.push(b);
            }
            out.push(b'\'');
        }
        _ => {
            out.push(b'"');
            for &b in a {
                match b {
                    b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
                    0x20..=0x7e => out.push(b),
                    _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
                }
            }
            out.push(b'"');
        }
    }
}

/// An inline line for `args`, or None when it cannot be one (no arguments, or a first
/// argument that would start with `*` and read as multibulk).
fn inline(args: &[Vec<u8>], quoting: &[Quoting], seps: &[&[u8]], crlf: bool) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(seps[i % seps.len()]);
        }
        inline_arg(a, quoting[i % quoting.len()], &mut out);
    }
    if out.first().is_none_or(|&b| b == b'*') {
        return None;
    }
    out.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
    Some(out)
}

/// Feed `stream` to one parser in pieces cut at `cuts`, as a connection would: append what
/// was read, parse every complete command, drop the consumed bytes. Returns the non-empty
/// commands and the bytes left unparsed.
fn parse_stream(stream: &[u8], cuts: &[usize], limits: &Limits) -> (Vec<Command>, usize) {
    let mut bounds: Vec<usize> = cuts.iter().map(|&c| c.min(stream.len())).collect();
    bounds.push(stream.len());
    bounds.sort_unstable();
    let mut parser = RequestParser::new();
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    let mut out = Vec::new();
    let mut fed = 0;
    for end in bounds {
        buf.extend_from_slice(&stream[fed..end]);
        fed = end;
        loop {
            match parser
                .parse(&buf, limits, &mut ranges)
                .expect("valid input")
            {
                Parsed::Incomplete => break,
                Parsed::Command { consumed } => {
                    assert!(consumed > 0 && consumed <= buf.len());
                    if !ranges.is_empty() {
                        out.push(ranges.iter().map(|r| buf[r.clone()].to_vec()).collect());
                    }
                    buf.drain(..consumed);
                }
                Parsed::Owned { args, consumed } => {
                    assert!(consumed > 0 && consumed <= buf.len());
                    if !args.is_empty() {
                        out.push(args);
                    }
                    buf.drain(..consumed);
                }
            }
        }
    }
    (out, buf.len())
}

fn arg() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => prop::collection::vec(any::<u8>(), 0..24),
        2 => "[a-zA-Z0-9:_-]{1,12}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..3000),
    ]
}

fn args(min: usize) -> impl Strategy<Value = Command> {
    prop::collection::vec(arg(), min..8)
}

fn quoting() -> impl Strategy<Value = Vec<Quoting>> {
    prop::collection::vec(
        prop_oneof![
            Just(Quoting::Bare),
            Just(Quoting::Double),
            Just(Quoting::Single)
        ],
        1..4,
    )
}

fn seps() -> impl Strategy<Value = Vec<&'static [u8]>> {
    prop::collection::vec(
        prop_oneof![
            Just(&b" "[..]),
            Just(&b"  "[..]),
            Just(&b"\t"[..]),
            Just(&b" \t "[..])
        ],
        1..3,
    )
}

fn cuts(max: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(any::<Index>(), 0..24)
        .prop_map(move |ix| ix.iter().map(|i| i.index(max + 1)).collect())
}

/// One command of a pipeline and how to write it.
#[derive(Clone, Debug)]
struct Req {
    args: Command,
    as_inline: bool,
    quoting: Vec<Quoting>,
    seps: Vec<&'static [u8]>,
    crlf: bool,
}

impl Req {
    fn bytes(&self) -> Vec<u8> {
        if self.as_inline {
            if let Some(line) = inline(&self.args, &self.quoting, &self.seps, self.crlf) {
                return line;
            }
        }
        multibulk(&self.args)
    }
}

fn req() -> impl Strategy<Value = Req> {
    (args(0), any::<bool>(), quoting(), seps(), any::<bool>()).prop_map(
        |(args, as_inline, quoting, seps, crlf)| Req {
            args,
            as_inline,
            quoting,
            seps,
            crlf,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// One multibulk request, whole: the same arguments, every byte consumed.
    #[test]
    fn multibulk_roundtrip(args in args(1)) {
        let wire = multibulk(&args);
        let mut ranges = Vec::new();
        let got = RequestParser::new().parse(&wire, &Limits::default(), &mut ranges).unwrap();
        prop_assert_eq!(got, Parsed::Command { consumed: wire.len() });
        let back: Command = ranges.iter().map(|r| wire[r.clone()].to_vec()).collect();
        prop_assert_eq!(back, args);
    }

    /// Every proper prefix of a multibulk request is incomplete, never an error.
    #[test]
    fn multibulk_prefixes_incomplete(args in args(1), cut in any::<Index>()) {
        let wire = multibulk(&args);
        let end = cut.index(wire.len());
        let mut ranges = Vec::new();
        let got = RequestParser::new().parse(&wire[..end], &Limits::default(), &mut ranges);
        prop_assert_eq!(got, Ok(Parsed::Incomplete));
    }

    /// One inline line: bare words, double quotes with escapes, single quotes.
    #[test]
    fn inline_roundtrip(args in args(1), q in quoting(), s in seps(), crlf in any::<bool>()) {
        let Some(wire) = inline(&args, &q, &s, crlf) else { return Ok(()) };
        let (cmds, left) = parse_stream(&wire, &[], &Limits::default());
        prop_assert_eq!(left, 0);
        prop_assert_eq!(cmds, vec![args]);
    }

    /// A pipeline of mixed multibulk and inline commands, delivered in random pieces and
    /// parsed incrementally, gives back every command in order and leaves nothing behind.
    #[test]
    fn pipeline_in_random_pieces(reqs in prop::collection::vec(req(), 1..12),
                                 cut_ix in cuts(1 << 16)) {
        let mut stream = Vec::new();
        for r in &reqs {
            stream.extend_from_slice(&r.bytes());
        }
        let cut_at: Vec<usize> = cut_ix.iter().map(|c| (c * stream.len()) >> 16).collect();
        let (cmds, left) = parse_stream(&stream, &cut_at, &Limits::default());
        let want: Vec<Command> =
            reqs.into_iter().map(|r| r.args).filter(|a| !a.is_empty()).collect();
        prop_assert_eq!(left, 0);
        prop_assert_eq!(cmds, want);
    }

    /// Byte-at-a-time delivery is the extreme split.
    #[test]
    fn pipeline_byte_at_a_time(reqs in prop::collection::vec(req(), 1..4)) {
        let mut stream = Vec::new();
        for r in &reqs {
            stream.extend_from_slice(&r.bytes());
        }
        prop_assume!(stream.len() <= 4096);
        let cut_at: Vec<usize> = (1..stream.len()).collect();
        let (cmds, left) = parse_stream(&stream, &cut_at, &Limits::default());
        let want: Vec<Command> =
            reqs.into_iter().map(|r| r.args).filter(|a| !a.is_empty()).collect();
        prop_assert_eq!(left, 0);
        prop_assert_eq!(cmds, want);
    }
}
