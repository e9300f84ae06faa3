//! The set type: an intset while every member is an integer and there are at most
//! `set-max-intset-entries`, a hash table otherwise (Redis 7.0 has no listpack sets).

use super::intset::Intset;

#[derive(Clone, Debug, PartialEq)]
pub enum Set {
    Intset(Intset),
    Table(hashbrown::HashSet<Box<[u8]>>),
}

impl Default for Set {
    fn default() -> Self {
        Set::Intset(Intset::new())
    }
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    pub fn len(&self) -> usize {
        match self {
            Set::Intset(s) => s.len(),
            Set::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            Set::Intset(_) => "intset",
            Set::Table(_) => "hashtable",
        }
    }
}
