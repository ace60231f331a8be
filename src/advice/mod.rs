//! Advice, the product: what a programmer should do here, with its evidence and
//! confidence. Split as criterion splits its analysis:
//! - [`model`]: what advice says, as JSON carries it;
//! - [`decide`]: the statistics that choose (ties, margins, confidence);
//! - [`collect`]: gathering each probe's recommendations from a run or the store;
//! - [`pool`]: the samples of a machine's saved runs pooled, recent runs weighing more;
//! - [`render`]: the summary table, the details, and every output format.
//!
//! Probes decide their own topics with [`decide`]'s helpers; nothing here names a probe.

pub mod collect;
pub mod decide;
pub mod model;
pub mod pool;
pub mod render;
pub mod sizes;

pub use collect::*;
pub use decide::*;
pub use model::*;
pub use render::*;
pub use sizes::{PLATEAU, Plateau, knee_and_plateau, sizes};
