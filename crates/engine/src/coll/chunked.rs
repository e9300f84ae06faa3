//! A vector kept in chunks of `1 << BITS` elements (the first one growing as a vector
//! does, up to that): growing never moves or copies what is stored and no large block is
//! ever reallocated, so a collection that grows by one element never pauses to copy all
//! the others, and it holds at most one chunk of slack (plus a small first chunk's
//! doubling).
//!
//! Invariant: every chunk but the last is full and only a lone first chunk may be empty
//! (reserved), so element `i` is at `chunks[i >> BITS][i & (CHUNK - 1)]`.

#[derive(Clone, Debug)]
pub struct Chunked<T, const BITS: u32> {
    chunks: Vec<Vec<T>>,
}

impl<T, const BITS: u32> Default for Chunked<T, BITS> {
    fn default() -> Self {
        Chunked { chunks: Vec::new() }
    }
}

impl<T, const BITS: u32> Chunked<T, BITS> {
    /// Elements per chunk.
    pub const CHUNK: usize = 1 << BITS;

    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.chunks
            .last()
            .map_or(0, |c| ((self.chunks.len() - 1) << BITS) + c.len())
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room for `n` elements in all without a new allocation, as far as the first chunk
    /// goes (later chunks are allocated whole as they are needed).
    pub fn reserve_first(&mut self, n: usize) {
        let n = n.min(Self::CHUNK);
        if self.chunks.len() > 1 {
            return;
        }
        if self.chunks.is_empty() {
            self.chunks.reserve_exact(1);
            self.chunks.push(Vec::new());
        }
        let c = &mut self.chunks[0];
        if n > c.capacity() {
            c.reserve_exact(Self::class_cap(n) - c.len());
        }
    }

    /// The most elements (at least `n`, at most a chunk; `n` is at most a chunk) that fit the jemalloc size
    /// class holding `n`: a small first chunk grows through the size classes (about a
    /// quarter at a time, no more memory than an exact reservation takes) rather than
    /// doubling, so a small collection carries little slack.
    fn class_cap(n: usize) -> usize {
        let size = std::mem::size_of::<T>().max(1);
        let bytes = crate::mem::size_class_aligned(n * size, std::mem::align_of::<T>());
        (bytes / size).clamp(n, Self::CHUNK)
    }

    /// Append `v`; returns its index.
    #[inline]
    pub fn push(&mut self, v: T) -> usize {
        let at = self.len();
        match self.chunks.last_mut() {
            Some(c) if c.len() < Self::CHUNK => {
                if c.len() == c.capacity() {
                    // Only the first chunk is ever short of a whole chunk's capacity.
                    c.reserve_exact(Self::class_cap(c.len() + 1) - c.len());
                }
                c.push(v);
            }
            _ => {
                let mut c = if self.chunks.is_empty() {
                    self.chunks.reserve_exact(1);
                    Vec::with_capacity(Self::class_cap(1))
                } else {
                    Vec::with_capacity(Self::CHUNK)
                };
                c.push(v);
                self.chunks.push(c);
            }
        }
        at
    }

    /// Remove and return the last element.
    pub fn pop(&mut self) -> Option<T> {
        let single = self.chunks.len() == 1;
        let c = self.chunks.last_mut()?;
        let v = c.pop();
        if c.is_empty() {
            self.chunks.pop();
            if self.chunks.len() * 4 < self.chunks.capacity() {
                self.chunks.shrink_to(self.chunks.len() * 2);
            }
        } else if single && c.len() * 4 < c.capacity() && c.capacity() > 8 {
            c.shrink_to(c.len() * 2);
        }
        v
    }

    /// Remove element `i` (`i < len`), the last element taking its place.
    pub fn swap_remove(&mut self, i: usize) -> T {
        let last = self.pop().expect("index within the vector");
        if i == self.len() {
            last
        } else {
            std::mem::replace(&mut self[i], last)
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }

    /// Bytes allocated: the chunk list and every chunk.
    pub fn allocated(&self) -> usize {
        use crate::mem;
        mem::vec::<Vec<T>>(self.chunks.capacity())
            + self
                .chunks
                .iter()
                .map(|c| mem::vec::<T>(c.capacity()))
                .sum::<usize>()
    }
}

impl<T: Clone, const BITS: u32> Chunked<T, BITS> {
    /// `n` (at most a chunk) copies of `v`.
    pub fn of(v: T, n: usize) -> Self {
        let mut c = Self::new();
        c.push_n(v, n);
        c
    }

