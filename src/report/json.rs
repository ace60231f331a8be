//! JSON (`--json`): the run document (schema version 1) plus the advice lines.

use crate::results::Run;
use anyhow::Result;
use serde_json::Value;

/// The run and its advice as pretty-printed JSON.
pub fn render_run(run: &Run, advice: &[String]) -> Result<String> {
    let mut v = serde_json::to_value(run)?;
    if let Value::Object(map) = &mut v {
        map.insert("advice".into(), serde_json::json!(advice));
    }
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// Machine facts alone as JSON.
pub fn render_environment(env: &crate::sys::machine::Environment) -> Result<String> {
    Ok(serde_json::to_string_pretty(env)? + "\n")
}
