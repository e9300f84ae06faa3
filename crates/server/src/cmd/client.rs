//! CLIENT subcommands and MONITOR.

use super::Handler;

pub const COMMANDS: &[(&str, Handler)] = &[];
