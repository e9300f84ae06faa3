//! ZSCAN: a listpack answers everything at cursor 0; a skiplist is walked in the order of
//! its members' (fixed) hashes, bit-reversed, so a member present for the whole iteration
//! is returned at least once whatever changes in between.

use super::{read, scan_score};
use crate::cmd::args::{self, SYNTAX_ERR};
use crate::cmd::keys::parse_cursor;
use crate::cmd::Ctx;
use engine::coll::ZSet;
use engine::glob::glob_match;

pub fn zscan(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(cursor) = parse_cursor(argv[2]) else {
        return ctx.out.error("ERR invalid cursor");
    };
    let z = match read(&mut ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => {
            ctx.out.array(2);
            ctx.out.bulk(b"0");
            return ctx.out.array(0);
        }
        Ok(Some(z)) => z,
    };
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut j = 3;
    while j < argv.len() {
        let has_next = j + 1 < argv.len();
        if args::is(argv[j], "count") && has_next {
            match args::int(argv[j + 1]) {
                Ok(n) if n >= 1 => count = n as usize,
                Ok(_) => return ctx.out.error(SYNTAX_ERR),
                Err(e) => return ctx.out.error(e),
            }
        } else if args::is(argv[j], "match") && has_next {
            pattern = Some(argv[j + 1]);
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
        j += 2;
    }
    let (next, found) = match z {
        ZSet::Listpack(_) => (0, z.to_pairs()),
        ZSet::Skiplist(sl) => sl.scan(cursor, count),
    };
    let all = pattern.is_none_or(|p| p == b"*");
    let kept: Vec<&(Vec<u8>, f64)> = found
        .iter()
        .filter(|(m, _)| all || pattern.is_some_and(|p| glob_match(p, m, false)))
        .collect();
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(kept.len() * 2);
    for (m, s) in kept {
        ctx.out.bulk(m);
        scan_score(ctx.out, *s);
    }
}
