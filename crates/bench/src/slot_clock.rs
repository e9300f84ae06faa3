//! Open loop: how long the generator had no free connection slot. A request that leaves
//! after its due time waited partly for a slot (every connection busy: the server's doing)
//! and partly for the generator itself (a slot was free, the generator did not send: its
//! lateness). This clock integrates the time with no slot free, so the split of any
//! interval between those two is a subtraction.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A change of state: at `at`, `waited` is the no-slot time so far, and `empty` whether no
/// slot is free from then on.
#[derive(Clone, Copy, Debug)]
struct Mark {
    at: Instant,
    waited: Duration,
    empty: bool,
}

pub struct SlotClock {
    marks: VecDeque<Mark>,
}

impl SlotClock {
    /// Slots are free from `start` on.
    pub fn new(start: Instant) -> SlotClock {
        SlotClock {
            marks: VecDeque::from([Mark {
                at: start,
                waited: Duration::ZERO,
                empty: false,
            }]),
        }
    }

    fn last(&self) -> Mark {
        *self.marks.back().expect("a slot clock always has a mark")
    }

    /// The last free slot was taken at `now`, or a slot came free when none was.
    pub fn set_empty(&mut self, now: Instant, empty: bool) {
        let m = self.last();
        if m.empty == empty {
            return;
        }
        let now = now.max(m.at);
        let waited = m.waited + if m.empty { now - m.at } else { Duration::ZERO };
        self.marks.push_back(Mark {
            at: now,
            waited,
            empty,
        });
    }

    /// No-slot time from the first mark up to `t` (t before the first mark counts as it).
    fn waited_at(&self, t: Instant) -> Duration {
        let i = self.marks.partition_point(|m| m.at <= t);
        let m = self.marks[i.saturating_sub(1)];
        if m.empty && t > m.at {
            m.waited + (t - m.at)
        } else {
            m.waited
        }
    }

    /// Of the wait from `due` to `sent`, the part when some slot was free: the generator's
    /// own lateness.
    pub fn lateness(&self, due: Instant, sent: Instant) -> Duration {
        if sent <= due {
            return Duration::ZERO;
        }
        let no_slot = self.waited_at(sent).saturating_sub(self.waited_at(due));
        (sent - due).saturating_sub(no_slot)
    }

    /// Forgets marks no request due at or after `oldest` will look at.
    pub fn prune(&mut self, oldest: Instant) {
        while self.marks.len() > 1 && self.marks[1].at <= oldest {
            self.marks.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_free_slot_makes_every_delay_the_generators() {
        let t0 = Instant::now();
        let c = SlotClock::new(t0);
        assert_eq!(c.lateness(t0 + ms(5), t0 + ms(65)), ms(60));
    }

    #[test]
    fn waiting_with_every_slot_busy_is_not_lateness() {
        let t0 = Instant::now();
        let mut c = SlotClock::new(t0);
        c.set_empty(t0 + ms(10), true);
        c.set_empty(t0 + ms(40), false);
        // Due at 5, sent at 50: 30 ms with no slot free, 15 ms the generator's.
        assert_eq!(c.lateness(t0 + ms(5), t0 + ms(50)), ms(15));
        // Due and sent inside the busy stretch: none of it is lateness.
        assert_eq!(c.lateness(t0 + ms(12), t0 + ms(40)), Duration::ZERO);
        // Still empty at the end: counted up to the send.
        c.set_empty(t0 + ms(60), true);
        assert_eq!(c.lateness(t0 + ms(55), t0 + ms(70)), ms(5));
    }

    #[test]
    fn pruning_keeps_the_mark_covering_the_oldest_due() {
        let t0 = Instant::now();
        let mut c = SlotClock::new(t0);
        c.set_empty(t0 + ms(10), true);
        c.set_empty(t0 + ms(20), false);
        c.set_empty(t0 + ms(30), true);
        c.prune(t0 + ms(25));
        assert_eq!(c.lateness(t0 + ms(25), t0 + ms(35)), ms(5));
        assert_eq!(c.marks.len(), 2);
    }
}
