//! RDB encoding of lists: Redis 7.0 writes `RDB_TYPE_LIST_QUICKLIST_2`, one listpack per
//! quicklist node (an LZF-compressed node as its LZF blob).

use super::ziplist::ziplist_items;
use super::{
    write_len, write_string, RdbError, Reader, TYPE_LIST, TYPE_LIST_QUICKLIST,
    TYPE_LIST_QUICKLIST_2, TYPE_LIST_ZIPLIST,
};
use crate::coll::list::NodeRef;
use crate::coll::listpack::{Item, Listpack};
use crate::coll::List;
use crate::value::Value;

/// quicklist node containers (`QUICKLIST_NODE_CONTAINER_*`).
pub(super) const CONTAINER_PLAIN: u64 = 1;
pub(super) const CONTAINER_PACKED: u64 = 2;
/// `RDB_ENCVAL << 6 | RDB_ENC_LZF`: an LZF blob follows.
const LZF_BLOB: u8 = 0xC3;

pub(super) fn object_type(_: &List) -> u8 {
    TYPE_LIST_QUICKLIST_2
}

pub(super) fn write(out: &mut Vec<u8>, l: &List, compress: bool) {
    write_len(out, l.node_count() as u64);
    for node in l.nodes() {
        let plain = matches!(node, NodeRef::Plain(_) | NodeRef::Lzf(_, _, true));
        write_len(
            out,
            if plain {
                CONTAINER_PLAIN
            } else {
                CONTAINER_PACKED
            },
        );
        match node {
            NodeRef::Packed(bytes) | NodeRef::Plain(bytes) => write_string(out, bytes, compress),
            // rdbSaveLzfBlob: the node's own compressed bytes.
            NodeRef::Lzf(blob, sz, _) => {
                out.push(LZF_BLOB);
                write_len(out, blob.len() as u64);
                write_len(out, sz as u64);
                out.extend_from_slice(blob);
            }
        }
    }
}

/// rdbLoadObject for the list types: every one Redis 7.0 loads, checked as its deep
/// integrity validation checks them. The list takes the reader's list options (the
/// server's, for RESTORE), as Redis's loader does.
pub(super) fn read(r: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    let limits = *r.limits();
    let mut list = List::from_limits(&limits);
    match t {
        TYPE_LIST => {
            let n = r.read_len()?;
            for _ in 0..n {
                list.push(&r.read_string()?.into_bytes(), false);
            }
        }
        TYPE_LIST_ZIPLIST => {
            let blob = r.read_string()?.into_bytes();
            for it in ziplist_items(&blob).ok_or(RdbError::Corrupt)? {
                list.push(&it.to_vec(), false);
            }
        }
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            let n = r.read_len()?;
            for _ in 0..n {
                let container = if t == TYPE_LIST_QUICKLIST_2 {
                    r.read_len()?
                } else {
                    CONTAINER_PACKED
                };
                if container != CONTAINER_PACKED && container != CONTAINER_PLAIN {
                    return Err(RdbError::Corrupt);
                }
                let data = r.read_string()?.into_bytes();
                if data.is_empty() {
                    return Err(RdbError::Corrupt);
                }
                if container == CONTAINER_PLAIN {
                    list.append_plain(data.into_owned().into_boxed_slice());
                    continue;
                }
                let lp = if t == TYPE_LIST_QUICKLIST_2 {
                    Listpack::from_bytes(data.into_owned()).ok_or(RdbError::Corrupt)?
                } else {
                    let mut lp = Listpack::new();
                    for it in ziplist_items(&data).ok_or(RdbError::Corrupt)? {
                        match it {
                            Item::Int(n) => lp.insert_int(lp.end(), n),
                            Item::Str(s) => lp.insert(lp.end(), s),
                        };
                    }
                    lp
                };
                // Redis skips empty nodes silently (an empty list fails below).
                if !lp.is_empty() {
                    list.append_node(lp);
                }
            }
        }
        _ => return Err(RdbError::UnsupportedType(t)),
    }
    if list.is_empty() {
        return Err(RdbError::Corrupt);
    }
    Ok(Value::List(Box::new(list)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::{dump_payload, load_payload};
    use rand::{Rng, SeedableRng};

    /// A ziplist of "a", 7, "hello" as Redis 6.2 writes it.
    const ZL: &[u8] = b"\x17\x00\x00\x00\x0f\x00\x00\x00\x03\x00\x00\x01a\x03\xf8\x02\x05hello\xff";

    #[test]
    fn reads_a_ziplist() {
        let items: Vec<Vec<u8>> = ziplist_items(ZL)
            .unwrap()
            .iter()
            .map(Item::to_vec)
            .collect();
        assert_eq!(items, vec![b"a".to_vec(), b"7".to_vec(), b"hello".to_vec()]);
    }

    #[test]
    fn round_trips_and_survives_hostile_bytes() {
        let mut l = List::with_options(3, 1);
        for i in 0..50 {
            l.push(
                format!("value {i} value value value value").as_bytes(),
                i % 2 == 0,
            );
        }
        let v = Value::List(Box::new(l.clone()));
        for compress in [false, true] {
            let p = dump_payload(v.view(), compress);
            match load_payload(&p) {
                Ok(Value::List(got)) => assert_eq!(got.to_vecs(), l.to_vecs()),
                other => panic!("{other:?}"),
            }
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let good = dump_payload(v.view(), false);
        for _ in 0..5000 {
            let mut p = good.clone();
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..p.len());
                p[i] = rng.gen();
            }
            let _ = load_payload(&p);
            let mut z = ZL.to_vec();
            let i = rng.gen_range(0..z.len());
            z[i] = rng.gen();
            z.truncate(rng.gen_range(0..=z.len()));
            let _ = ziplist_items(&z);
        }
    }
}
