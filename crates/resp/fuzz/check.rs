//! The checks the `parse_request` fuzz target runs on one input, shared with the corpus
//! replay test (`crates/resp/tests/fuzz_corpus_replay.rs`), which includes this file with
//! `#[path]` so that plain `cargo test` on stable runs exactly the same checks.
//!
//! The input is a byte stream from a client. It is fed to a `RequestParser` the way a
//! connection feeds it (append a read, parse complete commands, drop what was consumed),
//! once whole, once a byte at a time (short inputs) and in pseudo-random splits derived
//! from the input itself. For every split:
//! * the parser never panics;
//! * every parsed command consumed at least one byte and never more than the buffer holds,
//!   and its argument ranges lie inside the consumed bytes;
//! * the sequence of commands, and how the stream ends (incomplete, or which protocol
//!   error), is the same as for every other split (inputs no longer than
//!   `INLINE_MAX_SIZE`, where Redis's size limits cannot depend on how reads were split).

use resp::parse::INLINE_MAX_SIZE;
use resp::{Limits, Parsed, ProtocolError, RequestParser};

/// What a stream parsed into: its commands, then how it ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub commands: Vec<Vec<Vec<u8>>>,
    pub end: Result<usize, ProtocolError>,
}

/// FNV-1a, to derive split points and limits from the input deterministically.
fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Feed `data` in chunks of the given sizes (the last chunk takes the rest).
pub fn feed(data: &[u8], chunks: &[usize], limits: &Limits) -> Outcome {
    let mut parser = RequestParser::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut ranges = Vec::new();
    let mut commands = Vec::new();
    let mut fed = 0;
    let mut chunk_iter = chunks.iter();
    while fed < data.len() {
        let n = chunk_iter
            .next()
            .copied()
            .unwrap_or(data.len() - fed)
            .clamp(1, data.len() - fed);
        buf.extend_from_slice(&data[fed..fed + n]);
        fed += n;
        loop {
            let step = match parser.parse(&buf, limits, &mut ranges) {
                Ok(step) => step,
                Err(e) => {
                    return Outcome {
                        commands,
                        end: Err(e),
                    }
                }
            };
            let consumed = match step {
                Parsed::Incomplete => break,
                Parsed::Command { consumed } => {
                    assert!(consumed <= buf.len(), "consumed {consumed} > {}", buf.len());
                    for r in &ranges {
                        assert!(r.start <= r.end && r.end <= consumed, "range {r:?}");
                    }
                    if !ranges.is_empty() {
                        commands.push(ranges.iter().map(|r| buf[r.clone()].to_vec()).collect());
                    }
                    consumed
                }
                Parsed::Owned { args, consumed } => {
                    assert!(consumed <= buf.len(), "consumed {consumed} > {}", buf.len());
                    if !args.is_empty() {
                        commands.push(args);
                    }
                    consumed
                }
            };
            assert!(
                consumed > 0,
                "a command consumed nothing: the connection would spin"
            );
            buf.drain(..consumed);
        }
    }
    Outcome {
        commands,
        end: Ok(buf.len()),
    }
}

/// Run every check on one input.
pub fn check(data: &[u8]) {
    let h = fnv(data);
    let limits = Limits {
        // Sometimes a small proto-max-bulk-len, to reach that error with short inputs.
        max_bulk_len: if h & 4 == 0 { 512 * 1024 * 1024 } else { 16 },
        auth_required: h & 1 == 1,
    };
    let whole = feed(data, &[data.len()], &limits);
    let mut splits: Vec<Vec<usize>> = Vec::new();
    if data.len() <= 2048 {
        splits.push(vec![1; data.len()]);
    }
    let mut state = h;
    for max in [3u64, 64] {
        // Long inputs get longer chunks: the parser rescans a partial header line on
        // every read, so tiny reads of a 64 KiB line would take quadratic time.
        let max = max.max(data.len() as u64 / 64);
        let mut chunks = Vec::new();
        let mut total = 0;
        while total < data.len() {
            let n = 1 + (splitmix(&mut state) % max) as usize;
            chunks.push(n);
            total += n;
        }
        splits.push(chunks);
    }
    for chunks in &splits {
        let got = feed(data, chunks, &limits);
        if data.len() <= INLINE_MAX_SIZE {
            assert_eq!(got, whole, "splitting the input changed the result");
        }
    }
}
