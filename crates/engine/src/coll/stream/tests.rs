use super::*;

fn lim() -> Limits {
    Limits::default()
}

fn add(s: &mut Stream, id: StreamId, pairs: &[&[u8]]) -> Result<StreamId, AddError> {
    s.append(NewId::Exact(id), pairs, 0, &lim())
}

fn ids(s: &Stream, rev: bool) -> Vec<StreamId> {
    s.range(StreamId::MIN, StreamId::MAX, rev, 0)
        .iter()
        .map(|e| e.id)
        .collect()
}

#[test]
fn append_range_and_fields() {
    let mut s = Stream::new();
    for i in 1..=250u64 {
        let v = i.to_string();
        let pairs: [&[u8]; 4] = if i % 3 == 0 {
            [b"other", v.as_bytes(), b"x", b"y"]
        } else {
            [b"a", v.as_bytes(), b"b", b"word"]
        };
        add(&mut s, StreamId::new(i, i), &pairs).unwrap();
    }
    assert_eq!(s.len(), 250);
    assert_eq!(s.node_count(), 3);
    let fwd = ids(&s, false);
    let mut back = ids(&s, true);
    back.reverse();
    assert_eq!(fwd, back);
    assert_eq!(fwd.len(), 250);
    let e = s.get(StreamId::new(9, 9)).unwrap();
    let f: Vec<_> = e.fields().map(|(a, b)| (a.to_vec(), b.to_vec())).collect();
    assert_eq!(
        f,
        vec![
            (b"other".to_vec(), b"9".to_vec()),
            (b"x".to_vec(), b"y".to_vec())
        ]
    );
    assert_eq!(
        add(&mut s, StreamId::new(3, 0), &[b"a", b"b"]),
        Err(AddError::NotGreater)
    );
    let r = s.range(StreamId::new(100, 0), StreamId::new(105, 200), true, 2);
    assert_eq!(
        r.iter().map(|e| e.id.ms).collect::<Vec<_>>(),
        vec![105, 104]
    );
}

#[test]
fn delete_and_trim() {
    let mut s = Stream::new();
    for i in 1..=300u64 {
        add(&mut s, StreamId::new(i, 0), &[b"f", b"v"]).unwrap();
    }
    assert_eq!(
        s.delete(&[
            StreamId::new(1, 0),
            StreamId::new(1, 0),
            StreamId::new(5, 0)
        ]),
        2
    );
    assert_eq!(s.first_id(), StreamId::new(2, 0));
    assert_eq!(s.max_deleted_id(), StreamId::new(5, 0));
    assert_eq!(s.len(), 298);
    // Approximate: only whole nodes.
    assert_eq!(s.trim(Trim::MaxLen(150), true, 0), 98);
    assert_eq!(s.len(), 200);
    assert_eq!(s.trim(Trim::MaxLen(150), false, 0), 50);
    assert_eq!(s.first_id(), StreamId::new(151, 0));
    assert_eq!(s.trim(Trim::MinId(StreamId::new(290, 0)), false, 0), 139);
    assert_eq!(ids(&s, false).first(), Some(&StreamId::new(290, 0)));
    assert_eq!(s.first_id_with_tombstones(), StreamId::new(201, 0));
}

#[test]
fn wrapping_deltas() {
    let mut s = Stream::new();
    add(&mut s, StreamId::new(5, 10), &[b"a", b"1"]).unwrap();
    add(&mut s, StreamId::new(6, 0), &[b"a", b"2"]).unwrap();
    add(&mut s, StreamId::new(u64::MAX, 3), &[b"a", b"3"]).unwrap();
    assert_eq!(
        ids(&s, false),
        vec![
            StreamId::new(5, 10),
            StreamId::new(6, 0),
            StreamId::new(u64::MAX, 3)
        ]
    );
    for (_, lp) in s.nodes() {
        assert!(node::validate(lp));
    }
}

#[test]
fn counters_from_a_payload_wrap_as_in_redis() {
    // entries-added 2^64-1 (Redis's long long -1): the next XADD makes it 0.
    let at_end = Some((StreamId::new(0, 0), StreamId::new(0, 0), u64::MAX));
    let mut s = Stream::from_parts(BTreeMap::new(), 0, StreamId::new(1, 1), at_end).unwrap();
    add(&mut s, StreamId::new(2, 0), &[b"a", b"1"]).unwrap();
    assert_eq!(s.entries_added(), 0);
    add(&mut s, StreamId::new(3, 0), &[b"a", b"2"]).unwrap();
    // Read counters at either end: the lag and the next read wrap.
    assert_eq!(
        s.meta().lag(&Group::new(StreamId::new(2, 0), i64::MIN)),
        Some(1i64.wrapping_sub(i64::MIN))
    );
    s.put_group(b"g".to_vec(), Group::new(StreamId::new(2, 0), i64::MAX));
    let c: Name = std::sync::Arc::from(&b"c"[..]);
    let read = s.read_group(b"g", &c, 0, false, 0).unwrap();
    assert_eq!(read.entries_read, i64::MIN);
}
