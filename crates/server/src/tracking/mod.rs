//! Client-side caching (CLIENT TRACKING), as Redis 7.0's tracking.c.
//!
//! - **Default mode**: after a read-only command of a tracking client, its keys go into
//!   the server-wide [`table::Table`] (key -> client ids, 64 shards), with the command's
//!   shard locks still held. A change to a key (a change event that signals the key as
//!   modified, fed from `dispatch::effects::consume` while the writer still holds the
//!   key's lock) takes its entry out of the table and sends each client in it an
//!   invalidation (NOLOOP skips the writer itself).
//! - **BCAST mode** ([`bcast`]): clients register prefixes; every change of a matching key
//!   is noted in a per-thread batch, sent as one message per prefix when the worker has
//!   run the commands of one read (before their replies are written), or at once
//!   elsewhere.
//! - **Delivery** ([`deliver`]): through the target's pub/sub inbox (drained before each
//!   command it runs), as a RESP3 `invalidate` push, or as a `message` on
//!   `__redis__:invalidate` to a RESP2 redirect client in pub/sub mode.
//! - FLUSHDB / FLUSHALL send every tracking client a null invalidation and empty the
//!   table.
//!
//! Nothing of this runs while no client tracks and the table is empty (a few relaxed loads
//! per command: the count of tracking clients, the table's key count, the client's own
//! flags after a read-only command).

pub mod bcast;
pub mod client;
pub mod deliver;
pub mod table;

pub use client::{ClientTracking, Options};

use crate::clients::{flag, ClientInfo};
use crate::cmd::table::CommandDef;
use crate::cmd::{ClientState, Ctx};
use crate::server::Server;
use engine::{Changes, DbChange, Event};
use parking_lot::RwLock;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Every tracking flag, cleared when tracking is turned off.
pub const ALL_FLAGS: u32 = flag::TRACKING
    | flag::TRACKING_BROKEN_REDIR
    | flag::TRACKING_BCAST
    | flag::TRACKING_OPTIN
    | flag::TRACKING_OPTOUT
    | flag::TRACKING_CACHING
    | flag::TRACKING_NOLOOP;

const TARGET_SHARDS: usize = 16;

/// Tracking clients by id, one shard of them.
type Targets = RwLock<HashMap<u64, Arc<ClientInfo>>>;

/// The server-wide tracking state (a field of `Server`).
pub struct Tracking {
    /// Clients with tracking on (INFO tracking_clients).
    clients: AtomicUsize,
    /// Tracking clients by id: where the table's ids lead.
    targets: Box<[Targets]>,
    pub table: table::Table,
    pub prefixes: bcast::Prefixes,
    /// Rounds in a row the table stayed over `tracking-table-max-keys` (Redis's
    /// timeout_counter: each round tries harder).
    limit_rounds: AtomicU32,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            clients: AtomicUsize::new(0),
            targets: (0..TARGET_SHARDS).map(|_| RwLock::default()).collect(),
            table: table::Table::default(),
            prefixes: bcast::Prefixes::default(),
            limit_rounds: AtomicU32::new(0),
        }
    }
}

impl Tracking {
    /// Does any client track? (One relaxed load.)
    #[inline]
    pub fn enabled(&self) -> bool {
        self.clients.load(Relaxed) != 0
    }

    /// Must key changes be looked at: a client tracks, or the table still holds keys
    /// of clients gone or turned off (removed lazily, as Redis does)?
    #[inline]
    pub fn active(&self) -> bool {
        self.enabled() || self.table.keys() != 0
    }

    pub fn clients(&self) -> usize {
        self.clients.load(Relaxed)
    }

    fn shard(&self, id: u64) -> &Targets {
        &self.targets[id as usize % TARGET_SHARDS]
    }

    /// The tracking client `id`, if it still tracks.
    pub fn target(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.shard(id).read().get(&id).cloned()
    }

    fn add_target(&self, c: &Arc<ClientInfo>) {
        self.shard(c.id).write().insert(c.id, c.clone());
        self.clients.fetch_add(1, Relaxed);
    }

    fn remove_target(&self, id: u64) {
        if self.shard(id).write().remove(&id).is_some() {
            self.clients.fetch_sub(1, Relaxed);
        }
    }

