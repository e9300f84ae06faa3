//! The list type: Redis 7.0's quicklist (a chain of listpack nodes, optionally
//! LZF-compressed away from the ends). `OBJECT ENCODING` is always `quicklist` in 7.0.

use super::listpack::Listpack;
use std::collections::VecDeque;

#[derive(Clone, Debug, PartialEq, Default)]
pub struct List {
    nodes: VecDeque<Listpack>,
    len: usize,
}

impl List {
    pub fn new() -> List {
        List::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The quicklist nodes, head to tail.
    pub fn nodes(&self) -> &VecDeque<Listpack> {
        &self.nodes
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }
}
