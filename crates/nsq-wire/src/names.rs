//! Topic and channel names: nsqd's rule is `^[.a-zA-Z0-9_-]+(#ephemeral)?$`, 1..=64 bytes in all.

pub const MAX_NAME_LEN: usize = 64;
pub const EPHEMERAL_SUFFIX: &str = "#ephemeral";

/// True if `name` is a valid topic or channel name.
pub fn is_valid_name(name: &[u8]) -> bool {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return false;
    }
    let base = name
        .strip_suffix(EPHEMERAL_SUFFIX.as_bytes())
        .unwrap_or(name);
    !base.is_empty()
        && base
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-')
}

/// True if the name carries the `#ephemeral` suffix (no disk, deleted when unused).
pub fn is_ephemeral(name: &str) -> bool {
    name.ends_with(EPHEMERAL_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nsqd_name_cases() {
        assert!(is_valid_name(b"a"));
        assert!(is_valid_name(b"a.b-c_d"));
        assert!(is_valid_name(&[b'x'; 64]));
        let mut e = vec![b'x'; 54];
        e.extend_from_slice(b"#ephemeral");
        assert!(is_valid_name(&e));
        assert!(!is_valid_name(&[b'x'; 65]));
        assert!(!is_valid_name(b"#ephemeral"));
        assert!(!is_valid_name(b"a#ephemeral#ephemeral"));
        assert!(!is_valid_name(b"bad$"));
        assert!(!is_valid_name(b"a b"));
        assert!(!is_valid_name(b""));
        assert!(is_ephemeral("a#ephemeral"));
        assert!(!is_ephemeral("a"));
    }
}
