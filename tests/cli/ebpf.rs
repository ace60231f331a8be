//! The eBPF tracer's records come from each CPU's own ring and are read in the order
//! of their tickets: a task moving between CPUs at every call, reusing one descriptor
//! number for two files, has each write counted on the file it went to, in loops with
//! one to eight such tasks at once. A timed pair of calls spans the calls that are not
//! recorded between them.

use crate::trace::{calls_on, gcc, trace_via, tracers};
use crate::*;
use std::path::PathBuf;

const MOVERS: &str = r#"#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
/* j children; each n times: to the next CPU, open a or b (the same descriptor
 * number each time), write 3 bytes to a or 5 to b, close. */
int main(int argc, char **argv) {
    int j = atoi(argv[1]), n = atoi(argv[2]);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < j; c++) {
        if (fork() == 0) {
            char buf[5] = "xxxxx";
            for (int i = 0; i < n; i++) {
                cpu_set_t s;
                CPU_ZERO(&s);
                CPU_SET((c + i) % cpus, &s);
                sched_setaffinity(0, sizeof s, &s);
                int fd = open(i % 2 ? "b" : "a", O_WRONLY | O_APPEND);
                if (fd < 0 || write(fd, buf, i % 2 ? 5 : 3) != (i % 2 ? 5 : 3) || close(fd))
                    _exit(1);
            }
            _exit(0);
        }
    }
    int bad = 0, st;
    while (wait(&st) > 0)
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    return bad;
}
"#;

/// (calls, bytes) of `op` on the target whose name ends in `name`.
fn on(doc: &Value, name: &str, op: &str) -> (u64, u64) {
    calls_on(doc, op, |n| n.ends_with(name))
}

/// `source` built as `name` in `d`, where eBPF can trace and gcc is here (else the
/// test is skipped: None).
fn built(d: &Path, name: &str, source: &str) -> Option<PathBuf> {
    if !tracers().contains(&"ebpf") {
        eprintln!("skipped: needs CAP_BPF");
        return None;
    }
    let src = d.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let prog = d.join(name);
    if !gcc(&["-O1", "-o"], &prog, &src) {
        eprintln!("skipped: no gcc");
        return None;
    }
    Some(prog)
}

#[test]
fn calls_of_tasks_moving_between_cpus_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = built(d, "movers", MOVERS) else {
        return;
    };
    let n: u64 = 400;
    for run in 0..50 {
        let j: u64 = [1, 2, 4, 8][run % 4];
        std::fs::write(d.join("a"), "").unwrap();
        std::fs::write(d.join("b"), "").unwrap();
        let args = [prog.to_str().unwrap(), &j.to_string(), &n.to_string()];
        let (doc, code, stderr) = trace_via(d, &args, "ebpf");
        assert_eq!(code, 0, "run {run}: {stderr}");
        assert_eq!(doc["work"]["tracer"]["lost"], 0, "run {run}");
        let half = j * n / 2;
        assert_eq!(
            on(&doc, "/a", "write"),
            (half, 3 * half),
            "run {run}, j {j}"
        );
        assert_eq!(
            on(&doc, "/b", "write"),
            (half, 5 * half),
            "run {run}, j {j}"
        );
        assert_eq!(on(&doc, "/a", "openat").0, half, "run {run}, j {j}");
        assert_eq!(on(&doc, "/b", "close").0, half, "run {run}, j {j}");
    }
}

/// Reads a file 512 bytes at a time, each read after a getpid(2), which ioprobe does
/// not record (as Python's `logging` calls it before each record's write).
const GETPID_READS: &str = r#"#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    char buf[512];
    long sum = 0;
    ssize_t n = 1;
    int fd = open("in", O_RDONLY);
    while (fd >= 0 && n > 0) {
        sum += syscall(SYS_getpid) > 0;
        n = read(fd, buf, sizeof buf);
    }
    return fd < 0 || n < 0 || sum < 2 || close(fd);
}
"#;

/// A call not recorded between two recorded ones leaves their timed pair open: the
/// reads' own work is measured (before, every pair ended at the getpid, and the
/// finding said the work between them was not measured).
#[test]
fn a_call_not_recorded_leaves_a_timed_pair_open() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(prog) = built(d, "getpid", GETPID_READS) else {
        return;
    };
    std::fs::write(d.join("in"), vec![3u8; 4 << 20]).unwrap();
    let (doc, code, stderr) = trace_via(d, &[prog.to_str().unwrap()], "ebpf");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        doc["counts"]["getpid"].is_null(),
        "getpid is recorded now: pick another call"
    );
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "small_requests")
        .unwrap_or_else(|| panic!("no small-read finding: {doc}"));
    assert_eq!(f["own_work"]["method"], "timed", "{f}");
    assert!(!f["text"].as_str().unwrap().contains("not measured"), "{f}");
}
