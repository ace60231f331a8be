//! Presentation primitives shared by the probes (which describe their own tables, plots
//! and advice) and the report (which renders them): a neutral table ([`Grid`]) and plot
//! primitives. Nothing here names a probe.

pub mod grid;
pub mod plot;
pub mod style;

pub use grid::Grid;
pub use plot::Plot;
pub use style::Style;

/// The distinct values of `items`, in the order they first appear (the series or
/// groups of a probe's rows, say).
pub fn distinct<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Rows paired with their params as the probe's typed struct `P`; rows whose params do
/// not fit it (a document from another version) are left out.
pub fn with_params<'a, P: serde::de::DeserializeOwned>(
    rows: &[&'a crate::results::Measurement],
) -> Vec<(&'a crate::results::Measurement, P)> {
    rows.iter()
        .filter_map(|m| Some((*m, m.params_as::<P>()?)))
        .collect()
}
