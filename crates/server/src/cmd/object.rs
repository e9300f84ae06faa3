//! OBJECT and the keyspace commands that move values: COPY, MOVE.

use super::Handler;

pub const COMMANDS: &[(&str, Handler)] = &[];
