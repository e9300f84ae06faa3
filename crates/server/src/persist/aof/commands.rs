//! A base file of commands (rewriteAppendOnlyFileRio, `aof-use-rdb-preamble no`): for
//! each database with keys a SELECT, then per key the commands that rebuild it (SET, RPUSH,
//! SADD, ZADD, HMSET with at most 64 items each; XADD, XSETID, XGROUP CREATE,
//! XGROUP CREATECONSUMER and XCLAIM for streams) and PEXPIREAT for its TTL, as Redis 7.0
//! writes them.

use crate::propagate::encode;
use engine::coll::listpack::Item;
use engine::coll::stream::Stream;
use engine::{Value, NO_EXPIRE};
use std::io::{self, Write};

/// AOF_REWRITE_ITEMS_PER_CMD.
const ITEMS_PER_CMD: usize = 64;

fn item_bytes(i: Item<'_>) -> Vec<u8> {
    match i {
        Item::Int(n) => n.to_string().into_bytes(),
        Item::Str(s) => s.to_vec(),
    }
}

/// `cmd key` followed by `items` (flattened), in commands of at most 64 items.
fn batched(out: &mut impl Write, cmd: &[u8], key: &[u8], items: &[Vec<Vec<u8>>]) -> io::Result<()> {
    for chunk in items.chunks(ITEMS_PER_CMD) {
        let mut args: Vec<&[u8]> = vec![cmd, key];
        for it in chunk {
            args.extend(it.iter().map(|a| a.as_slice()));
        }
        out.write_all(&encode(&args))?;
    }
    Ok(())
}

/// A score as Redis's rioWriteBulkDouble writes it (any text that reads back exactly).
fn score(v: f64) -> Vec<u8> {
    if v.is_infinite() {
        return if v > 0.0 {
            b"inf".to_vec()
        } else {
            b"-inf".to_vec()
        };
    }
    let mut s = String::new();
    engine::coll::zset::score_text(v, &mut s);
    s.into_bytes()
}

fn stream(out: &mut impl Write, key: &[u8], s: &Stream) -> io::Result<()> {
    let meta = s.meta();
    if meta.length > 0 {
        let mut result = Ok(());
        s.walk(
            engine::coll::stream::StreamId::MIN,
            engine::coll::stream::StreamId::MAX,
            false,
            |e| {
                let id = e.id.to_string();
                let fields: Vec<Vec<u8>> = e
                    .fields()
                    .flat_map(|(f, v)| [item_bytes(f), item_bytes(v)])
                    .collect();
                let mut args: Vec<&[u8]> = vec![b"XADD", key, id.as_bytes()];
                args.extend(fields.iter().map(|f| f.as_slice()));
                result = out.write_all(&encode(&args));
                result.is_ok()
            },
        );
        result?;
    } else {
        out.write_all(&encode(&[
            b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y",
        ]))?;
    }
    let last = meta.last_id.to_string();
    let added = meta.entries_added.to_string();
    let max_deleted = meta.max_deleted.to_string();
    out.write_all(&encode(&[
        b"XSETID",
        key,
        last.as_bytes(),
        b"ENTRIESADDED",
        added.as_bytes(),
        b"MAXDELETEDID",
        max_deleted.as_bytes(),
    ]))?;
    for (name, g) in s.groups() {
        let last = g.last_id.to_string();
        let read = g.entries_read.to_string();
        out.write_all(&encode(&[
            b"XGROUP",
            b"CREATE",
            key,
            name,
            last.as_bytes(),
            b"ENTRIESREAD",
            read.as_bytes(),
        ]))?;
        for (cname, c) in &g.consumers {
            if c.pel.is_empty() {
                out.write_all(&encode(&[b"XGROUP", b"CREATECONSUMER", key, name, cname]))?;
            }
            for id in &c.pel {
                let Some(nack) = g.pel.get(id) else {
                    continue;
                };
                let (id, time, count) = (
                    id.to_string(),
                    nack.delivery_time.to_string(),
                    nack.delivery_count.to_string(),
                );
                out.write_all(&encode(&[
                    b"XCLAIM",
                    key,
                    name,
                    cname,
                    b"0",
                    id.as_bytes(),
                    b"TIME",
                    time.as_bytes(),
                    b"RETRYCOUNT",
                    count.as_bytes(),
                    b"JUSTID",
                    b"FORCE",
                ]))?;
            }
        }
    }
    Ok(())
}

/// The commands that rebuild one key (and its TTL).
pub fn key(out: &mut impl Write, key: &[u8], value: &Value, expire_at: i64) -> io::Result<()> {
    match value {
        Value::Str(s) => {
            let v = s.view().to_bytes();
            out.write_all(&encode(&[b"SET", key, &v]))?;
        }
        Value::List(l) => {
            let items: Vec<Vec<Vec<u8>>> = l.to_vecs().into_iter().map(|v| vec![v]).collect();
            batched(out, b"RPUSH", key, &items)?;
        }
        Value::Set(s) => {
            let items: Vec<Vec<Vec<u8>>> = s.iter().map(|e| vec![e.to_vec()]).collect();
            batched(out, b"SADD", key, &items)?;
        }
        Value::ZSet(z) => {
            let items: Vec<Vec<Vec<u8>>> = z
                .to_pairs()
                .into_iter()
                .map(|(m, sc)| vec![score(sc), m])
                .collect();
            batched(out, b"ZADD", key, &items)?;
        }
        Value::Hash(h) => {
            let mut items = Vec::with_capacity(h.len());
            h.for_each(|f, v| items.push(vec![item_bytes(f), item_bytes(v)]));
            batched(out, b"HMSET", key, &items)?;
        }
        Value::Stream(s) => stream(out, key, s)?,
    }
    if expire_at != NO_EXPIRE {
        let at = expire_at.to_string();
        out.write_all(&encode(&[b"PEXPIREAT", key, at.as_bytes()]))?;
    }
    Ok(())
}

/// The whole base: the RDB `rdb` (the snapshot as written) turned into commands.
pub fn from_rdb(
    out: &mut impl Write,
    rdb: &[u8],
    databases: usize,
    limits: engine::coll::Limits,
    timestamp: Option<i64>,
) -> io::Result<()> {
    if let Some(ts) = timestamp {
        out.write_all(format!("#TS:{ts}\r\n").as_bytes())?;
    }
    let opts = engine::rdb::file::LoadOptions {
        databases,
        checksum: false,
        // Keep every key, expired ones included, as Redis's rewrite does.
        now_ms: i64::MIN,
        limits,
    };
    let mut db = None;
    let mut result = Ok(());
    let loaded = engine::rdb::file::load(
        rdb,
        &opts,
        |_| {},
        |k| {
            if db != Some(k.db) {
                db = Some(k.db);
                let n = k.db.to_string();
                result = out.write_all(&encode(&[b"SELECT", n.as_bytes()]));
            }
            if result.is_ok() {
                result = key(out, k.key, &k.value, k.expire_at);
            }
            result.is_ok()
        },
    );
    result?;
    loaded.map_err(|f| io::Error::other(format!("{:?}", f.error)))?;
    Ok(())
}
