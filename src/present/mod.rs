//! Presentation primitives shared by the probes (which describe their own tables, plots
//! and advice) and the report (which renders them): a neutral table ([`Grid`]), plot
//! primitives, and the name ↔ value trait behind every list of names on the command
//! line, in `--help` and in JSON. Nothing here names a probe.

pub mod grid;
pub mod names;
pub mod plot;

pub use grid::Grid;
pub use names::Named;
pub use plot::Plot;
