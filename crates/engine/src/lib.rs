//! Skein's storage engine: the keyspace, its values and their expiry. No sockets, no
//! threads: the server crate drives it.

pub mod clock;
pub mod coll;
pub mod entry;
pub mod event;
pub mod evict;
pub mod expiry;
pub mod glob;
pub mod hll;
pub mod keyspace;
pub mod locked;
pub mod lockstat;
pub mod mem;
pub mod rdb;
pub mod release;
pub mod shard;
pub mod shard_lock;
pub mod snapshot;
pub mod ttl_map;
pub mod value;

pub use clock::{begin_batch, lru_clock, now_ms, wall_ms};
pub use entry::{Entry, StrMut, ValueMut, NO_EXPIRE};
pub use event::{Change, Changes, DbChange, Event};
pub use expiry::{Expiry, OnExpired};
pub use keyspace::{Db, Keyspace};
pub use locked::{Locked, Plan, Scope};
pub use lockstat::LockWaitTotals;
pub use shard::{hash_key, Shard};
pub use value::{StrRef, StrValue, Value, ValueRef};
