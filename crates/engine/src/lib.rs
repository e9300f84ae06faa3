//! Skein's storage engine: the keyspace, its values and their expiry. No sockets, no
//! threads: the server crate drives it.

pub mod glob;
pub mod keybytes;
pub mod keyspace;
pub mod rdb;
pub mod shard;
pub mod value;

pub use keybytes::KeyBytes;
pub use keyspace::{Db, Keyspace, MultiGuard};
pub use shard::{hash_key, Entry, Shard, NO_EXPIRE};
pub use value::{StrValue, Value};

/// Current Unix time in milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
