//! DEBUG POPULATE count [prefix] [size], as debug.c does it: string keys `prefix:N`
//! (`key:N` without a prefix) for N in 0..count, each holding `value:N`, or that text
//! zero-padded or cut to `size` bytes; keys that exist are left alone. Like Redis it
//! signals each key it creates (WATCH, client-side caching, the `new` event) but counts
//! no change to save and propagates nothing.
//!
//! Outside a transaction the command holds no shard up front: it takes the shards of
//! [`CHUNK`] keys at a time, feeds what it recorded to the change consumers while they
//! are held, and moves on, so a big count never holds a database for long (other
//! clients may see the keys appear batch by batch). Inside EXEC the dispatcher holds the
//! whole database ([`crate::dispatch::plan`]) and the keys are written under it.

use crate::cmd::Ctx;
use crate::dispatch::effects;
use engine::{Event, Plan, Scope, StrRef, NO_EXPIRE};

/// Keys written per round of locks.
const CHUNK: u64 = 128;

/// The buffer debug.c formats names into: longer names are cut to one byte less.
const NAME_BUF: usize = 128;

const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

pub fn populate(ctx: &mut Ctx, argv: &[&[u8]]) {
    // getPositiveLongFromObjectOrReply: the same error for a non-number and a negative.
    let positive = |a: &[u8]| super::super::args::int(a).ok().filter(|&n| n >= 0);
    let Some(count) = positive(argv[2]) else {
        return ctx.out.error(NOT_POSITIVE);
    };
    let size = match argv.get(4) {
        Some(a) => match positive(a) {
            Some(n) => n as usize,
            None => return ctx.out.error(NOT_POSITIVE),
        },
        None => 0,
    };
    // The prefix is read as a C string: it ends at its first NUL byte.
    let prefix = argv.get(3).map_or(&b"key"[..], |p| {
        p.split(|&b| b == 0).next().unwrap_or_default()
    });
    let mut value = Vec::new();
    if value.try_reserve_exact(size).is_err() {
        return ctx
            .out
            .error(&format!("ERR Out Of Memory allocating {size} bytes!"));
    }
    let mut maker = Maker {
        prefix,
        size,
        value,
    };
    if ctx.keys.scope() != Scope::Keys {
        // Inside EXEC: the database is held whole; the dispatcher feeds the changes.
        for n in 0..count as u64 {
            let name = maker.name(n);
            maker.add(ctx, &name, n);
        }
    } else if let Err(busy) = in_chunks(ctx, argv, &mut maker, count as u64) {
        return ctx.out.error(busy);
    }
    ctx.out.ok();
}

/// Write keys 0..count a [`CHUNK`] at a time, each round under its keys' shards. A round
/// whose shards a script past busy-reply-threshold holds ends the command with -BUSY
/// (what the dispatcher answers a command whose keys it holds) rather than waiting for
/// the script with this worker.
fn in_chunks(
    ctx: &mut Ctx,
    argv: &[&[u8]],
    maker: &mut Maker,
    count: u64,
) -> Result<(), &'static str> {
    let srv = ctx.srv;
    let db = ctx.keys.db();
    let mut start = 0;
    while start < count {
        let end = count.min(start + CHUNK);
        let names: Vec<Vec<u8>> = (start..end).map(|n| maker.name(n)).collect();
        let mut plan = Plan::new();
        for name in &names {
            plan.key(&srv.keyspace, db, name);
        }
        let busy = &srv.scripts.busy;
        if busy.active() {
            if let Some(msg) = busy.blocking(&srv.keyspace, plan.scope(), plan.slots()) {
                return Err(msg);
            }
        }
        ctx.keys.relock(&mut plan);
        effects::prepare(srv, ctx.keys.changes);
        for (name, n) in names.iter().zip(start..end) {
            maker.add(ctx, name, n);
        }
        // What the round recorded reaches WATCH, tracking and the propagation stream
        // (DELs of keys found expired; the command itself changed nothing dirty, so it
        // is not propagated) before its shards are released: the dispatcher's own pass.
        effects::apply(ctx, argv);
        ctx.keys.relock(&mut Plan::new());
        start = end;
    }
    Ok(())
}

/// Builds the names and values debug.c writes.
struct Maker<'a> {
    prefix: &'a [u8],
    size: usize,
    /// The padded value, reused from key to key.
    value: Vec<u8>,
}

impl Maker<'_> {
    /// `snprintf(buf,128,"%s:%lu",prefix,n)`.
    fn name(&self, n: u64) -> Vec<u8> {
        let mut name = Vec::with_capacity(self.prefix.len() + 21);
        name.extend_from_slice(self.prefix);
        name.push(b':');
        name.extend_from_slice(n.to_string().as_bytes());
        name.truncate(NAME_BUF - 1);
        name
    }

    /// lookupKeyWrite (a key past its TTL is deleted), then dbAdd and signalModifiedKey
    /// for a key that does not exist.
    fn add(&mut self, ctx: &mut Ctx, name: &[u8], n: u64) {
        if ctx.keys.exists_for_write(name) {
            return;
        }
        let text = format!("value:{n}");
        let value: &[u8] = if self.size == 0 {
            text.as_bytes()
        } else {
            self.value.clear();
            let head = text.len().min(self.size);
            self.value.extend_from_slice(&text.as_bytes()[..head]);
            self.value.resize(self.size, 0);
            &self.value
        };
        ctx.keys.insert(
            name,
            StrRef::created(value),
            NO_EXPIRE,
            Event::MODIFIED.clean(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_as_snprintf_cuts_them() {
        let long = vec![b'p'; 200];
        let m = Maker {
            prefix: &long,
            size: 0,
            value: Vec::new(),
        };
        assert_eq!(m.name(7).len(), 127);
        let m = Maker {
            prefix: b"key",
            size: 0,
            value: Vec::new(),
        };
        assert_eq!(m.name(42), b"key:42");
    }
}
