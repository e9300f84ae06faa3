//! Replays the checked-in fuzz corpus (`crates/resp/fuzz/corpus/parse_request/`) through the
//! same checks the `parse_request` fuzz target runs, so that plain `cargo test` on stable
//! keeps every seed (and every crash found so far) passing.

#[path = "../fuzz/check.rs"]
mod check;

use std::fs;
use std::path::Path;

#[test]
fn corpus_replays_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/parse_request");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 20, "corpus has only {} files", files.len());
    for path in files {
        let data = fs::read(&path).expect("corpus file");
        let result = std::panic::catch_unwind(|| check::check(&data));
        assert!(result.is_ok(), "corpus input {} failed", path.display());
    }
}

/// The checks themselves see what they should: a pipeline splits into its commands.
#[test]
fn checker_sees_commands_and_errors() {
    let limits = resp::Limits::default();
    let data = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*1\r\n$4\r\nPI";
    let out = check::feed(data, &[5, 1, 7], &limits);
    assert_eq!(
        out.commands,
        vec![vec![b"GET".to_vec(), b"k".to_vec()], vec![b"PING".to_vec()]]
    );
    assert_eq!(out.end, Ok(10));
    let out = check::feed(b"*1\r\n$x\r\n", &[3], &limits);
    assert_eq!(out.end.unwrap_err().0, "invalid bulk length");
}
