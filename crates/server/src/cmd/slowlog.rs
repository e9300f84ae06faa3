//! SLOWLOG and LATENCY: recording slow commands and latency events.

use super::Handler;

pub const COMMANDS: &[(&str, Handler)] = &[];
