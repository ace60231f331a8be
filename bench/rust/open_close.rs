// Bare Rust loop: open(O_RDWR|O_CLOEXEC) + close of PATH, the protocol of bench/c/ref.c
// (10 ms samples, 31 samples, median ns per open+close).
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).expect("path");
    let once = || {
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).expect("open");
        drop(std::hint::black_box(f));
    };
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..n { once(); }
        if t.elapsed().as_nanos() >= 10_000_000 { break; }
        n *= 2;
    }
    let t = Instant::now();
    while t.elapsed().as_millis() < 50 { once(); }
    let mut s: Vec<f64> = (0..31).map(|_| {
        let t = Instant::now();
        for _ in 0..n { once(); }
        t.elapsed().as_nanos() as f64 / n as f64
    }).collect();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("{:.6}", s[15]);
}
