//! What memory costs: jemalloc's size classes (the bytes an allocation really takes) and
//! the helpers the values' footprints (MEMORY USAGE, MEMORY STATS) are added up with.
//!
//! The size classes are jemalloc 5's for a 64-bit build with 4 KiB pages and a 16-byte
//! quantum (what `nallocx` answers for Skein's build; the server's allocator tests check
//! the two agree): 8, then multiples of 16 up to 128, then four classes per doubling
//! (160, 192, 224, 256, 320, ...), small classes up to 14 KiB and large ones from 16 KiB
//! on the same four-per-doubling steps.

use std::mem::{align_of, size_of};

/// The largest small size class (SC_SMALL_MAXCLASS).
const SMALL_MAX: usize = 14 * 1024;
/// The smallest large size class (SC_LARGE_MINCLASS).
const LARGE_MIN: usize = 16 * 1024;
/// The page size the classes assume (LG_PAGE 12).
const PAGE: usize = 4096;

/// jemalloc's usable size for `size` bytes at the default alignment (sz_s2u): what
/// `nallocx(size, 0)` answers. 0 for 0.
#[inline]
pub const fn size_class(size: usize) -> usize {
    if size <= 8 {
        return if size == 0 { 0 } else { 8 };
    }
    if size <= 128 {
        return (size + 15) & !15;
    }
    // Four classes per doubling: the step is a quarter of the power of two below.
    let lg = usize::BITS - 1 - (size - 1).leading_zeros();
    let step = 1usize << (lg - 2);
    (size + step - 1) & !(step - 1)
}

/// Room for `n` more bytes in `buf`, growing it to the size class jemalloc gives the exact
/// request anyway: no more memory than an exact reservation takes (Redis reallocates its
/// listpacks and intsets to their exact sizes and gets the same block), and the growth
/// that still fits in that class needs no call into the allocator at all.
pub fn reserve_in_class(buf: &mut Vec<u8>, n: usize) {
    let want = buf.len() + n;
    if want > buf.capacity() {
        buf.reserve_exact(size_class(want) - buf.len());
    }
}

/// Give back `buf`'s capacity past the size class of what it holds (no call into the
/// allocator while it is already within that class).
pub fn shrink_to_class(buf: &mut Vec<u8>) {
    buf.shrink_to(size_class(buf.len()));
}

/// jemalloc's usable size for `size` bytes aligned to `align` (a power of two), as
/// `nallocx(size, MALLOCX_ALIGN(align))` answers (sz_sa2u); for `align` at most 16 and
/// not above `size` this is [`size_class`], which is what jemalloc gives without flags.
#[inline]
pub const fn size_class_aligned(size: usize, align: usize) -> usize {
    if size == 0 {
        return 0;
    }
    if size <= SMALL_MAX && align <= PAGE {
        let small = size_class((size + align - 1) & !(align - 1));
        if small < LARGE_MIN {
            return small;
        }
    }
    if size <= LARGE_MIN {
        LARGE_MIN
    } else {
        size_class(size)
    }
}

/// The bytes of a `Vec<T>`'s (or boxed slice's) buffer of `cap` elements.
#[inline]
pub fn vec<T>(cap: usize) -> usize {
    size_class_aligned(cap * size_of::<T>(), align_of::<T>())
}

/// The bytes of one `Box<T>`.
#[inline]
pub fn boxed<T>() -> usize {
    vec::<T>(1)
}

/// The bytes of a hashbrown table of `T` whose `capacity()` is `cap` (buckets of `T`,
/// then one control byte per bucket and a 16-byte group, aligned to 16).
pub fn hashbrown<T>(cap: usize) -> usize {
    if cap == 0 {
        return 0;
    }
    // capacity() is buckets - 1 below 8 buckets, else 7/8 of them.
    let buckets = if cap < 8 { cap + 1 } else { cap / 7 * 8 };
    const GROUP: usize = 16;
    let align = if align_of::<T>() > GROUP {
        align_of::<T>()
    } else {
        GROUP
    };
    let ctrl = (size_of::<T>() * buckets + align - 1) & !(align - 1);
    size_class_aligned(ctrl + buckets + GROUP, align)
}

/// An estimate of a `BTreeMap<K, V>` of `len` entries: leaves of 11 slots (a parent link
/// and two counts beside them) filled about two thirds, plus the internal nodes' share.
pub fn btree<K, V>(len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let leaf = size_class(16 + 11 * (size_of::<K>() + size_of::<V>()));
    let leaves = len.div_ceil(7);
    leaves * leaf + leaves / 6 * size_class(leaf + 12 * 8)
}

/// Redis's sampling (objectComputeSize): the average bytes of the first `samples` of
/// `items`, times `len`; 0 when there is nothing to sample.
pub fn sampled(items: impl Iterator<Item = usize>, len: usize, samples: usize) -> usize {
    let (mut sum, mut n) = (0usize, 0usize);
    for bytes in items.take(samples.max(1)) {
        sum += bytes;
        n += 1;
    }
    if n == 0 {
        0
    } else {
        (sum as f64 / n as f64 * len as f64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        let small = [8, 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
        for w in small.windows(2) {
            assert_eq!(size_class(w[0]), w[0]);
            assert_eq!(size_class(w[0] + 1), w[1]);
        }
        assert_eq!(size_class(1), 8);
        assert_eq!(size_class(14336), 14336);
        assert_eq!(size_class(14337), 16384);
        assert_eq!(size_class(16385), 20480);
        assert_eq!(size_class_aligned(8, 16), 16);
        assert_eq!(size_class_aligned(80, 64), 128);
        assert_eq!(size_class_aligned(14000, 4096), 16384);
        assert_eq!(size_class_aligned(100, 8192), 16384);
    }

    #[test]
    fn hashbrown_tables() {
        assert_eq!(hashbrown::<u64>(0), 0);
        // 4 buckets of 8 bytes, 4 + 16 control bytes.
        assert_eq!(hashbrown::<u64>(3), 64);
        // 16 buckets: 128 + 32.
        assert_eq!(hashbrown::<u64>(14), 160);
    }

    #[test]
    fn sampling() {
        assert_eq!(sampled([10, 20].into_iter(), 100, 5), 1500);
        assert_eq!(sampled([10, 20, 90].into_iter(), 10, 2), 150);
        assert_eq!(sampled(std::iter::empty(), 10, 5), 0);
    }
}
