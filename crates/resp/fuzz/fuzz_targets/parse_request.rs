#![no_main]
//! Arbitrary bytes, in arbitrary splits, into the request parser: see `../check.rs`.

use libfuzzer_sys::fuzz_target;

#[path = "../check.rs"]
mod check;

fuzz_target!(|data: &[u8]| {
    check::check(data);
});
