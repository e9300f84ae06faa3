//! skein-bench: a load generator for any RESP server (Redis, Skein...) that measures
//! throughput and latency, finds a node's capacity under a latency QoS, prints alarm
//! thresholds, and draws sweep reports.

mod alerts;
mod capacity;
mod conn;
mod driver;
mod hist;
mod html;
mod info;
mod opts;
mod pacer;
mod report;
mod resp;
mod run;
mod scenario;
mod slot_clock;
mod spec;
mod svg;
mod sweep;
mod workload;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "skein-bench",
    version,
    about = "Load generator and capacity finder for Redis-protocol (RESP) servers",
    long_about = "Load generator and capacity finder for Redis-protocol (RESP) servers.\n\n\
Modes:\n  \
run       drive a workload (closed loop, or open loop with --rate) and print a table of\n            \
throughput, hits/misses, latency percentiles and bandwidth per command\n  \
capacity  find the highest rate the server sustains while a latency QoS holds\n            \
(e.g. --qos 'p99<1ms') and print alarm thresholds at 100/90/80%\n  \
sweep     run a workload over value sizes, client counts or pipeline depths and write\n            \
a self-contained HTML report\n  \
report    draw the HTML report from sweep JSON files already written\n\n\
Examples:\n  \
skein-bench run -p 6379 --ratio 1:1 -d 100 --test-time 10\n  \
skein-bench run --rate 50000 --test-time 30 --json run.json\n  \
skein-bench run --scenario noisy-neighbor\n  \
skein-bench capacity --qos 'p99<1ms' --alerts alerts.yml\n  \
skein-bench sweep --data-sizes 100,1K,10K,100K --html report.html"
)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Drive a workload and print the result table
    Run(run_cmd::RunCmd),
    /// Find the highest rate that holds a latency QoS, and alarm thresholds
    Capacity(capacity::CapacityCmd),
    /// (internal) The second generator `capacity` runs beside itself
    #[command(hide = true)]
    CapacityPeer(capacity::PeerCmd),
    /// Run a workload over a list of sizes, client counts or pipelines; write an HTML report
    Sweep(sweep::SweepCmd),
    /// Draw the HTML report from sweep JSON files
    Report(sweep::ReportCmd),
}

mod run_cmd {
    use crate::opts::{default_workload, LoadArgs, TargetArgs};
    use crate::run::{run, RunFlags};
    use crate::scenario::Scenario;
    use clap::Args;
    use std::path::PathBuf;

    #[derive(Args)]
    pub struct RunCmd {
        #[command(flatten)]
        pub target: TargetArgs,
        #[command(flatten)]
        pub load: LoadArgs,
        /// A named preset reproducing a published experiment
        #[arg(long, value_enum, help_heading = "Workload")]
        pub scenario: Option<Scenario>,
        #[command(flatten)]
        pub scenario_args: crate::scenario::ScenarioArgs,
        /// Write the results, server samples and full histograms to this JSON file
        #[arg(long, value_name = "FILE", help_heading = "Output")]
        pub json: Option<PathBuf>,
        /// No progress line each second
        #[arg(short = 'q', long, help_heading = "Output")]
        pub quiet: bool,
    }

    impl RunCmd {
        pub fn exec(&self) -> Result<i32, String> {
            let flags = RunFlags {
                progress: !self.quiet,
                sample_server: !self.target.no_server_stats,
            };
            if let Some(s) = self.scenario {
                return crate::scenario::exec(s, self, flags);
            }
            let w = self.load.resolve(default_workload())?;
            let r = run(
                &self.target.target(),
                &w,
                self.target.select_db.unwrap_or(0),
                flags,
            )?;
            print!("{}", crate::report::run_table(&r));
            if let Some(p) = &self.json {
                crate::report::write_json(p, &r)?;
            }
            Ok(0)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.mode {
        Mode::Run(c) => c.exec(),
        Mode::Capacity(c) => c.exec(),
        Mode::CapacityPeer(c) => c.exec(),
        Mode::Sweep(c) => c.exec(),
        Mode::Report(c) => c.exec(),
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("skein-bench: {e}");
            ExitCode::from(1)
        }
    }
}
