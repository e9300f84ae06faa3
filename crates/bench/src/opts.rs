//! Command-line options shared by every mode: where the server is, and the workload.
//! Workload options are optional so a scenario can supply its own defaults and the user
//! can still override any of them.

use crate::conn::Target;
use crate::spec::{self, DataSize, KeyPattern};
use crate::workload::{Template, Workload};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Clone, Debug)]
#[command(next_help_heading = "Server")]
pub struct TargetArgs {
    /// Server host name or address
    #[arg(short = 's', long, default_value = "127.0.0.1")]
    pub host: String,
    /// Server TCP port
    #[arg(short = 'p', long, default_value_t = 6379)]
    pub port: u16,
    /// Connect to this Unix socket instead of TCP
    #[arg(short = 'S', long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Password for AUTH
    #[arg(short = 'a', long, value_name = "PASSWORD")]
    pub auth: Option<String>,
    /// ACL user name for AUTH (with --auth)
    #[arg(long, requires = "auth")]
    pub user: Option<String>,
    /// Protocol: 2 or 3 (3 sends HELLO 3 on every connection)
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(2..=3))]
    pub resp: u8,
    /// Database to SELECT on every connection
    #[arg(long, value_name = "DB")]
    pub select_db: Option<u32>,
    /// Do not sample the server's INFO once a second on a side connection
    #[arg(long)]
    pub no_server_stats: bool,
}

impl TargetArgs {
    pub fn target(&self) -> Target {
        Target {
            host: self.host.clone(),
            port: self.port,
            unix: self.unix.clone(),
            user: self.user.clone(),
            auth: self.auth.clone(),
            resp: self.resp,
        }
    }
}

#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Workload")]
pub struct LoadArgs {
    /// Load threads, each with its own event loop [default: 1]
    #[arg(short = 't', long)]
    pub threads: Option<usize>,
    /// Connections per thread [default: 50]
    #[arg(short = 'c', long)]
    pub clients: Option<usize>,
    /// Requests in flight per connection [default: 1]
    #[arg(short = 'P', long)]
    pub pipeline: Option<usize>,
    /// SET:GET ratio, e.g. 1:10 (ignored with --command) [default: 1:10]
    #[arg(long, value_parser = spec::ratio, value_name = "SET:GET")]
    pub ratio: Option<(u32, u32)>,
    /// Value size: 100, a range 32-1024, or a weighted list 32:60,1024:40 [default: 32]
    #[arg(short = 'd', long, value_parser = spec::data_size, value_name = "SIZE")]
    pub data_size: Option<DataSize>,
    /// Key pattern per side SET:GET: R random, G gaussian, S sequential, P parallel [default: R:R]
    #[arg(long, value_parser = spec::key_pattern, value_name = "SET:GET")]
    pub key_pattern: Option<(KeyPattern, KeyPattern)>,
    /// Smallest key number [default: 0]
    #[arg(long)]
    pub key_minimum: Option<u64>,
    /// Largest key number [default: 999999]
    #[arg(long)]
    pub key_maximum: Option<u64>,
    /// Text before the key number [default: key:]
    #[arg(long)]
    pub key_prefix: Option<String>,
    /// Zero-pad key numbers so each key is this many bytes long [default: no padding]
    #[arg(long, value_name = "BYTES")]
    pub key_width: Option<usize>,
    /// Gaussian pattern: centre of the keys [default: middle of the range]
    #[arg(long)]
    pub key_median: Option<f64>,
    /// Gaussian pattern: standard deviation [default: range / 6]
    #[arg(long)]
    pub key_stddev: Option<f64>,
    /// Requests per client; the run ends when all are answered (instead of --test-time)
    #[arg(short = 'n', long, conflicts_with = "test_time")]
    pub requests: Option<u64>,
    /// Seconds to run (after --warmup) [default: 10]
    #[arg(long, value_name = "SECONDS")]
    pub test_time: Option<f64>,
    /// Seconds at the start whose results are discarded [default: 0]
    #[arg(long, value_name = "SECONDS")]
    pub warmup: Option<f64>,
    /// A command template with __key__ and __data__ placeholders, e.g. "HSET h:__key__ f __data__"; repeatable
    #[arg(long = "command", value_name = "TEMPLATE")]
    pub commands: Vec<String>,
    /// Weight of each --command, in the same order (default 1 each)
    #[arg(long = "command-ratio", value_name = "N")]
    pub command_ratios: Vec<u32>,
    /// Open loop: send this many requests per second in all, measuring latency from each
    /// request's intended send time (no coordinated omission)
    #[arg(long, value_name = "OPS")]
    pub rate: Option<f64>,
    /// Seed for keys and sizes [default: 1]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Give every client its own random seed (otherwise all clients repeat one sequence)
    #[arg(long)]
    pub distinct_client_seed: bool,
}

