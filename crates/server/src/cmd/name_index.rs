//! Command names looked up without regard to case, for every command a client sends.
//!
//! A general hash map needs the name lowercased into a buffer first, then hashed with a
//! general hasher; this index hashes the name's bytes folded on the fly (`| 0x20`, which
//! maps each ASCII letter to its lowercase form) and confirms the one candidate slot with
//! a case-insensitive compare, so a 3-byte GET costs a few dozen instructions. The fold
//! also maps some non-letters onto others (`_` and DEL, for example): that only sends a
//! name to a slot, and the final compare decides.

/// An index from lowercase names to values, filled once and then read.
pub struct NameIndex<T> {
    entries: Vec<(Box<[u8]>, T)>,
    /// Open addressing, linear probing: an index into `entries`, or `EMPTY`.
    slots: Box<[u32]>,
}

const EMPTY: u32 = u32::MAX;

fn folded_hash(name: &[u8]) -> u32 {
    let mut h = (name.len() as u32).wrapping_mul(0x9E37_79B9);
    for &b in name {
        h = (h ^ u32::from(b | 0x20)).wrapping_mul(0x0100_0193);
    }
    // The top bits of a multiplicative hash are its best mixed.
    h.wrapping_mul(0x9E37_79B1).rotate_left(16)
}

impl<T> NameIndex<T> {
    /// An index of `entries` (names in lowercase, each once).
    pub fn new(entries: Vec<(Box<[u8]>, T)>) -> NameIndex<T> {
        // At most a quarter full: a probe rarely goes past its first slot.
        let size = (entries.len() * 4).next_power_of_two().max(16);
        let mut slots = vec![EMPTY; size].into_boxed_slice();
        let mask = size - 1;
        for (i, (name, _)) in entries.iter().enumerate() {
            let mut at = folded_hash(name) as usize & mask;
            while slots[at] != EMPTY {
                at = (at + 1) & mask;
            }
            slots[at] = i as u32;
        }
        NameIndex { entries, slots }
    }

    /// The value named `name`, in any case.
    pub fn get(&self, name: &[u8]) -> Option<&T> {
        let mask = self.slots.len() - 1;
        let mut at = folded_hash(name) as usize & mask;
        loop {
            let i = self.slots[at];
            let (key, value) = self.entries.get(i as usize)?;
            // Keys are stored lowercase: only the asked name's bytes need folding.
            if key.len() == name.len()
                && key
                    .iter()
                    .zip(name)
                    .all(|(&k, &n)| k == n.to_ascii_lowercase())
            {
                return Some(value);
            }
            at = (at + 1) & mask;
        }
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(names: &[&str]) -> NameIndex<usize> {
        let entries = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_bytes().to_vec().into_boxed_slice(), i))
            .collect();
        NameIndex::new(entries)
    }

    #[test]
    fn finds_every_name_in_any_case() {
        let names: Vec<String> = (0..500).map(|i| format!("cmd{i}_x")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let idx = index(&refs);
        for (i, n) in names.iter().enumerate() {
            assert_eq!(idx.get(n.as_bytes()), Some(&i));
            assert_eq!(idx.get(n.to_uppercase().as_bytes()), Some(&i));
        }
        assert_eq!(idx.len(), 500);
    }

    #[test]
    fn folding_collisions_are_not_matches() {
        let idx = index(&["get", "georadius_ro", "set"]);
        assert_eq!(idx.get(b"GeT"), Some(&0));
        // '_' | 0x20 is DEL (0x7f): same slot as "georadius\x7fro", but no match.
        assert_eq!(idx.get(b"georadius\x7fro"), None);
        assert_eq!(idx.get(b"GEORADIUS_RO"), Some(&1));
        assert_eq!(idx.get(b""), None);
        assert_eq!(idx.get(b"ge"), None);
        assert_eq!(idx.get(b"gets"), None);
        assert_eq!(idx.get(&[0xff; 40]), None);
    }

    #[test]
    fn an_empty_index_finds_nothing() {
        let idx = index(&[]);
        assert!(idx.is_empty());
        assert_eq!(idx.get(b"get"), None);
    }
}
