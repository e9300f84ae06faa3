//! What eviction needs from the keyspace: the per-key access field kept as Redis keeps it
//! under each policy ([`access`]), and the choice of keys to evict ([`pool`]).

pub mod access;
pub mod pool;

pub use pool::{Candidate, Pool, Score};
