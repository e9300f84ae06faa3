//! Named presets reproducing the published experiments Skein exists to beat.

use crate::conn::{Blocking, Target};
use crate::opts::{default_workload, set_get};
use crate::report::{f0, f2, f3, Table};
use crate::run::{run, RunFlags, RunResult};
use crate::run_cmd::RunCmd;
use crate::spec::{DataSize, KeyPattern};
use crate::workload::Workload;
use clap::{Args, ValueEnum};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Scenario {
    /// 4x25 clients 1:1 SET:GET of 100 B on db 0, alone and beside a ZINTERSTORE loop on db 1
    NoisyNeighbor,
    /// 20% SET / 80% GET, 16 B keys, 512 B values, 3M keys, at 400, 2000 and 5200 connections
    ManyClients,
    /// redis-benchmark's GET/SET -n 2000000 -r 1000000 -c 50 -d 64 at -P 1 and -P 16, pinned
    PerCore,
}

#[derive(Args, Clone, Debug)]
#[command(next_help_heading = "Scenarios")]
pub struct ScenarioArgs {
    /// noisy-neighbor: members in each of the two sorted sets on db 1
    #[arg(long, default_value_t = 100_000)]
    pub zset_size: usize,
    /// many-clients: the connection counts to measure
    #[arg(long, value_parser = crate::spec::count_list, default_value = "400,2000,5200")]
    pub connections: crate::spec::List,
    /// many-clients: do not write every key before measuring
    #[arg(long)]
    pub no_prefill: bool,
    /// per-core: PID of the server, pinned to --server-cpu with taskset
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// per-core: the core the server is pinned to
    #[arg(long, default_value_t = 0)]
    pub server_cpu: usize,
    /// per-core: the core the load runs on
    #[arg(long, default_value_t = 1)]
    pub bench_cpu: usize,
}

/// Exit status when a scenario could not run a part because the server lacks a command.
const MISSING_COMMAND: i32 = 3;

pub fn exec(s: Scenario, cmd: &RunCmd, flags: RunFlags) -> Result<i32, String> {
    let target = cmd.target.target();
    let (code, json) = match s {
        Scenario::NoisyNeighbor => noisy_neighbor(cmd, &target, flags)?,
        Scenario::ManyClients => many_clients(cmd, &target, flags)?,
        Scenario::PerCore => per_core(cmd, &target, flags)?,
    };
    if let Some(p) = &cmd.json {
        crate::report::write_json(p, &json)?;
    }
    Ok(code)
}

fn resolve(cmd: &RunCmd, base: Workload) -> Result<Workload, String> {
    cmd.load.resolve(base)
}

fn row(name: &str, r: &RunResult) -> Vec<String> {
    let l = &r.totals.latency;
    vec![
        name.to_string(),
        f0(r.totals.ops_per_sec),
        f3(l.avg_ms),
        f3(l.p50_ms),
        f3(l.p99_ms),
        f3(l.p999_ms),
        r.totals.errors.to_string(),
    ]
}

const HEAD: [&str; 7] = [
    "", "Ops/s", "Avg ms", "p50 ms", "p99 ms", "p99.9 ms", "Errors",
];

