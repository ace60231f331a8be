//! OpenMetrics text (`export --format openmetrics`): every measured row's median as a
//! gauge in base units (seconds per operation, bytes per second), labelled by probe,
//! case, its params and the machine, so a Prometheus textfile collector can track a
//! fleet's figures over time. Unsupported and failed rows have no figure and are left
//! out.

use crate::results::{Run, Unit};

/// Metric families: (unit in the run document, family name, OpenMetrics unit, help).
const FAMILIES: [(Unit, &str, &str, &str); 2] = [
    (
        Unit::NsPerOp,
        "ioprobe_operation_seconds",
        "seconds",
        "Median time of one operation (the probes whose rows are in ns/op).",
    ),
    (
        Unit::BytesPerSec,
        "ioprobe_throughput_bytes_per_second",
        "bytes_per_second",
        "Median throughput (the probes whose rows are in bytes/s).",
    ),
];

/// A label value with backslash, double quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A label name from a param key: `[a-zA-Z_][a-zA-Z0-9_]*`, prefixed `param_`.
fn label_name(key: &str) -> String {
    let k: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("param_{k}")
}

/// The run as OpenMetrics text, ending with `# EOF`.
pub fn render(run: &Run) -> String {
    let env = &run.environment;
    let fs = env
        .filesystem
        .as_ref()
        .map_or("unknown", |f| f.fs_type.as_str());
    let mut out = String::new();
    for (unit, name, om_unit, help) in FAMILIES {
        let rows: Vec<_> = run
            .measurements
            .iter()
            .filter(|m| m.unit == unit && m.is_ok())
            .collect();
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "# TYPE {name} gauge\n# UNIT {name} {om_unit}\n# HELP {name} {help}\n"
        ));
        for m in rows {
            let mut labels = vec![
                ("probe".to_string(), m.probe.clone()),
                ("case".to_string(), m.case.clone()),
                ("host".to_string(), env.hostname.clone()),
                ("kernel".to_string(), env.kernel.clone()),
                ("filesystem".to_string(), fs.to_string()),
            ];
            for (k, v) in &m.params {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                labels.push((label_name(k), v));
            }
            let labels: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let value = if unit == Unit::NsPerOp {
                m.median * 1e-9
            } else {
                m.median
            };
            out.push_str(&format!("{name}{{{}}} {value:e}\n", labels.join(",")));
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_and_names_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(label_name("block_size"), "param_block_size");
        assert_eq!(label_name("a-b.c"), "param_a_b_c");
    }
}
