//! list-compress-depth: the LZF compression of inner nodes, as quicklist.c decides it
//! (__quicklistCompress, quicklistCompress, the recompress flag).

use super::node::Data;
use super::List;
use crate::rdb::lzf;

/// Nodes smaller than this are never compressed.
const MIN_COMPRESS_BYTES: usize = 48;
/// Compression must save at least this many bytes to be kept.
const MIN_COMPRESS_IMPROVE: usize = 8;

impl List {
    /// __quicklistCompressNode (only raw nodes; the ends are never compressed).
    pub(super) fn compress_node(&mut self, i: usize) {
        let last = self.nodes.len().saturating_sub(1);
        if i == 0 || i >= last {
            return;
        }
        let node = &mut self.nodes[i];
        let bytes: &[u8] = match &node.data {
            Data::Raw(lp) => lp.as_bytes(),
            Data::Plain(v) => v,
            Data::Lzf(_) => return,
        };
        node.recompress = false;
        let sz = node.sz as usize;
        if sz < MIN_COMPRESS_BYTES {
            return;
        }
        if let Some(c) = lzf::compress(bytes, sz) {
            if c.len() + MIN_COMPRESS_IMPROVE < sz {
                node.data = Data::Lzf(c.into_boxed_slice());
            }
        }
    }

    /// quicklistDecompressNode.
    pub(super) fn decompress_node(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        if node.is_compressed() {
            node.inflate();
            node.recompress = false;
        }
    }

    /// quicklistDecompressNodeForUse.
    pub(super) fn decompress_for_use(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        if node.is_compressed() {
            node.inflate();
            node.recompress = true;
        }
    }

    /// __quicklistCompress: the `compress` nodes at each end raw, the next ones (and
    /// `node`, when it is inside) compressed.
    pub(super) fn compress_around(&mut self, node: Option<usize>) {
        let len = self.nodes.len();
        let depth = self.compress as usize;
        if len == 0 || depth == 0 || len < depth * 2 {
            return;
        }
        let (mut f, mut r) = (0, len - 1);
        let mut in_depth = false;
        for _ in 0..depth {
            self.decompress_node(f);
            self.decompress_node(r);
            if node == Some(f) || node == Some(r) {
                in_depth = true;
            }
            if f == r || f + 1 == r {
                return;
            }
            f += 1;
            r -= 1;
        }
        if !in_depth {
            if let Some(n) = node {
                self.compress_node(n);
            }
        }
        self.compress_node(f);
        self.compress_node(r);
    }

    /// quicklistCompress.
    pub(super) fn compress(&mut self, i: usize) {
        if self.nodes[i].recompress {
            self.compress_node(i);
        } else {
            self.compress_around(Some(i));
        }
    }

    /// quicklistRecompressOnly.
    pub(super) fn recompress_only(&mut self, i: usize) {
        if self.nodes[i].recompress {
            self.compress_node(i);
        }
    }
}
