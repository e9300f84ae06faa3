//! ZSCAN: a listpack answers everything at cursor 0; a skiplist is walked in the order of
//! its members' (fixed) hashes, bit-reversed, so a member present for the whole iteration
//! is returned at least once whatever changes in between.

use super::{read, scan_score};
use crate::cmd::scan_args;
use crate::cmd::Ctx;
use engine::coll::ZSet;

pub fn zscan(ctx: &mut Ctx, argv: &[&[u8]]) {
    let cursor = match scan_args::parse_cursor(argv[2]) {
        Ok(c) => c,
        Err(e) => return ctx.out.error(e),
    };
    let z = match read(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return scan_args::reply_empty(ctx.out),
        Ok(Some(z)) => z,
    };
    let opts = match scan_args::parse_opts(argv, 3, false) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let (next, found) = match z {
        ZSet::Listpack(lp) => {
            // Redis replies a listpack's elements as stored (lpGet): a score's own text,
            // which a payload may hold in a form Redis never writes ("5016994646098731615",
            // "1.50"), not the number reformatted.
            let items: Vec<Vec<u8>> = lp.iter().map(|it| it.to_vec()).collect();
            let kept: Vec<&[Vec<u8>]> = items
                .chunks(2)
                .filter(|p| p.len() == 2 && opts.matches(&p[0]))
                .collect();
            ctx.out.array(2);
            ctx.out.bulk(b"0");
            ctx.out.array(kept.len() * 2);
            for p in kept {
                ctx.out.bulk(&p[0]);
                ctx.out.bulk(&p[1]);
            }
            return;
        }
        ZSet::Skiplist(sl) => sl.scan(cursor, opts.count),
    };
    let kept: Vec<&(Vec<u8>, f64)> = found.iter().filter(|(m, _)| opts.matches(m)).collect();
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(kept.len() * 2);
    for (m, s) in kept {
        ctx.out.bulk(m);
        scan_score(ctx.out, *s);
    }
}
