//! JSON (`--json`): the run document (schema version 1) plus its recommendations and
//! the advice lines.

use crate::advice::Recommendation;
use crate::results::Run;
use anyhow::Result;
use serde_json::Value;

/// The run with its `recommendations` (typed) and `advice` (one line each, then the
/// observations; kept for scripts that read the strings) as pretty-printed JSON.
pub fn render_run(run: &Run, recs: &[Recommendation], observations: &[String]) -> Result<String> {
    let mut v = serde_json::to_value(run)?;
    if let Value::Object(map) = &mut v {
        map.insert("recommendations".into(), serde_json::to_value(recs)?);
        map.insert(
            "advice".into(),
            serde_json::json!(crate::advice::lines(recs, observations)),
        );
    }
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// Machine facts alone as JSON.
pub fn render_environment(env: &crate::sys::machine::Environment) -> Result<String> {
    Ok(serde_json::to_string_pretty(env)? + "\n")
}
