//! One ACL user: whether it may log in (on/off, passwords as SHA-256), what it may do (its
//! root selector and any others, `selector.rs`), and `ACL SETUSER`'s rules that change it.
//!
//! A user is immutable once published: `ACL SETUSER` applies its rules to a copy and swaps
//! the copy in (all the rules or none, as Redis does), so a connection reads its user with no
//! lock. Command rules are kept in the order given, each target once (Redis 7.2's way), which
//! is what `ACL LIST` and `ACL GETUSER` show.

use sha2::{Digest, Sha256};

use super::selector::Selector;

/// Why `ACL SETUSER` refused one rule (Redis's texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("Unknown command or category name in ACL")]
    Unknown,
    #[error("Syntax error")]
    Syntax,
    #[error("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")]
    KeysAfterAll,
    #[error("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")]
    ChannelsAfterAll,
    #[error("The password you are trying to remove from the user does not exist")]
    NoSuchPassword,
    #[error("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")]
    BadHash,
}

#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub enabled: bool,
    pub nopass: bool,
    /// `sanitize-payload` / `skip-sanitize-payload` (shown, not acted on).
    pub sanitize: Option<bool>,
    /// Hex SHA-256 of each password, in the order added.
    pub passwords: Vec<String>,
    /// The rules given outside parentheses.
    pub root: Selector,
    /// `(...)` selectors: a request any of them allows is allowed.
    pub selectors: Vec<Selector>,
}

