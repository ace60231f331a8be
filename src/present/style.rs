//! How text output is laid out: the width it fits, whether it is coloured and whether
//! every warning gets its own line. Built once from the flags (`Settings::style`) and
//! passed as a value to every renderer; no process globals.

/// The layout of text output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// The width text fits (None: no limit, `--wide`).
    pub width: Option<usize>,
    /// ANSI colour (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`, a terminal).
    pub color: bool,
    /// `-v/--verbose`: every warning on its own line instead of a folded summary.
    pub verbose: bool,
}

/// The width text fits when stdout is not a terminal and nothing else is asked for.
pub const DEFAULT_WIDTH: usize = 100;

impl Default for Style {
    fn default() -> Style {
        Style {
            width: Some(DEFAULT_WIDTH),
            color: false,
            verbose: false,
        }
    }
}

impl Style {
    /// A warning line: yellow when colour is on.
    pub fn warning(&self, line: &str) -> String {
        self.paint("33", line)
    }

    /// A heading: bold when colour is on.
    pub fn heading(&self, line: &str) -> String {
        self.paint("1", line)
    }

    fn paint(&self, sgr: &str, line: &str) -> String {
        if self.color {
            format!("\u{1b}[{sgr}m{line}\u{1b}[0m")
        } else {
            line.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_painted_only_with_colour() {
        let plain = Style::default();
        let color = Style {
            color: true,
            ..plain
        };
        assert_eq!(plain.warning("warning: x"), "warning: x");
        assert_eq!(color.warning("warning: x"), "\u{1b}[33mwarning: x\u{1b}[0m");
        assert_eq!(color.heading("h:"), "\u{1b}[1mh:\u{1b}[0m");
    }
}
