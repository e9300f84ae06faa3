//! `skein-server [/path/to/redis.conf] [--name value ...] [-]`

use skein_server::config::load::{parse_argv, LoadError, Loader};
use skein_server::{config, log, server::Server};
use std::sync::Arc;

#[global_allocator]
static GLOBAL: skein_server::alloc::Counting = skein_server::alloc::Counting;

fn usage() -> ! {
    let lines = [
        "Usage: ./skein-server [/path/to/redis.conf] [options] [-]",
        "       ./skein-server - (read config from stdin)",
        "       ./skein-server -v or --version",
        "       ./skein-server -h or --help",
        "",
        "Examples:",
        "       ./skein-server (run the server with default conf)",
        "       echo 'maxmemory 128mb' | ./skein-server -",
        "       ./skein-server /etc/redis/6379.conf",
        "       ./skein-server --port 7777",
        "       ./skein-server --port 7777 --replicaof 127.0.0.1 8888",
        "       ./skein-server /etc/myredis.conf --loglevel verbose -",
        "       ./skein-server /etc/myredis.conf --loglevel verbose",
        "",
    ];
    for l in lines {
        eprintln!("{l}");
    }
    std::process::exit(1);
}

/// Redis's getAbsolutePath: `path` joined to the current directory (not resolved).
fn absolute(path: &str) -> std::path::PathBuf {
    let p = std::path::Path::new(path);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    std::env::current_dir()
        .map(|d| d.join(p))
        .unwrap_or_else(|_| p.to_path_buf())
}

/// Read the configuration as redis-server does; on error print Redis's report, exit 1.
fn load_config(args: &[String]) -> config::Config {
    let st = parse_argv(args);
    let mut cfg = config::Config::default();
    cfg.file = st.file.as_deref().map(absolute);
    let file = cfg.file.as_ref().map(|p| p.to_string_lossy().into_owned());
    let result = Loader::new(&cfg).load(file.as_deref(), st.stdin, &st.options);
    match result {
        Ok(()) => cfg,
        Err(LoadError::Fatal(text)) => {
            eprint!("{text}");
            std::process::exit(1);
        }
        Err(LoadError::Log(text)) => {
            log::warning(&text);
            std::process::exit(1);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-v" | "--version") => {
            println!(
                "Skein server v={} sha=00000000:0 malloc=jemalloc bits=64 build=skein-{}",
                skein_server::REDIS_VERSION,
                env!("CARGO_PKG_VERSION")
            );
            return;
        }
        Some("-h" | "--help") => usage(),
        _ => {}
    }
    let cfg = load_config(&args);
    log::init(&cfg.get("logfile"));
    // Before any thread starts: daemonize forks.
    let supervised = skein_server::supervise::start_supervision(&cfg);
    let background = cfg.get_bool("daemonize") && !supervised;
    if background {
        skein_server::supervise::daemonize();
    }
    // jemalloc-bg-thread (Redis's default: yes): jemalloc purges freed pages on its own
    // thread instead of on the worker threads.
    if cfg.get("jemalloc-bg-thread") == "yes" {
        let _ = tikv_jemalloc_ctl::background_thread::write(true);
    }
    let mut pidfile = cfg.get("pidfile");
    if background && pidfile.is_empty() {
        pidfile = skein_server::supervise::DEFAULT_PID_FILE.to_string();
    }
    if !pidfile.is_empty() {
        let _ = std::fs::write(&pidfile, format!("{}\n", std::process::id()));
    }
    let srv = Arc::new(Server::new(cfg));
    if let Err(e) = skein_server::acl::file::load_at_startup(&srv) {
        log::warning(&e);
        std::process::exit(1);
    }
    let result = skein_server::run(srv);
    if !pidfile.is_empty() {
        let _ = std::fs::remove_file(&pidfile);
    }
    match result {
        Ok(()) => {
            log::notice("Skein is now ready to exit, bye bye...");
        }
        Err(e) => {
            log::warning(&e);
            std::process::exit(1);
        }
    }
}
