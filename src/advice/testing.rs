//! Rows and words for the advice's tests (and the probes' tests of their advice).

use super::confidence::RERUN_NOISE_LOOP;
use super::decide::Words;
use crate::results::Measurement;

/// A bytes/s row with samples spread ±`spread` around `median`.
pub fn m(case: &str, median: f64, spread: f64) -> Measurement {
    let mut m: Measurement = serde_json::from_value(serde_json::json!({
        "probe": "t", "case": case, "params": {}, "unit": "bytes/s",
        "median": median, "ci95": [median * (1.0 - spread), median * (1.0 + spread)],
        "min": 0.0, "max": 0.0, "mean": 0.0, "stddev": 0.0, "cv": 0.0, "mad": 0.0,
        "outliers": 0, "ci_level": 0.95, "converged": true, "samples": 12,
        "iterations": 12000, "warmup_iterations": 1,
        "rusage": {"per": "GiB", "user_s": 0.0, "sys_s": 0.0, "voluntary_cs": 0.0,
            "involuntary_cs": 0.0, "minor_faults": 0.0, "major_faults": 0.0,
            "blocks_in": 0.0, "blocks_out": 0.0,
            "total": {"user_us": 0, "sys_us": 0, "voluntary_cs": 0, "involuntary_cs": 0,
                "minor_faults": 0, "major_faults": 0, "blocks_in": 0, "blocks_out": 0}},
        "derived": {}, "note": "", "warnings": [], "raw": []
    }))
    .unwrap();
    m.raw = (0..12)
        .map(|k| median * (1.0 + spread * ((k % 5) as f64 - 2.0) / 2.0))
        .collect();
    m
}

pub fn words() -> Words<'static> {
    Words {
        id: "buffer".into(),
        topic: "read loop buffer",
        rerun_noise: RERUN_NOISE_LOOP,
        scope: String::new(),
        operation: None,
        noun: "buffers",
        caveats: Vec::new(),
    }
}
