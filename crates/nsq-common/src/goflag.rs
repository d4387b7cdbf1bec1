//! Go's `flag` package rules, for both daemons: nsqd and nsqlookupd are driven by scripts and
//! service files written for Go's flag syntax, which clap cannot express.
//!
//! `-flag value`, `--flag value`, `-flag=value` and `--flag=value` all work; a bool flag takes
//! a value only after `=` (a bare `--snappy` never eats the next argument); parsing stops at
//! the first non-flag argument or at `--`; error texts are Go's. [`Flags`] walks the arguments
//! and yields each occurrence in order, so that a daemon converting values one by one reports
//! the first error as Go does; what the values mean stays in the daemon. [`usage`] prints
//! Go's `PrintDefaults` layout.

/// What Go's flag package rejects before looking at a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// `-h`, `-help` (Go prints the usage and exits 0).
    #[error("flag: help requested")]
    Help,
    /// A flag the program does not define.
    #[error("flag provided but not defined: -{0}")]
    Unknown(String),
    /// `---x`, `-=x`.
    #[error("bad flag syntax: {0}")]
    BadSyntax(String),
    /// A non-bool flag last on the command line.
    #[error("flag needs an argument: -{0}")]
    MissingArgument(String),
}

/// A command-line error as Go's flag package reports it: the syntax, an unknown flag, or a
/// value the flag cannot take. Go prints the message (none for `-h`) and the usage text, and
/// exits 0 for `-h`, 2 otherwise ([`FlagError::print`], [`FlagError::exit_code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error(transparent)]
    Syntax(#[from] SyntaxError),
    /// A value a non-bool flag cannot take; `reason` is the program's.
    #[error("invalid value {value:?} for flag -{flag}: {reason}")]
    InvalidValue {
        flag: String,
        value: String,
        reason: String,
    },
    /// A value a bool flag cannot take.
    #[error("invalid boolean value {value:?} for -{flag}: {reason}")]
    InvalidBool {
        flag: String,
        value: String,
        reason: String,
    },
}

impl FlagError {
    /// An unknown flag.
    pub fn unknown(name: String) -> FlagError {
        FlagError::Syntax(SyntaxError::Unknown(name))
    }

    /// A refused value of flag `flag` (a bool-style one if `bool_style`).
    pub fn bad_value(bool_style: bool, flag: &str, value: &str, reason: String) -> FlagError {
        let (flag, value) = (flag.to_string(), value.to_string());
        if bool_style {
            FlagError::InvalidBool {
                flag,
                value,
                reason,
            }
        } else {
            FlagError::InvalidValue {
                flag,
                value,
                reason,
            }
        }
    }

    /// `-h` / `-help`.
    pub fn is_help(&self) -> bool {
        *self == FlagError::Syntax(SyntaxError::Help)
    }

    /// Go's exit status: 0 after `-h`, 2 otherwise.
    pub fn exit_code(&self) -> u8 {
        if self.is_help() {
            0
        } else {
            2
        }
    }

    /// Write the error to stderr as Go does, the message (none for `-h`) then `usage`, and
    /// then [`FlagError::reminder`], so that the error is still on screen after a long usage
    /// text.
    pub fn print(&self, usage: &str, program: &str) {
        if !self.is_help() {
            eprintln!("{self}");
        }
        eprint!("{usage}");
        if let Some(reminder) = self.reminder(program) {
            eprintln!("{reminder}");
        }
    }

    /// The last line printed after the usage text (none for `-h`): the error again, naming
    /// `program` as it was invoked, and where the flags are listed.
    pub fn reminder(&self, program: &str) -> Option<String> {
        (!self.is_help()).then(|| format!("{program}: {self} (see '{program} --help')"))
    }
}

/// The name a program was invoked by (its `argv[0]`), or `fallback` without one.
pub fn invoked_as(fallback: &str) -> String {
    std::env::args_os().next().map_or_else(
        || fallback.to_string(),
        |a| a.to_string_lossy().into_owned(),
    )
}

/// One flag occurrence: its name (as defined) and its value text (`"true"` for a bare bool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    pub name: String,
    pub value: String,
}

/// The flag occurrences of `args` (without the program name), in order. `kind(name)` says
/// whether a name is defined and whether it is bool-style (`Some(true)`).
pub struct Flags<I, K> {
    args: I,
    kind: K,
    done: bool,
}

impl<I, K> Flags<I, K>
where
    I: Iterator<Item = String>,
    K: Fn(&str) -> Option<bool>,
{
    pub fn new(args: impl IntoIterator<IntoIter = I>, kind: K) -> Flags<I, K> {
        Flags {
            args: args.into_iter(),
            kind,
            done: false,
        }
    }

    fn next_flag(&mut self) -> Option<Result<Occurrence, SyntaxError>> {
        let arg = self.args.next()?;
        if arg.len() < 2 || !arg.starts_with('-') {
            return None; // the first non-flag argument: the rest is positional
        }
        let name = match arg[1..].strip_prefix('-') {
            Some("") => return None, // "--" ends the flags
            Some(rest) => rest,
            None => &arg[1..],
        };
        if name.is_empty() || name.starts_with(['-', '=']) {
            return Some(Err(SyntaxError::BadSyntax(arg.clone())));
        }
        let (name, inline) = match name.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (name, None),
        };
        let Some(is_bool) = (self.kind)(name) else {
            return Some(Err(if name == "help" || name == "h" {
                SyntaxError::Help
            } else {
                SyntaxError::Unknown(name.to_string())
            }));
        };
        let value = match (inline, is_bool) {
            (Some(v), _) => v.to_string(),
            (None, true) => "true".to_string(),
            (None, false) => match self.args.next() {
                Some(v) => v,
                None => return Some(Err(SyntaxError::MissingArgument(name.to_string()))),
            },
        };
        Some(Ok(Occurrence {
            name: name.to_string(),
            value,
        }))
    }
}

