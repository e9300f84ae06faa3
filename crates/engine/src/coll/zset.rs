//! The sorted-set type: a listpack of member/score pairs in score order while small, a
//! skiplist (ordered by score then member, with ranks) plus a member index beyond
//! `zset-max-listpack-entries` members or a member longer than `zset-max-listpack-value`.

use super::listpack::Listpack;

#[derive(Clone, Debug, PartialEq)]
pub enum ZSet {
    Listpack(Listpack),
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::Listpack(Listpack::new())
    }
}

impl ZSet {
    pub fn new() -> ZSet {
        ZSet::default()
    }

    pub fn len(&self) -> usize {
        match self {
            ZSet::Listpack(lp) => lp.len() / 2,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            ZSet::Listpack(_) => "listpack",
        }
    }
}
