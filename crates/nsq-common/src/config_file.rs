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
    fn open_errors_name_the_path() {
        let e = read("/nonexistent/nsqd.toml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("open /nonexistent/nsqd.toml: No such file"),
            "{e}"
        );
    }
}
