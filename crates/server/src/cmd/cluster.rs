//! CLUSTER (every subcommand of Redis 7.0.15's table), READONLY, READWRITE and ASKING on a
//! server without cluster support, as Redis answers with `cluster-enabled no`: each is
//! refused by its handler (arity and unknown subcommands are the dispatcher's, from the
//! command table, as for every command).

use super::{Ctx, Handler};

const DISABLED: &str = "ERR This instance has cluster support disabled";

pub const COMMANDS: &[(&str, Handler)] = &[
    ("cluster|addslots", disabled),
    ("cluster|addslotsrange", disabled),
    ("cluster|bumpepoch", disabled),
    ("cluster|count-failure-reports", disabled),
    ("cluster|countkeysinslot", disabled),
    ("cluster|delslots", disabled),
    ("cluster|delslotsrange", disabled),
    ("cluster|failover", disabled),
    ("cluster|flushslots", disabled),
    ("cluster|forget", disabled),
    ("cluster|getkeysinslot", disabled),
    ("cluster|help", disabled),
    ("cluster|info", disabled),
    ("cluster|keyslot", disabled),
    ("cluster|links", disabled),
    ("cluster|meet", disabled),
    ("cluster|myid", disabled),
    ("cluster|nodes", disabled),
    ("cluster|replicas", disabled),
    ("cluster|replicate", disabled),
    ("cluster|reset", disabled),
    ("cluster|saveconfig", disabled),
    ("cluster|set-config-epoch", disabled),
    ("cluster|setslot", disabled),
    ("cluster|shards", disabled),
    ("cluster|slaves", disabled),
    ("cluster|slots", disabled),
    ("readonly", disabled),
    ("readwrite", disabled),
    ("asking", disabled),
];

/// clusterCommand, readonlyCommand, readwriteCommand and askingCommand all start by
/// refusing when cluster support is off (CLUSTER HELP and KEYSLOT included).
fn disabled(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.error(DISABLED);
}
