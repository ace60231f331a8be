//! A fleet's figures and answers in OpenMetrics (issue 68): read back by a real parser,
//! written atomically, refused before a run measures anything where it cannot be written.

use crate::*;
use openmetrics_parser::openmetrics::parse_openmetrics;
use openmetrics_parser::{OpenMetricsType, OpenMetricsValue};

/// `export RUN --format openmetrics` of a fixture, as text.
fn exported(run: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("unused.db");
    stdout_of(
        &with_store(&store)
            .args(["export", run, "--format", "openmetrics"])
            .assert()
            .success(),
    )
}

/// Each sample of `family` as (its labels, its value).
fn samples(text: &str, family: &str) -> Vec<(Vec<(String, String)>, f64)> {
    let exp = parse_openmetrics(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let fam = exp
        .families
        .get(family)
        .unwrap_or_else(|| panic!("{family} missing"));
    fam.iter_samples()
        .map(|s| {
            let set = s.get_labelset().unwrap();
            let labels = set
                .iter_names()
                .map(|n| (n.clone(), set.get_label_value(n).unwrap().to_string()))
                .collect();
            let v = match &s.value {
                OpenMetricsValue::Gauge(n) | OpenMetricsValue::Unknown(n) => n.as_f64(),
                OpenMetricsValue::Info => 1.0,
                other => panic!("{family}: {other:?}"),
            };
            (labels, v)
        })
        .collect()
}

fn label<'a>(labels: &'a [(String, String)], name: &str) -> &'a str {
    labels
        .iter()
        .find(|l| l.0 == name)
        .map_or_else(|| panic!("no {name} in {labels:?}"), |l| l.1.as_str())
}

#[test]
fn openmetrics_parses_and_exports_each_answer_with_the_machine() {
    for fixture in [FIXTURE_A, FIXTURE_COPY, FIXTURE_PIPE] {
        let text = exported(fixture);
        let exp = parse_openmetrics(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        assert_eq!(
            exp.families["ioprobe_advice_method"].family_type,
            OpenMetricsType::Info
        );
        let confidence = samples(&text, "ioprobe_advice_confidence");
        assert!(!confidence.is_empty(), "{fixture}: no answer exported");
        for (labels, v) in &confidence {
            assert!([0.0, 1.0, 2.0].contains(v), "{labels:?} {v}");
            for machine in ["host", "kernel", "filesystem", "cpu_model"] {
                assert!(!label(labels, machine).is_empty(), "{machine} empty");
            }
        }
        // Every size answer: knee, plateau_from ≤ knee ≤ plateau_to; every method answer
        // names its method. Together, one per answer.
        let mut answered = 0;
        if exp.families.contains_key("ioprobe_advice_size_bytes") {
            let sizes = samples(&text, "ioprobe_advice_size_bytes");
            let ids: std::collections::BTreeSet<&str> =
                sizes.iter().map(|s| label(&s.0, "id")).collect();
            for id in &ids {
                let bound = |b: &str| {
                    sizes
                        .iter()
                        .find(|s| label(&s.0, "id") == *id && label(&s.0, "bound") == b)
                        .map(|s| s.1)
                        .unwrap_or_else(|| panic!("{id}: no {b}"))
                };
                let (from, knee, to) = (bound("plateau_from"), bound("knee"), bound("plateau_to"));
                assert!(
                    from <= knee && knee <= to && from > 0.0,
                    "{id}: {from} {knee} {to}"
                );
            }
            answered += ids.len();
        }
        if exp.families.contains_key("ioprobe_advice_method") {
            let methods = samples(&text, "ioprobe_advice_method");
            assert!(methods.iter().all(|m| !label(&m.0, "method").is_empty()));
            answered += methods.len();
        }
        assert_eq!(answered, confidence.len(), "{fixture}");
        // Observed params differ from run to run: never labels (bounded series).
        assert!(!text.contains("param_page_cache=") && !text.contains("param_cache_observed="));
    }
}

#[test]
fn a_reader_polling_the_file_while_it_is_rewritten_never_sees_part_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, file) = (
        tmp.path().join("unused.db"),
        tmp.path().join("ioprobe.prom"),
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (stop, file) = (stop.clone(), file.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(text) = std::fs::read_to_string(&file) {
                    assert!(
                        text.ends_with("# EOF\n"),
                        "a partial file: {} bytes",
                        text.len()
                    );
                    parse_openmetrics(&text).unwrap();
                    reads += 1;
                }
            }
            reads
        })
    };
    for (i, fixture) in [FIXTURE_A, FIXTURE_COPY, FIXTURE_PIPE]
        .iter()
        .cycle()
        .take(30)
        .enumerate()
    {
        with_store(&store)
            .args(["export", fixture, "--format", "openmetrics", "--output"])
            .arg(&file)
            .assert()
            .success()
            .stdout("");
        if i == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("the reader saw only whole files");
    assert!(reads > 0, "the reader never read the file");
    // Nothing but the file is left in its directory (no temporary file).
    let mut left = entries(tmp.path());
    left.sort();
    assert_eq!(left, ["ioprobe.prom"]);
}

#[test]
fn run_openmetrics_into_a_directory_it_cannot_write_is_refused_before_measuring() {
    let tmp = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let out = ioprobe(tmp.path())
        .args(["run", "--openmetrics", "/nonexistent-dir/ioprobe.prom"])
        .assert()
        .code(1);
    let err = stderr_of(&out);
    assert_eq!(
        err.trim_end(),
        "ioprobe: error: cannot write in /nonexistent-dir: No such file or directory",
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "it measured first"
    );
    assert_empty(tmp.path());
}

/// docs/prometheus's rules (the README's query) on their test series, where promtool
/// is installed.
#[test]
fn the_documented_fleet_queries_pass_their_promtool_test() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/prometheus");
    let Ok(out) = std::process::Command::new("promtool")
        .args(["test", "rules", "ioprobe.rules.test.yml"])
        .current_dir(dir)
        .output()
    else {
        eprintln!("skipped: promtool is not installed (Debian's prometheus package has it)");
        return;
    };
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
