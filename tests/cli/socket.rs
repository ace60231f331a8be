//! The socket probe.

use crate::*;

#[test]
fn socket_runs_every_family_and_method_on_loopback_and_checks_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioprobe(dir.path())
        .args(["socket", "--sizes", "1k,16k", "--total", "256k", "--json"])
        .args(["--family", "unix,tcp,unix-dgram,udp", "--ip", "v4"])
        .args(["--sndbuf", "default", "--rcvbuf", "default,256k"])
        .args(TINY)
        .assert()
        .success();
    imports_back(&out.get_output().stdout);
    let v = run_json(&out.get_output().stdout);
    let ms = v["measurements"].as_array().unwrap();
    // Stream families: 6 methods; datagram ones: the 4 that send from memory.
    // Each × 2 receive buffers × 2 sizes; TCP also with TCP_NODELAY both ways.
    assert_eq!(ms.len(), (6 + 6 * 2 + 4 + 4) * 2 * 2, "{}", ms.len());
    let mut unsupported = Vec::new();
    for m in ms {
        assert_eq!(m["probe"], "socket");
        let p = &m["params"];
        let (family, method) = (p["family"].as_str().unwrap(), p["method"].as_str().unwrap());
        if m["status"] != "ok" {
            unsupported.push(format!("{family}/{method}: {}", m["reason"]));
            continue;
        }
        check_measurement(m);
        assert_eq!(m["unit"], "bytes/s");
        for role in ["writer", "reader"] {
            assert!(
                m["rusage"]["processes"][role]["voluntary_cs"].is_number(),
                "{m}"
            );
        }
        // The buffers granted are read back; a request is at least granted.
        assert!(p["sndbuf"].as_u64().unwrap() > 0);
        if p["rcvbuf_requested"] == "256KiB" {
            assert!(p["rcvbuf"].as_u64().unwrap() >= 256 << 10, "{p}");
        }
        let d = &m["derived"];
        assert!(d["writer_ns_per_call"].as_f64().unwrap() > 0.0);
        match family {
            "tcp" => {
                assert_eq!(p["address"], "127.0.0.1");
                assert!(d["segments_per_mib"].as_f64().unwrap() > 0.0, "{m}");
            }
            "udp" => assert!(d["lost_share"].as_f64().unwrap() < 1.0),
            _ => assert!(p.get("address").is_none()),
        }
        if method == "sendfile" || method == "splice" {
            assert!(p["file_size"].as_u64().unwrap() >= 16 << 10);
        }
        if method == "zerocopy" {
            assert!(d["zerocopy_copied_share"].is_number());
        }
        kept_connections(family, m, d);
    }
    // Zerocopy on AF_UNIX is refused by the kernel: an unsupported row, never a
    // fallback measured under its name.
    assert!(
        unsupported
            .iter()
            .all(|u| u.starts_with("unix") && u.contains("zerocopy")),
        "{unsupported:?}"
    );
    assert!(!unsupported.is_empty());
    assert_empty(dir.path());
    assert!(processes_mentioning(dir.path().to_str().unwrap(), 0).is_empty());
}

/// A byte stream's samples run on kept connections, each warmed first (a TCP row's on a
/// new one every 8 samples): the warm-ups and their rate are kept; a datagram row has
/// none.
fn kept_connections(family: &str, m: &serde_json::Value, d: &serde_json::Value) {
    if family != "unix" && family != "tcp" {
        assert!(d.get("warmup_s").is_none(), "{d}");
        return;
    }
    let connections = d["connections"].as_f64().unwrap();
    let samples = m["raw"].as_array().map_or(0, Vec::len) as f64;
    let kept = if family == "tcp" {
        assert!(connections >= (samples / 8.0).floor().max(1.0), "{d}");
        "kept for 8 samples"
    } else {
        assert_eq!(connections, 1.0, "{d}");
        "kept for every sample"
    };
    // TINY's budget of 30 ms makes warm-ups of 7.5 ms, shorter than the default
    // scale's: a connection warms 36 ms at least (60 ms at the default scale).
    assert!(d["warmup_s"].as_f64().unwrap() >= 0.036, "{d}");
    assert!(d["warmup_bytes"].as_f64().unwrap() > 0.0, "{d}");
    assert!(d["start_bytes_per_s"].as_f64().unwrap() > 0.0, "{d}");
    assert!(
        [0.0, 1.0].contains(&d["warmup_settled"].as_f64().unwrap()),
        "{d}"
    );
    assert!(m["note"].as_str().unwrap().contains(kept), "{m}");
}