    /// Every tracking client.
    pub fn all_targets(&self) -> Vec<Arc<ClientInfo>> {
        let mut v = Vec::new();
        for s in self.targets.iter() {
            v.extend(s.read().values().cloned());
        }
        v
    }
}

thread_local! {
    /// The client whose command this thread runs (0: none), for NOLOOP.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// Marks this thread as running `id`'s command until dropped.
pub struct Running(u64);

impl Running {
    pub fn enter(id: u64) -> Running {
        Running(CURRENT.with(|c| c.replace(id)))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

fn current() -> u64 {
    CURRENT.with(|c| c.get())
}

/// Dispatcher hook, before each command a client sends: CLIENT CACHING applies to the
/// next command only (the whole transaction after MULTI; another CLIENT subcommand keeps
/// it), as Redis's resetClient clears it; and the table is brought within
/// `tracking-table-max-keys` (lowered by CONFIG SET, say), as Redis's processCommand does.
pub fn before_command(srv: &Server, client: &mut ClientState, argv: &[&[u8]]) {
    if !srv.tracking.enabled() {
        return;
    }
    limit_table(srv);
    let is_client = is_client_subcommand(srv, argv);
    let prev_client = std::mem::replace(&mut client.prev_was_client, is_client);
    if !prev_client && !client.in_multi() && client.info.has(flag::TRACKING_CACHING) {
        client.info.set_flag(flag::TRACKING_CACHING, false);
    }
}

/// Does `argv` name a CLIENT subcommand that exists (Redis's `c->cmd->proc ==
/// clientCommand`, whether the command then fails or not)? `CLIENT` alone (the container)
/// and `CLIENT <unknown>` do not: after them a pending CLIENT CACHING is dropped.
fn is_client_subcommand(srv: &Server, argv: &[&[u8]]) -> bool {
    argv.len() >= 2
        && argv[0].eq_ignore_ascii_case(b"client")
        && srv.commands.lookup(argv).is_some()
}

/// Dispatcher hook, after a read-only command ran (its locks still held): remember its
/// keys for the client (Redis's trackingRememberKeys).
pub fn after_read(ctx: &Ctx, cmd: &CommandDef, argv: &[&[u8]]) {
    let info = &ctx.client.info;
    let f = info.flags.load(Relaxed);
    if f & flag::TRACKING == 0 || f & flag::TRACKING_BCAST != 0 {
        return;
    }
    let optin = f & flag::TRACKING_OPTIN != 0;
    let optout = f & flag::TRACKING_OPTOUT != 0;
    let caching = f & flag::TRACKING_CACHING != 0;
    if (optin && !caching) || (optout && caching) {
        return;
    }
    // Scripts' read-only entry points: the commands they run are remembered instead.
    if cmd.flags.pubsub || matches!(cmd.name.as_str(), "eval_ro" | "evalsha_ro" | "fcall_ro") {
        return;
    }
    let srv = ctx.srv;
    let mut added = false;
    crate::dispatch::plan::each_spec_key(cmd, argv, |k| {
        srv.tracking.table.remember(k, info.id);
        added = true;
    });
    if added {
        limit_table(srv);
    }
}

/// Keep the table within `tracking-table-max-keys`: invalidate random keys, with an
/// effort that grows each round the table stays over it (Redis's trackingLimitUsedSlots).
fn limit_table(srv: &Server) {
    let max = srv.config.hot.tracking_table_max_keys.load(Relaxed);
    let t = &srv.tracking;
    if max <= 0 || t.table.keys() <= max as u64 {
        if t.limit_rounds.load(Relaxed) != 0 {
            t.limit_rounds.store(0, Relaxed);
        }
        return;
    }
    let mut effort = 100 * (t.limit_rounds.load(Relaxed) + 1);
    while effort > 0 {
        effort -= 1;
        let Some((key, ids)) = t.table.take_random() else {
            break;
        };
        invalidate_ids(srv, &key, &ids, 0);
        if t.table.keys() <= max as u64 {
            t.limit_rounds.store(0, Relaxed);
            return;
        }
    }
    t.limit_rounds.fetch_add(1, Relaxed);
}

/// Change-event consumer (from `dispatch::effects::consume`, the writer's locks held):
/// invalidate the changed keys.
pub fn note_changes(srv: &Server, changes: &Changes) {
    let t = &srv.tracking;
    if !t.active() {
        return;
    }
    let writer = current();
    let bcast = t.prefixes.any();
    for c in changes.items() {
        if !c.event.signals() {
            continue;
        }
        let key = changes.key(c);
        // Expiry and eviction have no writer (Redis signals them with no client).
        let by = if c.event == Event::EXPIRED || c.event == Event::EVICTED {
            0
        } else {
            writer
        };
        if bcast {
            bcast::note(key, by);
        }
        if let Some(ids) = t.table.take(key) {
            invalidate_ids(srv, key, &ids, by);
        }
    }
    if changes
        .db_changes
        .iter()
        .any(|d| matches!(d, DbChange::Flushed(_)))
    {
        flushed(srv);
    }
    if bcast && !bcast::batching() {
        bcast::flush(srv);
    }
}

/// Send `key`'s invalidation to the clients `ids` that still track it in default mode
/// (not the writer itself when it asked for NOLOOP).
fn invalidate_ids(srv: &Server, key: &[u8], ids: &[u64], writer: u64) {
    let m = deliver::Message::keys(&[key]);
    for &id in ids {
        let Some(target) = srv.tracking.target(id) else {
            continue;
        };
        let f = target.flags.load(Relaxed);
        if f & flag::TRACKING == 0 || f & flag::TRACKING_BCAST != 0 {
            continue;
        }
        if f & flag::TRACKING_NOLOOP != 0 && id == writer {
            continue;
        }
        deliver::send(&target, &m);
    }
}

/// FLUSHDB / FLUSHALL: every tracking client gets a null invalidation ("everything"),
/// and the table is emptied.
fn flushed(srv: &Server) {
    // The null in the tracking client's protocol (even when redirected), as Redis.
    let null3 = deliver::Message::new(b"_\r\n".to_vec());
    let null2 = deliver::Message::new(b"$-1\r\n".to_vec());
    for c in srv.tracking.all_targets() {
        if c.has(flag::TRACKING) {
            let null = if c.resp.load(Relaxed) >= 3 {
                &null3
            } else {
                &null2
            };
            deliver::send(&c, null);
        }
    }
    srv.tracking.table.clear();
}

/// CLIENT TRACKING ON with checked options (Redis's enableTracking).
pub fn enable(
    srv: &Server,
    info: &Arc<ClientInfo>,
    opts: &Options,
    redirect_to: Option<&Arc<ClientInfo>>,
) {
    if !info.has(flag::TRACKING) {
        srv.tracking.add_target(info);
    }
    info.set_flag(flag::TRACKING, true);
    info.set_flag(
        flag::TRACKING_BROKEN_REDIR
            | flag::TRACKING_BCAST
            | flag::TRACKING_OPTIN
            | flag::TRACKING_OPTOUT
            | flag::TRACKING_NOLOOP,
        false,
    );
    info.tracking.set_redirect(opts.redirect, redirect_to);
    if opts.bcast {
        info.set_flag(flag::TRACKING_BCAST, true);
        if opts.prefixes.is_empty() {
            srv.tracking.prefixes.add(info, b"");
        }
        for p in &opts.prefixes {
            srv.tracking.prefixes.add(info, p);
        }
    }
    info.set_flag(flag::TRACKING_OPTIN, opts.optin);
    info.set_flag(flag::TRACKING_OPTOUT, opts.optout);
    info.set_flag(flag::TRACKING_NOLOOP, opts.noloop);
}

/// CLIENT TRACKING OFF, RESET, disconnection (Redis's disableTracking). The client's ids
/// stay in the table until their keys change or are evicted from it, as in Redis.
pub fn disable(srv: &Server, info: &ClientInfo) {
    if info.has(flag::TRACKING_BCAST) {
        srv.tracking.prefixes.remove_client(info);
    }
    if info.has(flag::TRACKING) {
        srv.tracking.remove_target(info.id);
        info.set_flag(ALL_FLAGS, false);
    }
}

/// CLIENT GETREDIR / CLIENT LIST `redir=`: the redirection while tracking, else -1.
pub fn redirect_shown(info: &ClientInfo) -> i64 {
    if info.has(flag::TRACKING) {
        info.tracking.redirect() as i64
    } else {
        -1
    }
}
