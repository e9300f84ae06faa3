//! What eviction needs from the keyspace: the per-key access field kept as Redis keeps it
//! under each policy ([`access`]).

pub mod access;
