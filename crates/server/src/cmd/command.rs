//! COMMAND and its subcommands, answered from the command table.

use super::Handler;

pub const COMMANDS: &[(&str, Handler)] = &[];
