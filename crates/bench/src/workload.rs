//! A resolved workload: command templates, the key space and value sizes, and the per-client
//! generator that writes the next request's bytes.

use crate::resp;
use crate::spec::{DataSize, KeyPattern};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// One piece of a template argument.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Part {
    Lit(Vec<u8>),
    Key,
    Data,
}

/// A command template such as `SET __key__ __data__`, with its weight.
#[derive(Clone, Debug, Serialize)]
pub struct Template {
    /// The name shown in the result table (the command name, upper case).
    pub label: String,
    pub text: String,
    pub args: Vec<Vec<Part>>,
    pub weight: u32,
    /// Writes (templates with `__data__`) use the SET side key pattern, reads the GET side;
    /// hits and misses are counted for reads.
    pub is_write: bool,
}

impl Template {
    pub fn parse(text: &str, weight: u32) -> Result<Template, String> {
        let words = split_words(text)?;
        if words.is_empty() {
            return Err("--command is empty".into());
        }
        let args: Vec<Vec<Part>> = words.iter().map(|w| parts(w)).collect();
        let is_write = args.iter().flatten().any(|p| *p == Part::Data);
        Ok(Template {
            label: words[0].to_ascii_uppercase(),
            text: text.to_string(),
            args,
            weight,
            is_write,
        })
    }

    fn uses_key(&self) -> bool {
        self.args.iter().flatten().any(|p| *p == Part::Key)
    }
}

/// Splits on whitespace; "double quotes" keep spaces inside one argument.
fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if quoted {
        return Err(format!("unbalanced quote in command '{text}'"));
    }
    if any {
        words.push(cur);
    }
    Ok(words)
}

fn parts(word: &str) -> Vec<Part> {
    let mut out = Vec::new();
    let mut rest = word;
    loop {
        let k = rest.find("__key__");
        let d = rest.find("__data__");
        let (at, len, part) = match (k, d) {
            (Some(k), Some(d)) if d < k => (d, 8, Part::Data),
            (Some(k), _) => (k, 7, Part::Key),
            (None, Some(d)) => (d, 8, Part::Data),
            (None, None) => break,
        };
        if at > 0 {
            out.push(Part::Lit(rest.as_bytes()[..at].to_vec()));
        }
        out.push(part);
        rest = &rest[at + len..];
    }
    if !rest.is_empty() || out.is_empty() {
        out.push(Part::Lit(rest.as_bytes().to_vec()));
    }
    out
}

/// Everything a run needs to know about what to send.
#[derive(Clone, Debug, Serialize)]
pub struct Workload {
    pub threads: usize,
    pub clients: usize,
    pub pipeline: usize,
    pub templates: Vec<Template>,
    pub data_size: DataSize,
    pub key_pattern: (KeyPattern, KeyPattern),
    pub key_minimum: u64,
    pub key_maximum: u64,
    pub key_prefix: String,
    /// Pad the key number with zeros so the whole key has this many bytes (0: no padding).
    pub key_width: usize,
    pub key_median: Option<f64>,
    pub key_stddev: Option<f64>,
    /// Requests per client (closed loop) or in all (open loop); None: run for `test_time`.
    pub requests: Option<u64>,
    pub test_time: f64,
    /// Seconds at the start whose results are thrown away.
    pub warmup: f64,
    /// Open loop: aggregate requests per second.
    pub rate: Option<f64>,
    pub seed: u64,
    pub distinct_client_seed: bool,
}

impl Workload {
    pub fn total_clients(&self) -> usize {
        self.threads * self.clients
    }

    /// The repeating order of template indexes (weights as counts).
    pub fn plan(&self) -> Vec<u16> {
        let mut plan = Vec::new();
        for (i, t) in self.templates.iter().enumerate() {
            plan.extend(std::iter::repeat_n(i as u16, t.weight as usize));
        }
        plan
    }

    /// Value bytes: a deterministic pseudo-random alphanumeric run, sliced per request.
    pub fn data_block(&self) -> Vec<u8> {
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..self.data_size.max())
            .map(|_| ALNUM[rng.gen_range(0..ALNUM.len())])
            .collect()
    }
}

/// Key counters shared by the clients of one thread (the `S` pattern).
#[derive(Default)]
pub struct ThreadKeys {
    seq: [u64; 2],
}

