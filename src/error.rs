//! Error kinds that decide the exit status: usage (2), regression (3), interrupted (130),
//! anything else (1).

use thiserror::Error;

/// Bad input from the user: a flag value, a directory, a size that cannot work.
/// `main` maps it to exit status 2.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The run was stopped by SIGINT, SIGTERM or SIGHUP; once it is cleaned up `main` ends
/// the process by that signal (`interrupt::end_by_signal`), else with status 130.
#[derive(Debug, Error)]
#[error("interrupted")]
pub struct Interrupted;

/// A status to exit with, and the one line to print first (None: nothing, the status
/// says it all, as when `trace` passes on the traced command's status).
#[derive(Debug, Error)]
#[error("{}", message.as_deref().unwrap_or("exit status {code}"))]
pub struct Exit {
    pub code: i32,
    pub message: Option<String>,
    /// The signal that ended a traced command: once cleaned up, ioprobe ends itself by
    /// it (`code` is 128+N where it cannot).
    pub signal: Option<i32>,
}

impl Exit {
    /// Ok for status 0, else a silent exit with `code` (a passed-on status).
    pub fn status(code: i32) -> anyhow::Result<()> {
        match code {
            0 => Ok(()),
            code => Err(Exit {
                code,
                message: None,
                signal: None,
            }
            .into()),
        }
    }

    /// A silent exit by signal `sig` (128+`sig` where it cannot be raised): a traced
    /// command's end passed on.
    pub fn signalled(sig: i32) -> anyhow::Error {
        Exit {
            code: 128 + sig,
            message: None,
            signal: Some(sig),
        }
        .into()
    }

    pub fn with(code: i32, message: impl Into<String>) -> Exit {
        Exit {
            code,
            message: Some(message.into()),
            signal: None,
        }
    }
}

/// Shorthand for returning a usage error.
pub fn usage<T>(msg: impl Into<String>) -> anyhow::Result<T> {
    Err(UsageError(msg.into()).into())
}

/// Exit status for an error chain: 2 for usage errors, 3 for a regression found by
/// `compare --fail-if-slower`, 130 for interruption, 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if let Some(e) = err.chain().find_map(|e| e.downcast_ref::<Exit>()) {
        e.code
    } else if err.chain().any(|e| e.is::<UsageError>()) {
        2
    } else if err.chain().any(|e| e.is::<Regression>()) {
        3
    } else if err.chain().any(|e| e.is::<Interrupted>()) {
        130
    } else {
        1
    }
}

/// `compare --fail-if-slower` found measurements slower than allowed; exit status 3, so
/// CI scripts can tell a regression from a failure to compare.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct Regression(pub String);

/// An io::Error as a short phrase, without the "(os error N)" suffix, for one-line
/// messages.
pub fn plain(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