#[test]
fn a_corrupted_socket_stream_fails_loudly_and_leaves_nothing() {
    for (family, method) in [
        ("unix", "write-read"),
        ("tcp", "sendfile"),
        ("tcp", "splice"),
        ("unix-dgram", "send-recv"),
        ("udp", "sendmsg-recvmsg"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = ioprobe(dir.path())
            .args(["socket", "--sizes", "4k", "--total", "64k"])
            .args(["--family", family, "--method", method, "--ip", "v4"])
            .args(TINY)
            .env("IOPROBE_FAULT", "socket-corrupt")
            .assert()
            .code(1);
        let stderr = stderr_of(&out);
        assert!(
            stderr.contains("wrong stamp") || stderr.contains("carries the stamp"),
            "{family} {method}: {stderr}"
        );
        assert!(!stderr.contains("panicked"));
        assert!(out.get_output().stdout.is_empty());
        assert_empty(dir.path());
        assert!(processes_mentioning(dir.path().to_str().unwrap(), 0).is_empty());
    }
}

#[test]
fn socket_bad_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fails(dir.path(), &["socket", "--sizes", "0"], 2, "is zero");
    fails(
        dir.path(),
        &["socket", "--sizes", "8", "--family", "udp"],
        2,
        "16 B",
    );
    fails(dir.path(), &["socket", "--sizes", "2g"], 2, "1 GiB");
    fails(
        dir.path(),
        &["socket", "--sizes", "1m", "--total", "64k"],
        2,
        "smaller than one chunk",
    );
    fails(dir.path(), &["socket", "--sndbuf", "0"], 2, "is zero");
    fails(
        dir.path(),
        &["socket", "--family", "sctp"],
        2,
        "unknown socket family",
    );
    fails(
        dir.path(),
        &["socket", "--method", "mmap"],
        2,
        "unknown socket method",
    );
    fails(
        dir.path(),
        &["socket", "--nodelay", "maybe"],
        2,
        "unknown nodelay",
    );
}

/// The two processes of every transfer, again and again with both CPUs busy: 3 runs of
/// 32 rows (24 or more measured), each row a verification pass, a warm-up and at least
/// 5 samples (over 500 transfers, every byte of the first pass and every stamp of the
/// others checked), across every family and memory method, on one CPU, on two and
/// unpinned.
#[test]
fn socket_transfers_hold_under_load_again_and_again() {
    under_load(|| {
        for placement in ["same", "split", "any"] {
            let dir = tempfile::tempdir().unwrap();
            let out = ioprobe(dir.path())
                .args(["socket", "--sizes", "1k,64k", "--total", "128k", "--json"])
                .args(["--family", "unix,tcp,unix-dgram,udp", "--ip", "v4"])
                .args(["--method", "write-read,send-recv,sendmsg-recvmsg,zerocopy"])
                .args([
                    "--sndbuf",
                    "default",
                    "--rcvbuf",
                    "default",
                    "--nodelay",
                    "off",
                ])
                .args(["--placement", placement])
                .args(TINY)
                .assert()
                .success();
            let v = run_json(&out.get_output().stdout);
            let ms = v["measurements"].as_array().unwrap();
            // 4 families × 4 methods × 2 sizes, less UDP's 64 KiB (over its maximum).
            assert_eq!(ms.len(), 32);
            let ok = ms.iter().filter(|m| m["status"] == "ok").count();
            assert!(ok >= 24, "{placement}: {ok} rows ok");
            assert_empty(dir.path());
        }
    });
}
