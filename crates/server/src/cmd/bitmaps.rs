//! Bitmap commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO.

use super::Handler;

pub const COMMANDS: &[(&str, Handler)] = &[];
