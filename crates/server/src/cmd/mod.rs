//! Command handlers, one module per command family; each module exports `COMMANDS`, a list
//! of (full name, handler) rows joined with the JSON definitions in [`table`]. What runs
//! around a handler (checks, locks, effects, statistics) is [`crate::dispatch`].

pub mod acl;
pub mod args;
pub mod bitmaps;
pub mod blocking;
pub mod client;
pub mod cluster;
pub mod coll;
pub mod command;
pub mod config;
pub mod connection;
pub mod debug;
pub mod dump;
pub mod failover;
pub mod functions;
pub mod geo;
pub mod hashes;
pub mod help;
pub mod hyperloglog;
pub mod info;
pub mod keys;
pub mod keyspec;
pub mod latency;
pub mod lists;
pub mod lolwut;
pub mod memory;
pub mod migrate;
pub mod module;
pub mod name_index;
pub mod object;
pub mod persist;
pub mod pubsub;
pub mod replication;
pub mod scan_args;
pub mod scripting;
pub mod server_cmds;
pub mod sets;
pub mod slowlog;
pub mod sort;
pub mod streams;
pub mod strings;
pub mod table;
pub mod tracking;
pub mod transactions;
pub mod zsets;

use crate::clients::ClientInfo;
use crate::propagate::{Op, PropagateAs};
use crate::server::Server;
use engine::Locked;
use resp::ReplyBuf;
use std::collections::HashMap;
use std::sync::Arc;

/// A command implementation: arguments (name first) in, reply into `ctx.out`.
pub type Handler = fn(&mut Ctx, &[&[u8]]);

/// Whether replies are sent (CLIENT REPLY ON|OFF|SKIP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReplyMode {
    #[default]
    On,
    Off,
    /// Skip the reply of the next command only.
    SkipNext,
    /// Skipping the current command's reply.
    Skipping,
}

/// The per-connection state commands see and change.
pub struct ClientState {
    pub id: u64,
    pub db: usize,
    pub authenticated: bool,
    /// The ACL user commands run as; `None` for the AOF's and the master's clients, which
    /// run anything (Redis's NULL user).
    pub user: Option<Arc<crate::acl::UserSlot>>,
    pub info: Arc<ClientInfo>,
    /// Close the connection once the pending replies are written (QUIT, protocol error).
    pub close_after_reply: bool,
    pub reply_mode: ReplyMode,
    pub worker: usize,
    /// Bit i set: argv[i] of the running command is shown as "(redacted)" (AUTH, HELLO).
    pub redacted: u64,
    /// The running command's error reply is not one Redis counts (DEBUG ERROR writes its
    /// text as a raw reply): the dispatcher counts no failure or error stat for it.
    pub uncounted_error: bool,
    /// The running command's error reply is one already in the error statistics (a
    /// script's error table saying `ignore_error_stats_update`): the dispatcher counts
    /// the command's failure only.
    pub error_counted: bool,
    /// Failed calls the running command counts beyond its own reply's (a script's
    /// reply holding error replies).
    pub extra_failures: u64,
    /// The client reads the propagation stream (DEBUG PROPAGATION START).
    pub propagation_reader: bool,
    /// What REPLCONF said, and PSYNC/SYNC's request: once its replies are written, the
    /// worker hands the connection to a replica thread (`crate::repl::serve`).
    pub replconf: crate::repl::Request,
    pub become_replica: bool,
    /// A command of this client's has put something into the replication stream (WAIT
    /// then waits for the replicas to acknowledge the stream so far; Redis's `woff`).
    pub wrote: bool,
    /// Commands queued after MULTI.
    pub multi: Option<transactions::MultiState>,
    /// Keys under WATCH.
    pub watched: Vec<crate::watch::Watched>,
    /// The wait of a blocking command (BLPOP...) not yet finished: no further command
    /// runs until it is.
    pub blocked: Option<Arc<crate::blocking::Waiter>>,
    /// A heavy command running on the background pool: no further command runs until
    /// its reply is back (see [`crate::offload`]).
    pub offloaded: Option<Arc<crate::offload::Reply>>,
    /// Memory was over `maxmemory` with nothing left to evict when the running top-level
    /// command started (Redis's pre_command_oom_state): a script's first write fails.
    pub oom_at_start: bool,
    /// The previous command was a CLIENT subcommand that exists (CLIENT CACHING survives it).
    pub prev_was_client: bool,
    /// SCRIPT DEBUG: debugging is on, or a debugging session runs (`crate::script::ldb`).
    pub ldb: Option<Box<crate::script::ldb::ClientLdb>>,
}

