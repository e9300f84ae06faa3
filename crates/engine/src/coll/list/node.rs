//! A quicklist node: a listpack (or a plain node's one element), possibly LZF-compressed,
//! with the counts quicklist.c keeps beside it.

use crate::coll::listpack::Listpack;
use crate::rdb::lzf;
use std::borrow::Cow;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Data {
    Raw(Listpack),
    /// A plain node's one element (quicklist's PLAIN container; only loaded from a payload
    /// here, as Skein's packed threshold is Redis's default of 1 GiB).
    Plain(Box<[u8]>),
    /// LZF bytes of the listpack or plain element (whose size is the node's `sz`).
    Lzf(Box<[u8]>),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Node {
    pub(super) data: Data,
    /// Elements in the node.
    pub(super) count: u32,
    /// Bytes of the (uncompressed) listpack.
    pub(super) sz: u32,
    /// Decompressed for use: compress again when done (quicklist.c `recompress`).
    pub(super) recompress: bool,
    /// A plain node (one element, not a listpack).
    pub(super) plain: bool,
}

impl Node {
    /// Bytes of the node's buffer.
    pub(super) fn footprint(&self) -> usize {
        match &self.data {
            Data::Raw(lp) => lp.allocated(),
            Data::Plain(b) | Data::Lzf(b) => crate::mem::vec::<u8>(b.len()),
        }
    }

    pub(super) fn of(lp: Listpack) -> Node {
        Node {
            count: lp.len() as u32,
            sz: lp.bytes_len() as u32,
            data: Data::Raw(lp),
            recompress: false,
            plain: false,
        }
    }

    pub(super) fn plain(v: Box<[u8]>) -> Node {
        Node {
            count: 1,
            sz: v.len() as u32,
            data: Data::Plain(v),
            recompress: false,
            plain: true,
        }
    }

    pub(super) fn with(v: &[u8]) -> Node {
        let mut lp = Listpack::new();
        lp.push_back(v);
        Node::of(lp)
    }

    /// The node's listpack (decompressed into a copy when compressed).
    /// (A plain node's element in a one-element listpack.)
    pub(super) fn lp(&self) -> Cow<'_, Listpack> {
        match &self.data {
            Data::Raw(lp) => Cow::Borrowed(lp),
            Data::Plain(v) => Cow::Owned(single(v)),
            Data::Lzf(_) => match self.inflated() {
                Data::Raw(lp) => Cow::Owned(lp),
                Data::Plain(v) => Cow::Owned(single(&v)),
                Data::Lzf(_) => Cow::Owned(Listpack::new()),
            },
        }
    }

    /// The node's data decompressed.
    pub(super) fn inflated(&self) -> Data {
        let Data::Lzf(blob) = &self.data else {
            return self.data.clone();
        };
        let bytes = lzf::decompress(blob, self.sz as usize)
            .expect("a compressed node holds our own LZF bytes");
        if self.plain {
            Data::Plain(bytes.into_boxed_slice())
        } else {
            Data::Raw(Listpack::from_bytes(bytes).expect("a compressed node holds a listpack"))
        }
    }

    /// Decompress in place.
    pub(super) fn inflate(&mut self) {
        if self.is_compressed() {
            self.data = self.inflated();
        }
    }

    /// The listpack of a packed node (decompressed first). The callers never edit a plain
    /// node in place; should one, it becomes a packed node of its element.
    pub(super) fn lp_mut(&mut self) -> &mut Listpack {
        self.inflate();
        if let Data::Plain(v) = &self.data {
            self.data = Data::Raw(single(v));
            self.plain = false;
        }
        match &mut self.data {
            Data::Raw(lp) => lp,
            Data::Plain(_) | Data::Lzf(_) => unreachable!("made a listpack above"),
        }
    }

    /// Refresh `count` and `sz` after a change (quicklistNodeUpdateSz).
    pub(super) fn update(&mut self) {
        if let Data::Raw(lp) = &self.data {
            self.sz = lp.bytes_len() as u32;
            self.count = lp.len() as u32;
        }
    }

    pub(super) fn is_compressed(&self) -> bool {
        matches!(self.data, Data::Lzf(_))
    }
}

/// A listpack of one element.
pub(super) fn single(v: &[u8]) -> Listpack {
    let mut lp = Listpack::new();
    lp.push_back(v);
    lp
}

/// One node as RDB writes it.
pub enum NodeRef<'a> {
    /// A listpack's bytes.
    Packed(&'a [u8]),
    /// A plain node's element.
    Plain(&'a [u8]),
    /// An LZF-compressed node: the compressed bytes, the uncompressed size, and whether
    /// the node is plain.
    Lzf(&'a [u8], usize, bool),
}
