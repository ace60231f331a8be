//! Parsing and printing of sizes, durations and rates.
//!
//! Sizes are read as dd and fio read them: a whole number or a decimal fraction, then an
//! optional unit with no space: `k`/`K`/`KiB`, `m`/`M`/`MiB`, `g`/`G`/`GiB`, `t`/`T`/`TiB`
//! are powers of 1024; `kB`/`KB`, `MB`, `GB`, `TB` powers of 1000; `B` or nothing is
//! bytes. The value must be a whole number of bytes (`1.5k` = 1536 is, `0.5` is not).
//! Sizes print as B/KiB/MiB/GiB; times with three significant digits; throughput as
//! GB/s (10^9 bytes).

use std::time::Duration;

/// Largest size any flag accepts; beyond this a value is treated as a typo.
pub const MAX_SIZE: u64 = 1 << 50;

/// The units a size may carry, with their factor.
const SIZE_UNITS: [(&str, u64); 23] = [
    ("", 1),
    ("B", 1),
    ("k", 1 << 10),
    ("K", 1 << 10),
    ("KiB", 1 << 10),
    ("m", 1 << 20),
    ("M", 1 << 20),
    ("MiB", 1 << 20),
    ("g", 1 << 30),
    ("G", 1 << 30),
    ("GiB", 1 << 30),
    ("t", 1 << 40),
    ("T", 1 << 40),
    ("TiB", 1 << 40),
    ("kB", 1_000),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("p", 1 << 50),
    ("P", 1 << 50),
    ("PiB", 1 << 50),
    ("PB", 1_000_000_000_000_000),
];

/// What `--help` says about sizes.
pub const SIZE_HELP: &str =
    "k, M, G, KiB, MiB, GiB = powers of 1024; kB, MB, GB = powers of 1000; whole bytes only";

/// Parses a size such as `4k`, `64KiB`, `1m`, `1.5G`, `100MB` or `512` (see the module
/// documentation). Zero, signs, spaces, exponents, digit separators, unknown units and
/// values that are not a whole number of bytes are refused.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let shown = escape(text);
    let hint = "try 4k, 64KiB, 1m, 1.5G or 100MB";
    if text.starts_with('-') {
        return Err(format!("size '{shown}' is negative"));
    }
    let digits_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits_end);
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || frac.contains('.') || (number.contains('.') && frac.is_empty()) {
        return Err(format!("size '{shown}' is not a size; {hint}"));
    }
    let Some(&(_, factor)) = SIZE_UNITS.iter().find(|(u, _)| *u == unit) else {
        return Err(format!(
            "size '{shown}' has an unknown unit; {hint} ({SIZE_HELP})"
        ));
    };
    // Exact arithmetic: (whole . frac) × factor = (whole·10^f + frac) × factor / 10^f.
    let too_large = || format!("size '{shown}' is absurdly large");
    if whole.len() + frac.len() > 30 {
        return Err(too_large());
    }
    let scale = 10u128.pow(frac.len() as u32);
    let mantissa: u128 = format!("{whole}{frac}").parse().map_err(|_| too_large())?;
    let scaled = mantissa * u128::from(factor);
    if !scaled.is_multiple_of(scale) {
        return Err(format!(
            "size '{shown}' is not a whole number of bytes ({} bytes)",
            scaled as f64 / scale as f64
        ));
    }
    let bytes = scaled / scale;
    if bytes == 0 {
        return Err(format!("size '{shown}' is zero"));
    }
    if bytes > u128::from(MAX_SIZE) {
        return Err(too_large());
    }
    Ok(bytes as u64)
}

/// Parses a size where zero is allowed (an empty file is a valid thing to copy).
pub fn parse_size_or_zero(text: &str) -> Result<u64, String> {
    if text.trim_end_matches(|c: char| c.is_ascii_alphabetic()) == "0" {
        return Ok(0);
    }
    parse_size(text)
}