/// One client's generator state.
pub struct ClientGen {
    rng: SmallRng,
    plan_pos: usize,
    par: [u64; 2],
    par_lo: u64,
    par_len: u64,
    key: Vec<u8>,
}

impl ClientGen {
    /// `index` is the client's number among all clients of the run.
    pub fn new(w: &Workload, index: usize) -> ClientGen {
        let seed = if w.distinct_client_seed {
            w.seed
                .wrapping_add(index as u64)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        } else {
            w.seed
        };
        let span = w.key_maximum - w.key_minimum + 1;
        let n = w.total_clients() as u64;
        let lo = span * index as u64 / n;
        let hi = span * (index as u64 + 1) / n;
        ClientGen {
            rng: SmallRng::seed_from_u64(seed),
            plan_pos: index,
            par: [0, 0],
            par_lo: w.key_minimum + lo,
            par_len: (hi - lo).max(1),
            key: Vec::with_capacity(64),
        }
    }

    fn key_number(&mut self, w: &Workload, side: usize, tk: &mut ThreadKeys) -> u64 {
        let pattern = if side == 0 {
            w.key_pattern.0
        } else {
            w.key_pattern.1
        };
        let (min, max) = (w.key_minimum, w.key_maximum);
        let span = max - min + 1;
        match pattern {
            KeyPattern::Random => self.rng.gen_range(min..=max),
            KeyPattern::Gaussian => {
                let median = w.key_median.unwrap_or((min as f64 + max as f64) / 2.0);
                let sd = w.key_stddev.unwrap_or(span as f64 / 6.0);
                // Box-Muller.
                let u1: f64 = self.rng.gen_range(f64::EPSILON..1.0);
                let u2: f64 = self.rng.gen();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                (median + z * sd).round().clamp(min as f64, max as f64) as u64
            }
            KeyPattern::Sequential => {
                let k = min + tk.seq[side] % span;
                tk.seq[side] += 1;
                k
            }
            KeyPattern::Parallel => {
                let k = self.par_lo + self.par[side] % self.par_len;
                self.par[side] += 1;
                k
            }
        }
    }

    fn data_len(&mut self, w: &Workload) -> usize {
        match &w.data_size {
            DataSize::Fixed(n) => *n,
            DataSize::Range(lo, hi) => self.rng.gen_range(*lo..=*hi),
            DataSize::Weighted(list) => {
                let total: u32 = list.iter().map(|(_, w)| w).sum();
                let mut pick = self.rng.gen_range(0..total);
                for (size, weight) in list {
                    if pick < *weight {
                        return *size;
                    }
                    pick -= weight;
                }
                list[0].0
            }
        }
    }

    /// Appends the next request to `out`; returns its template index.
    pub fn next_request(
        &mut self,
        w: &Workload,
        plan: &[u16],
        data: &[u8],
        tk: &mut ThreadKeys,
        out: &mut Vec<u8>,
    ) -> u16 {
        let idx = plan[self.plan_pos % plan.len()];
        self.plan_pos += 1;
        let t = &w.templates[idx as usize];
        if t.uses_key() {
            let n = self.key_number(w, if t.is_write { 0 } else { 1 }, tk);
            format_key(&mut self.key, &w.key_prefix, w.key_width, n);
        }
        let dlen = if t.is_write { self.data_len(w) } else { 0 };
        resp::push_header(out, b'*', t.args.len());
        for arg in &t.args {
            let len: usize = arg
                .iter()
                .map(|p| match p {
                    Part::Lit(b) => b.len(),
                    Part::Key => self.key.len(),
                    Part::Data => dlen,
                })
                .sum();
            resp::push_header(out, b'$', len);
            for p in arg {
                match p {
                    Part::Lit(b) => out.extend_from_slice(b),
                    Part::Key => out.extend_from_slice(&self.key),
                    Part::Data => out.extend_from_slice(&data[..dlen]),
                }
            }
            out.extend_from_slice(b"\r\n");
        }
        idx
    }
}

