//! DUMP and RESTORE: Redis's serialized value format (RDB version 10 payload, CRC64 footer).

use super::Handler;

pub const COMMANDS: &[(&str, Handler)] = &[];
