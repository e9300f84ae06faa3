//! Skein's storage engine: the keyspace, its values and their expiry. No sockets, no
//! threads: the server crate drives it.

pub mod entry;
pub mod glob;
pub mod keyspace;
pub mod rdb;
pub mod shard;
pub mod value;

pub use entry::{Entry, NO_EXPIRE};
pub use keyspace::{Db, Keyspace, MultiGuard};
pub use shard::{hash_key, Shard};
pub use value::{StrMut, StrRef, StrValue, Value, ValueMut, ValueRef};

/// Current Unix time in milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
