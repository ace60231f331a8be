//! Whether a program is dynamically linked (LD_PRELOAD needs it): its ELF program
//! headers, or a `#!` script's interpreter.

/// Whether the program at `path` (an ELF, or a `#!` script's interpreter) is
/// dynamically linked, which LD_PRELOAD needs: Err says why not, or why it is not
/// known.
pub fn dynamic(path: &std::path::Path) -> Result<(), String> {
    let shown = || path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", shown()))?;
    // The ELF header and program headers, or a #! line, are in the first 4 KiB of
    // any program a linker made; a longer one is read up to 64 KiB.
    let mut head = vec![0u8; 4096];
    let n = read_up_to(&f, &mut head, 0);
    head.truncate(n);
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let interp = String::from_utf8_lossy(line);
        let Some(interp) = interp.split_whitespace().next() else {
            return Err(format!("{} has no interpreter", shown()));
        };
        return dynamic(std::path::Path::new(interp));
    }
    if head.len() < 64 || head[..4] != *b"\x7fELF" || head[4] != 2 {
        return Err(format!("{} is not a 64-bit ELF program", shown()));
    }
    let u16_at = |h: &[u8], o: usize| u16::from_le_bytes([h[o], h[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(head[0x20..0x28].try_into().unwrap_or([0; 8])) as usize;
    let (size, count) = (u16_at(&head, 0x36), u16_at(&head, 0x38));
    let end = phoff.saturating_add(size.saturating_mul(count)).min(65536);
    if end > head.len() {
        head.resize(end, 0);
        let n = read_up_to(&f, &mut head, 0);
        head.truncate(n);
    }
    const PT_INTERP: u32 = 3;
    let u64_at = |h: &[u8], o: usize| {
        h.get(o..o + 8).map_or(0, |b| {
            u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize
        })
    };
    let interp = (0..count).find_map(|i| {
        let at = phoff + i * size;
        let kind = head.get(at..at + 4)?;
        (u32::from_le_bytes(kind.try_into().ok()?) == PT_INTERP)
            .then(|| (u64_at(&head, at + 8), u64_at(&head, at + 32).min(4096)))
    });
    let Some((offset, len)) = interp else {
        return Err(format!(
            "{} is statically linked: LD_PRELOAD cannot interpose it",
            shown()
        ));
    };
    // The library is built against glibc: a program another loader starts (musl's)
    // could not load it.
    let mut name = vec![0u8; len];
    let n = read_up_to(&f, &mut name, offset as u64);
    let name = String::from_utf8_lossy(&name[..n]);
    let name = name.trim_end_matches('\0');
    if name.contains("/ld-linux") {
        Ok(())
    } else {
        Err(format!(
            "{} is started by {name}, not glibc's loader: ioprobe's library needs glibc",
            shown()
        ))
    }
}

/// Reads into `buf` from `at` until it is full or the file ends: the bytes read.
fn read_up_to(f: &std::fs::File, buf: &mut [u8], at: u64) -> usize {
    use std::os::unix::fs::FileExt;
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], at + n as u64) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_program_and_a_script_are_told_from_a_static_one() {
        assert_eq!(dynamic(std::path::Path::new("/bin/sh")), Ok(()));
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
        assert_eq!(dynamic(&script), Ok(()));
        let text = dir.path().join("t");
        std::fs::write(&text, "hello").unwrap();
        assert!(dynamic(&text).is_err());
    }
}
