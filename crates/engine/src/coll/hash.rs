//! The hash type: a listpack of field/value pairs while small, a hash table beyond
//! `hash-max-listpack-entries` fields or a field or value longer than
//! `hash-max-listpack-value`.

use super::listpack::Listpack;

#[derive(Clone, Debug, PartialEq)]
pub enum Hash {
    Listpack(Listpack),
    Table(hashbrown::HashMap<Box<[u8]>, Box<[u8]>>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Listpack(Listpack::new())
    }
}

impl Hash {
    pub fn new() -> Hash {
        Hash::default()
    }

    pub fn len(&self) -> usize {
        match self {
            Hash::Listpack(lp) => lp.len() / 2,
            Hash::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            Hash::Listpack(_) => "listpack",
            Hash::Table(_) => "hashtable",
        }
    }
}
