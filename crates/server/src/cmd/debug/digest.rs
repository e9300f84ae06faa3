//! DEBUG DIGEST and DEBUG DIGEST-VALUE: debug.c's SHA1 signatures of the dataset and of
//! values, the same bytes as Redis's for the same data. Unordered things (databases'
//! keys, set members, hash fields, sorted-set elements) are combined by xoring their
//! SHA1s ([`xor_sha1`]), ordered ones (list elements, stream entries) by feeding the
//! digest back into SHA1 ([`mix`]).
//!
//! DEBUG DIGEST walks the databases a shard at a time (as KEYS does), so it does not stop
//! other clients for the length of a big dataset; writes made meanwhile may or may not be
//! in the result (Redis computes it at one instant). Inside MULTI every shard is held.
//! Keys past their TTL that were not deleted yet count, as in Redis.

use crate::cmd::Ctx;
use engine::coll::listpack::Item;
use engine::coll::stream::id::StreamId;
use engine::{Entry, StrRef, ValueRef, NO_EXPIRE};
use sha1::{Digest as _, Sha1};

type Digest = [u8; 20];

/// DEBUG DIGEST: a status reply of 40 hex digits (all zeros for an empty dataset).
pub fn dataset(ctx: &mut Ctx) {
    let mut digest = [0u8; 20];
    for db in 0..ctx.srv.keyspace.len() {
        let mut keys = [0u8; 20];
        let mut any = false;
        ctx.keys.for_each_in(db, |e| {
            any = true;
            let mut pair = [0u8; 20];
            mix(&mut pair, e.key());
            value(&mut pair, e);
            xor_sha1(&mut keys, &pair);
        });
        if any {
            // The database's number goes in first, so the same data in another database
            // gives another digest; its keys' digests are xored in after it.
            mix(&mut digest, &(db as u32).to_be_bytes());
            xor(&mut digest, &keys);
        }
    }
    ctx.out.simple(&crate::hex::to_string(&digest));
}

/// DEBUG DIGEST-VALUE key...: each key's value digest (40 zeros for a missing key), the
/// key looked up as it is (expired or not).
pub fn values(ctx: &mut Ctx, keys: &[&[u8]]) {
    ctx.out.array(keys.len());
    for key in keys {
        let mut digest = [0u8; 20];
        if let Some(e) = ctx.keys.peek(key) {
            value(&mut digest, e);
        }
        ctx.out.simple(&crate::hex::to_string(&digest));
    }
}

/// xorObjectDigest: the type, the value's contents, and whether the key has a TTL.
fn value(digest: &mut Digest, e: &Entry) {
    let v = e.value();
    mix(digest, &type_code(v).to_be_bytes());
    match v {
        ValueRef::Str(StrRef::Int(n)) => mix(digest, n.to_string().as_bytes()),
        ValueRef::Str(StrRef::Embstr(b) | StrRef::Raw(b)) => mix(digest, b),
        ValueRef::List(l) => l.for_each_from(0, true, |item| {
            with_item(item, |b| mix(digest, b));
            true
        }),
        ValueRef::Set(s) => {
            let mut buf = [0u8; 20];
            for m in s.iter() {
                xor_sha1(digest, m.as_bytes(&mut buf));
            }
        }
        ValueRef::ZSet(z) => z.walk(0, false, |member, score| {
            let mut elem = [0u8; 20];
            mix(&mut elem, member);
            mix(&mut elem, resp::fmt::fmt_g17(score).as_bytes());
            xor_sha1(digest, &elem);
            true
        }),
        ValueRef::Hash(h) => h.for_each(|field, val| {
            let mut elem = [0u8; 20];
            with_item(field, |b| mix(&mut elem, b));
            with_item(val, |b| mix(&mut elem, b));
            xor_sha1(digest, &elem);
        }),
        ValueRef::Stream(s) => s.walk(StreamId::MIN, StreamId::MAX, false, |entry| {
            // "%U.%U": a dot, not the dash IDs are shown with.
            mix(
                digest,
                format!("{}.{}", entry.id.ms, entry.id.seq).as_bytes(),
            );
            for (field, val) in entry.fields() {
                with_item(field, |b| mix(digest, b));
                with_item(val, |b| mix(digest, b));
            }
            true
        }),
    }
    if e.expire_at() != NO_EXPIRE {
        xor_sha1(digest, b"!!expire!!");
    }
}

/// Redis's OBJ_* type numbers.
fn type_code(v: ValueRef<'_>) -> u32 {
    match v {
        ValueRef::Str(_) => 0,
        ValueRef::List(_) => 1,
        ValueRef::Set(_) => 2,
        ValueRef::ZSet(_) => 3,
        ValueRef::Hash(_) => 4,
        ValueRef::Stream(_) => 6,
    }
}

/// An element's bytes as a client sees them (integers in decimal).
fn with_item(item: Item<'_>, f: impl FnOnce(&[u8])) {
    match item {
        Item::Int(n) => f(n.to_string().as_bytes()),
        Item::Str(b) => f(b),
    }
}

/// xorDigest: xor SHA1(data) into `digest` (order does not matter).
fn xor_sha1(digest: &mut Digest, data: &[u8]) {
    xor(digest, &Sha1::digest(data).into());
}

/// mixDigest: digest = SHA1(digest xor SHA1(data)) (order matters).
fn mix(digest: &mut Digest, data: &[u8]) {
    xor_sha1(digest, data);
    *digest = Sha1::digest(&digest[..]).into();
}

fn xor(digest: &mut Digest, other: &Digest) {
    for (d, o) in digest.iter_mut().zip(other) {
        *d ^= o;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_sha1_of_the_xor() {
        let mut d = [0u8; 20];
        mix(&mut d, b"abc");
        let once: Digest = Sha1::digest(b"abc").into();
        let expected: Digest = Sha1::digest(once).into();
        assert_eq!(d, expected);
    }
}
