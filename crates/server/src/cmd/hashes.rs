//! Hash commands (handlers added family by family on the command seam; see [`super::coll`]).

use super::Handler;

pub const COMMANDS: &[(&str, Handler)] = &[];
