//! Advice, the product: what a programmer should do here, with its evidence and
//! confidence. Split as criterion splits its analysis:
//! - [`model`]: what advice says, as JSON carries it;
//! - [`decide`]: the statistics that choose (ties, margins, confidence);
//! - [`pool`]: the samples of a machine's saved runs pooled, recent runs weighing more;
//! - [`sizes`]: a size sweep's knee and plateau.
//!
//! Probes decide their own topics with [`decide`]'s helpers; nothing here names a probe
//! or imports anything above `results`. Gathering the probes' advice is
//! `probes::advice`, `advise`'s choice of saved runs `commands/advise.rs`, and drawing
//! it `report::advice`.

pub mod confidence;
pub mod decide;
pub mod methods;
pub mod model;
pub mod pool;
pub mod sizes;
#[cfg(test)]
pub(crate) mod testing;

pub use confidence::*;
pub use decide::*;
pub use methods::methods;
pub use model::*;
pub use sizes::{PLATEAU, knee_and_plateau, sizes, tolerance};
