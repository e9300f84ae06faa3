//! Unit and model-based property tests of the quicklist.

use super::*;
use proptest::prelude::*;
use std::collections::VecDeque;

fn check(l: &List, model: &VecDeque<Vec<u8>>) {
    assert_eq!(l.len(), model.len());
    assert_eq!(l.to_vecs(), model.iter().cloned().collect::<Vec<_>>());
    let counted: usize = l.nodes.iter().map(|n| n.count as usize).sum();
    assert_eq!(counted, l.len());
    assert!(l.nodes.iter().all(|n| n.count > 0), "no empty node");
    assert!(l.nodes.iter().all(|n| n.lp().len() == n.count as usize));
    assert!(l
        .nodes
        .iter()
        .all(|n| n.plain || n.lp().bytes_len() == n.sz as usize));
    assert!(l.nodes.iter().all(|n| !n.plain || n.count == 1));
    // The `compress` nodes at each end are never compressed.
    let depth = (l.compress as usize).max(1);
    for (i, n) in l.nodes.iter().enumerate() {
        if i < depth || i + depth >= l.nodes.len() {
            assert!(
                !n.is_compressed(),
                "node {i} of {} compressed",
                l.nodes.len()
            );
        }
    }
    for (i, item) in model.iter().enumerate() {
        if i % 7 == 0 {
            assert_eq!(l.get(i as i64).as_ref(), Some(item));
            assert_eq!(l.get(i as i64 - model.len() as i64).as_ref(), Some(item));
        }
    }
    assert_eq!(l.get(model.len() as i64), None);
}

#[test]
fn fill_counts_entries_or_bytes() {
    let mut l = List::with_options(2, 0);
    for v in ["a", "b", "c", "d", "e"] {
        l.push(v.as_bytes(), false);
    }
    assert_eq!(l.node_count(), 3);
    // -1: nodes up to 4 KiB; a 100-byte element takes 103 bytes and may join a node
    // while sz + 100 + 8 <= 4096.
    let mut l = List::with_options(-1, 0);
    for _ in 0..100 {
        l.push(&[b'x'; 100], true);
    }
    assert!(l.nodes.iter().all(|n| n.sz as usize <= 4096));
    assert_eq!(l.nodes[1].count, 39); // 7 + 103 * 38 + 108 <= 4096
                                      // A count fill still stops at the 8 KiB safety limit.
    let mut l = List::with_options(1000, 0);
    for _ in 0..100 {
        l.push(&[b'y'; 1000], false);
    }
    assert!(l.nodes.iter().all(|n| n.sz as usize <= 8192));
    // Out-of-range options are clamped as Redis clamps them.
    assert_eq!(List::with_options(-100, -3).fill, -5);
    assert_eq!(List::with_options(1 << 40, 1 << 40).compress, 65535);
}

#[test]
fn inner_nodes_compress() {
    let mut l = List::with_options(4, 1);
    for i in 0..40 {
        l.push(
            format!("element number {i} with some repeated text text text").as_bytes(),
            false,
        );
    }
    assert_eq!(l.node_count(), 10);
    let compressed: Vec<bool> = l.nodes.iter().map(Node::is_compressed).collect();
    assert!(!compressed[0] && !compressed[9]);
    assert!(compressed[1..9].iter().all(|&c| c));
    assert_eq!(
        l.get(17).unwrap(),
        b"element number 17 with some repeated text text text"
    );
    assert!(l.set(17, b"changed"));
    assert!(l.insert(b"changed", true, b"after"));
    assert_eq!(l.get(18).unwrap(), b"after");
    assert_eq!(l.remove(b"changed", 0), 1);
    let mut model: Vec<Vec<u8>> = (0..40)
        .map(|i| format!("element number {i} with some repeated text text text").into_bytes())
        .collect();
    model[17] = b"after".to_vec();
    assert_eq!(l.to_vecs(), model);
}

#[derive(Clone, Debug)]
enum Op {
    Push(bool, Vec<u8>),
    Pop(bool),
    Set(i64, Vec<u8>),
    Insert(usize, bool, Vec<u8>),
    Remove(usize, i64),
    DelRange(i64, usize),
    Visit(usize, bool, usize),
    Plain(Vec<u8>),
}