/// A size as an exact, parseable label without spaces: the largest binary unit that
/// divides it (`4KiB`, `1536MiB`), else bytes (`4097B`). Case names use it, so two sizes
/// never share a name.
pub fn size_label(bytes: u64) -> String {
    for (unit, factor) in [
        ("PiB", 1u64 << 50),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if bytes >= factor && bytes.is_multiple_of(factor) {
            return format!("{}{unit}", bytes / factor);
        }
    }
    format!("{bytes}B")
}

/// Parses a duration with its unit: `10ms`, `1.5s`, `250us` (or `µs`), `800ns`. A bare
/// number is refused (`--sample-time 10` would silently mean ten seconds), and so are
/// spaces, signs and exponents.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let shown = escape(text);
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(split);
    let well_formed = !num.is_empty()
        && !num.starts_with('.')
        && !num.ends_with('.')
        && num.matches('.').count() <= 1;
    if !well_formed {
        return Err(format!(
            "duration '{shown}' is not a duration; try 10ms or 1.5s"
        ));
    }
    let value: f64 = num
        .parse()
        .map_err(|_| format!("duration '{shown}' is not a duration; try 10ms or 1.5s"))?;
    let scale = match unit {
        "" => {
            return Err(format!(
                "duration '{shown}' needs a unit: ns, us, ms or s (e.g. {num}ms)"
            ));
        }
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        _ => {
            return Err(format!(
                "duration '{shown}' has an unknown unit (ns, us, ms or s)"
            ));
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("duration '{shown}' must be positive"));
    }
    if secs > 86_400.0 {
        return Err(format!("duration '{shown}' is longer than a day"));
    }
    let d = Duration::from_secs_f64(secs);
    if d.is_zero() {
        // Found by the fuzzer: 0.33331ns was accepted as a zero duration.
        return Err(format!("duration '{shown}' is shorter than 1 ns"));
    }
    Ok(d)
}

/// A duration that the clock can measure: at least `floor` (a hundred times the clock's
/// resolution), so `--sample-time 0.0000000001s` is refused rather than taken as 0 ns.
pub fn parse_duration_at_least(text: &str, floor: Duration) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d < floor {
        return Err(format!(
            "duration '{}' is shorter than {} (a hundred times the clock's resolution)",
            escape(text),
            format_ns(floor.as_nanos() as f64)
        ));
    }
    Ok(d)
}

/// User input made safe to echo on one line: control characters (newlines, escapes) are
/// shown escaped.
pub fn escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// The width of `s` on a terminal: characters, not counting ANSI colour sequences.
pub fn visible_len(s: &str) -> usize {
    let mut n = 0;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            n += 1;
        }
    }
    n
}

/// `line` broken at spaces into lines no wider than `width`, each continuation indented
/// two more than the line itself. A word wider than the width stays whole.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    // A line coloured where it was written starts with its colour: the indent follows.
    let colour = if line.starts_with('\u{1b}') {
        line.find('m').map_or(0, |i| i + 1)
    } else {
        0
    };
    let body = &line[colour..];
    let indent = body.len() - body.trim_start().len();
    let pad = " ".repeat(indent + 2);
    let mut out = Vec::new();
    let mut cur = line[..colour + indent].to_string();
    let mut cur_len = indent;
    let mut empty = true;
    for word in body[indent..].split(' ').filter(|w| !w.is_empty()) {
        let w = visible_len(word);
        if !empty && cur_len + 1 + w > width {
            out.push(std::mem::replace(&mut cur, pad.clone()));
            cur_len = pad.len();
            empty = true;
        }
        if !empty {
            cur.push(' ');
            cur_len += 1;
        }
        cur.push_str(word);
        cur_len += w;
        empty = false;
    }
    out.push(cur);
    out
}

