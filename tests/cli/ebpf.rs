//! The eBPF tracer's records come from each CPU's own ring and are read in the order
//! of their tickets: a task moving between CPUs at every call, reusing one descriptor
//! number for two files, has each write counted on the file it went to, in loops with
//! one to eight such tasks at once.

use crate::trace::{calls_on, gcc, tracers};
use crate::*;

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

#[test]
fn calls_of_tasks_moving_between_cpus_keep_their_order() {
    if !tracers().contains(&"ebpf") {
        eprintln!("skipped: needs CAP_BPF");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("movers.c");
    std::fs::write(&src, MOVERS).unwrap();
    let prog = d.join("movers");
    if !gcc(&["-O1", "-o"], &prog, &src) {
        eprintln!("skipped: no gcc");
        return;
    }
    let n: u64 = 400;
    for run in 0..50 {
        let j: u64 = [1, 2, 4, 8][run % 4];
        std::fs::write(d.join("a"), "").unwrap();
        std::fs::write(d.join("b"), "").unwrap();
        let out = d.join("trace.json");
        let a = Command::new(BIN)
            .args([
                "trace",
                "--tracer",
                "ebpf",
                "--json",
                "--figures",
                FIXTURE_A,
            ])
            .arg("--store")
            .arg(d.join("none.db"))
            .arg("--output")
            .arg(&out)
            .arg("--")
            .args([prog.to_str().unwrap(), &j.to_string(), &n.to_string()])
            .current_dir(d)
            .assert();
        let o = a.get_output();
        assert_eq!(
            o.status.code(),
            Some(0),
            "run {run}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
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
