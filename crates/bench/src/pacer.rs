//! Open-loop pacing: request k is *intended* to leave at `start + k / rate`, whatever
//! happened to the requests before it. Latency is measured from that intended time, so a
//! stalled server is charged for every request it delayed (no coordinated omission).

use std::time::{Duration, Instant};

pub struct Pacer {
    start: Instant,
    interval_ns: f64,
    issued: u64,
    limit: u64,
}

impl Pacer {
    /// `rate` requests per second; at most `limit` requests in all.
    pub fn new(start: Instant, rate: f64, limit: u64) -> Pacer {
        Pacer {
            start,
            interval_ns: 1e9 / rate.max(1e-6),
            issued: 0,
            limit,
        }
    }

    /// When request 0 falls due.
    pub fn start(&self) -> Instant {
        self.start
    }

    fn intended(&self, k: u64) -> Instant {
        self.start + Duration::from_nanos((k as f64 * self.interval_ns) as u64)
    }

    /// How many requests are due by `now` in all (sent or not).
    pub fn due(&self, now: Instant) -> u64 {
        let el = now.saturating_duration_since(self.start).as_nanos() as f64;
        ((el / self.interval_ns).floor() as u64 + 1).min(self.limit)
    }

    /// The next due request's intended send time, if one is due by `now`; counts it as sent.
    pub fn take(&mut self, now: Instant) -> Option<Instant> {
        if self.issued < self.due(now) {
            let t = self.intended(self.issued);
            self.issued += 1;
            Some(t)
        } else {
            None
        }
    }

    /// When the next request falls due (None when the limit is reached).
    pub fn next_at(&self) -> Option<Instant> {
        (self.issued < self.limit).then(|| self.intended(self.issued))
    }

    /// Requests due but not yet sent (the backlog a slow server builds up).
    pub fn backlog(&self, now: Instant) -> u64 {
        self.due(now).saturating_sub(self.issued)
    }

    pub fn finished(&self) -> bool {
        self.issued >= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_exactly_the_rate_over_simulated_time() {
        let t0 = Instant::now();
        for rate in [1_000.0, 33_333.0, 250_000.0] {
            let mut p = Pacer::new(t0, rate, u64::MAX);
            let mut sent = 0u64;
            // Poll every 137 us for 2 simulated seconds.
            let mut t = t0;
            let end = t0 + Duration::from_secs(2);
            while t < end {
                while let Some(at) = p.take(t) {
                    assert!(at <= t);
                    sent += 1;
                }
                t += Duration::from_micros(137);
            }
            let want = rate * 2.0;
            assert!(
                (sent as f64 - want).abs() <= want * 0.001 + 1.0,
                "rate {rate}: sent {sent}, want {want}"
            );
        }
    }

    #[test]
    fn intended_times_do_not_slip_when_sending_late() {
        let t0 = Instant::now();
        let mut p = Pacer::new(t0, 1000.0, u64::MAX);
        // Nothing sent for 10 ms: 11 are due, each keeps its own intended time.
        let late = t0 + Duration::from_millis(10);
        assert_eq!(p.backlog(late), 11);
        let times: Vec<_> = std::iter::from_fn(|| p.take(late)).collect();
        assert_eq!(times.len(), 11);
        for (k, at) in times.iter().enumerate() {
            assert_eq!(at.duration_since(t0), Duration::from_millis(k as u64));
        }
        assert_eq!(p.next_at(), Some(t0 + Duration::from_millis(11)));
    }

    #[test]
    fn limit_stops_it() {
        let t0 = Instant::now();
        let mut p = Pacer::new(t0, 1e6, 5);
        let later = t0 + Duration::from_secs(1);
        assert_eq!(std::iter::from_fn(|| p.take(later)).count(), 5);
        assert!(p.finished());
        assert_eq!(p.next_at(), None);
    }
}
