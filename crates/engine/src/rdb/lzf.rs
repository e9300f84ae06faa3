//! LZF compression exactly as Redis 7.0 does it (its bundled liblzf 3.6 built with
//! `HLOG 16`, `VERY_FAST 1`, `ULTRA_FAST 0`), so a DUMP or RDB file carries the same bytes
//! Redis would write. The `lzf` crate's compressor is an older variant that refuses matches
//! in the last four input bytes and sizes its output differently, which changes the
//! output; decompression is format-defined and uses the `lzf` crate.

const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
const MAX_LIT: usize = 1 << 5;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);

fn idx(h: u32) -> usize {
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1)
}

/// Compress `input` into at most `out_len` bytes, or `None` if it does not fit (liblzf's
/// `lzf_compress` returning 0).
pub fn compress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    thread_local! {
        static TABLE: std::cell::RefCell<Table> = std::cell::RefCell::new(Table::new());
    }
    TABLE.with(|t| match t.try_borrow_mut() {
        Ok(mut t) => compress_with(&mut t, input, out_len),
        Err(_) => compress_with(&mut Table::new(), input, out_len),
    })
}

/// The hash table of earlier positions (by hash of their next three bytes), reused from
/// call to call: each entry carries the call it was written in, and an entry of another
/// call reads as empty, so every call sees a zeroed table without clearing 64K entries
/// (which cost more than compressing a short string).
struct Table {
    call: u32,
    slots: Box<[u64]>,
}

impl Table {
    fn new() -> Table {
        Table {
            call: 0,
            slots: vec![0u64; HSIZE].into_boxed_slice(),
        }
    }

    /// Start a call: every entry reads as empty.
    fn begin(&mut self) {
        self.call = self.call.wrapping_add(1);
        if self.call == 0 {
            self.slots.fill(0);
            self.call = 1;
        }
    }

    /// The position stored at `slot` in this call, 0 for none.
    #[inline]
    fn get(&self, slot: usize) -> usize {
        let e = self.slots[slot];
        if (e >> 32) as u32 == self.call {
            e as u32 as usize
        } else {
            0
        }
    }

    #[inline]
    fn set(&mut self, slot: usize, pos: usize) {
        self.slots[slot] = (u64::from(self.call) << 32) | pos as u64;
    }
}

fn compress_with(htab: &mut Table, input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let in_len = input.len();
    if in_len == 0 || out_len == 0 {
        return None;
    }
    let mut out = vec![0u8; out_len];
    // Offsets of earlier positions by hash of their next three bytes; 0 means none (a
    // match at offset 0 is never taken, as in liblzf).
    htab.begin();
    let mut ip = 0usize;
    let mut op = 1usize; // start run
    let mut lit = 0usize;
    let mut hval: u32 = if in_len >= 2 {
        (u32::from(input[0]) << 8) | u32::from(input[1])
    } else {
        0
    };
    while ip + 2 < in_len {
        hval = (hval << 8) | u32::from(input[ip + 2]);
        let slot = idx(hval);
        let r = htab.get(slot);
        htab.set(slot, ip);
        if r > 0
            && ip - r - 1 < MAX_OFF
            && input[r + 2] == input[ip + 2]
            && input[r] == input[ip]
            && input[r + 1] == input[ip + 1]
        {
            let off = ip - r - 1;
            let mut len = 2usize;
            let maxlen = (in_len - ip - len).min(MAX_REF);
            if op + 3 + 1 >= out_len && op - usize::from(lit == 0) + 3 + 1 >= out_len {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1); // stop run
            op -= usize::from(lit == 0); // undo run if length is zero
                                         // liblzf first compares up to 16 bytes unrolled (which may look two bytes
                                         // past `maxlen`), then one at a time up to `maxlen`.
            let mut mismatch = false;
            if maxlen > 16 {
                for _ in 0..16 {
                    len += 1;
                    if input[r + len] != input[ip + len] {
                        mismatch = true;
                        break;
                    }
                }
            }
            if !mismatch {
                loop {
                    len += 1;
                    if len >= maxlen || input[r + len] != input[ip + len] {
                        break;
                    }
                }
            }
            len -= 2; // now the number of octets - 1
            ip += 1;
            if len < 7 {
                out[op] = (off >> 8) as u8 + ((len as u8) << 5);
                op += 1;
            } else {
                out[op] = (off >> 8) as u8 + (7 << 5);
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 1;
            lit = 0;
            op += 1; // start run
            ip += len + 1;
            if ip + 2 >= in_len {
                break;
            }
            ip -= 2;
            hval = (u32::from(input[ip]) << 8) | u32::from(input[ip + 1]);
            hval = (hval << 8) | u32::from(input[ip + 2]);
            htab.set(idx(hval), ip);
            ip += 1;
            hval = (hval << 8) | u32::from(input[ip + 2]);
            htab.set(idx(hval), ip);
            ip += 1;
        } else {
            if op >= out_len {
                return None;
            }
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == MAX_LIT {
                out[op - lit - 1] = (lit - 1) as u8; // stop run
                lit = 0;
                op += 1; // start run
            }
        }
    }
    if op + 3 > out_len {
        return None;
    }
    while ip < in_len {
        lit += 1;
        out[op] = input[ip];
        op += 1;
        ip += 1;
        if lit == MAX_LIT {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1); // end run
    op -= usize::from(lit == 0);
    out.truncate(op);
    Some(out)
}

/// Decompress `data` that must expand to exactly `len` bytes (Redis's check in
/// rdbLoadLzfStringObject). `None` when the data is corrupt or of another length.
pub fn decompress(data: &[u8], len: usize) -> Option<Vec<u8>> {
    if len == 0 {
        // liblzf writes nothing into a zero-sized buffer and reports 0 bytes, which Redis
        // accepts as the expected length.
        return Some(Vec::new());
    }
    // One input byte yields at most 88 output bytes (a 3-byte back reference of 264), so
    // a longer claimed length is corrupt; checking first avoids a hostile allocation.
    if len / 88 > data.len() {
        return None;
    }
    match lzf::decompress(data, len) {
        Ok(v) if v.len() == len => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: &[u8]) {
        if let Some(c) = compress(data, data.len().saturating_sub(4)) {
            assert!(c.len() <= data.len() - 4);
            assert_eq!(decompress(&c, data.len()).as_deref(), Some(data));
        }
        if let Some(c) = compress(data, data.len() + 64) {
            assert_eq!(decompress(&c, data.len()).as_deref(), Some(data));
        }
    }

    #[test]
    fn known_redis_output() {
        // DUMP of SET k <"a" x 30> on redis-server 7.0.15 carries these LZF bytes.
        let c = compress(&[b'a'; 30], 26).unwrap();
        assert_eq!(c, b"\x01aa\xe0\x11\x00\x01aa".to_vec());
    }

    #[test]
    fn round_trips() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for n in 0..2000usize {
            let len = rng.gen_range(0..600);
            let alphabet = 1 + n % 5;
            let data: Vec<u8> = (0..len)
                .map(|_| b'a' + rng.gen_range(0..alphabet) as u8)
                .collect();
            round_trip(&data);
        }
        round_trip(&vec![0u8; 100_000]);
    }

    #[test]
    fn hostile_input_is_rejected() {
        assert!(decompress(&[0xff, 0x00], 10).is_none());
        assert!(decompress(&[], 10).is_none());
        assert!(decompress(&[0x1f, 1, 2], 40).is_none());
        assert!(decompress(&[0x00, b'a'], usize::MAX).is_none());
    }
}
