//! One trait for every closed list of names (methods, cases, placements, cache states,
//! durability modes): parsing, the list of valid names in errors, and the possible
//! values clap shows in `--help`, all from the same table.

use clap::builder::{PossibleValue, TypedValueParser};
use std::ffi::OsStr;
use std::marker::PhantomData;

/// A value with a fixed name. Names are a contract (flags, JSON): never rename one.
pub trait Named: Copy + PartialEq + Send + Sync + 'static {
    /// Every value, in table order.
    const ALL: &'static [Self];
    /// What the values are called in messages (`method`, `placement`).
    const WHAT: &'static str;
    /// The value's name.
    fn name(self) -> &'static str;

    /// The value called `s`; the error lists the valid names.
    fn parse(s: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .copied()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown {} '{s}' (valid: {})", Self::WHAT, Self::list()))
    }

    /// "a, b, c".
    fn list() -> String {
        Self::ALL
            .iter()
            .map(|v| v.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A clap value parser for a [`Named`] type: parses with [`Named::parse`] and shows
/// [`Named::ALL`] as the possible values in `--help`.
#[derive(Clone)]
pub struct NameParser<T>(PhantomData<T>);

/// The value parser for `T`.
pub fn parser<T: Named>() -> NameParser<T> {
    NameParser(PhantomData)
}

impl<T: Named> TypedValueParser for NameParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        // The plain function parser gives clap's usual "invalid value 'x' for '--flag'"
        // framing around our message.
        (T::parse as fn(&str) -> Result<T, String>).parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            T::ALL.iter().map(|v| PossibleValue::new(v.name())),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Colour {
        Red,
        Blue,
    }
    impl Named for Colour {
        const ALL: &'static [Self] = &[Colour::Red, Colour::Blue];
        const WHAT: &'static str = "colour";
        fn name(self) -> &'static str {
            match self {
                Colour::Red => "red",
                Colour::Blue => "blue",
            }
        }
    }

    #[test]
    fn names_round_trip_and_errors_list_them() {
        for &c in Colour::ALL {
            assert_eq!(Colour::parse(c.name()), Ok(c));
        }
        assert_eq!(
            Colour::parse("green"),
            Err("unknown colour 'green' (valid: red, blue)".into())
        );
    }
}