/// Built-in defaults, which a scenario may replace before the user's options apply.
pub fn default_workload() -> Workload {
    Workload {
        threads: 1,
        clients: 50,
        pipeline: 1,
        templates: set_get(1, 10),
        data_size: DataSize::Fixed(32),
        key_pattern: (KeyPattern::Random, KeyPattern::Random),
        key_minimum: 0,
        key_maximum: 999_999,
        key_prefix: "key:".into(),
        key_width: 0,
        key_median: None,
        key_stddev: None,
        requests: None,
        test_time: 10.0,
        warmup: 0.0,
        rate: None,
        seed: 1,
        distinct_client_seed: false,
    }
}

/// SET and GET templates weighted by a ratio (a zero side is left out).
pub fn set_get(set: u32, get: u32) -> Vec<Template> {
    let mut t = Vec::new();
    if set > 0 {
        t.push(Template::parse("SET __key__ __data__", set).expect("valid template"));
    }
    if get > 0 {
        t.push(Template::parse("GET __key__", get).expect("valid template"));
    }
    t
}

impl LoadArgs {
    /// Applies the options the user gave on top of `base`, and checks the result.
    pub fn resolve(&self, mut w: Workload) -> Result<Workload, String> {
        macro_rules! take {
            ($($f:ident),*) => { $( if let Some(v) = &self.$f { w.$f = v.clone(); } )* };
        }
        take!(
            threads,
            clients,
            pipeline,
            data_size,
            key_pattern,
            key_minimum,
            key_maximum
        );
        take!(key_prefix, key_width, seed);
        if self.key_median.is_some() {
            w.key_median = self.key_median;
        }
        if self.key_stddev.is_some() {
            w.key_stddev = self.key_stddev;
        }
        if let Some(n) = self.requests {
            w.requests = Some(n);
        }
        if let Some(t) = self.test_time {
            w.test_time = t;
            w.requests = None;
        }
        if let Some(t) = self.warmup {
            w.warmup = t;
        }
        if self.rate.is_some() {
            w.rate = self.rate;
        }
        w.distinct_client_seed |= self.distinct_client_seed;
        if !self.commands.is_empty() {
            if self.ratio.is_some() {
                return Err(
                    "--ratio applies to the built-in SET/GET; with --command use --command-ratio"
                        .into(),
                );
            }
            if self.command_ratios.len() > self.commands.len() {
                return Err("more --command-ratio values than --command templates".into());
            }
            w.templates = self
                .commands
                .iter()
                .enumerate()
                .map(|(i, c)| Template::parse(c, self.command_ratios.get(i).copied().unwrap_or(1)))
                .collect::<Result<_, _>>()?;
            if w.templates.iter().all(|t| t.weight == 0) {
                return Err("every --command-ratio is 0: nothing to send".into());
            }
        } else if !self.command_ratios.is_empty() {
            return Err("--command-ratio needs --command".into());
        } else if let Some((s, g)) = self.ratio {
            w.templates = set_get(s, g);
        }
        validate(&w)?;
        Ok(w)
    }
}

