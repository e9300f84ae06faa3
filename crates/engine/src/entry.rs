//! A key's entry: metadata, key and (for strings) the value in one heap block behind a
//! thin 8-byte pointer, so a key costs one allocation plus one table slot.
//!
//! Block layout (integers little-endian, fields unaligned):
//!
//! ```text
//! [meta: u32 = lru (low 24 bits) | flags (high 8 bits)]
//! [expire_at: i64]               only when flags has HAS_EXPIRE
//! [key length][key bytes]
//! [payload], by the kind in flags:
//!     KIND_INT                 i64
//!     KIND_EMBSTR, KIND_RAW    [length][bytes]       (the value inline)
//!     KIND_HEAP                [0..7 zero bytes][Heap] (the value's header, aligned)
//! ```
//!
//! A length is one byte when below 255, else 0xFF followed by a u64. The block's size is
//! never stored: [`Entry::parts`] computes it from the header, and every allocation,
//! reallocation and deallocation uses exactly that size (alignment [`ALIGN`]). A
//! collection's (or an appended string's) [`Heap`] header lives in the block itself, at
//! the first offset aligned for it after the key: a small hash costs its key block and its
//! listpack, not a third allocation for the header.
//!
//! This is the only module of the engine with `unsafe`. Its invariant, which every
//! function here keeps and every `unsafe` block relies on: **`Entry::ptr` points to a live
//! allocation of the global allocator, made with `layout(size)` where `size` is what
//! `parts()` computes from the block's bytes, forming a block in the format above; every
//! byte before a KIND_HEAP payload's `Heap` is initialized (the `Heap` itself may hold
//! padding, so it is never read as bytes, only moved as a `Heap`), and that `Heap` is a
//! valid value which this block alone owns (dropped exactly once: by `Drop`, by
//! `set_payload` when replaced, or moved out to a new block by `rebuild`, which then frees
//! the old block without dropping it).** Writes go through [`Writer`], which aborts (never
//! unwinds) if asked to write out of bounds, so no panic can leave a half-written block
//! behind for `Drop` to read.

use crate::coll::{Hash, List, Set, Stream, ZSet};
use crate::mem;
use crate::value::{StrRef, Value, ValueRef};
use std::alloc::{self, Layout};
use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr::{self, NonNull};

/// No expiry.
pub const NO_EXPIRE: i64 = -1;

const ALIGN: usize = 8;
const META: usize = 4;
const EXPIRE: usize = 8;
const INT: usize = 8;
/// Bytes of a `Heap` header in a block, and the alignment its offset is rounded up to.
const HEAP: usize = std::mem::size_of::<Heap>();
const HEAP_ALIGN: usize = std::mem::align_of::<Heap>();
// A block is allocated with ALIGN, so an offset aligned to HEAP_ALIGN is an aligned address.
const _: () = assert!(HEAP_ALIGN <= ALIGN && HEAP_ALIGN.is_power_of_two());
const LRU_MASK: u32 = (1 << 24) - 1;

const HAS_EXPIRE: u8 = 0x80;
const KIND_MASK: u8 = 0x07;
const KIND_INT: u8 = 0;
const KIND_EMBSTR: u8 = 1;
const KIND_RAW: u8 = 2;
const KIND_HEAP: u8 = 3;

/// First byte of a length that does not fit in one byte (a u64 follows).
const LONG_LEN: u8 = 0xff;

/// A value's header kept in the block (its contents on the heap): a string modified in
/// place (so APPENDs are amortized in a `Vec`), and the collection types. Kept to 32 bytes:
/// a list's and a stream's state, bigger, are boxed.
#[derive(Debug)]
pub(crate) enum Heap {
    Raw(Vec<u8>),
    List(Box<List>),
    Hash(Hash),
    Set(Set),
    ZSet(ZSet),
    Stream(Box<Stream>),
}

impl Heap {
    /// Bytes held beyond the `Heap` header itself (see [`Entry::footprint`]).
    fn footprint(&self, samples: usize) -> usize {
        match self {
            Heap::Raw(v) => mem::vec::<u8>(v.capacity()),
            Heap::List(l) => mem::boxed::<List>() + l.footprint(samples),
            Heap::Hash(h) => h.footprint(samples),
            Heap::Set(s) => s.footprint(samples),
            Heap::ZSet(z) => z.footprint(samples),
            Heap::Stream(s) => mem::boxed::<Stream>() + s.footprint(samples),
        }
    }