/// `prefix` + the number, zero-padded so the key is `width` bytes long when it fits.
pub fn format_key(out: &mut Vec<u8>, prefix: &str, width: usize, n: u64) {
    out.clear();
    out.extend_from_slice(prefix.as_bytes());
    let digits = n.to_string();
    let pad = width.saturating_sub(prefix.len() + digits.len());
    out.extend(std::iter::repeat_n(b'0', pad));
    out.extend_from_slice(digits.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn workload(templates: Vec<Template>) -> Workload {
        Workload {
            threads: 1,
            clients: 2,
            pipeline: 1,
            templates,
            data_size: DataSize::Fixed(4),
            key_pattern: (KeyPattern::Parallel, KeyPattern::Random),
            key_minimum: 0,
            key_maximum: 9,
            key_prefix: "k:".into(),
            key_width: 0,
            key_median: None,
            key_stddev: None,
            requests: None,
            test_time: 1.0,
            warmup: 0.0,
            rate: None,
            seed: 7,
            distinct_client_seed: false,
        }
    }

    #[test]
    fn templates_split_into_parts() {
        let t = Template::parse(r#"HSET h:__key__ f "a b" __data__"#, 2).unwrap();
        assert_eq!(t.label, "HSET");
        assert!(t.is_write);
        assert_eq!(t.args[1], vec![Part::Lit(b"h:".to_vec()), Part::Key]);
        assert_eq!(t.args[3], vec![Part::Lit(b"a b".to_vec())]);
        assert_eq!(t.args[4], vec![Part::Data]);
        assert!(Template::parse("  ", 1).is_err());
        assert!(Template::parse("GET \"x", 1)
            .unwrap_err()
            .contains("unbalanced"));
        assert!(!Template::parse("GET __key__", 1).unwrap().is_write);
    }

    #[test]
    fn requests_follow_the_plan_and_patterns() {
        let w = workload(vec![
            Template::parse("SET __key__ __data__", 1).unwrap(),
            Template::parse("GET __key__", 2).unwrap(),
        ]);
        let plan = w.plan();
        assert_eq!(plan, vec![0, 1, 1]);
        let data = w.data_block();
        let mut tk = ThreadKeys::default();
        // Client 1 of 2 owns keys 5..=9 for the parallel SET side.
        let mut c = ClientGen::new(&w, 1);
        let mut out = Vec::new();
        let mut sets = Vec::new();
        for _ in 0..9 {
            out.clear();
            if c.next_request(&w, &plan, &data, &mut tk, &mut out) == 0 {
                sets.push(String::from_utf8(out.clone()).unwrap());
            } else {
                assert!(out.starts_with(b"*2\r\n$3\r\nGET\r\n"));
            }
        }
        assert_eq!(sets.len(), 3);
        let want = format!(
            "*3\r\n$3\r\nSET\r\n$3\r\nk:5\r\n$4\r\n{}\r\n",
            String::from_utf8_lossy(&data[..4])
        );
        assert!(sets.contains(&want), "{sets:?}");
        assert!(sets.iter().any(|s| s.contains("k:6")));
    }

    #[test]
    fn keys_pad_to_width() {
        let mut out = Vec::new();
        format_key(&mut out, "key:", 16, 42);
        assert_eq!(out, b"key:000000000042");
        format_key(&mut out, "k", 2, 12345);
        assert_eq!(out, b"k12345");
    }

    #[test]
    fn gaussian_stays_in_range_and_centres() {
        let mut w = workload(vec![Template::parse("GET __key__", 1).unwrap()]);
        w.key_pattern = (KeyPattern::Gaussian, KeyPattern::Gaussian);
        w.key_maximum = 1000;
        let mut c = ClientGen::new(&w, 0);
        let mut tk = ThreadKeys::default();
        let mut sum = 0u64;
        for _ in 0..10_000 {
            let k = c.key_number(&w, 1, &mut tk);
            assert!(k <= 1000);
            sum += k;
        }
        let mean = sum as f64 / 10_000.0;
        assert!((mean - 500.0).abs() < 20.0, "{mean}");
    }

    #[test]
    fn weighted_sizes_follow_weights() {
        let mut w = workload(vec![Template::parse("SET __key__ __data__", 1).unwrap()]);
        w.data_size = DataSize::Weighted(vec![(10, 3), (20, 1)]);
        let mut c = ClientGen::new(&w, 0);
        let small = (0..8000).filter(|_| c.data_len(&w) == 10).count();
        assert!((5600..6400).contains(&small), "{small}");
    }
}
