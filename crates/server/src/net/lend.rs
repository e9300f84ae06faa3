//! Buffers a worker lends to the connection it is servicing.
//!
//! An idle connection owns no read or reply buffer. When the worker services a
//! connection it lends it its spare read buffer (already sized and initialized, so no
//! zeroing per read) and its spare reply buffer; once the connection's input is all
//! parsed and its replies all written, they come back. A connection keeps what it was
//! lent only while it holds something in it: a request that arrived in part (past
//! `PART_KEEP` bytes; a smaller part is copied out into a buffer of its own size), or
//! replies the socket did not take; the worker then makes a new spare when it next needs
//! one.
//! Buffers grown past `KEEP` stay with their connection until it has been idle a while
//! (`Conn::trim`, as Redis's clientsCron resizes an idle client's query buffer).
//! The argument ranges of the command being parsed need no keeping at all: they are the
//! worker's, reused for every command.

use std::ops::Range;

/// Size of a fresh read buffer, and the free room wanted before a read.
pub const READ_CHUNK: usize = 16 * 1024;
/// A request that arrived in part, up to this many bytes, is copied out of the read
/// buffer so the buffer can go back to the worker.
pub const PART_KEEP: usize = 1024;
/// Buffers up to this capacity go back to the worker; larger ones stay with their
/// connection until it is idle (then they are freed).
pub const KEEP: usize = 64 * 1024;
/// Reply buffers a worker keeps, by their total capacity: the connections of one loop
/// iteration hold theirs until the iteration's replies are written
/// (`Conn::flush_deferred`), then give them back. Enough for a few hundred connections'
/// pipelines of small replies, so a busy iteration reuses grown buffers instead of
/// growing new ones from nothing.
const SPARE_OUT_BYTES: usize = 1024 * 1024;
/// A reply buffer made when none is spare starts with this much room (a pipeline of small
/// replies then fits without growing it step by step).
const FRESH_OUT: usize = 1024;

#[derive(Default)]
pub struct Spare {
    read: Vec<u8>,
    outs: Vec<Vec<u8>>,
    /// The total capacity of `outs`.
    out_bytes: usize,
    /// Argument ranges of the command being parsed (cleared by every parse).
    pub ranges: Vec<Range<usize>>,
}

impl Spare {
    /// A read buffer with room for a read (its whole length is free room).
    pub fn take_read(&mut self) -> Vec<u8> {
        let mut v = std::mem::take(&mut self.read);
        if v.len() < READ_CHUNK {
            v.resize(READ_CHUNK, 0);
        }
        v
    }

    /// An empty reply buffer (keeps its capacity; none when the worker has none spare).
    pub fn take_out(&mut self) -> Vec<u8> {
        match self.outs.pop() {
            Some(v) => {
                self.out_bytes -= v.capacity();
                v
            }
            None => Vec::with_capacity(FRESH_OUT),
        }
    }

    /// A read buffer whose bytes are all consumed. Freed when the worker already has
    /// one, or when it grew past `KEEP` (the caller keeps those instead).
    pub fn give_read(&mut self, v: Vec<u8>) {
        if self.read.is_empty() {
            self.read = v;
        }
    }

    /// A reply buffer whose bytes are all written (freed when the worker keeps enough).
    pub fn give_out(&mut self, mut v: Vec<u8>) {
        if self.out_bytes + v.capacity() <= SPARE_OUT_BYTES {
            v.clear();
            self.out_bytes += v.capacity();
            self.outs.push(v);
        }
    }
}
