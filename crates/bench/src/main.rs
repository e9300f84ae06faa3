//! skein-bench: load generator for RESP servers (work in progress, see issue 7).

fn main() {
    eprintln!("skein-bench: see crates/bench/README.md");
    std::process::exit(2);
}
