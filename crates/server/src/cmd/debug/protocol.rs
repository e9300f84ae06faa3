//! DEBUG PROTOCOL <type>: debug.c's test value of each reply type, for clients' tests of
//! their RESP3 (and RESP2) parsing: the same values, downgraded in RESP2 as Redis does.

use crate::cmd::Ctx;

const WRONG_TYPE: &str = "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false";

pub fn protocol(ctx: &mut Ctx, name: &[u8]) {
    let out = &mut *ctx.out;
    let is = |word: &str| name.eq_ignore_ascii_case(word.as_bytes());
    if is("string") {
        out.bulk(b"Hello World");
    } else if is("integer") {
        out.int(12345);
    } else if is("double") {
        // debug.c's value, not pi.
        #[allow(clippy::approx_constant)]
        out.double(3.141);
    } else if is("bignum") {
        out.big_number("1234567999999999999999999999999999999");
    } else if is("null") {
        out.null();
    } else if is("array") {
        out.array(3);
        (0..3).for_each(|j| out.int(j));
    } else if is("set") {
        out.set(3);
        (0..3).for_each(|j| out.int(j));
    } else if is("map") {
        out.map(3);
        for j in 0..3 {
            out.int(j);
            out.bool(j == 1);
        }
    } else if is("attrib") {
        if out.resp3() {
            // An attribute is not a reply of its own: a real one follows it.
            out.raw(b"|1\r\n");
            out.bulk(b"key-popularity");
            out.array(2);
            out.bulk(b"key:123");
            out.int(90);
        }
        out.bulk(b"Some real reply following the attribute");
    } else if is("push") {
        if !out.resp3() {
            return out.error("ERR RESP2 is not supported by this command");
        }
        out.push(2);
        out.bulk(b"server-cpu-usage");
        out.int(42);
        // A push is not a reply: a real one follows for clients that discard pushes.
        out.bulk(b"Some real reply following the push reply");
    } else if is("true") {
        out.bool(true);
    } else if is("false") {
        out.bool(false);
    } else if is("verbatim") {
        out.verbatim(b"This is a verbatim\nstring", "txt");
    } else {
        out.error(WRONG_TYPE);
    }
}
