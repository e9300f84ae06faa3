//! What `used_memory` is made of (Redis's getMemoryOverheadData): the overheads around
//! the dataset (start-up memory, client buffers, script caches, the keyspace's tables)
//! and the allocator's and process's figures beside it. INFO's memory section, MEMORY
//! STATS and MEMORY DOCTOR read the same [`Overhead`].

use crate::memory::{self, AllocStats};
use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;

/// One database's tables.
pub struct DbOverhead {
    pub id: usize,
    /// The key tables' slots (overhead.hashtable.main).
    pub main: u64,
    /// The TTL indexes (overhead.hashtable.expires).
    pub expires: u64,
}

pub struct Overhead {
    pub total: u64,
    pub startup: u64,
    pub peak: u64,
    pub clients_normal: u64,
    pub clients: usize,
    pub lua_caches: u64,
    pub scripts: usize,
    /// Redis's functionsMemoryOverhead (`script::functions`).
    pub functions_caches: u64,
    /// The AOF's buffers (`persist::aof::buffer_bytes`).
    pub aof_buffer: u64,
    pub dbs: Vec<DbOverhead>,
    /// Everything above the dataset (overhead.total).
    pub overhead_total: u64,
    pub keys: u64,
    pub dataset: u64,
    pub alloc: AllocStats,
    pub rss: u64,
}

/// `a` against `b`: their ratio (a C float, as Redis keeps it, so that it prints the
/// same digits) and their difference in bytes.
fn against(a: u64, b: u64) -> (f64, i64) {
    (f64::from(a as f32 / b as f32), a as i64 - b as i64)
}

impl Overhead {
    pub fn measure(srv: &Server) -> Overhead {
        let total = memory::used_memory();
        srv.stats.note_memory(total);
        let startup = srv.stats.startup_memory.load(Relaxed).min(total);
        let clients = srv.clients.all();
        let clients_normal: u64 = clients.iter().map(|c| c.memory()).sum();
        let lua_caches = srv.scripts.bytes() as u64;
        let functions_caches = srv.scripts.functions.memory_overhead() as u64;
        let aof_buffer = crate::persist::aof::buffer_bytes(srv);
        let mut dbs = Vec::new();
        let mut keys = 0;
        for (id, db) in srv.keyspace.dbs().iter().enumerate() {
            let (mut n, mut main, mut expires) = (0, 0, 0);
            for i in 0..db.shard_count() {
                // A shard another command holds (a long one, or this very command's
                // transaction) is not waited for: its published figures stand in.
                let (k, (m, e)) = match db.try_read_shard(i) {
                    Some(shard) => (shard.len(), shard.table_bytes()),
                    None => {
                        let f = db.shard_figures(i);
                        (f.keys, engine::shard::table_bytes_of(&f))
                    }
                };
                n += k as u64;
                main += m as u64;
                expires += e as u64;
            }
            if n > 0 {
                keys += n;
                dbs.push(DbOverhead { id, main, expires });
            }
        }
        let overhead_total = startup
            + clients_normal
            + aof_buffer
            + lua_caches
            + functions_caches
            + dbs.iter().map(|d| d.main + d.expires).sum::<u64>();
        Overhead {
            total,
            startup,
            peak: srv.stats.peak_memory.load(Relaxed).max(total),
            clients_normal,
            clients: clients.len(),
            lua_caches,
            scripts: srv.scripts.len(),
            functions_caches,
            aof_buffer,
            dbs,
            overhead_total,
            keys,
            dataset: total.saturating_sub(overhead_total),
            alloc: memory::alloc_stats(),
            rss: memory::rss(),
        }
    }

    /// used_memory beyond start-up (at least 1).
    fn net(&self) -> u64 {
        self.total.saturating_sub(self.startup).max(1)
    }

    pub fn dataset_perc(&self) -> f64 {
        f64::from(self.dataset as f32 * 100.0 / self.net() as f32)
    }

    pub fn peak_perc(&self) -> f64 {
        f64::from(self.total as f32 * 100.0 / self.peak.max(1) as f32)
    }

    pub fn bytes_per_key(&self) -> u64 {
        self.net().checked_div(self.keys).unwrap_or(0)
    }

    /// RSS against used_memory (fragmentation), and its bytes.
    pub fn total_frag(&self) -> (f64, i64) {
        against(self.rss, self.total)
    }

    /// jemalloc's active pages against what it has allocated.
    pub fn allocator_frag(&self) -> (f64, i64) {
        against(self.alloc.active, self.alloc.allocated)
    }

    /// jemalloc's resident pages against its active ones.
    pub fn allocator_rss(&self) -> (f64, i64) {
        against(self.alloc.resident, self.alloc.active)
    }

    /// The process's RSS against jemalloc's resident pages.
    pub fn rss_extra(&self) -> (f64, i64) {
        against(self.rss, self.alloc.resident)
    }
}

const DOCTOR_EMPTY: &str = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n";
const DOCTOR_FINE: &str = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n";

/// MEMORY DOCTOR's report (Redis's getMemoryDoctorReport, its thresholds and texts).
pub fn doctor_report(srv: &Server) -> String {
    let mh = Overhead::measure(srv);
    // Redis calls an instance "empty" below 5 MB in all, its start-up memory (under 1 MB)
    // included. Skein starts with ~4.7 MB of shard tables, so the 5 MB are counted above
    // what it held at start-up: a fresh Skein is empty to the doctor as a fresh Redis is.
    if mh.total.saturating_sub(mh.startup) < 5 * 1024 * 1024 {
        return DOCTOR_EMPTY.to_string();
    }
    const TEN_MB: i64 = 10 << 20;
    let over = |(r, bytes): (f64, i64), at: f64| r > at && bytes > TEN_MB;
    let mut issues: Vec<String> = Vec::new();
    if mh.peak as f32 / mh.total as f32 > 1.5 {
        issues.push(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n".into());
    }
    if over(mh.total_frag(), 1.4) {
        issues.push(format!(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"{}\".\n\n", memory::allocator_name()));
    }
    if over(mh.allocator_frag(), 1.1) {
        issues.push(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n".into());
    }
    if over(mh.allocator_rss(), 1.1) {
        issues.push(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n".into());
    }
    if over(mh.rss_extra(), 1.1) {
        issues.push(" * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n".into());
    }
    if mh.clients_normal / mh.clients.max(1) as u64 > 200 * 1024 {
        issues.push(" * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n".into());
    }
    if mh.scripts > 1000 {
        issues.push(" * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n".into());
    }
    if issues.is_empty() {
        return DOCTOR_FINE.to_string();
    }
    let mut s =
        String::from("Sam, I detected a few issues in this Redis instance memory implants:\n\n");
    for i in issues {
        s.push_str(&i);
    }
    s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    s
}