impl ClientState {
    /// A fresh client state for `id` on `worker`, in database `db`: how a client starts,
    /// and how the background pool runs one of its commands.
    pub fn detached(id: u64, db: usize, worker: usize, info: Arc<ClientInfo>) -> ClientState {
        ClientState {
            id,
            db,
            authenticated: true,
            user: None,
            info,
            close_after_reply: false,
            reply_mode: ReplyMode::On,
            worker,
            redacted: 0,
            uncounted_error: false,
            error_counted: false,
            extra_failures: 0,
            propagation_reader: false,
            replconf: Default::default(),
            become_replica: false,
            wrote: false,
            multi: None,
            watched: Vec::new(),
            blocked: None,
            offloaded: None,
            oom_at_start: false,
            prev_was_client: false,
            ldb: None,
        }
    }

    /// Commands other than AUTH and HELLO are refused (Redis's authRequired): not
    /// authenticated while the default user needs a password or is off.
    pub fn needs_auth(&self, srv: &Server) -> bool {
        !self.authenticated && srv.acl.auth_required()
    }

    /// Authenticated as `user` (AUTH, HELLO AUTH, RESET back to the default user).
    pub fn set_user(&mut self, user: Arc<crate::acl::UserSlot>) {
        *self.info.user.lock() = user.name.clone();
        self.user = Some(user);
    }

    /// The connection is going away: give back what the client holds server-wide.
    pub fn leave(&mut self, srv: &Server) {
        if self.propagation_reader {
            srv.propagation.detach();
            self.propagation_reader = false;
        }
        self.end_transaction(srv);
        if let Some(w) = self.blocked.take() {
            srv.blocking.cancel(&w);
        }
    }
}

/// What a handler works with. (`keys` is borrowed, not moved in: a `Locked` is a few
/// hundred bytes, and moving it costs a copy on every command.)
pub struct Ctx<'a, 'k> {
    pub srv: &'a Server,
    pub client: &'a mut ClientState,
    pub out: &'a mut ReplyBuf,
    /// The shards the dispatcher locked for this command: every read and write of a key
    /// goes through it, and every write records its change event there.
    pub keys: &'a mut Locked<'k>,
    /// How the command is propagated, if it changed anything (handlers set rewrites).
    pub propagate: PropagateAs,
    /// Inside EXEC: the propagated commands of the transaction so far.
    pub exec_ops: Option<Vec<Op>>,
}

impl<'a> Ctx<'a, '_> {
    pub fn worker_stats(&self) -> &'a crate::stats::WorkerStats {
        let srv: &'a Server = self.srv;
        &srv.stats.workers[self.client.worker]
    }
}

/// Every handler Skein has, by full name.
pub fn handlers() -> HashMap<&'static str, Handler> {
    let families: &[&[(&'static str, Handler)]] = &[
        strings::COMMANDS,
        transactions::COMMANDS,
        bitmaps::COMMANDS,
        hyperloglog::COMMANDS,
        keys::COMMANDS,
        object::COMMANDS,
        memory::COMMANDS,
        dump::COMMANDS,
        persist::COMMANDS,
        connection::COMMANDS,
        acl::COMMANDS,
        client::COMMANDS,
        tracking::COMMANDS,
        server_cmds::COMMANDS,
        config::COMMANDS,
        command::COMMANDS,
        info::COMMANDS,
        slowlog::COMMANDS,
        latency::COMMANDS,
        debug::COMMANDS,
        pubsub::COMMANDS,
        lists::COMMANDS,
        hashes::COMMANDS,
        sets::COMMANDS,
        zsets::COMMANDS,
        geo::COMMANDS,
        blocking::COMMANDS,
        streams::COMMANDS,
        sort::COMMANDS,
        scripting::COMMANDS,
        functions::COMMANDS,
        replication::COMMANDS,
        failover::COMMANDS,
        cluster::COMMANDS,
        module::COMMANDS,
        lolwut::COMMANDS,
        migrate::COMMANDS,
    ];
    families.iter().flat_map(|f| f.iter().copied()).collect()
}
