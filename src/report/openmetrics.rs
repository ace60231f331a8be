//! OpenMetrics text (`export --format openmetrics`, `run --openmetrics FILE`): every
//! measured row's median as a gauge in base units (seconds per operation, bytes per
//! second), labelled by probe, case, its requested params and the machine (host, kernel,
//! filesystem, CPU model), and every answer: a size's knee and plateau bounds in bytes, a
//! method as a label, the confidence as a number. A Prometheus textfile collector then
//! shows a fleet's figures and answers over time. Unsupported, failed and skipped rows
//! have no figure and are left out; observed params (what mincore saw, the buffers the
//! kernel granted) are no labels, since their values differ from run to run without
//! bound.

use crate::advice::{Choice, Level, Recommendation};
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

/// The machine's labels: host, kernel, filesystem, CPU model.
fn machine_labels(run: &Run) -> Vec<(String, String)> {
    let env = &run.environment;
    let fs = env
        .filesystem
        .as_ref()
        .map_or("unknown", |f| f.fs_type.as_str());
    vec![
        ("host".into(), env.hostname.clone()),
        ("kernel".into(), env.kernel.clone()),
        ("filesystem".into(), fs.into()),
        ("cpu_model".into(), env.cpu_model.clone()),
    ]
}

/// `{k="v",…}` with every value escaped.
fn label_set(labels: &[(String, String)]) -> String {
    let l: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", l.join(","))
}

/// A family's TYPE, UNIT (where it has one) and HELP lines.
fn header(name: &str, kind: &str, unit: &str, help: &str) -> String {
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!("# UNIT {name} {unit}\n")
    };
    format!("# TYPE {name} {kind}\n{unit}# HELP {name} {help}\n")
}

/// The run and its answers `recs` as OpenMetrics text, ending with `# EOF`.
pub fn render(run: &Run, recs: &[Recommendation]) -> String {
    let mut out = figures(run);
    out.push_str(&answers(run, recs));
    out.push_str("# EOF\n");
    out
}

/// Every measured row's median, one family per unit.
fn figures(run: &Run) -> String {
    let machine = machine_labels(run);
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
        out.push_str(&header(name, "gauge", om_unit, help));
        let labelled: Vec<(Vec<(String, String)>, f64)> = rows
            .iter()
            .map(|m| {
                let value = if unit == Unit::NsPerOp {
                    m.median * 1e-9
                } else {
                    m.median
                };
                (row_labels(m, &machine), value)
            })
            .collect();
        // One label set for the whole family (strict OpenMetrics parsers ask it): a
        // label a row lacks is empty, which Prometheus reads as absent.
        let mut names: Vec<&str> = Vec::new();
        for (labels, _) in &labelled {
            for (k, _) in labels {
                if !names.contains(&k.as_str()) {
                    names.push(k);
                }
            }
        }
        for (labels, value) in &labelled {
            let full: Vec<(String, String)> = names
                .iter()
                .map(|n| {
                    let v = labels
                        .iter()
                        .find(|l| l.0 == *n)
                        .map_or("", |l| l.1.as_str());
                    (n.to_string(), v.to_string())
                })
                .collect();
            out.push_str(&format!("{name}{} {value:e}\n", label_set(&full)));
        }
    }
    out
}

/// A row's labels: probe, case, the machine's, its requested params.
fn row_labels(
    m: &crate::results::Measurement,
    machine: &[(String, String)],
) -> Vec<(String, String)> {
    let mut labels = vec![
        ("probe".to_string(), m.probe.clone()),
        ("case".to_string(), m.case.clone()),
    ];
    labels.extend(machine.iter().cloned());
    let observed = crate::probes::observed_params(&m.probe);
    for (k, v) in m
        .params
        .iter()
        .filter(|(k, _)| !observed.contains(&k.as_str()))
    {
        let v = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        labels.push((label_name(k), v));
    }
    labels
}

/// The confidence as a number: high 2, medium 1, low 0.
fn level_number(l: Level) -> u8 {
    match l {
        Level::High => 2,
        Level::Medium => 1,
        Level::Low => 0,
    }
}

/// Every answer: its confidence, a size's knee and plateau bounds, a method's name.
fn answers(run: &Run, recs: &[Recommendation]) -> String {
    if recs.is_empty() {
        return String::new();
    }
    let machine = machine_labels(run);
    let with = |id: &str, more: &[(&str, &str)]| {
        let mut l = vec![("id".to_string(), id.to_string())];
        l.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        l.extend(machine.iter().cloned());
        label_set(&l)
    };
    let (mut conf, mut sizes, mut methods) = (String::new(), String::new(), String::new());
    for r in recs {
        let level = level_number(r.confidence.level);
        conf.push_str(&format!(
            "ioprobe_advice_confidence{} {level}\n",
            with(&r.id, &[])
        ));
        match &r.choice {
            Choice::Size { bytes, range, .. } => {
                let (from, to) = r
                    .plateau
                    .as_ref()
                    .map_or((range[0], range[1]), |p| (p.from, p.to));
                for (bound, v) in [("knee", *bytes), ("plateau_from", from), ("plateau_to", to)] {
                    sizes.push_str(&format!(
                        "ioprobe_advice_size_bytes{} {v}\n",
                        with(&r.id, &[("bound", bound)])
                    ));
                }
            }
            Choice::Method { name, .. } => methods.push_str(&format!(
                "ioprobe_advice_method_info{} 1\n",
                with(&r.id, &[("method", name)])
            )),
        }
    }
    let mut out = header(
        "ioprobe_advice_confidence",
        "gauge",
        "",
        "Confidence of each answer (label id, the recommendation's stable id): 2 high, 1 medium, 0 low.",
    ) + &conf;
    if !sizes.is_empty() {
        out += &header(
            "ioprobe_advice_size_bytes",
            "gauge",
            "bytes",
            "A size answer: the size to use (bound=knee) and its plateau's smallest and largest sizes (bound=plateau_from, plateau_to).",
        );
        out += &sizes;
    }
    if !methods.is_empty() {
        out += &header(
            "ioprobe_advice_method",
            "info",
            "",
            "A method answer: the method to use, as the label method.",
        );
        out += &methods;
    }
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
