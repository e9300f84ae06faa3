//! DUMP and RESTORE: Redis's serialized value format (RDB version 10 payload, CRC64 footer),
//! encoded and decoded by `engine::rdb`.

use super::args::{self, is, SYNTAX_ERR};
use super::object::lfu_policy;
use super::{Ctx, Handler};
use crate::propagate::deletion;
use engine::evict::access;
use engine::{rdb, Entry, Event, NO_EXPIRE};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("dump", dump),
    ("restore", restore),
    // Redis's cluster-mode form of RESTORE (what MIGRATE sends to a cluster node): the same
    // command with the ASKING flag, which means nothing without cluster support.
    ("restore-asking", restore),
];

const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
const BAD_TTL: &str = "ERR Invalid TTL value, must be >= 0";
const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";
const BAD_FORMAT: &str = "ERR Bad data format";

/// Whether values are LZF-compressed in payloads (`rdbcompression`, on unless set to no).
pub fn compression(ctx: &Ctx) -> bool {
    ctx.srv.config.get("rdbcompression") != "no"
}

fn dump(ctx: &mut Ctx, argv: &[&[u8]]) {
    let compress = compression(ctx);
    let Some(e) = ctx.keys.get(argv[1]) else {
        return ctx.out.null();
    };
    ctx.out.bulk(&rdb::dump_payload(e.value(), compress));
}

/// RESTORE's options.
#[derive(Default)]
struct RestoreOpts {
    replace: bool,
    absttl: bool,
    idle: Option<i64>,
    freq: Option<i64>,
}

fn parse_restore_opts(argv: &[&[u8]]) -> Result<RestoreOpts, &'static str> {
    let mut o = RestoreOpts::default();
    let mut j = 4;
    while j < argv.len() {
        let has_arg = j + 1 < argv.len();
        if is(argv[j], "replace") {
            o.replace = true;
        } else if is(argv[j], "absttl") {
            o.absttl = true;
        } else if is(argv[j], "idletime") && has_arg && o.freq.is_none() {
            let n = args::int(argv[j + 1])?;
            if n < 0 {
                return Err("ERR Invalid IDLETIME value, must be >= 0");
            }
            o.idle = Some(n);
            j += 1;
        } else if is(argv[j], "freq") && has_arg && o.idle.is_none() {
            let n = args::int(argv[j + 1])?;
            if !(0..=255).contains(&n) {
                return Err("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            o.freq = Some(n);
            j += 1;
        } else {
            return Err(SYNTAX_ERR);
        }
        j += 1;
    }
    Ok(o)
}

/// The access-time field of a restored key (objectSetLRUOrLFU): the given FREQ under an LFU
/// policy, the given IDLETIME otherwise, or now.
fn restored_lru(opts: &RestoreOpts, lfu: bool) -> u32 {
    match (lfu, opts.freq, opts.idle) {
        (true, Some(f), _) => access::lfu_with(f.clamp(0, 255) as u8),
        // IDLETIME is in seconds, kept at the LRU clock's resolution.
        (false, _, Some(idle)) => access::lru_aged(idle.wrapping_mul(1000) / 1000),
        _ => access::fresh(),
    }
}

fn restore(ctx: &mut Ctx, argv: &[&[u8]]) {
    let opts = match parse_restore_opts(argv) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    // Everything that does not depend on the key is worked out before locking; the
    // errors are still reported in Redis's order (BUSYKEY first).
    let ttl = match args::int(argv[2]) {
        Ok(n) if n < 0 => Err(BAD_TTL),
        r => r,
    };
    let payload = argv[3];
    let value = if !rdb::verify_payload(payload, ctx.srv.stats.skip_checksum()) {
        Err(BAD_PAYLOAD)
    } else {
        rdb::load_payload_with(payload, &ctx.srv.config.hot.coll_limits()).map_err(|_| BAD_FORMAT)
    };
    let lfu = lfu_policy(ctx);
    let key = argv[1];
    let now = ctx.keys.now();
    if !opts.replace && ctx.keys.exists_for_write(key) {
        return ctx.out.error(BUSYKEY);
    }
    let mut ttl = match ttl {
        Ok(t) => t,
        Err(e) => return ctx.out.error(e),
    };
    let value = match value {
        Ok(v) => v,
        Err(e) => return ctx.out.error(e),
    };
    let deleted = opts.replace && ctx.keys.remove(key, Event::NONE).is_some();
    if ttl != 0 && !opts.absttl {
        // Redis adds without an overflow check; a wrapped (negative) time reads as expired.
        ttl = ttl.wrapping_add(now);
    }
    if ttl != 0 && ttl <= now {
        // Already expired: the key is simply gone.
        if deleted {
            ctx.keys.notify(key, Event::DEL);
            let del = deletion(ctx.srv, "lazyfree-lazy-server-del");
            ctx.propagate.replace(&[del, key]);
        }
        return ctx.out.ok();
    }
    let db = ctx.keys.db();
    let entry = Entry::new(
        key,
        &value,
        if ttl == 0 { NO_EXPIRE } else { ttl },
        restored_lru(&opts, lfu),
    );
    ctx.keys
        .insert_entry_in(db, key, entry, Event::generic("restore"));
    if ttl != 0 && !opts.absttl {
        // Propagated with the TTL as an absolute time.
        let ttl_text = ttl.to_string();
        let mut args: Vec<&[u8]> = argv.to_vec();
        args[2] = ttl_text.as_bytes();
        args.push(b"ABSTTL");
        ctx.propagate.replace(&args);
    }
    ctx.out.ok();
}
