//! Tool names: 1 to 128 characters, each an ASCII letter, a digit, `_`, `.` or `-`.

use std::fmt;

/// The longest tool name, in characters.
pub const MAX_NAME_CHARS: usize = 128;

/// The rule in words, for a help line.
pub const NAME_RULE: &str =
    "a tool name has 1 to 128 characters from A-Z, a-z, 0-9, `_`, `.` and `-`";

/// Why a tool name is invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    Empty,
    /// The name has more than [`MAX_NAME_CHARS`] characters (this many).
    TooLong(usize),
    /// The name holds a character outside the allowed set, at this byte offset.
    Character {
        /// The byte offset of the character.
        at: usize,
        /// The character.
        found: char,
    },
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => f.write_str("a tool name cannot be empty"),
            NameError::TooLong(n) => write!(
                f,
                "a tool name has at most {MAX_NAME_CHARS} characters, and this one has {n}"
            ),
            NameError::Character { found, .. } => write!(
                f,
                "a tool name holds only A-Z, a-z, 0-9, `_`, `.` and `-`, not {found:?}"
            ),
        }
    }
}

impl std::error::Error for NameError {}

/// Checks a tool name: the first character outside the set, else the length.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some((at, found)) = name
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(NameError::Character { at, found });
    }
    // Every character is ASCII here, so bytes count characters.
    if name.len() > MAX_NAME_CHARS {
        return Err(NameError::TooLong(name.len()));
    }
    Ok(())
}

/// Whether `name` is a valid tool name.
pub fn is_valid_name(name: &str) -> bool {
    check_name(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_bounds() {
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert_eq!(check_name("a"), Ok(()));
        assert_eq!(check_name(&"a".repeat(128)), Ok(()));
        assert_eq!(check_name(&"a".repeat(129)), Err(NameError::TooLong(129)));
    }

    #[test]
    fn characters() {
        assert!(is_valid_name("AZaz09_.-"));
        for (bad, at, found) in [
            ("a b", 1, ' '),
            ("a/b", 1, '/'),
            ("tool:x", 4, ':'),
            ("é", 0, 'é'),
            ("ab\u{0}", 2, '\u{0}'),
        ] {
            assert_eq!(
                check_name(bad),
                Err(NameError::Character { at, found }),
                "{bad:?}"
            );
        }
        // A bad character is reported before the length.
        let long = format!("{} x", "a".repeat(200));
        assert!(matches!(
            check_name(&long),
            Err(NameError::Character { found: ' ', .. })
        ));
    }

    #[test]
    fn messages() {
        assert_eq!(
            NameError::Character { at: 1, found: ' ' }.to_string(),
            "a tool name holds only A-Z, a-z, 0-9, `_`, `.` and `-`, not ' '"
        );
        assert_eq!(
            NameError::TooLong(129).to_string(),
            "a tool name has at most 128 characters, and this one has 129"
        );
    }
}