impl<I, K> Iterator for Flags<I, K>
where
    I: Iterator<Item = String>,
    K: Fn(&str) -> Option<bool>,
{
    type Item = Result<Occurrence, SyntaxError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_flag();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

/// Go's `strconv.ParseBool`.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// One flag in the usage text.
pub struct UsageLine<'a> {
    pub name: &'a str,
    /// Go's type word (`string`, `duration`, `int`, `value`), "" for a bool.
    pub type_word: &'a str,
    pub help: &'a str,
    /// The default as Go shows it; None for a zero value (which Go omits).
    pub default: Option<String>,
}

/// Go's `PrintDefaults` layout: `Usage of <program>:`, then per flag (in the order given) the
/// name and type word, the help on the next line, and the default when there is one.
pub fn usage<'a>(program: &str, lines: impl IntoIterator<Item = UsageLine<'a>>) -> String {
    let mut out = format!("Usage of {program}:\n");
    for l in lines {
        out.push_str("  -");
        out.push_str(l.name);
        if !l.type_word.is_empty() {
            out.push(' ');
            out.push_str(l.type_word);
        }
        out.push_str("\n    \t");
        out.push_str(l.help);
        if let Some(d) = l.default {
            out.push_str(" (default ");
            out.push_str(&d);
            out.push(')');
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn kind(name: &str) -> Option<bool> {
        match name {
            "snappy" => Some(true),
            "data-path" | "size" => Some(false),
            _ => None,
        }
    }

    fn walk(args: &[&str]) -> Vec<Result<(String, String), SyntaxError>> {
        Flags::new(args.iter().map(|s| s.to_string()), kind)
            .map(|r| r.map(|o| (o.name, o.value)))
            .collect()
    }

    fn ok(pairs: &[(&str, &str)]) -> Vec<Result<(String, String), SyntaxError>> {
        pairs
            .iter()
            .map(|(n, v)| Ok((n.to_string(), v.to_string())))
            .collect()
    }

    #[test]
    fn the_four_syntaxes_and_bools() {
        for args in [
            &["-size", "1"][..],
            &["-size=1"],
            &["--size=1"],
            &["--size", "1"],
        ] {
            assert_eq!(walk(args), ok(&[("size", "1")]), "{args:?}");
        }
        assert_eq!(
            walk(&["--snappy", "--size", "-5", "--snappy=false"]),
            ok(&[("snappy", "true"), ("size", "-5"), ("snappy", "false")])
        );
        // A bare bool does not take the next argument: it is positional and ends the flags.
        assert_eq!(
            walk(&["--snappy", "false", "--size=1"]),
            ok(&[("snappy", "true")])
        );
    }

    #[test]
    fn stops_and_errors_come_in_order() {
        assert_eq!(walk(&["x", "--size=1"]), ok(&[]));
        assert_eq!(walk(&["-", "--size=1"]), ok(&[]));
        assert_eq!(walk(&["--size=1", "--", "--nope"]), ok(&[("size", "1")]));
        assert_eq!(
            walk(&["--size=1", "--nope", "-h"]),
            vec![
                Ok(("size".into(), "1".into())),
                Err(SyntaxError::Unknown("nope".into()))
            ]
        );
        assert_eq!(walk(&["--help"]), vec![Err(SyntaxError::Help)]);
        assert_eq!(
            walk(&["---x"]),
            vec![Err(SyntaxError::BadSyntax("---x".into()))]
        );
        assert_eq!(
            walk(&["-=x"]),
            vec![Err(SyntaxError::BadSyntax("-=x".into()))]
        );
        assert_eq!(
            walk(&["--data-path"]),
            vec![Err(SyntaxError::MissingArgument("data-path".into()))]
        );
        assert_eq!(
            SyntaxError::MissingArgument("data-path".into()).to_string(),
            "flag needs an argument: -data-path"
        );
    }

    #[test]
    fn the_reminder_repeats_the_error_with_the_program_name() {
        let e = FlagError::unknown("no-such-flag".into());
        assert_eq!(
            e.reminder("./nsqrd").as_deref(),
            Some("./nsqrd: flag provided but not defined: -no-such-flag (see './nsqrd --help')")
        );
        assert_eq!(FlagError::Syntax(SyntaxError::Help).reminder("x"), None);
    }

    #[test]
    fn bools_and_usage() {
        assert_eq!(parse_bool("T"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("yes"), None);
        let u = usage(
            "x",
            [
                UsageLine {
                    name: "a",
                    type_word: "string",
                    help: "an a",
                    default: Some("\"b\"".into()),
                },
                UsageLine {
                    name: "v",
                    type_word: "",
                    help: "verbose",
                    default: None,
                },
            ],
        );
        assert_eq!(
            u,
            "Usage of x:\n  -a string\n    \tan a (default \"b\")\n  -v\n    \tverbose\n"
        );
    }
}
