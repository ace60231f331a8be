//! The commands that work on saved runs, one file each. Each returns the text for
//! stdout; finding and saving runs is `session`'s.

pub mod advise;
pub mod compare;
pub mod export;
pub mod history;
pub mod import;
pub mod report;
pub mod show;
