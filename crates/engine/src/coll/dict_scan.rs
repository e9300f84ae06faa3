//! Redis's dictScan cursor over a power-of-two table, or two of them while a resize moves
//! entries from one to the other (the hash and set types' dict, the sorted set's member index):
//! the cursor counts in reverse-binary order, so every entry present for the whole walk is
//! visited at least once whatever the tables do between steps.

/// The cursor after `v` in reverse-binary order for a table of mask `mask`.
pub fn rev_incr(v: u64, mask: u64) -> u64 {
    (v | !mask).reverse_bits().wrapping_add(1).reverse_bits()
}

/// One step: `visit(old, i)` for the position `cursor` names in the table of `len`
/// positions (`old` false), or, while a second table of `old_len` positions exists (0
/// when none), its position in the smaller table and then every position of the larger
/// one that expands from it (`old` true for the second table's). Returns the next cursor
/// (0 when the walk is complete). `len` is a power of two.
pub fn step(cursor: u64, len: usize, old_len: usize, mut visit: impl FnMut(bool, usize)) -> u64 {
    if old_len == 0 {
        let m = (len - 1) as u64;
        visit(false, (cursor & m) as usize);
        return rev_incr(cursor, m);
    }
    // (is the smaller one the old table, its mask, the larger one's mask)
    let (small_old, m0, m1) = if old_len < len {
        (true, old_len - 1, len - 1)
    } else {
        (false, len - 1, old_len - 1)
    };
    let (m0, m1) = (m0 as u64, m1 as u64);
    visit(small_old, (cursor & m0) as usize);
    let mut v = cursor;
    loop {
        visit(!small_old, (v & m1) as usize);
        v = rev_incr(v, m1);
        if v & (m0 ^ m1) == 0 {
            return v;
        }
    }
}
