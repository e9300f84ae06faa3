//! INFO and its sections.

use super::Handler;

pub const COMMANDS: &[(&str, Handler)] = &[];