    /// Append `n` (at most a chunk) copies of `v`, contiguous within one chunk (the last
    /// chunk's end is padded when they would straddle two); returns the first's index.
    pub fn push_n(&mut self, v: T, n: usize) -> usize {
        let room = self.chunks.last().map_or(0, |c| Self::CHUNK - c.len());
        if room < n {
            if let Some(c) = self.chunks.last_mut() {
                c.resize(Self::CHUNK, v.clone());
            }
            let cap = if self.chunks.is_empty() {
                n
            } else {
                Self::CHUNK
            };
            self.chunks.push(Vec::with_capacity(cap));
        }
        let at = self.len();
        let c = self.chunks.last_mut().expect("a chunk was just ensured");
        c.extend(std::iter::repeat_n(v, n));
        at
    }
}

impl<T, const BITS: u32> std::ops::Index<usize> for Chunked<T, BITS> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.chunks[i >> BITS][i & (Self::CHUNK - 1)]
    }
}

impl<T, const BITS: u32> std::ops::IndexMut<usize> for Chunked<T, BITS> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i >> BITS][i & (Self::CHUNK - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_across_chunks() {
        let mut c: Chunked<u32, 3> = Chunked::new();
        let mut m: Vec<u32> = Vec::new();
        let mut seed = 7u64;
        for step in 0..5000u32 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let grow = step < 2500;
            if (grow && !(seed >> 40).is_multiple_of(3)) || m.is_empty() {
                assert_eq!(c.push(step), m.len());
                m.push(step);
            } else {
                let i = (seed >> 20) as usize % m.len();
                assert_eq!(c.swap_remove(i), m.swap_remove(i));
            }
            assert_eq!(c.len(), m.len());
            assert_eq!(c.is_empty(), m.is_empty());
        }
        assert!(c.iter().copied().eq(m.iter().copied()));
        for (i, v) in m.iter().enumerate() {
            assert_eq!(c[i], *v);
        }
        while let Some(v) = c.pop() {
            assert_eq!(Some(v), m.pop());
        }
        assert!(m.is_empty() && c.chunks.is_empty());
    }

    #[test]
    fn push_n_stays_within_a_chunk() {
        let mut c: Chunked<u8, 3> = Chunked::of(1, 3);
        assert_eq!(c.push_n(2, 4), 3);
        // 7 used: 4 more would straddle, so the chunk is padded to 8 and they start at 8.
        assert_eq!(c.push_n(3, 4), 8);
        assert_eq!(c.len(), 12);
        assert_eq!((c[7], c[8], c[11]), (3, 3, 3));
    }

    #[test]
    fn first_chunk_grows_through_size_classes() {
        let mut c: Chunked<[u64; 4], 10> = Chunked::new();
        let mut caps = Vec::new();
        for i in 0..300 {
            c.push([i; 4]);
            let cap = c.chunks[0].capacity();
            if caps.last() != Some(&cap) {
                caps.push(cap);
            }
        }
        // 32-byte elements: 32, 64, 96, 128, then four classes per doubling.
        assert_eq!(&caps[..9], &[1, 2, 3, 4, 5, 6, 7, 8, 10]);
        assert_eq!(c.chunks.capacity(), 1);
        assert!(c.allocated() <= crate::mem::vec::<Vec<[u64; 4]>>(1) + 320 * 32);
        for i in 300..1100 {
            c.push([i; 4]);
        }
        assert_eq!(c.chunks[0].capacity(), 1024);
        assert_eq!(c.chunks[1].capacity(), 1024);
        assert_eq!(c[1099], [1099; 4]);
    }

    #[test]
    fn reserve_first_then_push() {
        let mut c: Chunked<u64, 4> = Chunked::new();
        c.reserve_first(100);
        assert_eq!(c.chunks[0].capacity(), 16);
        assert_eq!(c.chunks.capacity(), 1);
        for i in 0..40 {
            c.push(i);
        }
        assert_eq!(c.len(), 40);
        assert_eq!(c[39], 39);
    }
}