    fn view(&self) -> ValueRef<'_> {
        match self {
            Heap::Raw(v) => ValueRef::Str(StrRef::Raw(v)),
            Heap::List(l) => ValueRef::List(l),
            Heap::Hash(h) => ValueRef::Hash(h),
            Heap::Set(s) => ValueRef::Set(s),
            Heap::ZSet(z) => ValueRef::ZSet(z),
            Heap::Stream(s) => ValueRef::Stream(s),
        }
    }
}

// Entry's Send/Sync below rely on this.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Heap>();
};

/// One key with its value, expiry and access time, owning one heap block.
pub struct Entry {
    ptr: NonNull<u8>,
}

// SAFETY: an Entry owns its block and the Heap in it exclusively, like a
// `Box<(u32, i64, [u8], Heap)>` would; Heap is Send + Sync and `&Entry` only reads.
unsafe impl Send for Entry {}
// SAFETY: as above.
unsafe impl Sync for Entry {}

/// A block's shape, read from its header.
#[derive(Clone, Copy)]
struct Parts {
    flags: u8,
    key_at: usize,
    key_len: usize,
    payload_at: usize,
    size: usize,
}

impl Parts {
    fn kind(&self) -> u8 {
        self.flags & KIND_MASK
    }
}

/// What a payload will hold.
enum Payload<'a> {
    Int(i64),
    /// An inline string of kind KIND_EMBSTR or KIND_RAW.
    Inline(u8, &'a [u8]),
    /// A header to move into the block. ManuallyDrop: if building the block panics
    /// (only "entry too large", before anything is written) the header leaks rather than
    /// being dropped while another block may still own it (`rebuild`).
    Heap(ManuallyDrop<Heap>),
    /// The payload bytes of another block of this (non-heap) kind, copied as they are.
    Verbatim(u8, &'a [u8]),
}

impl<'a> Payload<'a> {
    /// The payload for a borrowed value (a collection is copied).
    fn of(v: ValueRef<'a>) -> Payload<'a> {
        match v {
            ValueRef::Str(StrRef::Int(n)) => Payload::Int(n),
            ValueRef::Str(StrRef::Embstr(b)) => Payload::Inline(KIND_EMBSTR, b),
            ValueRef::Str(StrRef::Raw(b)) => Payload::Inline(KIND_RAW, b),
            ValueRef::List(l) => Payload::heap(Heap::List(Box::new(l.clone()))),
            ValueRef::Hash(h) => Payload::heap(Heap::Hash(h.clone())),
            ValueRef::Set(x) => Payload::heap(Heap::Set(x.clone())),
            ValueRef::ZSet(z) => Payload::heap(Heap::ZSet(z.clone())),
            ValueRef::Stream(s) => Payload::heap(Heap::Stream(Box::new(s.clone()))),
        }
    }

    fn heap(h: Heap) -> Payload<'static> {
        Payload::Heap(ManuallyDrop::new(h))
    }

    /// The payload for an owned collection (moved, not copied); `None` for a string,
    /// which is stored through [`Payload::of`] its view.
    fn collection(v: Value) -> Result<Payload<'static>, Value> {
        Ok(Payload::heap(match v {
            Value::List(l) => Heap::List(l),
            Value::Hash(h) => Heap::Hash(*h),
            Value::Set(x) => Heap::Set(*x),
            Value::ZSet(z) => Heap::ZSet(*z),
            Value::Stream(s) => Heap::Stream(s),
            s @ Value::Str(_) => return Err(s),
        }))
    }

    fn kind(&self) -> u8 {
        match self {
            Payload::Int(_) => KIND_INT,
            Payload::Inline(k, _) | Payload::Verbatim(k, _) => *k,
            Payload::Heap(_) => KIND_HEAP,
        }
    }

    /// Bytes of the payload written at offset `at` of a block.
    fn size(&self, at: usize) -> usize {
        match self {
            Payload::Int(_) => INT,
            Payload::Inline(_, b) => len_size(b.len()) + b.len(),
            Payload::Heap(_) => heap_at(at) - at + HEAP,
            Payload::Verbatim(_, b) => b.len(),
        }
    }

    fn write(self, w: &mut Writer) {
        match self {
            Payload::Int(n) => w.put(&n.to_le_bytes()),
            Payload::Inline(_, b) => {
                w.put_len(b.len());
                w.put(b);
            }
            Payload::Heap(h) => w.put_heap(h),
            Payload::Verbatim(_, b) => w.put(b),
        }
    }
}