fn noisy_neighbor(
    cmd: &RunCmd,
    t: &Target,
    flags: RunFlags,
) -> Result<(i32, serde_json::Value), String> {
    let mut base = default_workload();
    (base.threads, base.clients, base.templates) = (4, 25, set_get(1, 1));
    base.data_size = DataSize::Fixed(100);
    let w = resolve(cmd, base)?;
    println!("noisy-neighbor: measuring db 0 alone");
    let alone = run(t, &w, 0, flags)?;
    let mut table = Table::new(&HEAD);
    table.row(row("db 0 alone", &alone));
    let neighbor = match prepare_zsets(t, cmd.scenario_args.zset_size) {
        Ok(conn) => conn,
        Err(e) => {
            print!("{}", table.render());
            println!("noisy-neighbor: the server lacks what the neighbor needs on db 1: {e}");
            println!("noisy-neighbor: measured db 0 alone only");
            let json = json!({"scenario": "noisy-neighbor", "alone": alone, "neighbor_error": e});
            return Ok((MISSING_COMMAND, json));
        }
    };
    println!(
        "noisy-neighbor: measuring db 0 while ZINTERSTORE loops over two {}-member sorted sets on db 1",
        cmd.scenario_args.zset_size
    );
    let stop = Arc::new(AtomicBool::new(false));
    let loops = Arc::new(AtomicU64::new(0));
    let handle = {
        let (stop, loops) = (stop.clone(), loops.clone());
        std::thread::spawn(move || neighbor_loop(neighbor, &stop, &loops))
    };
    let with = run(t, &w, 0, flags);
    stop.store(true, Relaxed);
    let neighbor_err = handle
        .join()
        .unwrap_or_else(|_| Some("neighbor thread panicked".into()));
    cleanup_zsets(t);
    let with = with?;
    table.row(row("db 0 with neighbor", &with));
    print!("{}", table.render());
    let ratio = with.totals.ops_per_sec / alone.totals.ops_per_sec.max(1e-9);
    let p99_ratio = with.totals.latency.p99_ms / alone.totals.latency.p99_ms.max(1e-9);
    println!(
        "with the neighbor: throughput x{ratio:.2}, p99 x{p99_ratio:.2}; the neighbor ran ZINTERSTORE {} times",
        loops.load(Relaxed)
    );
    if let Some(e) = &neighbor_err {
        println!("neighbor stopped early: {e}");
    }
    let json = json!({
        "scenario": "noisy-neighbor", "alone": alone, "with_neighbor": with,
        "throughput_ratio": ratio, "p99_ratio": p99_ratio,
        "neighbor_zinterstore_calls": loops.load(Relaxed), "neighbor_error": neighbor_err,
    });
    Ok((0, json))
}

const Z1: &[u8] = b"skein-bench:z1";
const Z2: &[u8] = b"skein-bench:z2";
const ZDST: &[u8] = b"skein-bench:zdst";

/// Fills the two sorted sets on db 1 and checks ZINTERSTORE works; returns the connection.
fn prepare_zsets(t: &Target, size: usize) -> Result<Blocking, String> {
    let mut c = Blocking::connect(t)?;
    c.handshake(t, 1)?;
    c.call_ok(&[b"DEL", Z1, Z2, ZDST])?;
    for (key, step) in [(Z1, 1usize), (Z2, 2)] {
        let mut i = 0;
        while i < size {
            let n = (size - i).min(1000);
            let mut args: Vec<Vec<u8>> = vec![b"ZADD".to_vec(), key.to_vec()];
            for j in i..i + n {
                args.push(j.to_string().into_bytes());
                args.push(format!("m{}", j * step).into_bytes());
            }
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            c.call_ok(&refs)?;
            i += n;
        }
    }
    c.call_ok(&[b"ZINTERSTORE", ZDST, b"2", Z1, Z2])?;
    Ok(c)
}

fn neighbor_loop(mut c: Blocking, stop: &AtomicBool, loops: &AtomicU64) -> Option<String> {
    c.set_timeout(Some(std::time::Duration::from_secs(60)));
    while !stop.load(Relaxed) {
        if let Err(e) = c.call_ok(&[b"ZINTERSTORE", ZDST, b"2", Z1, Z2]) {
            return Some(e);
        }
        loops.fetch_add(1, Relaxed);
    }
    None
}

fn cleanup_zsets(t: &Target) {
    if let Ok(mut c) = Blocking::connect(t) {
        if c.handshake(t, 1).is_ok() {
            let _ = c.call(&[b"DEL", Z1, Z2, ZDST]);
        }
    }
}

