//! LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR / HISTOGRAM / HELP.

use super::help::reply_help;
use super::table::CommandDef;
use super::{Ctx, Handler};
use crate::latency::{analyze, graph};
use crate::stats::totals;
use hdrhistogram::Histogram;
use resp::ReplyBuf;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("latency|latest", latest),
    ("latency|history", history),
    ("latency|reset", reset),
    ("latency|graph", graph_cmd),
    ("latency|doctor", doctor),
    ("latency|histogram", histogram),
    ("latency|help", help),
];

fn latest(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let events = ctx.srv.stats.latency.snapshot();
    ctx.out.array(events.len());
    for (name, ts) in events {
        let last = ts.latest();
        ctx.out.array(4);
        ctx.out.bulk(name.as_bytes());
        ctx.out.int(last.time);
        ctx.out.int(last.latency_ms as i64);
        ctx.out.int(ts.max as i64);
    }
}

fn history(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(ts) = ctx.srv.stats.latency.get(argv[2]) else {
        return ctx.out.array(0);
    };
    let samples: Vec<_> = ts.in_order().copied().collect();
    ctx.out.array(samples.len());
    for s in samples {
        ctx.out.array(2);
        ctx.out.int(s.time);
        ctx.out.int(s.latency_ms as i64);
    }
}

fn reset(ctx: &mut Ctx, argv: &[&[u8]]) {
    let mon = &ctx.srv.stats.latency;
    let n = if argv.len() == 2 {
        mon.reset(None)
    } else {
        argv[2..].iter().map(|e| mon.reset(Some(e))).sum()
    };
    ctx.out.int(n as i64);
}

fn graph_cmd(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(ts) = ctx.srv.stats.latency.get(argv[2]) else {
        return ctx.out.error_bytes(&crate::cmd::args::error_text(&[
            b"ERR No samples available for event '",
            crate::cmd::args::c_str(argv[2]),
            b"'",
        ]));
    };
    let text = graph(&String::from_utf8_lossy(argv[2]), &ts);
    ctx.out.verbatim(text.as_bytes(), "txt");
}

/// Bytes of anonymous huge pages the process uses (Redis's THPGetAnonHugePagesSize).
fn anon_huge_pages() -> u64 {
    crate::memory::proc_kb_field("/proc/self/smaps_rollup", "AnonHugePages")
}

const ADVICE_SLOWLOG_INSPECT: &str = "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n";
const ADVICE_SCHEDULER: &str = "- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n";
const ADVICE_HZ: &str = "- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n";
const ADVICE_LARGE_OBJECTS: &str = "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n";
const ADVICE_MASS_EVICTION: &str = "- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n";
const ADVICE_THP: &str = "- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n";

/// Redis's createLatencyReport, for the events Skein records.
fn report(ctx: &Ctx) -> String {
    let srv = ctx.srv;
    let threshold = srv.config.get_i64("latency-monitor-threshold");
    let events = srv.stats.latency.snapshot();
    if events.is_empty() && threshold == 0 {
        return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n".to_string();
    }
    let slower_than = srv.config.get_i64("slowlog-log-slower-than");
    let mut out = String::new();
    let (mut slowlog_enable, mut slowlog_tuning, mut slowlog_inspect) = (false, false, false);
    let (mut scheduler, mut hz, mut large, mut mass_eviction) = (false, false, false, false);
    let mut advices = 0;
    for (i, (event, ts)) in events.iter().enumerate() {
        if i == 0 {
            out.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
        }
        let ls = analyze(ts);
        out.push_str(&format!(
            "{}. {}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
            i + 1,
            event,
            ls.samples,
            ls.avg,
            ls.mad,
            ls.period as f64 / ls.samples.max(1) as f64,
            ts.max
        ));
        match event.as_str() {
            "command" => {
                if slower_than < 0 {
                    slowlog_enable = true;
                    advices += 1;
                } else if slower_than / 1000 > threshold {
                    slowlog_tuning = true;
                    advices += 1;
                }
                slowlog_inspect = true;
                large = true;
                advices += 2;
            }
            "fast-command" => {
                scheduler = true;
                advices += 1;
            }
            "expire-cycle" => {
                hz = true;
                large = true;
                advices += 2;
            }
            "eviction-del" => {
                large = true;
                advices += 1;
            }
            "eviction-cycle" => {
                mass_eviction = true;
                advices += 1;
            }
            _ => {}
        }
        out.push('\n');
    }
    let thp = anon_huge_pages() > 0;
    if thp {
        advices += 1;
    }
    if events.is_empty() && advices == 0 {
        out.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
        return out;
    }
    if !events.is_empty() && advices == 0 {
        out.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
        return out;
    }
    out.push_str("\nI have a few advices for you:\n\n");
    if slowlog_enable {
        out.push_str(&format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", threshold * 1000));
    }
    if slowlog_tuning {
        out.push_str(&format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {}'.\n", threshold * 1000));
    }
    if slowlog_inspect {
        out.push_str(ADVICE_SLOWLOG_INSPECT);
    }
    if scheduler {
        out.push_str(ADVICE_SCHEDULER);
    }
    if hz && srv.config.get_i64("hz") < 100 {
        out.push_str(ADVICE_HZ);
    }
    if large {
        out.push_str(ADVICE_LARGE_OBJECTS);
    }
    if mass_eviction {
        out.push_str(ADVICE_MASS_EVICTION);
    }
    if thp {
        out.push_str(ADVICE_THP);
    }
    out
}

fn doctor(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let text = report(ctx);
    ctx.out.verbatim(text.as_bytes(), "txt");
}

/// fillCommandCDF: calls and the cumulative distribution in power-of-two µs buckets.
fn reply_cdf(out: &mut ReplyBuf, h: &Histogram<u64>) {
    out.map(2);
    out.bulk(b"calls");
    out.int(h.len() as i64);
    out.bulk(b"histogram_usec");
    let mut points = Vec::new();
    let mut cumulative = 0u64;
    let mut previous = 0u64;
    for v in h.iter_log(1024, 2.0) {
        cumulative += v.count_since_last_iteration();
        if cumulative > previous {
            let micros = h.highest_equivalent(v.value_iterated_to()) / 1000;
            points.push((micros, cumulative));
        }
        previous = cumulative;
    }
    out.map(points.len());
    for (us, n) in points {
        out.int(us as i64);
        out.int(n as i64);
    }
}

fn histogram(ctx: &mut Ctx, argv: &[&[u8]]) {
    let table = &ctx.srv.commands;
    let mut cmds: Vec<&CommandDef> = Vec::new();
    if argv.len() == 2 {
        for c in table.top_level() {
            cmds.push(c);
            cmds.extend(c.sorted_subcommands().into_iter().map(|s| &**s));
        }
    } else {
        for name in &argv[2..] {
            if let Some(c) = super::command::lookup_by_name(ctx.srv, name) {
                cmds.push(c);
                cmds.extend(c.sorted_subcommands().into_iter().map(|s| &**s));
            }
        }
    }
    let hists: Vec<(&str, Histogram<u64>)> = cmds
        .into_iter()
        .filter_map(|c| Some((c.fullname.as_str(), totals(&c.counters, true).hist?)))
        .collect();
    ctx.out.map(hists.len());
    for (name, h) in hists {
        ctx.out.bulk(name.as_bytes());
        reply_cdf(ctx.out, &h);
    }
}

fn help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(
        ctx,
        argv[0],
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    );
}