/// Where a KIND_HEAP payload starting at `at` keeps its `Heap`.
const fn heap_at(at: usize) -> usize {
    (at + HEAP_ALIGN - 1) & !(HEAP_ALIGN - 1)
}

fn len_size(n: usize) -> usize {
    if n < LONG_LEN as usize {
        1
    } else {
        9
    }
}

/// A length field at the start of `b` (a block's bytes from that field on): (value, size).
fn len_field(b: &[u8]) -> (usize, usize) {
    match b[0] {
        LONG_LEN => {
            let n: [u8; 8] = b[1..9].try_into().expect("8 bytes");
            (u64::from_le_bytes(n) as usize, 9)
        }
        n => (n as usize, 1),
    }
}

/// The layout of a block of `size` bytes. Panics (before anything is allocated or
/// changed) only for sizes no allocation could have.
fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, ALIGN).expect("entry too large")
}

/// Sum of field sizes, refusing overflow (before anything is allocated or changed).
fn total(parts: &[usize]) -> usize {
    parts
        .iter()
        .try_fold(0usize, |a, &b| a.checked_add(b))
        .expect("entry too large")
}

/// Writes fields one after another into memory the caller owns.
struct Writer {
    base: *mut u8,
    size: usize,
    at: usize,
}

impl Writer {
    /// # Safety
    /// `base` must be valid for writes of `size` bytes, and no reference to those bytes
    /// may be used while the Writer lives.
    unsafe fn new(base: *mut u8, size: usize, at: usize) -> Writer {
        Writer { base, size, at }
    }

    /// Room for `n` more bytes, or abort: a half-written block must never unwind into
    /// `Drop`. (Sizes are computed by the same code that writes, so this cannot fire.)
    fn claim(&mut self, n: usize) -> *mut u8 {
        if n > self.size - self.at {
            std::process::abort();
        }
        // SAFETY: at + n <= size, so the offset stays within the allocation (`new`).
        let p = unsafe { self.base.add(self.at) };
        self.at += n;
        p
    }

    fn put(&mut self, b: &[u8]) {
        let dst = self.claim(b.len());
        // SAFETY: `dst` has room for b.len() bytes (claim) in memory nothing else
        // references (`new`), so it cannot overlap the live borrow `b`.
        unsafe { ptr::copy_nonoverlapping(b.as_ptr(), dst, b.len()) }
    }

    fn put_len(&mut self, n: usize) {
        if n < LONG_LEN as usize {
            self.put(&[n as u8]);
        } else {
            self.put(&[LONG_LEN]);
            self.put(&(n as u64).to_le_bytes());
        }
    }

    fn put_heap(&mut self, h: ManuallyDrop<Heap>) {
        let pad = heap_at(self.at) - self.at;
        self.put(&[0u8; HEAP_ALIGN][..pad]);
        let dst = self.claim(HEAP);
        // SAFETY: room for a Heap (claim) at an offset aligned to HEAP_ALIGN (the padding
        // above) of a block allocated with ALIGN >= HEAP_ALIGN, so `dst` is aligned. The
        // block now owns the header.
        unsafe { ptr::write(dst.cast::<Heap>(), ManuallyDrop::into_inner(h)) }
    }

    fn finish(self) {
        if self.at != self.size {
            std::process::abort();
        }
    }
}

/// Allocate and write a block.
fn build(lru: u32, expire_at: i64, key: &[u8], payload: Payload<'_>) -> NonNull<u8> {
    let has_expire = expire_at != NO_EXPIRE;
    let flags = payload.kind() | if has_expire { HAS_EXPIRE } else { 0 };
    let payload_at = total(&[
        META,
        if has_expire { EXPIRE } else { 0 },
        len_size(key.len()),
        key.len(),
    ]);
    let size = total(&[payload_at, payload.size(payload_at)]);
    let layout = layout(size);
    // SAFETY: the layout's size is at least META, not zero.
    let base = unsafe { alloc::alloc(layout) };
    let base = NonNull::new(base).unwrap_or_else(|| alloc::handle_alloc_error(layout));
    // SAFETY: a fresh allocation of `size` bytes that nothing else references.
    let mut w = unsafe { Writer::new(base.as_ptr(), size, 0) };
    w.put(&meta(lru, flags).to_le_bytes());
    if has_expire {
        w.put(&expire_at.to_le_bytes());
    }
    w.put_len(key.len());
    w.put(key);
    payload.write(&mut w);
    w.finish();
    base
}

