//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, ...): the waiter registry, and
//! serving waiters when a key they wait on is created, from any worker.
//!
//! - **Registration** happens in the blocking command's handler, with the shards of all
//!   its keys held by the dispatcher: a push to one of those keys either ran before (and
//!   the command found the data) or runs after and sees the registration.
//! - **Readiness**: while any client is blocked, change events are kept one by one
//!   ([`crate::dispatch::effects::events_wanted`]); a key created (`new`) that has
//!   waiters is noted, with the creating command's locks still held, in a per-thread
//!   ready list.
//! - **Serving**: once that command (or the whole MULTI/EXEC) has finished and released
//!   its locks, the same thread serves the ready keys ([`serve_ready`]): for each key, the
//!   first waiter of the kind the key now holds is served under the key's lock (and its
//!   BLMOVE destination's), its reply handed to its connection and its worker woken; then
//!   the next, until the key is gone. A BLMOVE that creates its destination makes that
//!   key ready in turn. So waiters are served first-blocked first, each element goes to
//!   exactly one client, and the pushing client's reply leaves only after its waiters
//!   were served.
//! - **Finishing** a waiter (served, timed out, CLIENT UNBLOCK, disconnected) happens once,
//!   under the waiter's own mutex: whoever finds it still waiting decides. A wake-up
//!   names the client (its `Arc<Waiter>`), never a reusable slot.
//!
//! Nothing here is touched by a non-blocking command while no client is blocked.

mod registry;
mod serve;

pub use registry::{Blocking, Kind, Op, Waiter};
pub use serve::{note_changes, reply_key_and_pairs, serve_ready};
