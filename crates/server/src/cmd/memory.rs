//! MEMORY: a key's footprint (USAGE), what used_memory is made of (STATS, DOCTOR), the
//! allocator's report (MALLOC-STATS) and PURGE.

use super::args::{self, is, SYNTAX_ERR};
use super::help::reply_help;
use super::{Ctx, Handler};
use crate::memory;
use crate::overhead::{doctor_report, Overhead};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("memory|help", memory_help),
    ("memory|usage", memory_usage),
    ("memory|stats", memory_stats),
    ("memory|doctor", memory_doctor),
    ("memory|malloc-stats", memory_malloc_stats),
    ("memory|purge", memory_purge),
];

/// Elements sampled by default (OBJ_COMPUTE_SIZE_DEF_SAMPLES).
const DEFAULT_SAMPLES: usize = 5;

fn memory_help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(
        ctx,
        argv[0],
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
}

/// `[SAMPLES n]...`: the last one counts; 0 means every element.
fn parse_samples(opts: &[&[u8]]) -> Result<usize, &'static str> {
    let mut samples = DEFAULT_SAMPLES;
    let mut i = 0;
    while i < opts.len() {
        if !is(opts[i], "samples") || i + 1 == opts.len() {
            return Err(SYNTAX_ERR);
        }
        samples = match args::int(opts[i + 1])? {
            n if n < 0 => return Err(SYNTAX_ERR),
            0 => usize::MAX,
            n => n as usize,
        };
        i += 2;
    }
    Ok(samples)
}

/// The key's entry (its block and any value held outside it, at jemalloc's size
/// classes) and its share of the shard's tables; expired keys not yet removed included,
/// as Redis's dictFind finds them.
fn memory_usage(ctx: &mut Ctx, argv: &[&[u8]]) {
    let samples = match parse_samples(&argv[3..]) {
        Ok(n) => n,
        Err(e) => return ctx.out.error(e),
    };
    let usage = ctx
        .keys
        .peek(argv[2])
        .map(|e| e.footprint(samples) + engine::shard::slot_bytes(e));
    match usage {
        Some(n) => ctx.out.int(n as i64),
        None => ctx.out.null(),
    }
}

fn memory_stats(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let mh = Overhead::measure(ctx.srv);
    let out = &mut *ctx.out;
    let int = |out: &mut resp::ReplyBuf, name: &str, n: i64| {
        out.bulk(name.as_bytes());
        out.int(n);
    };
    let double = |out: &mut resp::ReplyBuf, name: &str, d: f64| {
        out.bulk(name.as_bytes());
        out.double(d);
    };
    out.map(27 + mh.dbs.len());
    int(out, "peak.allocated", mh.peak as i64);
    int(out, "total.allocated", mh.total as i64);
    int(out, "startup.allocated", mh.startup as i64);
    int(
        out,
        "replication.backlog",
        ctx.srv.propagation.backlog.bytes() as i64,
    );
    int(out, "clients.slaves", 0);
    int(out, "clients.normal", mh.clients_normal as i64);
    int(out, "cluster.links", 0);
    int(out, "aof.buffer", mh.aof_buffer as i64);
    int(out, "lua.caches", mh.lua_caches as i64);
    int(out, "functions.caches", mh.functions_caches as i64);
    for db in &mh.dbs {
        out.bulk(format!("db.{}", db.id).as_bytes());
        out.map(3);
        int(out, "overhead.hashtable.main", db.main as i64);
        int(out, "overhead.hashtable.expires", db.expires as i64);
        int(out, "overhead.hashtable.slot-to-keys", 0);
    }
    int(out, "overhead.total", mh.overhead_total as i64);
    int(out, "keys.count", mh.keys as i64);
    int(out, "keys.bytes-per-key", mh.bytes_per_key() as i64);
    int(out, "dataset.bytes", mh.dataset as i64);
    double(out, "dataset.percentage", mh.dataset_perc());
    double(out, "peak.percentage", mh.peak_perc());
    int(out, "allocator.allocated", mh.alloc.allocated as i64);
    int(out, "allocator.active", mh.alloc.active as i64);
    int(out, "allocator.resident", mh.alloc.resident as i64);
    let pairs = [
        ("allocator-fragmentation", mh.allocator_frag()),
        ("allocator-rss", mh.allocator_rss()),
        ("rss-overhead", mh.rss_extra()),
    ];
    for (name, (ratio, bytes)) in pairs {
        double(out, &format!("{name}.ratio"), ratio);
        int(out, &format!("{name}.bytes"), bytes);
    }
    let (frag, frag_bytes) = mh.total_frag();
    double(out, "fragmentation", frag);
    int(out, "fragmentation.bytes", frag_bytes);
}

fn memory_doctor(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let report = doctor_report(ctx.srv);
    ctx.out.verbatim(report.as_bytes(), "txt");
}

fn memory_malloc_stats(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.verbatim(memory::malloc_stats().as_bytes(), "txt");
}

fn memory_purge(ctx: &mut Ctx, _argv: &[&[u8]]) {
    if memory::purge() {
        ctx.out.ok();
    } else {
        ctx.out.error("ERR Error purging dirty pages");
    }
}