pub fn validate(w: &Workload) -> Result<(), String> {
    if w.threads == 0 || w.threads > 1024 {
        return Err("--threads must be between 1 and 1024".into());
    }
    if w.clients == 0 || w.clients > 100_000 {
        return Err("--clients must be between 1 and 100000".into());
    }
    if w.pipeline == 0 || w.pipeline > 100_000 {
        return Err("--pipeline must be between 1 and 100000".into());
    }
    if w.key_minimum > w.key_maximum {
        return Err(format!(
            "--key-minimum ({}) is above --key-maximum ({})",
            w.key_minimum, w.key_maximum
        ));
    }
    if w.requests == Some(0) {
        return Err("--requests must be above 0".into());
    }
    if !(w.test_time.is_finite() && w.test_time >= 0.0)
        || (w.requests.is_none() && w.test_time == 0.0)
    {
        return Err("--test-time must be above 0".into());
    }
    if !(w.warmup.is_finite() && w.warmup >= 0.0) {
        return Err("--warmup must be 0 or more".into());
    }
    if let Some(r) = w.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err("--rate must be above 0".into());
        }
    }
    if w.key_stddev.is_some_and(|s| s.is_nan() || s <= 0.0) {
        return Err("--key-stddev must be above 0".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        load: LoadArgs,
        #[command(flatten)]
        target: TargetArgs,
    }

    fn parse(args: &[&str]) -> Result<Workload, String> {
        let t = T::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        t.load.resolve(default_workload())
    }

    #[test]
    fn defaults_and_overrides() {
        let w = parse(&[]).unwrap();
        assert_eq!((w.threads, w.clients, w.pipeline), (1, 50, 1));
        assert_eq!(w.templates.len(), 2);
        let w = parse(&[
            "-t",
            "4",
            "-c",
            "25",
            "--ratio",
            "1:1",
            "-d",
            "100",
            "--test-time",
            "3",
        ])
        .unwrap();
        assert_eq!((w.threads, w.clients), (4, 25));
        assert_eq!(w.plan(), vec![0, 1]);
        assert_eq!(w.test_time, 3.0);
        let w = parse(&["--ratio", "0:1"]).unwrap();
        assert_eq!(w.templates.len(), 1);
        assert_eq!(w.templates[0].label, "GET");
    }

    #[test]
    fn command_templates() {
        let w = parse(&[
            "--command",
            "INCR c:__key__",
            "--command",
            "GET c:__key__",
            "--command-ratio",
            "3",
        ])
        .unwrap();
        assert_eq!(w.plan(), vec![0, 0, 0, 1]);
        assert!(parse(&["--command", "GET __key__", "--ratio", "1:1"])
            .unwrap_err()
            .contains("--command-ratio"));
        assert!(parse(&["--command-ratio", "2"])
            .unwrap_err()
            .contains("needs --command"));
    }

    #[test]
    fn bad_options_say_why() {
        let cases: &[(&[&str], &str)] = &[
            (&["--ratio", "x"], "SET:GET"),
            (&["--data-size", "x5"], "not a size"),
            (&["--key-pattern", "Q:R"], "not a key pattern"),
            (&["--threads", "0"], "--threads"),
            (
                &["--key-minimum", "10", "--key-maximum", "5"],
                "above --key-maximum",
            ),
            (
                &["--requests", "5", "--test-time", "1"],
                "cannot be used with",
            ),
            (&["--rate", "0"], "--rate must be above 0"),
            (&["--resp", "4"], "not in 2..=3"),
            (&["--user", "u"], "--auth"),
            (&["--requests", "0"], "--requests must be above 0"),
            (&["--pipeline", "x"], "invalid digit"),
        ];
        for (args, want) in cases {
            let e = parse(args).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }
}
