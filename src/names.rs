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

/// Declares an enum whose values each have one name, written once: the macro derives
/// [`Named`] (and so `--flag` parsing, `--help`'s possible values and the valid names in
/// errors) and serde's `Serialize`/`Deserialize` from the same table.
///
/// ```ignore
/// named_enum! {
///     /// How a pass reads the file.
///     pub enum Method as "method" {
///         Read = "read",
///         Pread = "pread",
///     }
/// }
/// ```
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident as $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $label:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $crate::names::Named for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];
            const WHAT: &'static str = $what;
            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $label),+
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($crate::names::Named::name(*self))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                const NAMES: &[&str] = &[$($label),+];
                let s = <String as ::serde::Deserialize>::deserialize(d)?;
                <Self as $crate::names::Named>::ALL
                    .iter()
                    .copied()
                    .find(|v| $crate::names::Named::name(*v) == s)
                    .ok_or_else(|| ::serde::de::Error::unknown_variant(&s, NAMES))
            }
        }
    };
}
pub(crate) use named_enum;

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

    named_enum! {
        /// A test enum.
        enum Shape as "shape" {
            /// Round.
            Circle = "circle",
            Square = "square-ish",
        }
    }

    #[test]
    fn one_table_gives_names_and_serde() {
        assert_eq!(Shape::list(), "circle, square-ish");
        assert_eq!(
            serde_json::to_string(&Shape::Square).unwrap(),
            r#""square-ish""#
        );
        assert_eq!(
            serde_json::from_str::<Shape>(r#""circle""#).unwrap(),
            Shape::Circle
        );
        let e = serde_json::from_str::<Shape>(r#""oval""#).unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown variant `oval`, expected `circle` or `square-ish`"),
            "{e}"
        );
        assert_eq!(Shape::parse("circle"), Ok(Shape::Circle));
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
