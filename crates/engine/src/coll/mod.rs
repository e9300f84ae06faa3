//! The collection types (list, hash, set, sorted set, stream), each in Redis's encodings: a compact
//! one for small values (listpack, intset) converted to a large one (quicklist nodes, hash
//! table, skiplist) at Redis's thresholds, read from [`Limits`].

pub mod chunked;
pub mod dict;
pub mod dict_scan;
pub mod hash;
pub mod hash_table;
pub mod intset;
pub mod list;
pub mod listpack;
pub mod set;
pub mod stream;
pub mod zset;
pub mod zset_index;
pub mod zset_skiplist;

pub use hash::Hash;
pub use intset::Intset;
pub use list::List;
pub use listpack::Listpack;
pub use set::Set;
pub use stream::Stream;
pub use zset::ZSet;

/// The encoding thresholds (the server fills them from its configuration:
/// `hash-max-listpack-entries` and the rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `list-max-listpack-size`: positive = entries per node, -1..-5 = 4..64 KiB per node.
    pub list_max_listpack_size: i64,
    /// `list-compress-depth`: nodes at each end left uncompressed (0 = none compressed).
    pub list_compress_depth: i64,
    pub hash_max_listpack_entries: u64,
    pub hash_max_listpack_value: u64,
    pub set_max_intset_entries: u64,
    pub zset_max_listpack_entries: u64,
    pub zset_max_listpack_value: u64,
    /// `stream-node-max-bytes` (0: no limit but Redis's 1 GiB).
    pub stream_node_max_bytes: u64,
    /// `stream-node-max-entries` (0: no limit).
    pub stream_node_max_entries: u64,
}

impl Default for Limits {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        Limits {
            list_max_listpack_size: -2,
            list_compress_depth: 0,
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
        }
    }
}
