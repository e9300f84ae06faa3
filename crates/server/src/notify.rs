//! Keyspace notifications (`notify-keyspace-events`): each change event whose class is
//! enabled is published, while the command still holds its locks, as
//! `__keyspace@<db>__:<key>` → event name (class `K`) and `__keyevent@<db>__:<event>` → key
//! (class `E`), in the order the events happened, as Redis's notifyKeyspaceEvent does.
//! One command's notifications reach subscribers contiguous (`Registry::notify_order`).

use crate::server::Server;
use engine::event::class;
use engine::Changes;
use std::sync::atomic::Ordering::Relaxed;

/// The (channel, message) pairs `changes` produces under `flags` (Redis's bits, as
/// `config::value::keyspace_events_flags` reads them), in order.
pub fn messages(flags: u16, changes: &Changes) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    if flags & (class::KEYSPACE | class::KEYEVENT) == 0 {
        return out;
    }
    for c in changes.items() {
        let ev = c.event;
        if flags & ev.class == 0 {
            continue;
        }
        let key = changes.key(c);
        if flags & class::KEYSPACE != 0 {
            let mut chan = format!("__keyspace@{}__:", c.db).into_bytes();
            chan.extend_from_slice(key);
            out.push((chan, ev.name.as_bytes().to_vec()));
        }
        if flags & class::KEYEVENT != 0 {
            let chan = format!("__keyevent@{}__:{}", c.db, ev.name).into_bytes();
            out.push((chan, key.to_vec()));
        }
    }
    out
}

/// Publish the notifications of `changes` (nothing to do unless enabled: one load).
pub fn publish(srv: &Server, changes: &Changes) {
    let flags = srv.config.hot.notify_flags.load(Relaxed) as u16;
    if flags == 0 || changes.items().is_empty() {
        return;
    }
    let messages = messages(flags, changes);
    if messages.is_empty() {
        return;
    }
    let _contiguous = srv.pubsub.notify_order.lock();
    for (chan, msg) in messages {
        crate::pubsub::publish(srv, &chan, &msg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::Event;

    #[test]
    fn channels_and_classes() {
        let mut c = Changes::default();
        c.record(0, b"k", Event::NEW);
        c.record(0, b"k", Event::string("set"));
        c.record(3, b"x", Event::EXPIRED);
        let all = class::KEYSPACE | class::KEYEVENT | class::ALL;
        let m = messages(all, &c);
        let text: Vec<(String, String)> = m
            .iter()
            .map(|(a, b)| {
                (
                    String::from_utf8_lossy(a).into(),
                    String::from_utf8_lossy(b).into(),
                )
            })
            .collect();
        assert_eq!(
            text,
            vec![
                ("__keyspace@0__:k".into(), "set".into()),
                ("__keyevent@0__:set".into(), "k".into()),
                ("__keyspace@3__:x".into(), "expired".into()),
                ("__keyevent@3__:expired".into(), "x".into()),
            ]
        );
        assert_eq!(messages(class::KEYEVENT | class::NEW, &c).len(), 1);
        assert!(messages(class::ALL, &c).is_empty());
    }
}
