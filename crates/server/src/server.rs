//! State shared by every worker: keyspace, configuration, command table, clients, stats.

use crate::clients::ClientRegistry;
use crate::cmd::table::CommandTable;
use crate::config::Config;
use crate::propagate::Propagation;
use crate::stats::Stats;
use crate::watch::Watches;
use engine::Keyspace;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

pub struct Server {
    pub config: Config,
    pub keyspace: Keyspace,
    pub commands: CommandTable,
    pub clients: ClientRegistry,
    pub stats: Stats,
    /// Key versions for WATCH.
    pub watches: Watches,
    /// The ordered stream of propagated writes (AOF, replicas).
    pub propagation: Propagation,
    /// Clients blocked on keys.
    pub blocking: crate::blocking::Blocking,
    /// Client-side caching (CLIENT TRACKING).
    pub tracking: crate::tracking::Tracking,
    /// Pub/sub subscriptions (channels, patterns, shard channels).
    pub pubsub: crate::pubsub::Registry,
    /// The Lua script cache (EVAL, SCRIPT LOAD), one for every worker.
    pub scripts: crate::script::cache::Scripts,
    pub started: Instant,
    pub start_unix_ms: i64,
    /// Set by SHUTDOWN: workers flush their clients' replies and stop.
    pub shutting_down: AtomicBool,
    pub next_client_id: AtomicU64,
    /// Unique per run, like Redis's run_id.
    pub run_id: String,
    pub tcp_port: AtomicU64,
    /// RDB saving and loading state (INFO persistence, `save` rules).
    pub persist: crate::persist::Persistence,
    /// The Prometheus endpoint (`metrics-port`), when on.
    pub metrics: crate::metrics::Endpoint,
    /// The background pool heavy commands run on.
    pub offload: crate::offload::Pool,
    /// Connected replicas (the master's side of replication).
    pub repl: crate::repl::Repl,
    /// ACL users (AUTH, ACL SETUSER) and the ACL log.
    pub acl: crate::acl::Acl,
    /// The TLS context (`tls-port`), when configured.
    pub tls: crate::net::tls::Tls,
}

impl Server {
    pub fn new(config: Config) -> Server {
        let dbs = config.get_i64("databases").max(1) as usize;
        let shards = config.get_i64("shards-per-db").max(1) as usize;
        let workers = config.workers();
        let run_id = crate::stats::random_hex40();
        let commands = CommandTable::load(workers);
        let acl = crate::acl::Acl::new(&commands, &config.get("requirepass"));
        Server {
            keyspace: Keyspace::new(dbs, shards),
            commands,
            acl,
            clients: ClientRegistry::default(),
            stats: Stats::new(workers),
            watches: Watches::new(dbs),
            propagation: Propagation::new(workers + 1),
            blocking: Default::default(),
            pubsub: crate::pubsub::Registry::default(),
            tracking: Default::default(),
            scripts: Default::default(),
            started: Instant::now(),
            start_unix_ms: engine::now_ms(),
            shutting_down: AtomicBool::new(false),
            next_client_id: AtomicU64::new(1),
            run_id,
            tcp_port: AtomicU64::new(config.get_i64("port") as u64),
            persist: crate::persist::Persistence::new(engine::wall_ms() / 1000),
            metrics: Default::default(),
            offload: Default::default(),
            repl: Default::default(),
            tls: Default::default(),
            config,
        }
    }

    /// A client's CLIENT LIST line.
    pub fn client_line(&self, c: &crate::clients::ClientInfo) -> String {
        let all = &self.commands.all;
        c.describe(engine::now_ms(), |i| {
            all.get(i).map(|d| d.fullname.clone()).unwrap_or_default()
        })
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }
}
