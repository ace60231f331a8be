//! Resource-usage deltas per sample (getrusage of the measuring thread) and their
//! normalisation per operation or per GiB.

use crate::sys::rusage::{RawRusage, getrusage_thread};
use serde::{Deserialize, Serialize};

/// Difference between two getrusage readings (after − before), or a sum of such: the
/// same counters as one reading, so one type serves both.
pub type RusageDelta = RawRusage;

impl RusageDelta {
    /// `after − before`, saturating (counters never go backwards, but never panic).
    pub fn between(before: &RawRusage, after: &RawRusage) -> Self {
        RawRusage {
            user_us: after.user_us.saturating_sub(before.user_us),
            sys_us: after.sys_us.saturating_sub(before.sys_us),
            voluntary_cs: after.voluntary_cs.saturating_sub(before.voluntary_cs),
            involuntary_cs: after.involuntary_cs.saturating_sub(before.involuntary_cs),
            minor_faults: after.minor_faults.saturating_sub(before.minor_faults),
            major_faults: after.major_faults.saturating_sub(before.major_faults),
            blocks_in: after.blocks_in.saturating_sub(before.blocks_in),
            blocks_out: after.blocks_out.saturating_sub(before.blocks_out),
        }
    }

    /// Field-wise sum.
    pub fn add(&mut self, o: &RusageDelta) {
        self.user_us += o.user_us;
        self.sys_us += o.sys_us;
        self.voluntary_cs += o.voluntary_cs;
        self.involuntary_cs += o.involuntary_cs;
        self.minor_faults += o.minor_faults;
        self.major_faults += o.major_faults;
        self.blocks_in += o.blocks_in;
        self.blocks_out += o.blocks_out;
    }

    /// Every counter divided by `units` (operations, or GiB moved).
    pub fn per(&self, units: f64, basis: &str) -> RusagePer {
        let d = if units > 0.0 { units } else { f64::NAN };
        RusagePer {
            per: basis.to_string(),
            user_s: self.user_us as f64 / 1e6 / d,
            sys_s: self.sys_us as f64 / 1e6 / d,
            voluntary_cs: self.voluntary_cs as f64 / d,
            involuntary_cs: self.involuntary_cs as f64 / d,
            minor_faults: self.minor_faults as f64 / d,
            major_faults: self.major_faults as f64 / d,
            blocks_in: self.blocks_in as f64 / d,
            blocks_out: self.blocks_out as f64 / d,
        }
    }
}

/// Resource usage normalised to one unit of work (`per` = "op" or "GiB").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RusagePer {
    pub per: String,
    pub user_s: f64,
    pub sys_s: f64,
    pub voluntary_cs: f64,
    pub involuntary_cs: f64,
    pub minor_faults: f64,
    pub major_faults: f64,
    pub blocks_in: f64,
    pub blocks_out: f64,
}

/// Reads the calling thread's counters.
pub fn thread_now() -> anyhow::Result<RawRusage> {
    Ok(getrusage_thread()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_and_normalisation() {
        let a = RawRusage {
            user_us: 10,
            voluntary_cs: 5,
            ..Default::default()
        };
        let b = RawRusage {
            user_us: 2_000_010,
            voluntary_cs: 9,
            involuntary_cs: 2,
            ..Default::default()
        };
        let d = RusageDelta::between(&a, &b);
        assert_eq!(d.user_us, 2_000_000);
        assert_eq!(d.voluntary_cs, 4);
        let mut sum = d;
        sum.add(&d);
        assert_eq!(sum.involuntary_cs, 4);
        let p = sum.per(2.0, "op");
        assert_eq!(p.user_s, 2.0);
        assert_eq!(p.voluntary_cs, 4.0);
        // Never negative even if counters were reset.
        assert_eq!(RusageDelta::between(&b, &a).user_us, 0);
    }
}
