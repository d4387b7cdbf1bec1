//! URL path handling as Go's `net/url` and httprouter do it, for both daemons' routers: the
//! router matches the decoded path, redirects go to a cleaned path (`CleanPath`), the
//! `Location` of a redirect is the path re-escaped the way Go's `URL.String()` escapes it, and
//! a GET redirect's HTML body escapes it as Go's `htmlEscape` does.

use super::query::hex;

/// The request path with `%XX` escapes decoded (Go's `URL.Path`). `None` for a bad escape, which
/// Go's server rejects with a bare 400 before any handler runs.
pub fn decode(raw: &str) -> Option<String> {
    if !raw.contains('%') {
        return Some(raw.to_string());
    }
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = hex(*b.get(i + 1)?)?;
            let l = hex(*b.get(i + 2)?)?;
            out.push(h << 4 | l);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `url.PathEscape`-for-paths (`escape(s, encodePath)`): unreserved characters and
/// `$&+,/:;=@` stay, everything else becomes `%XX`.
pub fn escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &c in path.as_bytes() {
        if c.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&c) {
            out.push(char::from(c));
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

/// httprouter's `CleanPath`: the canonical form of a path, removing `.` and `..` elements and
/// repeated slashes, keeping a trailing slash, always starting with `/`.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return "/".to_string();
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out = String::with_capacity(p.len() + 1);
    for s in &parts {
        out.push('/');
        out.push_str(s);
    }
    // A final `/` or `/.` keeps the trailing slash; a final `/..` does not (as in httprouter).
    let trailing = (p.len() > 1 && p.ends_with('/')) || p.ends_with("/.") || p == ".";
    if out.is_empty() || trailing {
        out.push('/');
    }
    out
}

/// Go's `htmlEscape` (for the body of a GET redirect).
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_paths_like_httprouter() {
        for (i, o) in [
            ("", "/"),
            ("/", "/"),
            ("//", "/"),
            ("/pub", "/pub"),
            ("//pub", "/pub"),
            ("/pub/", "/pub/"),
            ("/pub//", "/pub/"),
            ("/a/../pub", "/pub"),
            ("/./pub", "/pub"),
            ("pub", "/pub"),
            ("/a/..", "/"),
            ("/a/b/..", "/a"),
            ("/a/b/.", "/a/b/"),
            ("/../pub", "/pub"),
        ] {
            assert_eq!(clean(i), o, "{i:?}");
        }
    }

    #[test]
    fn decode_and_escape() {
        assert_eq!(
            decode("/config/%6Cog_level").as_deref(),
            Some("/config/log_level")
        );
        assert_eq!(decode("/look%75p").as_deref(), Some("/lookup"));
        assert_eq!(decode("/a%2Fb").as_deref(), Some("/a/b"));
        assert_eq!(decode("/a%zz"), None);
        assert_eq!(decode("/a%2"), None);
        assert_eq!(escape("/config/a b#c?"), "/config/a%20b%23c%3F");
        assert_eq!(escape("/x;y=1,2@$&+:~"), "/x;y=1,2@$&+:~");
    }

    #[test]
    fn html() {
        assert_eq!(
            html_escape("/s?a=1&b=<'\">"),
            "/s?a=1&amp;b=&lt;&#39;&#34;&gt;"
        );
    }
}
