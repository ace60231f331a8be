//! `ioprobe compare A B…`: what changed between saved runs.

use crate::error::Regression;
use crate::probes::resolve;
use crate::report;
use crate::results::compare;
use crate::settings::Settings;
use anyhow::Result;

/// `ioprobe compare A B…`: B ÷ A for one B; for several, a matrix of each ÷ A.
/// `--fail-if-slower` looks at every B.
pub fn compare(
    settings: &Settings,
    a: &str,
    bs: &[String],
    fail_if_slower: Option<f64>,
) -> Result<(String, Option<Regression>)> {
    let na = resolve(settings, a)?;
    let mut comparisons = Vec::new();
    for b in bs {
        let nb = resolve(settings, b)?;
        let c = compare::compare(
            &na.label,
            &na.run,
            &nb.label,
            &nb.run,
            crate::probes::observed_params,
        );
        if c.rows.is_empty() {
            anyhow::bail!(
                "{} and {} have no measurement in common",
                na.label,
                nb.label
            );
        }
        comparisons.push(c);
    }
    let text = match comparisons.as_slice() {
        [one] => report::compare::render(one, settings.format, &settings.style)?,
        many => report::compare::render_matrix(many, settings.format, &settings.style)?,
    };
    let regression = fail_if_slower.and_then(|t| {
        let slow: Vec<String> = comparisons
            .iter()
            .flat_map(|c| {
                c.slower_than(t).into_iter().map(|r| {
                    let run = if comparisons.len() > 1 {
                        format!(" in {}", c.b)
                    } else {
                        String::new()
                    };
                    format!("{}/{} (+{:.1}%){run}", r.probe, r.case, r.slowdown * 100.0)
                })
            })
            .collect();
        (!slow.is_empty()).then(|| {
            Regression(format!(
                "{} measurement(s) slower by more than {:.1}%: {}",
                slow.len(),
                t * 100.0,
                slow.join(", ")
            ))
        })
    });
    Ok((text, regression))
}