fn many_clients(
    cmd: &RunCmd,
    t: &Target,
    flags: RunFlags,
) -> Result<(i32, serde_json::Value), String> {
    let mut base = default_workload();
    base.threads = 4;
    base.templates = set_get(1, 4);
    base.data_size = DataSize::Fixed(512);
    base.key_maximum = 2_999_999;
    base.key_width = 16;
    let w = resolve(cmd, base)?;
    let db = cmd.target.select_db.unwrap_or(0);
    let a = &cmd.scenario_args;
    if !a.no_prefill {
        let mut fill = w.clone();
        fill.templates = set_get(1, 0);
        fill.key_pattern = (KeyPattern::Parallel, KeyPattern::Parallel);
        fill.clients = 50;
        fill.pipeline = 64;
        fill.rate = None;
        fill.warmup = 0.0;
        let keys = w.key_maximum - w.key_minimum + 1;
        fill.requests = Some(keys.div_ceil(fill.total_clients() as u64));
        println!(
            "many-clients: writing {keys} keys of {} bytes",
            w.data_size.max()
        );
        run(
            t,
            &fill,
            db,
            RunFlags {
                progress: false,
                ..flags
            },
        )?;
    }
    let mut table = Table::new(&[
        "Connections",
        "Ops/s",
        "Avg ms",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "Hits/s",
        "Misses/s",
    ]);
    let mut results = Vec::new();
    for &n in &a.connections.0 {
        let mut wn = w.clone();
        wn.clients = n.div_ceil(wn.threads);
        println!("many-clients: {} connections", wn.total_clients());
        let r = run(t, &wn, db, flags)?;
        let l = &r.totals.latency;
        table.row(vec![
            wn.total_clients().to_string(),
            f0(r.totals.ops_per_sec),
            f3(l.avg_ms),
            f3(l.p50_ms),
            f3(l.p99_ms),
            f3(l.p999_ms),
            f2(r.totals.hits_per_sec),
            f2(r.totals.misses_per_sec),
        ]);
        results.push(json!({"connections": wn.total_clients(), "result": r}));
    }
    print!("{}", table.render());
    if let (Some(first), Some(last)) = (results.first(), results.last()) {
        let ops =
            |v: &serde_json::Value| v["result"]["totals"]["ops_per_sec"].as_f64().unwrap_or(0.0);
        println!(
            "throughput at {} connections is x{:.2} of that at {}",
            last["connections"],
            ops(last) / ops(first).max(1e-9),
            first["connections"]
        );
    }
    Ok((0, json!({"scenario": "many-clients", "steps": results})))
}

fn pin_self(cpu: usize) -> Result<(), String> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)
        .map_err(|e| format!("cannot pin skein-bench to core {cpu}: {e}"))
}

fn pin_server(pid: u32, cpu: usize) -> Result<(), String> {
    let out = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", &cpu.to_string(), &pid.to_string()])
        .output()
        .map_err(|e| format!("taskset: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "taskset could not pin PID {pid} to core {cpu}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

fn per_core(cmd: &RunCmd, t: &Target, flags: RunFlags) -> Result<(i32, serde_json::Value), String> {
    let mut base = default_workload();
    (base.threads, base.clients) = (1, 50);
    base.data_size = DataSize::Fixed(64);
    base.key_maximum = 999_999;
    base.key_width = 16;
    base.requests = Some(2_000_000 / 50);
    let w = resolve(cmd, base)?;
    let a = &cmd.scenario_args;
    match a.server_pid {
        Some(pid) => {
            pin_server(pid, a.server_cpu)?;
            println!("per-core: server PID {pid} pinned to core {}", a.server_cpu);
        }
        None => println!("per-core: server not pinned (give --server-pid to pin it with taskset)"),
    }
    pin_self(a.bench_cpu)?;
    println!("per-core: load pinned to core {}", a.bench_cpu);
    let db = cmd.target.select_db.unwrap_or(0);
    let mut table = Table::new(&[
        "Test",
        "Ops/s",
        "Avg ms",
        "p50 ms",
        "p99 ms",
        "Server CPU s per 1M ops",
    ]);
    let mut results = Vec::new();
    for pipeline in [1usize, 16] {
        for (name, set, get) in [("SET", 1, 0), ("GET", 0, 1)] {
            let mut wc = w.clone();
            wc.templates = set_get(set, get);
            wc.pipeline = pipeline;
            let r = run(t, &wc, db, flags)?;
            let cpu_per_m = r
                .server
                .as_ref()
                .and_then(|s| s.cpu_pct())
                .filter(|_| r.totals.ops > 0)
                .map(|c| c / 100.0 * r.seconds / r.totals.ops as f64 * 1e6);
            let l = &r.totals.latency;
            let label = format!("{name} -P {pipeline}");
            table.row(vec![
                label.clone(),
                f0(r.totals.ops_per_sec),
                f3(l.avg_ms),
                f3(l.p50_ms),
                f3(l.p99_ms),
                cpu_per_m.map(f2).unwrap_or_else(|| "n/a".into()),
            ]);
            results.push(
                json!({"test": label, "server_cpu_s_per_million_ops": cpu_per_m, "result": r}),
            );
        }
    }
    print!("{}", table.render());
    Ok((
        0,
        json!({"scenario": "per-core", "server_pinned": a.server_pid.is_some(), "tests": results}),
    ))
}