/// The hex SHA-256 of a password.
pub fn hash(password: &[u8]) -> String {
    Sha256::digest(password)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

impl User {
    /// A new user as `ACL SETUSER name` makes it: off, no password, nothing allowed.
    pub fn new(name: &str) -> User {
        User {
            name: name.to_owned(),
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            root: Selector::default(),
            selectors: Vec::new(),
        }
    }

    /// The `default` user: every command, key and channel; `password` or none needed.
    pub fn default_user(password: Option<&str>) -> User {
        let mut u = User::new("default");
        let pass = password.map(|p| format!(">{p}"));
        let rules = [
            "on",
            pass.as_deref().unwrap_or("nopass"),
            "~*",
            "&*",
            "+@all",
        ];
        for r in rules {
            // Every one of these rules is valid.
            let _ = u.apply(r.as_bytes());
        }
        u
    }

    /// Whether the user may run anything on anything: then no check is made.
    pub fn unrestricted(&self) -> bool {
        self.root.unrestricted()
    }

    /// Whether a connection is logged in as this user without AUTH (`on` and `nopass`).
    pub fn open(&self) -> bool {
        self.enabled && self.nopass
    }

    /// Whether `password` logs this user in.
    pub fn accepts(&self, password: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&hash(password)))
    }

    /// Whether any selector allows `channel` (a pattern as written, for PSUBSCRIBE).
    pub fn may_use_channel(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_selectors()
            .any(|s| s.may_use_channel(channel, is_pattern))
    }

    /// Every selector, the root first.
    pub fn all_selectors(&self) -> impl Iterator<Item = &Selector> {
        std::iter::once(&self.root).chain(&self.selectors)
    }

    /// Applies one `ACL SETUSER` rule.
    pub fn apply(&mut self, rule: &[u8]) -> Result<(), RuleError> {
        if let [b'(', inner @ .., b')'] = rule {
            self.selectors.push(Selector::parse(inner)?);
            return Ok(());
        }
        let lower = rule.to_ascii_lowercase();
        match lower.as_slice() {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"sanitize-payload" => self.sanitize = Some(true),
            b"skip-sanitize-payload" => self.sanitize = Some(false),
            b"clearselectors" => self.selectors.clear(),
            b"reset" => {
                for r in [
                    "resetpass",
                    "resetkeys",
                    "resetchannels",
                    "off",
                    "-@all",
                    "clearselectors",
                ] {
                    self.apply(r.as_bytes())?;
                }
                self.sanitize = Some(true);
            }
            _ => return self.apply_prefixed(rule),
        }
        Ok(())
    }

    fn apply_prefixed(&mut self, rule: &[u8]) -> Result<(), RuleError> {
        let (&first, rest) = rule.split_first().ok_or(RuleError::Syntax)?;
        match first {
            b'>' => self.add_hash(hash(rest)),
            b'<' => self.remove_hash(&hash(rest)),
            b'#' if valid_hash(rest) => self.add_hash(String::from_utf8_lossy(rest).into()),
            b'!' if valid_hash(rest) => self.remove_hash(&String::from_utf8_lossy(rest)),
            b'#' | b'!' => Err(RuleError::BadHash),
            _ if self.root.apply(rule)? => Ok(()),
            _ => Err(RuleError::Syntax),
        }
    }

    fn add_hash(&mut self, h: String) -> Result<(), RuleError> {
        self.nopass = false;
        if !self.passwords.contains(&h) {
            self.passwords.push(h);
        }
        Ok(())
    }

    fn remove_hash(&mut self, h: &str) -> Result<(), RuleError> {
        let at = self
            .passwords
            .iter()
            .position(|p| p == h)
            .ok_or(RuleError::NoSuchPassword)?;
        self.passwords.remove(at);
        Ok(())
    }

    /// The flags `ACL GETUSER` shows.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize {
            Some(true) => f.push("sanitize-payload"),
            Some(false) => f.push("skip-sanitize-payload"),
            None => {}
        }
        f
    }

    /// The user as one `ACL LIST` line.
    pub fn describe(&self) -> String {
        let mut s = format!("user {}", self.name);
        for f in self.flags() {
            s.push(' ');
            s.push_str(f);
        }
        for p in &self.passwords {
            s.push_str(" #");
            s.push_str(p);
        }
        s.push(' ');
        s.push_str(&self.root.describe());
        for sel in &self.selectors {
            s.push_str(" (");
            s.push_str(&sel.describe());
            s.push(')');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::acl::selector::{READ, WRITE};
    use crate::resp::command_meta as meta;

    fn user(rules: &[&str]) -> User {
        let mut u = User::new("u");
        for r in rules {
            u.apply(r.as_bytes()).unwrap();
        }
        u
    }

    fn idx(name: &str) -> usize {
        meta::index(name).unwrap()
    }

    #[test]
    fn described_as_redis() {
        assert_eq!(User::new("c").describe(), "user c off resetchannels -@all");
        let mut u = User::new("c");
        u.apply(b"reset").unwrap();
        assert_eq!(
            u.describe(),
            "user c off sanitize-payload resetchannels -@all"
        );
        assert_eq!(
            User::default_user(None).describe(),
            "user default on nopass ~* &* +@all"
        );
        let u = user(&[
            "on", ">p1", "~foo*", "%R~bar", "&ch*", "-@all", "+@string", "-set",
        ]);
        assert_eq!(
            u.describe(),
            "user u on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~foo* %R~bar resetchannels &ch* -@all +@string -set"
        );
        let u = user(&["%R~a", "%W~b", "%RW~c", "~d", "%W~a"]);
        assert_eq!(u.root.describe_keys(), "~a %W~b ~c ~d");
    }

    #[test]
    fn rules_replace_earlier_ones_on_the_same_target() {
        let u = user(&["+get", "+config|get", "-@read", "+get", "-config"]);
        assert_eq!(u.root.describe_commands(), "-@all -@read +get -config");
        assert!(u.root.may_run(idx("get")));
        assert!(!u.root.may_run(idx("config|get")) && !u.root.may_run(idx("mget")));
        let u = user(&["+@all", "-get"]);
        assert_eq!(u.root.describe_commands(), "+@all -get");
        assert!(!u.root.may_run(idx("get")) && u.root.may_run(idx("set")));
        assert!(!u.unrestricted());
        assert!(User::default_user(Some("x")).unrestricted());
    }

    #[test]
    fn passwords() {
        let mut u = user(&["on", ">a", ">b", ">a"]);
        assert_eq!(u.passwords.len(), 2);
        assert!(u.accepts(b"a") && u.accepts(b"b") && !u.accepts(b"c"));
        u.apply(b"<b").unwrap();
        assert!(!u.accepts(b"b"));
        assert_eq!(u.apply(b"<b"), Err(RuleError::NoSuchPassword));
        assert_eq!(u.apply(b"#abc"), Err(RuleError::BadHash));
        u.apply(b"nopass").unwrap();
        assert!(u.accepts(b"anything") && u.passwords.is_empty());
        u.apply(b"off").unwrap();
        assert!(!u.accepts(b"anything"));
        let h = hash(b"secret");
        let mut v = user(&["on"]);
        v.apply(format!("#{h}").as_bytes()).unwrap();
        assert!(v.accepts(b"secret"));
        v.apply(format!("!{h}").as_bytes()).unwrap();
        assert!(!v.accepts(b"secret"));
    }

    #[test]
    fn keys_and_channels() {
        let u = user(&["~k*", "%R~r*", "&ch*"]);
        assert!(u.root.may_access(b"k1", READ | WRITE) && !u.root.may_access(b"x", READ));
        assert!(u.root.may_access(b"r1", READ) && !u.root.may_access(b"r1", WRITE));
        assert!(u.root.may_use_channel(b"ch1", false) && !u.root.may_use_channel(b"x", false));
        assert!(u.root.may_use_channel(b"ch*", true) && !u.root.may_use_channel(b"ch*x", true));
        let mut u = user(&["allkeys", "allchannels"]);
        assert_eq!(u.apply(b"~x"), Err(RuleError::KeysAfterAll));
        assert_eq!(u.apply(b"&x"), Err(RuleError::ChannelsAfterAll));
    }

    #[test]
    fn selectors() {
        let u = user(&["on", "~a*", "+get", "(%W~app* +set)", "(+mget ~m*)"]);
        assert_eq!(
            u.describe(),
            "user u on ~a* resetchannels -@all +get (%W~app* resetchannels -@all +set) (~m* resetchannels -@all +mget)"
        );
        assert_eq!(u.selectors.len(), 2);
        assert!(u.selectors[0].may_run(idx("set")) && !u.selectors[0].may_run(idx("get")));
        let mut u = u;
        assert_eq!(u.apply(b"(+nosuch)"), Err(RuleError::Unknown));
        assert_eq!(u.apply(b"(on)"), Err(RuleError::Syntax));
        u.apply(b"clearselectors").unwrap();
        assert!(u.selectors.is_empty());
    }

    #[test]
    fn bad_rules() {
        let mut u = User::new("u");
        assert_eq!(u.apply(b"+nosuch"), Err(RuleError::Unknown));
        assert_eq!(u.apply(b"+@nosuch"), Err(RuleError::Unknown));
        assert_eq!(u.apply(b"+config|nosuch"), Err(RuleError::Unknown));
        assert_eq!(u.apply(b"bogus"), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"%X~x"), Err(RuleError::Syntax));
        assert_eq!(u.apply(b""), Err(RuleError::Syntax));
    }
}