fn element() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (-20i64..20).prop_map(|n| n.to_string().into_bytes()),
        proptest::collection::vec(b'a'..b'd', 0..12),
        (0usize..3, 50usize..3000).prop_map(|(c, n)| vec![b'p' + c as u8; n]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<bool>(), element()).prop_map(|(l, v)| Op::Push(l, v)),
        2 => any::<bool>().prop_map(Op::Pop),
        2 => (-50i64..50, element()).prop_map(|(i, v)| Op::Set(i, v)),
        3 => (0usize..64, any::<bool>(), element()).prop_map(|(p, a, v)| Op::Insert(p, a, v)),
        1 => (0usize..64, -3i64..3).prop_map(|(p, c)| Op::Remove(p, c)),
        1 => (-40i64..40, 0usize..20).prop_map(|(s, c)| Op::DelRange(s, c)),
        2 => (0usize..80, any::<bool>(), 1usize..30).prop_map(|(s, f, n)| Op::Visit(s, f, n)),
        1 => element().prop_map(Op::Plain),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn behaves_like_a_deque(
        fill in prop_oneof![Just(-2i64), Just(-1), Just(0), Just(1), Just(3), Just(-5)],
        depth in 0i64..3,
        ops in proptest::collection::vec(op(), 1..150),
    ) {
        let mut l = List::with_options(fill, depth);
        let mut m: VecDeque<Vec<u8>> = VecDeque::new();
        for op in ops {
            match op {
                Op::Push(left, v) => {
                    l.push(&v, left);
                    if left { m.push_front(v) } else { m.push_back(v) }
                }
                Op::Pop(left) => {
                    let want = if left { m.pop_front() } else { m.pop_back() };
                    prop_assert_eq!(l.pop(left), want);
                }
                Op::Set(i, v) => {
                    let len = m.len() as i64;
                    let at = if i < 0 { len + i } else { i };
                    let ok = (0..len).contains(&at);
                    prop_assert_eq!(l.set(i, &v), ok);
                    if ok { m[at as usize] = v; }
                }
                Op::Insert(p, after, v) => {
                    let pivot = m.get(p).cloned().unwrap_or_else(|| b"none".to_vec());
                    let found = m.iter().position(|x| *x == pivot);
                    prop_assert_eq!(l.insert(&pivot, after, &v), found.is_some());
                    if let Some(f) = found { m.insert(f + usize::from(after), v); }
                }
                Op::Remove(p, count) => {
                    let v = m.get(p).cloned().unwrap_or_else(|| b"1".to_vec());
                    let mut removed = 0;
                    let limit = count.unsigned_abs() as usize;
                    let idx: Vec<usize> = if count >= 0 {
                        (0..m.len()).collect()
                    } else {
                        (0..m.len()).rev().collect()
                    };
                    let mut gone = Vec::new();
                    for i in idx {
                        if m[i] == v && (limit == 0 || removed < limit) {
                            gone.push(i);
                            removed += 1;
                        }
                    }
                    gone.sort_unstable();
                    for i in gone.into_iter().rev() { m.remove(i); }
                    prop_assert_eq!(l.remove(&v, count), removed);
                }
                Op::DelRange(start, count) => {
                    let len = m.len() as i64;
                    let s = if start < 0 { len + start } else { start };
                    if (0..len).contains(&s) && count > 0 {
                        let end = (s as usize + count).min(m.len());
                        m.drain(s as usize..end);
                    }
                    l.del_range(start, count);
                }
                Op::Plain(v) => {
                    l.append_plain(v.clone().into_boxed_slice());
                    m.push_back(v);
                }
                Op::Visit(start, forward, n) => {
                    let mut got = Vec::new();
                    l.visit(start, forward, |it| {
                        got.push(it.to_vec());
                        got.len() < n
                    });
                    let want: Vec<Vec<u8>> = if start >= m.len() {
                        Vec::new()
                    } else if forward {
                        m.iter().skip(start).take(n).cloned().collect()
                    } else {
                        m.iter().take(start + 1).rev().take(n).cloned().collect()
                    };
                    prop_assert_eq!(got, want);
                    prop_assert_eq!(l.get_visit(start as i64), m.get(start).cloned());
                }
            }
            check(&l, &m);
        }
    }
}
