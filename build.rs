//! Builds the library `ioprobe trace --tracer preload` loads into the traced command
//! (src/sys/trace/preload/preload.c) with the C compiler the cc crate finds (Linux only:
//! elsewhere an empty file stands in). ioprobe embeds it and hands it to the command
//! as a memfd, so nothing is installed.

/// `layout.rs`'s constants (each `pub const NAME: u64 = VALUE;`) as the C compiler's
/// `-DNAME=VALUEull`: the ring's layout written once for both languages.
fn layout_defines() -> Vec<String> {
    let text = std::fs::read_to_string("src/sys/trace/preload/layout.rs").expect("layout.rs");
    let defines: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let (name, value) = l.strip_prefix("pub const ")?.split_once(": u64 = ")?;
            let value: u64 = value.strip_suffix(';')?.replace('_', "").parse().ok()?;
            Some(format!("-D{name}={value}ull"))
        })
        .collect();
    let consts = text.lines().filter(|l| l.starts_with("pub const ")).count();
    assert_eq!(
        defines.len(),
        consts,
        "layout.rs: every constant a plain u64"
    );
    defines
}

fn main() {
    const SOURCE: &str = "src/sys/trace/preload/preload.c";
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-changed=src/sys/trace/preload/layout.rs");
    let out =
        std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("preload.so");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        std::fs::write(&out, b"").expect("writing an empty preload.so");
        return;
    }
    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let status = compiler
        .to_command()
        .args([
            "-shared",
            "-fPIC",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-std=gnu11",
        ])
        // Two segments, not four: each the loader maps is a traced mmap.
        .args([
            "-fvisibility=hidden",
            "-Wl,--as-needed",
            "-Wl,-z,noseparate-code",
        ])
        .args(layout_defines())
        .arg("-o")
        .arg(&out)
        .arg(SOURCE)
        .status()
        .expect("running the C compiler for src/sys/trace/preload/preload.c");
    assert!(status.success(), "building {SOURCE} failed");
}
