//! Builds the library `ioprobe trace --tracer preload` loads into the traced command
//! (src/sys/os/linux_preload.c) with the C compiler the cc crate finds (Linux only:
//! elsewhere an empty file stands in). ioprobe embeds it and hands it to the command
//! as a memfd, so nothing is installed.

fn main() {
    const SOURCE: &str = "src/sys/os/linux_preload.c";
    println!("cargo:rerun-if-changed={SOURCE}");
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
        .arg("-o")
        .arg(&out)
        .arg(SOURCE)
        .status()
        .expect("running the C compiler for src/sys/os/linux_preload.c");
    assert!(status.success(), "building {SOURCE} failed");
}