fn meta(lru: u32, flags: u8) -> u32 {
    (lru & LRU_MASK) | (u32::from(flags) << 24)
}

impl Entry {
    pub fn new<'v>(key: &[u8], value: impl Into<ValueRef<'v>>, expire_at: i64, lru: u32) -> Entry {
        Entry {
            ptr: build(lru, expire_at, key, Payload::of(value.into())),
        }
    }

    /// An entry taking an owned value (a collection moves in without a copy).
    pub fn from_value(key: &[u8], value: Value, expire_at: i64, lru: u32) -> Entry {
        match Payload::collection(value) {
            Ok(p) => Entry {
                ptr: build(lru, expire_at, key, p),
            },
            Err(s) => Entry::new(key, s.view(), expire_at, lru),
        }
    }

    /// A length field at offset `at`: (value, size of the field).
    ///
    /// # Safety
    /// `at` must be the offset of a length field of this block.
    unsafe fn len_at(&self, at: usize) -> (usize, usize) {
        let base = self.ptr.as_ptr();
        // SAFETY: by the module invariant the block is well formed and initialized; a
        // length field (the caller's contract) has its first byte at `at`, and 8 more
        // bytes when that byte is LONG_LEN.
        unsafe {
            match *base.add(at) {
                LONG_LEN => {
                    let n = ptr::read_unaligned(base.add(at + 1).cast::<[u8; 8]>());
                    (u64::from_le_bytes(n) as usize, 9)
                }
                n => (n as usize, 1),
            }
        }
    }

    /// The flags, and where the key's bytes are and how many.
    fn key_parts(&self) -> (u8, usize, usize) {
        // SAFETY: every block starts with the 4 meta bytes; the flags are the last one.
        let flags = unsafe { *self.ptr.as_ptr().add(3) };
        let at = META + if flags & HAS_EXPIRE != 0 { EXPIRE } else { 0 };
        // SAFETY: the key's length field follows the meta and the expiry (if flagged).
        let (key_len, n) = unsafe { self.len_at(at) };
        (flags, at + n, key_len)
    }

    /// The block's shape, from its header.
    fn parts(&self) -> Parts {
        let (flags, key_at, key_len) = self.key_parts();
        let payload_at = key_at + key_len;
        let payload_len = match flags & KIND_MASK {
            KIND_EMBSTR | KIND_RAW => {
                // SAFETY: an inline string payload starts with its length field.
                let (len, n) = unsafe { self.len_at(payload_at) };
                n + len
            }
            KIND_HEAP => heap_at(payload_at) - payload_at + HEAP,
            _ => INT,
        };
        Parts {
            flags,
            key_at,
            key_len,
            payload_at,
            size: payload_at + payload_len,
        }
    }

    /// The shape and the bytes of the block, up to a `Heap` header (not included: it is
    /// read only as a `Heap`).
    fn view(&self) -> (Parts, &[u8]) {
        let p = self.parts();
        let len = if p.kind() == KIND_HEAP {
            p.payload_at
        } else {
            p.size
        };
        // SAFETY: the block's bytes before a Heap header are initialized (invariant), and
        // `len` is at most its size; borrowed with self.
        let b = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), len) };
        (p, b)
    }

    fn meta(&self) -> u32 {
        // SAFETY: every block starts with its 4 meta bytes.
        u32::from_le_bytes(unsafe { ptr::read_unaligned(self.ptr.as_ptr().cast::<[u8; 4]>()) })
    }

    fn set_meta(&mut self, m: u32) {
        // SAFETY: every block starts with its 4 meta bytes, and `&mut self` is the only
        // access to them.
        unsafe { ptr::write_unaligned(self.ptr.as_ptr().cast::<[u8; 4]>(), m.to_le_bytes()) }
    }

    /// The address of a KIND_HEAP payload's header (still owned by the block).
    fn heap_ptr(&self, p: &Parts) -> Option<*mut Heap> {
        if p.kind() != KIND_HEAP {
            return None;
        }
        // SAFETY: a KIND_HEAP payload's Heap is at heap_at(payload_at), within the block
        // (put_heap wrote it there; parts() counts it in the size).
        Some(unsafe { self.ptr.as_ptr().add(heap_at(p.payload_at)).cast::<Heap>() })
    }

    fn heap(&self) -> Option<&Heap> {
        let h = self.heap_ptr(&self.parts())?;
        // SAFETY: an aligned, valid Heap the block owns (invariant) until its payload is
        // rewritten, the block moved, or dropped, which all need `&mut self`; the borrow
        // lives no longer than `&self`.
        Some(unsafe { &*h })
    }

    fn heap_mut(&mut self) -> Option<&mut Heap> {
        let h = self.heap_ptr(&self.parts())?;
        // SAFETY: as in `heap`, and `&mut self` makes this the only access.
        Some(unsafe { &mut *h })
    }

    /// Reallocate the block from `old` to `new` bytes: the first min(old, new) bytes are
    /// kept, the rest must be written before the block is read again.
    fn resize(&mut self, old: usize, new: usize) {
        let new_layout = layout(new);
        // SAFETY: the block was allocated with layout(old) (invariant); `new` is not zero
        // and valid with ALIGN (checked just above).
        let p = unsafe { alloc::realloc(self.ptr.as_ptr(), layout(old), new) };
        self.ptr = NonNull::new(p).unwrap_or_else(|| alloc::handle_alloc_error(new_layout));
    }

    /// Rewrite the payload, reusing the block's memory (realloc, often in place).
    fn set_payload(&mut self, payload: Payload<'_>) {
        let p = self.parts();
        let kind = payload.kind();
        let size = total(&[p.payload_at, payload.size(p.payload_at)]);
        // The old header, if any, moved out before the realloc may cut it off, and dropped
        // once the block no longer holds it. Nothing from here to that drop can unwind
        // (realloc failure aborts, Writer aborts), so it is dropped exactly once.
        let old_heap = self
            .heap_ptr(&p)
            // SAFETY: a valid Heap the block owns (invariant); the block's copy is
            // overwritten below before anything reads or drops it again.
            .map(|h| ManuallyDrop::new(unsafe { ptr::read(h) }));
        if size != p.size {
            self.resize(p.size, size);
        }
        // SAFETY: the block now has `size` bytes, and `&mut self` is the only access to
        // them. The prefix (meta, expiry, key) was kept; this writes the rest, then the
        // kind, and nothing between can unwind (Writer aborts instead).
        let mut w = unsafe { Writer::new(self.ptr.as_ptr(), size, p.payload_at) };
        payload.write(&mut w);
        w.finish();
        self.set_meta(meta(self.meta(), (p.flags & !KIND_MASK) | kind));
        if let Some(h) = old_heap {
            drop(ManuallyDrop::into_inner(h));
        }
    }

    /// Move the contents into a new block with this expiry and key (an inline payload's
    /// bytes copied, a `Heap` header moved).
    fn rebuild(&mut self, expire_at: i64, key: Option<&[u8]>) {
        let lru = self.lru();
        let (p, b) = self.view();
        let key = key.unwrap_or(&b[p.key_at..p.key_at + p.key_len]);
        let payload = match self.heap_ptr(&p) {
            // SAFETY: a valid Heap the block owns (invariant), moved to the new block;
            // ManuallyDrop keeps a panic in `build` from dropping it while this block
            // still owns it.
            Some(h) => Payload::Heap(ManuallyDrop::new(unsafe { ptr::read(h) })),
            None => Payload::Verbatim(p.kind(), &b[p.payload_at..]),
        };
        let new = build(lru, expire_at, key, payload);
        let old = std::mem::replace(&mut self.ptr, new);
        // SAFETY: `old` was allocated with layout(p.size); its Heap, if any, now belongs
        // to the new block, so only the memory is freed.
        unsafe { alloc::dealloc(old.as_ptr(), layout(p.size)) }
    }

    pub fn key(&self) -> &[u8] {
        let (_, at, len) = self.key_parts();
        // SAFETY: the key's bytes are initialized block bytes at..at + len (invariant),
        // borrowed with self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(at), len) }
    }

    pub fn value(&self) -> ValueRef<'_> {
        let (p, b) = self.view();
        let payload = &b[p.payload_at..];
        let inline = || {
            let (len, n) = len_field(payload);
            &payload[n..n + len]
        };
        ValueRef::Str(match p.kind() {
            KIND_INT => StrRef::Int(i64::from_le_bytes(
                payload[..INT].try_into().expect("8 bytes"),
            )),
            KIND_EMBSTR => StrRef::Embstr(inline()),
            KIND_RAW => StrRef::Raw(inline()),
            _ => return self.heap().expect("heap payload").view(),
        })
    }

    /// The value, for modification in place.
    pub fn value_mut(&mut self) -> ValueMut<'_> {
        if matches!(self.heap(), None | Some(Heap::Raw(_))) {
            return ValueMut::Str(StrMut::new(self));
        }
        match self.heap_mut().expect("heap payload") {
            Heap::List(l) => ValueMut::List(l),
            Heap::Hash(h) => ValueMut::Hash(h),
            Heap::Set(s) => ValueMut::Set(s),
            Heap::ZSet(z) => ValueMut::ZSet(z),
            Heap::Stream(s) => ValueMut::Stream(s),
            Heap::Raw(_) => unreachable!("strings returned above"),
        }
    }

    /// Replace the value (keeping key, expiry and access time).
    pub fn set_value<'v>(&mut self, v: impl Into<ValueRef<'v>>) {
        self.set_payload(Payload::of(v.into()));
    }

    /// The string's bytes for in-place modification, turning the value into a `raw`
    /// string held in a `Vec` first if it is not one already. Only for strings.
    pub(crate) fn make_raw(&mut self) -> &mut Vec<u8> {
        if !matches!(self.heap(), Some(Heap::Raw(_))) {
            let s = self.value().as_str().expect("make_raw of a string");
            let data = s.to_bytes().into_owned();
            self.set_payload(Payload::heap(Heap::Raw(data)));
        }
        match self.heap_mut() {
            Some(Heap::Raw(v)) => v,
            _ => unreachable!("made a raw heap value above"),
        }
    }

    /// Absolute expiry in Unix milliseconds, or [`NO_EXPIRE`].
    pub fn expire_at(&self) -> i64 {
        if (self.meta() >> 24) & u32::from(HAS_EXPIRE) == 0 {
            return NO_EXPIRE;
        }
        // SAFETY: with HAS_EXPIRE the 8 bytes after the meta are the expiry.
        i64::from_le_bytes(unsafe {
            ptr::read_unaligned(self.ptr.as_ptr().add(META).cast::<[u8; 8]>())
        })
    }

    /// Set or clear the expiry. The shard keeps its set of keys with a TTL in step
    /// ([`crate::Shard::set_expire`]), hence crate-private.
    pub(crate) fn set_expire_at(&mut self, expire_at: i64) {
        let p = self.parts();
        match (p.flags & HAS_EXPIRE != 0, expire_at != NO_EXPIRE) {
            (true, true) => {
                // SAFETY: the expiry field is bytes META..META+8 of this block, and
                // `&mut self` is the only access to them.
                let mut w = unsafe { Writer::new(self.ptr.as_ptr(), p.size, META) };
                w.put(&expire_at.to_le_bytes());
            }
            (false, false) => {}
            _ => self.rebuild(expire_at, None),
        }
    }

    pub fn is_expired(&self, now_ms: i64) -> bool {
        let at = self.expire_at();
        at != NO_EXPIRE && at <= now_ms
    }

    /// The 24-bit LRU clock of the last access (or LFU time and counter).
    pub fn lru(&self) -> u32 {
        self.meta() & LRU_MASK
    }

    /// Set the 24-bit access field (higher bits are dropped).
    pub fn set_lru(&mut self, lru: u32) {
        self.set_meta((self.meta() & !LRU_MASK) | (lru & LRU_MASK));
    }

    /// Mark accessed now.
    pub fn touch(&mut self) {
        self.set_lru(crate::evict::access::touched(self.lru()));
    }

    /// The same entry under another key (RENAME, MOVE).
    pub fn with_key(mut self, key: &[u8]) -> Entry {
        let at = self.expire_at();
        self.rebuild(at, Some(key));
        self
    }

    /// The block's address (DEBUG OBJECT's "at").
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Bytes of the block itself (values held outside it not included).
    pub fn block_size(&self) -> usize {
        self.parts().size
    }

    /// The bytes the key and its value take (MEMORY USAGE): the block at its size class
    /// (a value's header included), plus what a value holds outside it; elements
    /// allocated one by one are estimated from the first `samples` of them, as Redis's
    /// objectComputeSize does.
    pub fn footprint(&self, samples: usize) -> usize {
        let block = mem::size_class_aligned(self.block_size(), ALIGN);
        block + self.heap().map_or(0, |h| h.footprint(samples))
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let p = self.parts();
        if let Some(h) = self.heap_ptr(&p) {
            // SAFETY: a valid Heap the block owns (invariant), dropped once: the block is
            // going away.
            unsafe { ptr::drop_in_place(h) }
        }
        // SAFETY: the block was allocated with layout(p.size) (invariant).
        unsafe { alloc::dealloc(self.ptr.as_ptr(), layout(p.size)) }
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("key", &String::from_utf8_lossy(self.key()))
            .field("value", &self.value())
            .field("expire_at", &self.expire_at())
            .field("lru", &self.lru())
            .finish()
    }
}

