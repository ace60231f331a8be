//! The intervals of a row's timed pairs of calls (eBPF: from one call's end to its
//! task's next recorded call's end, where the task was not switched out in between), per
//! (process, target, operation) row: the row's call with the program's own work before
//! it (an interpreter's loop, libc's wrapper, tar's record handling), and tracing's
//! part. A histogram of eight buckets per power of two (6–12% wide, interpolated
//! inside) from 16 ns to 17 s, made at the row's first timed call, and a least-squares
//! line of interval against the call's size.

/// Buckets per power of two.
const STEPS: u32 = 8;
/// The first power of two bucketed (16 ns); below it, bucket 0.
const LOW: u32 = 4;
/// The last (2^34 ns, 17 s); above it, the last bucket.
const HIGH: u32 = 34;
const BUCKETS: usize = ((HIGH - LOW) * STEPS + 1) as usize;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gaps {
    counts: Vec<u64>,
    n: u64,
    /// The last interval, until its call's size is known ([`Gaps::sized`]).
    last: Option<u64>,
    /// Sums for a least-squares line of interval (ns, at most [`FIT_CAP`]) against
    /// size (bytes): n, Σx, Σy, Σxy, Σx².
    fit: [f64; 5],
}

/// Intervals longer than this (1 ms: a wait, not work) count at it in the fit.
const FIT_CAP: u64 = 1_000_000;

/// `ns`'s bucket.
fn bucket(ns: u64) -> usize {
    if ns < 1 << LOW {
        return 0;
    }
    let log = 63 - ns.leading_zeros();
    if log >= HIGH {
        return BUCKETS - 1;
    }
    let step = (ns >> (log - 3)) & u64::from(STEPS - 1);
    ((log - LOW) * STEPS) as usize + step as usize + 1
}

/// Bucket `i`'s lower bound (ns).
fn floor(i: usize) -> f64 {
    if i == 0 {
        return 0.0;
    }
    let i = i as u32 - 1;
    let log = LOW + i / STEPS;
    (1u64 << log) as f64 * (1.0 + f64::from(i % STEPS) / f64::from(STEPS))
}

impl Gaps {
    /// One more interval of `ns`.
    pub fn add(&mut self, ns: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        self.counts[bucket(ns)] += 1;
        self.n += 1;
        self.last = Some(ns);
    }

    /// The size of the call whose interval was added last (bytes asked for).
    pub fn sized(&mut self, bytes: u64) {
        if let Some(ns) = self.last.take() {
            let (x, y) = (bytes as f64, ns.min(FIT_CAP) as f64);
            for (sum, v) in self.fit.iter_mut().zip([1.0, x, y, x * y, x * x]) {
                *sum += v;
            }
        }
    }

    /// The interval's growth per byte asked (ns), where the calls' sizes vary enough
    /// to tell it (a coefficient of variation of at least 0.25 over 16 calls or more).
    pub fn per_byte_ns(&self) -> Option<f64> {
        let [n, sx, sy, sxy, sxx] = self.fit;
        if n < 16.0 {
            return None;
        }
        let mean = sx / n;
        let var = sxx / n - mean * mean;
        if mean <= 0.0 || var <= 0.0 || var.sqrt() < 0.25 * mean {
            return None;
        }
        Some((sxy / n - mean * sy / n) / var)
    }

    /// Intervals counted.
    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Another row's intervals, added (ended processes folded into one).
    pub fn merge(&mut self, o: &Gaps) {
        if o.counts.is_empty() {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        for (a, b) in self.fit.iter_mut().zip(o.fit) {
            *a += b;
        }
        self.n += o.n;
    }

    /// The mean of the middle of the intervals (ns), the `trim` share (0–0.5) at each
    /// end left out: the quantiles between, averaged (each within its bucket's 6–12%).
    /// None when empty.
    pub fn trimmed_mean(&self, trim: f64) -> Option<f64> {
        const STEPS: u32 = 100;
        let (lo, hi) = (trim.clamp(0.0, 0.49), 1.0 - trim.clamp(0.0, 0.49));
        let mut sum = 0.0;
        for i in 0..STEPS {
            let q = lo + (hi - lo) * (f64::from(i) + 0.5) / f64::from(STEPS);
            sum += self.quantile(q)?;
        }
        Some(sum / f64::from(STEPS))
    }

    /// The `q` quantile (0–1) in ns, interpolated inside its bucket; None when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let want = q.clamp(0.0, 1.0) * self.n as f64;
        let mut below = 0.0;
        for (i, &c) in self.counts.iter().enumerate() {
            let c = c as f64;
            if c > 0.0 && below + c >= want {
                let (lo, hi) = (floor(i), floor(i + 1).max(floor(i)));
                let hi = if i + 1 == BUCKETS { lo } else { hi };
                return Some(lo + (hi - lo) * ((want - below) / c).clamp(0.0, 1.0));
            }
            below += c;
        }
        Some(floor(BUCKETS - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_their_floors_at_most_their_values() {
        let mut last = 0;
        for ns in [
            0u64,
            15,
            16,
            17,
            18,
            31,
            32,
            100,
            1000,
            123_456,
            1 << 33,
            1 << 40,
        ] {
            let b = bucket(ns);
            assert!(b >= last, "{ns}");
            assert!(floor(b) <= ns as f64, "{ns}: floor {}", floor(b));
            if b + 1 < BUCKETS && ns >= 16 {
                assert!(
                    floor(b + 1) > ns as f64,
                    "{ns}: next floor {}",
                    floor(b + 1)
                );
            }
            last = b;
        }
    }

    #[test]
    fn a_trimmed_mean_leaves_out_each_ends_share() {
        // 90 intervals of 1 µs and 10 of 1 ms: the mean is 100.9 µs; a tenth left out
        // at each end, every interval left is 1 µs.
        let mut g = Gaps::default();
        for i in 0..100u64 {
            g.add(if i % 10 == 0 { 1_000_000 } else { 1_000 });
        }
        let t = g.trimmed_mean(0.1).unwrap();
        assert!((t / 1_000.0 - 1.0).abs() < 0.07, "{t}");
        // Nothing left out: the ms ones count.
        assert!(g.trimmed_mean(0.0).unwrap() > 50_000.0);
        assert_eq!(Gaps::default().trimmed_mean(0.1), None);
    }

    #[test]
    fn a_median_is_within_its_bucket_of_the_true_one() {
        let mut g = Gaps::default();
        for ns in 1..=10_001u64 {
            g.add(ns * 10);
        }
        let m = g.quantile(0.5).unwrap();
        assert!((m / 50_010.0 - 1.0).abs() < 0.1, "{m}");
        assert_eq!(Gaps::default().quantile(0.5), None);
    }

    #[test]
    fn work_that_grows_with_the_size_is_told_from_sizes_that_vary() {
        let mut g = Gaps::default();
        for i in 0..200u64 {
            let bytes = 1024 * (1 + i % 64);
            g.add(200 + bytes / 10);
            g.sized(bytes);
        }
        let b = g.per_byte_ns().unwrap();
        assert!((b - 0.1).abs() < 0.005, "{b}");
        let mut same = Gaps::default();
        for _ in 0..200 {
            same.add(900);
            same.sized(4096);
        }
        assert_eq!(same.per_byte_ns(), None);
    }

    #[test]
    fn merged_rows_count_both() {
        let (mut a, mut b) = (Gaps::default(), Gaps::default());
        a.add(100);
        b.add(1000);
        b.add(1000);
        a.merge(&b);
        assert_eq!(a.len(), 3);
        assert!(a.quantile(0.9).unwrap() >= 900.0);
    }
}
