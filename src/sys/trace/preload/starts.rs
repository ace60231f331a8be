//! Which program starts the library is given to. Loading it into a program costs that
//! start about 0.5 ms here (100 runs of /bin/true from one shell: 3.1 ms each with the
//! library, 2.6 ms without it under the same tracer), which its calls through the gate
//! win back at one stop (5-10 µs) saved each: a build that starts the same compiler
//! passes and shells dozens of times, each making a few dozen calls, gains nothing
//! from it. So a program whose ended processes each made fewer than [`WORTH`] calls
//! through the gate starts without the library from then on (its calls stop as under
//! ptrace, and are counted the same). A process's calls are its own task's: its
//! threads' and forked children's are not counted toward it.

use std::collections::HashMap;

/// Calls through the gate that pay for the library's start (about 0.5 ms, at a stop
/// of 5-10 µs saved each).
pub(super) const WORTH: u64 = 100;

/// A program: its file's device and inode.
pub(in crate::sys::trace) type Program = (u64, u64);

#[derive(Default)]
pub(in crate::sys::trace) struct Starts {
    /// Per program, the most calls through the gate an ended process of it made.
    most: HashMap<Program, u64>,
    /// Execs under way, by task: the program, and whether it is given the library.
    starting: HashMap<i32, (Program, bool)>,
    /// Tasks running a program they were given the library for.
    running: HashMap<i32, Program>,
    /// Starts that ran without the library by this rule.
    pub(in crate::sys::trace) plain: u64,
}

impl Starts {
    /// Whether `tid`'s exec of `program` is given the library.
    pub(in crate::sys::trace) fn give(&mut self, tid: i32, program: Program) -> bool {
        let give = self.most.get(&program).is_none_or(|&m| m >= WORTH);
        self.starting.insert(tid, (program, give));
        give
    }

    /// `tid`'s exec went through; `calls`: what its previous program made through the
    /// gate.
    pub(in crate::sys::trace) fn started(&mut self, tid: i32, calls: u64) {
        self.ended(tid, calls);
        match self.starting.remove(&tid) {
            Some((program, true)) => {
                self.running.insert(tid, program);
            }
            Some((_, false)) => self.plain += 1,
            None => {}
        }
    }

    /// `tid` ended (or exec'd another program) after `calls` through the gate.
    pub(in crate::sys::trace) fn ended(&mut self, tid: i32, calls: u64) {
        if let Some(p) = self.running.remove(&tid) {
            let m = self.most.entry(p).or_insert(0);
            *m = (*m).max(calls);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_whose_processes_made_few_calls_starts_without_the_library() {
        let mut s = Starts::default();
        let cc = (1, 10);
        // Unknown: given. Still running: the next start is given too.
        assert!(s.give(100, cc));
        s.started(100, 0);
        assert!(s.give(101, cc));
        s.started(101, 0);
        s.ended(100, 12);
        // One ended after 12 calls: the next start runs without it.
        assert!(!s.give(102, cc));
        s.started(102, 0);
        assert_eq!(s.plain, 1);
        // One that made many keeps the program given.
        s.ended(101, 5000);
        assert!(s.give(103, cc));
        // A failed exec leaves nothing counted; another program is its own.
        assert!(s.give(104, (1, 11)));
    }
}
