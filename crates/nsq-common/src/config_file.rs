//! Reading the `--config` TOML file, the part nsqd and nsqlookupd do alike: open the file (a
//! failure reads `open <path>: <reason>`, Go's `*PathError` text) and parse it as TOML (a
//! syntax error reads `toml: line N: <message>`). What the keys mean, and how a daemon words a
//! bad value, stays in each daemon's options module.

use std::io;

/// Why the config file could not be loaded. The text is what follows `failed to load config
/// file <path> - ` in the daemons' fatal message.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error("open {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: io::Error,
    },
    /// Not TOML. `line` is 1-based, when the parser knows where it failed.
    #[error("toml: {}{message}", line.map_or_else(String::new, |l| format!("line {l}: ")))]
    Syntax {
        line: Option<usize>,
        message: String,
    },
}

/// The text of the file at `path`.
pub fn read(path: &str) -> Result<String, ConfigFileError> {
    std::fs::read_to_string(path).map_err(|source| ConfigFileError::Open {
        path: path.to_string(),
        source,
    })
}

/// `text` parsed as a TOML table.
pub fn parse(text: &str) -> Result<toml::Table, ConfigFileError> {
    toml::from_str(text).map_err(|e| ConfigFileError::Syntax {
        line: e.span().map(|span| {
            1 + text
                .get(..span.start)
                .map_or(0, |before| before.matches('\n').count())
        }),
        message: e.message().trim().to_string(),
    })
}

/// Reads and parses the file at `path`.
pub fn load(path: &str) -> Result<toml::Table, ConfigFileError> {
    parse(&read(path)?)
}

/// What `table` gives to the options a daemon reads from its config file: for each `(key,
/// flag)` of `keys`, in order, the key's value, unless the file lacks the key or the flag was
/// given on the command line (`given`: a flag beats the file).
pub fn applicable<'t, 'k>(
    table: &'t toml::Table,
    keys: impl IntoIterator<Item = (&'k str, &'k str)> + 'k,
    given: &'k [&str],
) -> impl Iterator<Item = (&'k str, &'k str, &'t toml::Value)> + 'k
where
    't: 'k,
{
    keys.into_iter()
        .filter(move |(_, flag)| !given.contains(flag))
        .filter_map(move |(key, flag)| table.get(key).map(|v| (key, flag, v)))
}

/// The keys of a config file that the daemon does not read (a misspelt option, say). Like nsqd
/// and nsqlookupd, the daemons ignore them; they name them in a warning at start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config file {path}: ignoring unknown keys: {}", keys.join(", "))]
pub struct UnknownKeys {
    pub path: String,
    pub keys: Vec<String>,
}

impl UnknownKeys {
    /// The keys of `table` (read from `path`) for which `known` is false; None if there are none.
    pub fn find(path: &str, table: &toml::Table, known: impl Fn(&str) -> bool) -> Option<Self> {
        let keys: Vec<String> = table.keys().filter(|k| !known(k)).cloned().collect();
        (!keys.is_empty()).then(|| UnknownKeys {
            path: path.to_string(),
            keys,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_tables() {
        let t = parse("a = 1\nb = \"x\"\n").unwrap();
        assert_eq!(t.get("a").and_then(toml::Value::as_integer), Some(1));
        assert_eq!(t.get("b").and_then(toml::Value::as_str), Some("x"));
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = parse("a = 1\nb = = 2\n").unwrap_err();
        assert!(
            matches!(&e, ConfigFileError::Syntax { line: Some(2), .. }),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("toml: line 2: "), "{e}");
        let e = ConfigFileError::Syntax {
            line: None,
            message: "bad".into(),
        };
        assert_eq!(e.to_string(), "toml: bad");
    }

    #[test]
    fn applicable_skips_given_flags_and_missing_keys() {
        let t = parse("a_b = 1\nc_d = 2\nzz = 3\n").unwrap();
        let keys = [("a_b", "a-b"), ("c_d", "c-d"), ("e_f", "e-f")];
        let got: Vec<_> = applicable(&t, keys, &["c-d"]).collect();
        assert_eq!(got, [("a_b", "a-b", &toml::Value::Integer(1))]);
        let unknown = UnknownKeys::find("f.toml", &t, |k| keys.iter().any(|(key, _)| *key == k));
        assert_eq!(
            unknown.map(|u| u.to_string()).as_deref(),
            Some("config file f.toml: ignoring unknown keys: zz")
        );
        assert_eq!(UnknownKeys::find("f.toml", &t, |_| true), None);
    }

    #[test]
    fn open_errors_name_the_path() {
        let e = read("/nonexistent/nsqd.toml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("open /nonexistent/nsqd.toml: No such file"),
            "{e}"
        );
    }
}
