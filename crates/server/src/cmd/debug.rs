//! DEBUG subcommands.

use super::Handler;

pub const COMMANDS: &[(&str, Handler)] = &[];
