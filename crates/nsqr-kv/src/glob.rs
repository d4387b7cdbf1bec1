//! Redis's glob patterns (`KEYS`, `SCAN MATCH`, `PSUBSCRIBE`): `*`, `?`, `[abc]`, `[^a-z]`,
//! and `\` to escape. Redis matches recursively, which a pattern like `*a*a*a*a*b` turns
//! exponential; this matcher keeps one backtracking point (the last `*`), so it is
//! O(pattern × subject) whatever the input.

/// Whether `subject` matches `pattern`.
pub fn matches(pattern: &[u8], subject: &[u8]) -> bool {
    let (mut p, mut s) = (0, 0);
    // Where to resume after the last `*`: (pattern position after it, subject position).
    let mut star: Option<(usize, usize)> = None;
    while s < subject.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, s));
                    continue;
                }
                b'?' => {
                    p += 1;
                    s += 1;
                    continue;
                }
                b'[' => {
                    if let Some((hit, next)) = class(pattern, p, subject[s]) {
                        if hit {
                            p = next;
                            s += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if pattern[p + 1] == subject[s] {
                        p += 2;
                        s += 1;
                        continue;
                    }
                }
                c => {
                    if c == subject[s] {
                        p += 1;
                        s += 1;
                        continue;
                    }
                }
            }
        }
        // Mismatch: let the last `*` swallow one more byte, or fail.
        match star {
            Some((sp, ss)) => {
                p = sp;
                s = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// A `[...]` class at `p`: whether `c` is in it and where the pattern continues. An
/// unterminated class runs to the end of the pattern, as in Redis.
fn class(pattern: &[u8], mut p: usize, c: u8) -> Option<(bool, usize)> {
    p += 1;
    let negate = pattern.get(p) == Some(&b'^');
    if negate {
        p += 1;
    }
    let mut hit = false;
    loop {
        match pattern.get(p) {
            None => break,
            Some(b']') => {
                p += 1;
                break;
            }
            Some(b'\\') if p + 1 < pattern.len() => {
                hit |= pattern[p + 1] == c;
                p += 2;
            }
            Some(&lo) if pattern.get(p + 1) == Some(&b'-') && p + 2 < pattern.len() => {
                let hi = pattern[p + 2];
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                hit |= (lo..=hi).contains(&c);
                p += 3;
            }
            Some(&x) => {
                hit |= x == c;
                p += 1;
            }
        }
    }
    Some((hit != negate, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        matches(p.as_bytes(), s.as_bytes())
    }

    #[test]
    fn redis_examples() {
        assert!(m("h?llo", "hello") && m("h?llo", "hallo") && !m("h?llo", "hllo"));
        assert!(m("h*llo", "hllo") && m("h*llo", "heeeello"));
        assert!(m("h[ae]llo", "hello") && m("h[ae]llo", "hallo") && !m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo") && !m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hallo") && m("h[a-b]llo", "hbllo") && !m("h[a-b]llo", "hcllo"));
        assert!(m("h\\*llo", "h*llo") && !m("h\\*llo", "hello"));
    }

    #[test]
    fn stars() {
        assert!(m("*", "") && m("*", "anything") && m("**", "x"));
        assert!(m("__keyspace@0__:*", "__keyspace@0__:user:1"));
        assert!(m("a*b*c", "aXXbYYc") && !m("a*b*c", "aXXbYY"));
        assert!(m("*.txt", "a.b.txt") && !m("*.txt", "a.txt.gz"));
        assert!(!m("", "a") && m("", ""));
    }

    #[test]
    fn pathological_pattern_is_fast() {
        let subject = "a".repeat(10_000);
        let pattern = format!("{}b", "*a".repeat(50));
        assert!(!m(&pattern, &subject));
    }

    #[test]
    fn ranges_reversed_and_unterminated_classes() {
        assert!(m("[z-a]", "m"));
        assert!(m("a[bc", "ab"));
    }
}