/// A key's value, for modification in place (see [`crate::Entry::value_mut`]).
pub enum ValueMut<'a> {
    Str(StrMut<'a>),
    List(&'a mut List),
    Hash(&'a mut Hash),
    Set(&'a mut Set),
    ZSet(&'a mut ZSet),
    Stream(&'a mut Stream),
}

/// A key's string, for modification in place.
pub struct StrMut<'a> {
    entry: &'a mut Entry,
}

impl<'a> StrMut<'a> {
    /// Only for an entry holding a string.
    pub(crate) fn new(entry: &'a mut Entry) -> StrMut<'a> {
        StrMut { entry }
    }

    pub fn get(&self) -> StrRef<'_> {
        self.entry.value().as_str().expect("StrMut holds a string")
    }

    /// The string, borrowed for as long as the entry was.
    pub fn into_ref(self) -> StrRef<'a> {
        self.entry.value().as_str().expect("StrMut holds a string")
    }

    pub fn len(&self) -> usize {
        self.get().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replace the string (the key keeps its TTL).
    pub fn set(&mut self, v: StrRef<'_>) {
        self.entry.set_value(v);
    }

    /// Turn the value into `raw` (if it is not already) and give its bytes for in-place
    /// modification.
    pub fn make_raw(self) -> &'a mut Vec<u8> {
        self.entry.make_raw()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{StrValue, Value};

    fn check(e: &Entry, key: &[u8], v: StrRef<'_>, expire: i64, lru: u32) {
        assert_eq!(e.key(), key);
        assert_eq!(e.value(), ValueRef::Str(v));
        assert_eq!(e.expire_at(), expire);
        assert_eq!(e.lru(), lru);
    }

    #[test]
    fn small_string_is_one_block() {
        let e = Entry::new(
            b"key:00000000001",
            StrRef::encode(&[b'x'; 64]),
            NO_EXPIRE,
            7,
        );
        // meta 4 + key 1+15 + value 1+64: one 96-byte jemalloc class.
        assert_eq!(e.block_size(), 85);
        check(
            &e,
            b"key:00000000001",
            StrRef::Raw(&[b'x'; 64]),
            NO_EXPIRE,
            7,
        );
    }

    #[test]
    fn kinds_lengths_and_expiry() {
        let long_key = vec![b'k'; 300];
        let long_val = vec![b'v'; 70_000];
        for key in [&b""[..], b"a", &[b'z'; 254], &[b'z'; 255], &long_key] {
            for v in [
                StrRef::Int(i64::MIN),
                StrRef::Int(42),
                StrRef::Embstr(b""),
                StrRef::Embstr(b"hello"),
                StrRef::Raw(&[1u8; 254]),
                StrRef::Raw(&[2u8; 255]),
                StrRef::Raw(&long_val),
            ] {
                for expire in [NO_EXPIRE, 0, 1_700_000_000_000] {
                    let mut e = Entry::new(key, v, expire, 0xff_ffff);
                    check(&e, key, v, expire, 0xff_ffff);
                    e.set_lru(0x1234_5678);
                    check(&e, key, v, expire, 0x34_5678);
                    e.set_expire_at(5);
                    check(&e, key, v, 5, 0x34_5678);
                    e.set_expire_at(NO_EXPIRE);
                    check(&e, key, v, NO_EXPIRE, 0x34_5678);
                    e.set_expire_at(expire);
                    let e = e.with_key(b"other");
                    check(&e, b"other", v, expire, 0x34_5678);
                }
            }
        }
    }

    #[test]
    fn set_value_between_kinds() {
        let big = vec![b'q'; 1000];
        let values = [
            StrRef::Int(-1),
            StrRef::Embstr(b"abc"),
            StrRef::Raw(&big),
            StrRef::Raw(b"xyz"),
        ];
        for from in values {
            for to in values {
                let mut e = Entry::new(b"k", from, 99, 3);
                e.set_value(to);
                check(&e, b"k", to, 99, 3);
                // Through a heap value and back.
                e.make_raw().extend_from_slice(b"!");
                let mut expect = to.to_bytes().into_owned();
                expect.push(b'!');
                check(&e, b"k", StrRef::Raw(&expect), 99, 3);
                e.set_value(from);
                check(&e, b"k", from, 99, 3);
            }
        }
    }

    #[test]
    fn heap_values_move_and_drop() {
        let mut e = Entry::new(b"k", StrRef::Int(12), NO_EXPIRE, 0);
        e.make_raw().extend_from_slice(b"34");
        assert_eq!(e.value(), ValueRef::Str(StrRef::Raw(b"1234")));
        // Moved into new blocks (the Box changes owner, freed once).
        e.set_expire_at(10);
        let mut e = e.with_key(b"renamed");
        check(&e, b"renamed", StrRef::Raw(b"1234"), 10, 0);
        e.make_raw().push(b'5');
        assert_eq!(
            e.value().to_value(),
            Value::Str(StrValue::Raw(b"12345".to_vec()))
        );
        // Replaced by an inline value (the Box is freed).
        e.set_value(StrRef::Int(1));
        check(&e, b"renamed", StrRef::Int(1), 10, 0);
        e.make_raw().clear();
        drop(e);
    }

    #[test]
    fn collection_headers_live_in_the_block() {
        use crate::coll::Hash;
        let mut h = Hash::new();
        let limits = crate::coll::Limits::default();
        for i in 0..10u8 {
            h.set(&[b'f', i], &[b'v', i], &limits);
        }
        // Every key length moves the header to another padding before it.
        for key_len in 0..10usize {
            let key = vec![b'k'; key_len];
            let mut e = Entry::from_value(&key, Value::Hash(Box::new(h.clone())), NO_EXPIRE, 1);
            assert_eq!(e.block_size() % HEAP_ALIGN, 0);
            assert_eq!(e.value(), ValueRef::Hash(&h));
            e.set_expire_at(77);
            assert_eq!((e.value(), e.expire_at()), (ValueRef::Hash(&h), 77));
            let mut e = e.with_key(&vec![b'r'; key_len + 3]);
            assert_eq!(e.value(), ValueRef::Hash(&h));
            let ValueMut::Hash(m) = e.value_mut() else {
                panic!("a hash")
            };
            m.set(b"new", b"field", &limits);
            assert_eq!(e.value().as_hash().map(|h| h.len()), Some(11));
            e.set_expire_at(NO_EXPIRE);
            assert_eq!(e.value().as_hash().map(|h| h.len()), Some(11));
            // Header replaced by a string and by another header, then dropped.
            e.set_value(StrRef::Embstr(b"short"));
            assert_eq!(e.value(), ValueRef::Str(StrRef::Embstr(b"short")));
            e.set_value(ValueRef::Hash(&h));
            assert_eq!(e.value(), ValueRef::Hash(&h));
        }
    }

    #[test]
    fn value_mut_and_threads() {
        let mut e = Entry::new(b"k", StrRef::Embstr(b"a"), NO_EXPIRE, 0);
        let ValueMut::Str(mut s) = e.value_mut() else {
            panic!("a string")
        };
        assert_eq!(s.get(), StrRef::Embstr(b"a"));
        s.set(StrRef::Int(5));
        s.make_raw().push(b'0');
        assert_eq!(e.value().as_str().unwrap().encoding(), "raw");
        let h = std::thread::spawn(move || e.value().to_value());
        assert_eq!(h.join().unwrap(), Value::Str(StrValue::Raw(b"50".to_vec())));
    }
}
#[cfg(test)]
mod sizes {
    /// A collection key's value header, held in its key block, takes 32 bytes (plus up
    /// to 7 of alignment padding).
    #[test]
    fn heap_value_is_32_bytes() {
        assert_eq!(std::mem::size_of::<super::Heap>(), 32);
        assert!(std::mem::size_of::<crate::coll::Hash>() <= 24);
        assert!(std::mem::size_of::<crate::coll::Set>() <= 24);
        assert!(std::mem::size_of::<crate::coll::ZSet>() <= 24);
    }
}
