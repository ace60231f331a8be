//! A syscalls case's timed loop: the calls of one case, every result checked, on the
//! scratch file, its mapping or the round trip's pipes.

use super::switch;
use super::Case;
use crate::harness::Workload;
use crate::sys::calls::{self, short};
use crate::sys::mapping::Mapping;
use crate::sys::vector::{self, VectorState};
use anyhow::Result;
use rustix::fd::OwnedFd;
use std::ffi::CStr;
use std::hint::black_box;

pub(super) struct CaseRun<'a> {
    pub(super) case: Case,
    pub(super) path: &'a CStr,
    /// The file's directory (O_PATH) and its name there, for `stat_name`.
    pub(super) dir: &'a OwnedFd,
    pub(super) name: &'a CStr,
    pub(super) fd: &'a OwnedFd,
    pub(super) buf: Vec<u8>,
    pub(super) map: Option<Mapping>,
    /// The round-trip cases' pipes (and partner).
    pub(super) round: Option<switch::RoundTrip>,
    /// Loops seen to run clean and dirty (the CPU's word, after each).
    pub(super) states: [u64; 2],
}

impl CaseRun<'_> {
    #[inline]
    fn check_len(call: &'static str, n: usize, want: usize) -> Result<()> {
        if n == want {
            Ok(())
        } else {
            Err(short(call, n, want))
        }
    }
}

impl Workload for CaseRun<'_> {
    fn run(&mut self, iters: u64) -> Result<()> {
        let want = if self.case == Case::NullVectorDirty {
            VectorState::Dirty
        } else {
            VectorState::Clean
        };
        vector::set(want);
        let r = self.calls(iters);
        match vector::observe() {
            Some(VectorState::Clean) => self.states[0] += 1,
            Some(VectorState::Dirty) => self.states[1] += 1,
            None => {}
        }
        vector::set(VectorState::Clean);
        r
    }

    /// The switch round trip's partner, woken on this CPU, often preempts this thread
    /// (43% of its switches here): this thread then waits, runnable, while the partner
    /// runs, and that wait is the switch's cost, not another program's. Left out as
    /// the other cases leave their waits out, it priced a switch at 1.03 µs here
    /// against 1.55 µs for the same round trip timed by the wall clock in C.
    fn keeps_cpu_waits(&self) -> bool {
        self.case == Case::SwitchRoundTrip
    }
}

impl CaseRun<'_> {
    /// `iters` operations of the case.
    fn calls(&mut self, iters: u64) -> Result<()> {
        match self.case {
            Case::Null | Case::NullVectorDirty => {
                for _ in 0..iters {
                    black_box(calls::getppid());
                }
                Ok(())
            }
            Case::OpenClose
            | Case::OpenWriteClose
            | Case::OpenReadClose
            | Case::Stat
            | Case::StatName => self.by_path(iters),
            Case::MmapStore | Case::MmapLoad => self.mapped(iters),
            Case::PipeRoundTrip | Case::SwitchRoundTrip => self
                .round
                .as_mut()
                .ok_or_else(|| anyhow::anyhow!("round trip: no pipes"))?
                .run(iters),
            _ => self.on_descriptor(iters),
        }
    }

    /// The state the loops ran in, as the CPU reported it.
    pub(super) fn vector_state(&self) -> Option<String> {
        match self.states {
            [0, 0] => None,
            [_, 0] => Some("clean".into()),
            [0, _] => Some("dirty".into()),
            _ => Some("mixed".into()),
        }
    }

    /// The cases that name the file by its path each time.
    fn by_path(&mut self, iters: u64) -> Result<()> {
        let io = self.buf.len();
        let path = self.path;
        match self.case {
            Case::OpenClose => {
                for _ in 0..iters {
                    let fd = calls::open_rdwr(path)?;
                    calls::close(black_box(fd))?;
                }
            }
            Case::OpenWriteClose => {
                for _ in 0..iters {
                    let fd = calls::open_rdwr(path)?;
                    let n = calls::write(&fd, &self.buf)?;
                    Self::check_len("write", n, io)?;
                    calls::close(fd)?;
                }
            }
            Case::OpenReadClose => {
                for _ in 0..iters {
                    let fd = calls::open_rdwr(path)?;
                    let n = calls::read(&fd, &mut self.buf)?;
                    Self::check_len("read", n, io)?;
                    black_box(&mut self.buf);
                    calls::close(fd)?;
                }
            }
            Case::Stat => {
                for _ in 0..iters {
                    black_box(calls::stat_size(path)?);
                }
            }
            Case::StatName => {
                for _ in 0..iters {
                    black_box(calls::stat_at_size(self.dir, self.name)?);
                }
            }
            _ => anyhow::bail!("syscalls: not a path case"),
        }
        Ok(())
    }

    /// The cases on the open descriptor.
    fn on_descriptor(&mut self, iters: u64) -> Result<()> {
        let io = self.buf.len();
        match self.case {
            Case::Lseek => {
                for _ in 0..iters {
                    let off = calls::lseek_set(self.fd, 0)?;
                    Self::check_len("lseek", off as usize, 0)?;
                }
            }
            Case::LseekWrite => {
                for _ in 0..iters {
                    let off = calls::lseek_set(self.fd, 0)?;
                    Self::check_len("lseek", off as usize, 0)?;
                    let n = calls::write(self.fd, &self.buf)?;
                    Self::check_len("write", n, io)?;
                }
            }
            Case::LseekRead => {
                for _ in 0..iters {
                    let off = calls::lseek_set(self.fd, 0)?;
                    Self::check_len("lseek", off as usize, 0)?;
                    let n = calls::read(self.fd, &mut self.buf)?;
                    Self::check_len("read", n, io)?;
                    black_box(&mut self.buf);
                }
            }
            Case::Pwrite => {
                for _ in 0..iters {
                    let n = calls::pwrite(self.fd, &self.buf, 0)?;
                    Self::check_len("pwrite", n, io)?;
                }
            }
            Case::Pread => {
                for _ in 0..iters {
                    let n = calls::pread(self.fd, &mut self.buf, 0)?;
                    Self::check_len("pread", n, io)?;
                    black_box(&mut self.buf);
                }
            }
            Case::Fstat => {
                for _ in 0..iters {
                    black_box(calls::fstat_size(self.fd)?);
                }
            }
            _ => anyhow::bail!("syscalls: not a descriptor case"),
        }
        Ok(())
    }

    /// The cases on the mapping.
    fn mapped(&mut self, iters: u64) -> Result<()> {
        let io = self.buf.len();
        match self.case {
            Case::MmapStore => {
                let map = self
                    .map
                    .as_mut()
                    .ok_or_else(|| anyhow::anyhow!("mmap_store: no mapping"))?;
                map.store_loop(io, iters);
            }
            Case::MmapLoad => {
                let map = self
                    .map
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("mmap_load: no mapping"))?;
                black_box(map.load_loop(io, iters));
            }
            _ => anyhow::bail!("syscalls: not a mapping case"),
        }
        Ok(())
    }
}
