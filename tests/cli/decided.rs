//! `ioprobe run` samples until each answer is decided: a first pass over every row,
//! then the rows of the answers still undecided, within its time limit; the run says
//! where its time went.

use super::*;

/// The schedule's topics are the run's answers, each with why it stopped; rows measured
/// again are pooled (their samples all kept, each pass's median said); an answer that
/// rests on a regime row measured in one draw is not high.
fn check_schedule(v: &Value) {
    let s = &v["harness"]["schedule"];
    assert!(s.is_object(), "run has a schedule: {}", v["harness"]);
    assert_eq!(s["target"], 0.95);
    assert!(["decided", "limit"].contains(&s["ended"].as_str().unwrap()));
    let recs = v["recommendations"].as_array().unwrap();
    let topics = s["topics"].as_array().unwrap();
    let ids = |a: &[Value]| a.iter().map(|x| x["id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(topics), ids(recs));
    for (t, r) in topics.iter().zip(recs) {
        let stopped = t["stopped"].as_str().unwrap();
        assert!(["decided", "stalled", "limit"].contains(&stopped), "{t}");
        assert!(t["samples"].as_u64().unwrap() >= 2 && t["seconds"].as_f64().unwrap() > 0.0);
        if t["one_draw"] == true {
            assert_ne!(r["confidence"]["level"], "high", "{t} {r}");
            assert_eq!(stopped, "limit", "{t}");
        }
        if stopped == "decided" {
            assert!(t["agreement"].as_f64().is_none_or(|a| a >= 0.95), "{t}");
        }
    }
    for m in v["measurements"].as_array().unwrap() {
        let passes = m["derived"]["pass_medians"].as_array().map_or(1, Vec::len);
        assert_eq!(
            m["raw"].as_array().unwrap().len() as u64,
            m["samples"].as_u64().unwrap()
        );
        if passes > 1 && ["pipe", "socket", "read", "write"].contains(&m["probe"].as_str().unwrap())
        {
            assert_eq!(
                m["derived"]["draws"].as_u64(),
                Some(passes as u64),
                "{}",
                m["case"]
            );
        }
    }
}

#[test]
fn run_samples_until_each_answer_is_decided_and_says_where_the_time_went() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let out = ioprobe(&scratch)
        .args(["run", "--quick", "--time-limit", "8s", "--json"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("answers decided in") || stderr.contains("every answer decided"),
        "{stderr}"
    );
    let v = json_of(&out.get_output().stdout);
    check_schedule(&v);
    assert_empty(&scratch);
    // The table of a saved run's file says where the time went.
    let file = dir.path().join("run.json");
    std::fs::write(&file, &out.get_output().stdout).unwrap();
    let shown = Command::new(BIN)
        .args(["show", file.to_str().unwrap(), "--wide"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&shown.get_output().stdout).to_string();
    assert!(text.contains("where the time went"), "{text}");
    assert!(text.contains("first pass over every row"), "{text}");
}

#[test]
fn run_precise_samples_every_row_to_its_own_end_without_a_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(["run", "--precise", "--json"])
        .args(TINY)
        .assert()
        .success();
    let v = json_of(&out.get_output().stdout);
    assert!(v["harness"].get("schedule").is_none(), "{}", v["harness"]);
    assert!(
        v["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["derived"].get("pass_medians").is_none())
    );
}
