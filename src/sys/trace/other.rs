//! `ioprobe trace` needs Linux (ptrace with seccomp, eBPF, the preload library); on
//! another OS each tracer exists and says so.

use super::{Ended, Event};
use std::io;

/// Why tracing is not available on this OS.
const WHY: &str =
    "ioprobe trace needs Linux (ptrace with a seccomp filter and PTRACE_GET_SYSCALL_INFO)";

/// Nothing to say here: tracing is Linux-only.
pub fn stdio_closed_at_start() -> Vec<i32> {
    Vec::new()
}

/// The eBPF tracer: Linux-only.
pub mod bpf {
    use super::{Ended, Event, WHY};
    use std::io;

    /// Never made: [`Loaded::load`] says tracing is Linux-only.
    pub struct Loaded(());

    /// Tracing is Linux-only.
    pub fn cost(_calls: u64) -> io::Result<crate::sys::trace::Calibration> {
        Err(io::Error::new(io::ErrorKind::Unsupported, WHY))
    }

    /// What the programs would watch.
    #[derive(Debug, Clone, Copy)]
    pub enum Scope<'a> {
        Command,
        Pids(&'a [i32]),
        Cgroup(&'a std::path::Path),
    }

    impl Loaded {
        pub fn load(_scope: Scope) -> io::Result<Loaded> {
            Err(io::Error::new(io::ErrorKind::Unsupported, WHY))
        }
        pub fn attach(
            self,
            _targets: &[super::attach::Target],
            _cgroup: Option<&std::path::Path>,
        ) -> io::Result<Ebpf> {
            Err(io::Error::new(io::ErrorKind::Unsupported, WHY))
        }
        pub fn spawn(self, _argv: &[std::ffi::OsString], _close: &[i32]) -> io::Result<Ebpf> {
            Err(io::Error::new(io::ErrorKind::Unsupported, WHY))
        }
        pub fn release(self, _gated: Gated) -> io::Result<Ebpf> {
            Err(io::Error::new(io::ErrorKind::Unsupported, WHY))
        }
    }

    /// Never made: no command is started.
    pub struct Gated(());

    impl Gated {
        pub fn fork(_argv: &[std::ffi::OsString], _close: &[i32]) -> io::Result<Gated> {
            Err(io::Error::new(io::ErrorKind::Unsupported, WHY))
        }
    }

    /// Never made.
    pub struct Ebpf(());

    /// As Linux's tracer, which detaches its programs when dropped.
    impl Drop for Ebpf {
        fn drop(&mut self) {}
    }

    impl Ebpf {
        pub fn pid(&self) -> i32 {
            0
        }
        pub fn ended(&self) -> Option<Ended> {
            None
        }
        pub fn lost(&self) -> u64 {
            0
        }
        pub fn next_event(&mut self) -> io::Result<Option<Event>> {
            Ok(None)
        }
    }
}

/// The preload tracer: Linux-only.
pub mod preload {
    use super::WHY;
    use std::io;

    /// Never made: [`Preload::new`] says tracing is Linux-only.
    pub struct Preload(());

    impl Preload {
        pub fn new() -> io::Result<Preload> {
            Err(io::Error::new(io::ErrorKind::Unsupported, WHY))
        }
    }

    pub fn dynamic(_path: &std::path::Path) -> Result<(), String> {
        Err(WHY.into())
    }
}

/// Never made: [`Ptrace::spawn`] says tracing is Linux-only.
pub struct Ptrace(());

impl Ptrace {
    pub fn attach(_targets: &[attach::Target]) -> io::Result<Ptrace> {
        Err(io::Error::new(io::ErrorKind::Unsupported, WHY))
    }
    pub fn entries(&self) -> u64 {
        0
    }
    pub fn spawn(
        _argv: &[std::ffi::OsString],
        _close: &[i32],
        _preload: Option<preload::Preload>,
        _gate: &mut dyn FnMut() -> bool,
    ) -> io::Result<Ptrace> {
        Err(io::Error::new(io::ErrorKind::Unsupported, WHY))
    }
    pub fn first_exec(&mut self) -> Event {
        Event::Exit { tid: 0 }
    }
    pub fn stopped_calls(&self) -> u64 {
        0
    }
    pub fn unstopped_calls(&self) -> u64 {
        0
    }
    pub fn plain_starts(&self) -> u64 {
        0
    }
    pub fn lost(&self) -> u64 {
        0
    }
    pub fn pid(&self) -> i32 {
        0
    }
    pub fn ended(&self) -> Option<Ended> {
        None
    }
    pub fn next_event(&mut self) -> io::Result<Option<Event>> {
        Ok(None)
    }
}

/// Attaching to running processes: Linux-only.
pub mod attach {
    use super::WHY;

    pub use super::super::record::{Target, Tracer, WindowEnd};

    pub fn check(_given: i32, _way: Tracer) -> Result<Target, String> {
        Err(WHY.into())
    }
    pub fn cgroup_dir(_path: &std::path::Path) -> Result<std::path::PathBuf, String> {
        Err(WHY.into())
    }
    pub fn cgroup_processes(_dir: &std::path::Path) -> Vec<i32> {
        Vec::new()
    }
    pub fn ending() -> Option<WindowEnd> {
        None
    }
    /// Never made.
    pub struct Clock(());

    impl Clock {
        pub fn start(_duration: Option<std::time::Duration>) -> std::io::Result<Clock> {
            Err(std::io::Error::new(std::io::ErrorKind::Unsupported, WHY))
        }
    }

    impl Drop for Clock {
        fn drop(&mut self) {}
    }
}
