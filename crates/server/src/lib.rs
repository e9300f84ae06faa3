//! Skein's server: networking, command table and dispatch, configuration, statistics.
//! The keyspace itself is the `engine` crate; the protocol codec is `resp`.

pub mod acl;
pub mod alloc;
pub mod blocking;
pub mod clients;
pub mod cmd;
pub mod config;
pub mod cron;
pub mod dispatch;
pub mod evict;
pub mod floatfmt;
pub mod geo;
pub mod hex;
pub mod latency;
pub mod lazyfree;
pub mod log;
pub mod memory;
pub mod metrics;
pub mod net;
pub mod notify;
pub mod offload;
pub mod outbuf;
pub mod overhead;
pub mod persist;
pub mod propagate;
pub mod pubsub;
pub mod repl;
pub mod script;
pub mod server;
pub mod slowlog;
pub mod stats;
pub mod supervise;
pub mod threadload;
pub mod tracking;
pub mod watch;

/// The Redis version Skein answers as (HELLO, INFO).
pub const REDIS_VERSION: &str = "7.0.15";

use server::Server;
use std::sync::Arc;

/// Start listeners, workers and the cron thread; returns once the server has stopped.
pub fn run(srv: Arc<Server>) -> Result<(), String> {
    // Start-up memory (Redis's initial_memory_usage): before any data is loaded.
    srv.stats.note_memory(memory::used_memory());
    srv.persist.attach(Arc::downgrade(&srv));
    srv.metrics.attach(Arc::downgrade(&srv));
    srv.offload.attach(Arc::downgrade(&srv));
    engine::release::install(lazyfree::release);
    persist::shutdown::install_signal_handlers();
    // Until the dataset is loaded (below, once listening), clients get -LOADING. With no
    // file there is nothing to wait for (Redis does not enter the loading state either):
    // a client connecting before the start-up path reaches the loader must be served.
    // With the AOF on, the AOF directory is loaded (or created) first, and no write may
    // come before the AOF reads the stream.
    if srv.config.get_bool("appendonly")
        || std::path::Path::new(&srv.config.get("dbfilename")).exists()
    {
        srv.persist
            .loading
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    net::tls::at_startup(&srv)?;
    net::fdlimit::adjust(&srv)?;
    let port = srv.config.get_i64("port") as u16;
    let backlog = srv.config.get_i64("tcp-backlog") as i32;
    let bind = srv.config.get("bind");
    let tcp = if port > 0 {
        net::listener::bind_tcp(&bind, port, backlog)?
    } else {
        Vec::new()
    };
    let tls_port = srv.config.get_i64("tls-port") as u16;
    let tls = if tls_port > 0 {
        net::listener::bind_tcp(&bind, tls_port, backlog).map_err(|e| {
            crate::log::warning(&e);
            format!("Failed listening on port {tls_port} (TLS), aborting.")
        })?
    } else {
        Vec::new()
    };
    let unix_path = srv.config.get("unixsocket");
    let unix = if unix_path.is_empty() {
        None
    } else {
        let _ = std::fs::remove_file(&unix_path);
        let l = std::os::unix::net::UnixListener::bind(&unix_path)
            .map_err(|e| format!("Failed opening Unix socket: {e}"))?;
        let perm = srv.config.get_i64("unixsocketperm");
        if perm > 0 {
            use std::os::unix::fs::PermissionsExt;
            let _ =
                std::fs::set_permissions(&unix_path, std::fs::Permissions::from_mode(perm as u32));
        }
        Some(l)
    };
    if tcp.is_empty() && tls.is_empty() && unix.is_none() {
        return Err("Configured to not listen anywhere, exiting.".to_string());
    }
    // INFO's tcp_port: the TLS port when there is no plain one, as in Redis.
    if let Some(l) = tcp.first().or(tls.first()) {
        if let Ok(a) = l.local_addr() {
            srv.tcp_port
                .store(a.port() as u64, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let n = srv.stats.workers.len();
    let mut workers = Vec::with_capacity(n);
    let mut threads = Vec::with_capacity(n);
    for i in 0..n {
        let (handle, thread) =
            net::worker::spawn(i, srv.clone()).map_err(|e| format!("worker: {e}"))?;
        workers.push(Arc::new(handle));
        threads.push(thread);
    }
    let never = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for l in tcp {
        net::listener::spawn_tcp(
            srv.clone(),
            Arc::new(l),
            workers.clone(),
            false,
            never.clone(),
        );
    }
    srv.tls.listen.start(&srv, tls_port, tls, &workers);
    if let Some(l) = unix {
        net::listener::spawn_unix(srv.clone(), l, unix_path.clone(), workers.clone());
    }
    cron::spawn(srv.clone());
    metrics::reconfigure(&srv)?;
    // Listening already: clients get -LOADING until the dataset is in (as in Redis).
    persist::load::at_startup(&srv);
    repl::link::at_startup(&srv);
    log::notice(&format!(
        "Skein {} ready to accept connections on port {} with {} workers",
        env!("CARGO_PKG_VERSION"),
        port,
        n
    ));
    supervise::ready(srv.repl.link.is_replica());
    for t in threads {
        let _ = t.join();
    }
    // A BGSAVE abandoned by the shutdown removes its temporary file once the shard it
    // waited for is free: give it a moment.
    for _ in 0..200 {
        if !srv.persist.bgsave_in_progress() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    if !unix_path.is_empty() {
        let _ = std::fs::remove_file(&unix_path);
    }
    Ok(())
}
