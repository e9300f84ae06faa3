//! `skein-server [config-file] [--name value ...]`

use skein_server::{config, log, server::Server};
use std::sync::Arc;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn usage() -> ! {
    eprintln!("Usage: ./skein-server [/path/to/redis.conf] [options] [-]");
    eprintln!("       ./skein-server - (read config from stdin)");
    eprintln!("       ./skein-server -v or --version");
    eprintln!("       ./skein-server -h or --help");
    eprintln!();
    eprintln!("Examples:");
    eprintln!("       ./skein-server (run the server with default config)");
    eprintln!("       ./skein-server /etc/redis/6379.conf");
    eprintln!("       ./skein-server --port 7777");
    eprintln!("       ./skein-server --port 7777 --replicaof 127.0.0.1 8888");
    eprintln!("       ./skein-server /etc/myredis.conf --loglevel verbose --sentinel");
    std::process::exit(1);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-v" | "--version") => {
            println!(
                "Skein server v={} (Redis {} compatible) bits=64",
                env!("CARGO_PKG_VERSION"),
                skein_server::REDIS_VERSION
            );
            return;
        }
        Some("-h" | "--help") => usage(),
        _ => {}
    }
    let (file, overrides) = config::args_to_text(&args);
    let mut cfg = config::Config::default();
    let mut text = String::new();
    let mut base = std::path::PathBuf::from(".");
    if let Some(f) = &file {
        if f == "-" {
            use std::io::Read;
            let _ = std::io::stdin().read_to_string(&mut text);
        } else {
            match std::fs::read_to_string(f) {
                Ok(t) => text = t,
                Err(e) => {
                    eprintln!("Fatal error, can't open config file '{f}': {e}");
                    std::process::exit(1);
                }
            }
            let p = std::path::PathBuf::from(f);
            if let Some(parent) = p.parent() {
                base = parent.to_path_buf();
            }
            cfg.file = std::fs::canonicalize(&p).ok();
        }
    }
    text.push('\n');
    text.push_str(&overrides);
    if let Err(e) = cfg.load_text(&text, &base, 0) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    log::init(&cfg.get("logfile"));
    let dir = cfg.get("dir");
    if std::env::set_current_dir(&dir).is_err() {
        eprintln!("Can't chdir to '{dir}'");
        std::process::exit(1);
    }
    let pidfile = cfg.get("pidfile");
    if !pidfile.is_empty() {
        let _ = std::fs::write(&pidfile, format!("{}\n", std::process::id()));
    }
    let srv = Arc::new(Server::new(cfg));
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
