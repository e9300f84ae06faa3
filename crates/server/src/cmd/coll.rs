//! What the collection families (lists, hashes, sets, sorted sets, streams) share: typed lookups of
//! a key's collection through the dispatcher's locks, and storing a new collection.
//!
//! A write handler's shape:
//! ```text
//! match coll::modify::<Set>(&mut ctx.keys, key, EV)? {
//!     Some(mut e) => { let s = coll::get_mut::<Set>(&mut e); ...; e.mark_changed(); }
//!     None => ctx.keys.insert_value(key, coll::wrap(new_set), NO_EXPIRE, EV),
//! }
//! // the last element gone: coll::delete_empty(&mut ctx.keys, key)
//! ```

use super::args::WRONGTYPE;
use engine::coll::{Hash, List, Set, Stream, ZSet};
use engine::locked::EntryMut;
use engine::{Event, Locked, Value, ValueMut, ValueRef};

/// A collection type as stored in a key.
pub trait Coll: Sized {
    fn of_ref(v: ValueRef<'_>) -> Option<&Self>;
    fn of_mut(v: ValueMut<'_>) -> Option<&mut Self>;
    fn wrap(self) -> Value;
}

macro_rules! coll {
    ($t:ident) => {
        impl Coll for $t {
            fn of_ref(v: ValueRef<'_>) -> Option<&Self> {
                match v {
                    ValueRef::$t(x) => Some(x),
                    _ => None,
                }
            }
            fn of_mut(v: ValueMut<'_>) -> Option<&mut Self> {
                match v {
                    ValueMut::$t(x) => Some(x),
                    _ => None,
                }
            }
            fn wrap(self) -> Value {
                Value::$t(Box::new(self))
            }
        }
    };
}
coll!(List);
coll!(Hash);
coll!(Set);
coll!(ZSet);
coll!(Stream);

/// The collection at `key` (a read lookup, counted as a hit or miss): Ok(None) if absent,
/// Err(WRONGTYPE) if it holds another type.
pub fn read<'k, T: Coll>(keys: &'k mut Locked, key: &[u8]) -> Result<Option<&'k T>, &'static str> {
    match keys.get(key) {
        None => Ok(None),
        Some(e) => T::of_ref(e.value()).map(Some).ok_or(WRONGTYPE),
    }
}

/// The collection at `key` without counting a hit or miss (a command's second look).
pub fn peek<'k, T: Coll>(keys: &'k mut Locked, key: &[u8]) -> Result<Option<&'k T>, &'static str> {
    match keys.peek(key) {
        None => Ok(None),
        Some(e) => T::of_ref(e.value()).map(Some).ok_or(WRONGTYPE),
    }
}

/// The collection at `key` held for modification: Ok(None) if absent, Err(WRONGTYPE) if
/// it holds another type. `event` is recorded when the handler calls
/// [`EntryMut::mark_changed`] (a command that changes nothing records nothing).
pub fn modify<'k, T: Coll>(
    keys: &'k mut Locked,
    key: &[u8],
    event: Event,
) -> Result<Option<EntryMut<'k>>, &'static str> {
    match keys.modify(key, event) {
        None => Ok(None),
        Some(e) if T::of_ref(e.value()).is_some() => Ok(Some(e)),
        Some(_) => Err(WRONGTYPE),
    }
}

/// The collection inside an entry that [`modify`] returned for type `T`.
pub fn get_mut<'e, T: Coll>(e: &'e mut EntryMut<'_>) -> &'e mut T {
    T::of_mut(e.value_mut()).expect("modify checked the type")
}

/// Store a new collection under `key` (replacing whatever was there): `new`, then `event`.
pub fn insert<T: Coll>(keys: &mut Locked, key: &[u8], value: T, event: Event) {
    keys.insert_value(key, value.wrap(), engine::NO_EXPIRE, event);
}

/// Delete `key` whose collection the command emptied (Redis deletes empty collections),
/// announcing `del` after the command's own event. Not counted in the dirty counter: Redis
/// counts the removed elements, not the deletion that follows.
pub fn delete_empty(keys: &mut Locked, key: &[u8]) {
    if let Some(e) = keys.remove(key, Event::DEL.clean()) {
        crate::lazyfree::free_emptied(e);
    }
}