/// Words as a POSIX shell would take them back (Python's `shlex.quote` rule): a word of
/// letters, digits and `@%+=:,./-_` as it is, any other in single quotes (a quote
/// inside as `'\''`), an empty one as `''`; control characters then shown escaped.
pub fn shell_words(words: &[String]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    let quoted: Vec<String> = words
        .iter()
        .map(|w| {
            if !w.is_empty() && w.chars().all(safe) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect();
    escape(&quoted.join(" "))
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
    if v == 0.0 {
        return "0".into();
    }
    // Rounded to three significant digits first, so 9.99996 prints as 10.0, not 10.00.
    let mag = 10f64.powi(v.abs().log10().floor() as i32 - 2);
    let v = (v / mag).round() * mag;
    let a = v.abs();
    if a >= 100.0 {
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

/// A duration given in seconds, as [`format_ns`] writes it.
pub fn format_secs(s: f64) -> String {
    format_ns(s * 1e9)
}

/// A count with thousands separators: 31,000.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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

/// A rough duration for estimates: "40 s", "3 min", "1 h 10 min".
pub fn format_minutes(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s < 90 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", (s + 30) / 60)
    } else {
        let m = (s + 30) / 60;
        format!("{} h {} min", m / 60, m % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_dd_and_fio_read_them() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("512B"), Ok(512));
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("1kB"), Ok(1000));
        assert_eq!(parse_size("1KB"), Ok(1000));
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert_eq!(parse_size("1.5GB"), Ok(1_500_000_000));
        assert_eq!(parse_size("0.5k"), Ok(512));
    }

    #[test]
    fn bad_sizes_are_refused() {
        for bad in [
            "0", "-4k", "+4k", "abc", "", "4q", "0k", "99999P", "0.5", "1.5", "0.001k", "1e3",
            "1_000", "1i", " 4 k ", "4 k", "4k ", " 4k", "8 MiB", ".5k", "5.k", "1.2.3k", "4kib",
            "4Kb", "4\n", "4k\n", "1,000", "0x10", "NaN", "inf",
        ] {
            let bad = bad.replace("\\n", "\n");
            assert!(parse_size(&bad).is_err(), "{bad:?} should be refused");
        }
        assert!(
            parse_size("0.5")
                .unwrap_err()
                .contains("whole number of bytes")
        );
        assert!(
            parse_size("4\nk").unwrap_err().contains("4\\nk"),
            "newline escaped"
        );
    }

    #[test]
    fn size_labels_are_exact() {
        assert_eq!(size_label(4096), "4KiB");
        assert_eq!(size_label(4097), "4097B");
        assert_eq!(size_label(4098), "4098B");
        assert_eq!(size_label(3 << 29), "1536MiB");
        assert_eq!(size_label(1 << 30), "1GiB");
        assert_eq!(size_label(100), "100B");
        assert_eq!(size_label(0), "0B");
    }

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("800ns"), Ok(Duration::from_nanos(800)));
        for bad in [
            "0", "2", "10", "-1s", "abc", "5parsecs", "0ms", " 1s", "1 s", "1e3ms", ".5s", "1.s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad} should be refused");
        }
        assert!(parse_duration("10").unwrap_err().contains("needs a unit"));
        // Fuzz regression (fuzz/regressions/parse-zero-duration): under 1 ns is zero.
        assert!(parse_duration("0.33331ns").is_err());
        assert_eq!(parse_duration("1ns"), Ok(Duration::from_nanos(1)));
        let floor = Duration::from_nanos(100);
        assert!(parse_duration_at_least("0.0000000001s", floor).is_err());
        assert!(parse_duration_at_least("99ns", floor).is_err());
        assert_eq!(parse_duration_at_least("100ns", floor), Ok(floor));
    }

    proptest::proptest! {
        #[test]
        fn a_size_label_parses_back_to_its_size(bytes in 1u64..=MAX_SIZE) {
            proptest::prop_assert_eq!(parse_size(&size_label(bytes)), Ok(bytes));
        }

        #[test]
        fn scaled_sizes_parse_exactly(n in 1u64..1_000_000, unit in 0usize..SIZE_UNITS.len()) {
            let (u, f) = SIZE_UNITS[unit];
            let text = format!("{n}{u}");
            match n.checked_mul(f) {
                Some(v) if v <= MAX_SIZE => proptest::prop_assert_eq!(parse_size(&text), Ok(v)),
                _ => proptest::prop_assert!(parse_size(&text).is_err()),
            }
        }

        #[test]
        fn whatever_is_accepted_is_a_whole_number_of_bytes(text in "[0-9]{0,4}(\\.[0-9]{0,4})?(k|K|KiB|m|M|MiB|g|G|GiB|kB|MB|GB|B|i|e3|_0| )?") {
            if let Ok(v) = parse_size(&text) {
                // Recompute with rationals: the value times 10^frac is an integer multiple.
                let (num, unit) = text.split_at(text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len()));
                let f = SIZE_UNITS.iter().find(|(u, _)| *u == unit).unwrap().1 as f64;
                let x: f64 = num.parse().unwrap();
                proptest::prop_assert!(((x * f) - v as f64).abs() < 1e-6 * v as f64 + 1e-9);
                proptest::prop_assert!(v > 0);
            }
        }

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,12}") {
            let _ = parse_size(&text);
            let _ = parse_duration(&text);
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
        // Rounding carries into the next decade: three digits, not four.
        assert_eq!(sig3(9.999_999_999_999_998), "10.0");
        assert_eq!(sig3(99.96), "100");
        assert_eq!(sig3(0.099_99), "0.100");
        assert_eq!(format_ns(45.678), "45.7 ns");
        assert_eq!(format_ns(1234.0), "1.23 µs");
        assert_eq!(format_ns(12_345_678.0), "12.3 ms");
        assert_eq!(format_count(1_234_567.0), "1.23M");
        assert_eq!(format_gbps(12_345_000_000.0), "12.3");
    }

    #[test]
    fn shell_words_quote_as_a_shell_takes_them_back() {
        let w = |v: &[&str]| shell_words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(w(&["dd", "if=/tmp/a", "bs=4k"]), "dd if=/tmp/a bs=4k");
        assert_eq!(w(&["sh", "-c", "cat a | gzip"]), "sh -c 'cat a | gzip'");
        assert_eq!(w(&["echo", "it's", ""]), r"echo 'it'\''s' ''");
        assert_eq!(w(&["printf", "a\nb"]), "printf 'a\\nb'");
    }

    #[test]
    fn lines_fold_at_spaces_with_a_hanging_indent() {
        let f = wrap("ioprobe: copy: 52 rows, about 25 s (its time limit)", 20);
        assert_eq!(
            f,
            [
                "ioprobe: copy: 52",
                "  rows, about 25 s",
                "  (its time limit)"
            ]
        );
        assert!(f.iter().all(|l| l.chars().count() <= 20));
        assert_eq!(wrap("short", 20), ["short"]);
        assert_eq!(
            wrap("a verylongwordthatcannotfit b", 8),
            ["a", "  verylongwordthatcannotfit", "  b"]
        );
    }

    #[test]
    fn prose_wraps_at_spaces_with_a_hanging_indent() {
        let lines = wrap("  warning: one two three four five six", 20);
        assert_eq!(
            lines,
            ["  warning: one two", "    three four five", "    six"]
        );
        assert!(lines.iter().all(|l| l.chars().count() <= 20));
        // A word longer than the width stays whole on its own line.
        assert_eq!(
            wrap("a averyveryverylongword b", 10),
            ["a", "  averyveryverylongword", "  b"]
        );
        assert_eq!(wrap("short", 10), ["short"]);
        // A coloured line keeps its indent after the colour.
        assert_eq!(
            wrap("\u{1b}[33m  warning: one two three\u{1b}[0m", 20),
            ["\u{1b}[33m  warning: one two", "    three\u{1b}[0m"]
        );
    }

    #[test]
    fn colour_sequences_take_no_width() {
        assert_eq!(visible_len("\u{1b}[1mtitle\u{1b}[0m"), 5);
        assert_eq!(visible_len("× – │"), 5);
    }
}
