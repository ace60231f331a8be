//! Parsing and printing of sizes, durations and rates.
//!
//! Sizes are binary (`4k` = 4096, `1.5G` = 1.5 × 2^30); printed as B/KiB/MiB/GiB.
//! Times print with three significant digits; throughput prints as GB/s (10^9 bytes).

use std::time::Duration;

/// Largest size any flag accepts; beyond this a value is treated as a typo.
pub const MAX_SIZE: u64 = 1 << 50;

/// Parses a binary size such as `4k`, `64KiB`, `1m`, `1.5G` or `512`.
/// Zero, negative, fractional-byte and non-numeric values are refused.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty size".into());
    }
    if t.starts_with('-') {
        return Err(format!("size '{text}' is negative"));
    }
    let cfg = parse_size::Config::new().with_binary();
    let v = cfg.parse_size(t).map_err(|e| {
        if e.to_string().contains("too large") {
            format!("size '{text}' is absurdly large")
        } else {
            format!("size '{text}' is not a size ({e}); try 4k, 64KiB, 1m, 1.5G")
        }
    })?;
    if v == 0 {
        return Err(format!("size '{text}' is zero"));
    }
    if v > MAX_SIZE {
        return Err(format!("size '{text}' is absurdly large"));
    }
    Ok(v)
}

/// Parses a duration such as `10ms`, `1.5s`, `250us`, `800ns`. A bare number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("duration '{text}' is not a duration; try 10ms or 1.5s"))?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        other => return Err(format!("duration '{text}' has unknown unit '{other}'")),
    };
    let secs = value * scale;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("duration '{text}' must be positive"));
    }
    if secs > 86_400.0 {
        return Err(format!("duration '{text}' is longer than a day"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Prints a byte count in binary units: `512 B`, `4 KiB`, `1.5 MiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{} {}", sig3(v), UNITS[i])
    }
}

/// A number with three significant digits, no exponent: 1.23, 12.3, 123, 1230.
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        let mag = 10f64.powi(a.log10().floor() as i32 - 2);
        format!("{:.0}", (v / mag).round() * mag)
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
        format!("{v:.decimals$}")
    }
}

/// A duration given in nanoseconds with three significant digits and a fitting unit.
pub fn format_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        format!("{} ns", sig3(ns))
    } else if a < 1e6 {
        format!("{} µs", sig3(ns / 1e3))
    } else if a < 1e9 {
        format!("{} ms", sig3(ns / 1e6))
    } else {
        format!("{} s", sig3(ns / 1e9))
    }
}

/// A count with three significant digits and a k/M/G suffix (decimal).
pub fn format_count(v: f64) -> String {
    let a = v.abs();
    if a < 1e3 {
        sig3(v)
    } else if a < 1e6 {
        format!("{}k", sig3(v / 1e3))
    } else if a < 1e9 {
        format!("{}M", sig3(v / 1e6))
    } else {
        format!("{}G", sig3(v / 1e9))
    }
}

/// Throughput in bytes/s printed as GB/s (10^9 bytes per second), three significant digits.
pub fn format_gbps(bytes_per_s: f64) -> String {
    sig3(bytes_per_s / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_binary_units() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("8 MiB"), Ok(8 << 20));
    }

    #[test]
    fn bad_sizes_are_refused() {
        for bad in ["0", "-4k", "abc", "", "4q", "0k", "99999P"] {
            assert!(parse_size(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        for bad in ["0", "-1s", "abc", "5parsecs", "0ms"] {
            assert!(parse_duration(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn sizes_print_in_binary_units() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(1 << 20), "1 MiB");
        assert_eq!(format_size(3 << 29), "1.50 GiB");
        assert_eq!(format_size(10 << 20), "10 MiB");
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(sig3(1.23456), "1.23");
        assert_eq!(sig3(12.3456), "12.3");
        assert_eq!(sig3(123.456), "123");
        assert_eq!(sig3(123456.0), "123000");
        assert_eq!(sig3(0.0123456), "0.0123");
        assert_eq!(format_ns(45.678), "45.7 ns");
        assert_eq!(format_ns(1234.0), "1.23 µs");
        assert_eq!(format_ns(12_345_678.0), "12.3 ms");
        assert_eq!(format_count(1_234_567.0), "1.23M");
        assert_eq!(format_gbps(12_345_000_000.0), "12.3");
    }
}
