//! One ACL user: whether it may log in (on/off, passwords as SHA-256), which commands it may
//! run, which keys and channels it may touch, and `ACL SETUSER`'s rules that change it.
//!
//! A user is immutable once published: `ACL SETUSER` applies its rules to a copy and swaps
//! the copy in (all the rules or none, as Redis does), so a connection reads its user with no
//! lock. Command rules are kept in the order given, each target once (Redis 7.2's way), which
//! is what `ACL LIST` and `ACL GETUSER` show.

use sha2::{Digest, Sha256};

use crate::resp::command_meta as meta;

/// A key pattern's permissions (`%R~`, `%W~`, `~` is both).
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;

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

/// A key pattern and what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    pub perms: u8,
    pub pattern: Vec<u8>,
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
    /// The base is `+@all` (commands added later are allowed too), else `-@all`.
    all_commands: bool,
    /// Command rules after the base: (allowed, `get` / `@read` / `config|get`).
    rules: Vec<(bool, String)>,
    /// Per entry of [`meta::COMMANDS`].
    allowed: Vec<bool>,
    pub all_keys: bool,
    pub keys: Vec<KeyPattern>,
    pub all_channels: bool,
    pub channels: Vec<Vec<u8>>,
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
            all_commands: false,
            rules: Vec::new(),
            allowed: vec![false; meta::COMMANDS.len()],
            all_keys: false,
            keys: Vec::new(),
            all_channels: false,
            channels: Vec::new(),
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
        self.all_commands && self.rules.is_empty() && self.all_keys && self.all_channels
    }

    /// Whether a connection is logged in as this user without AUTH (`on` and `nopass`).
    pub fn open(&self) -> bool {
        self.enabled && self.nopass
    }

    /// Whether `password` logs this user in.
    pub fn accepts(&self, password: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&hash(password)))
    }

    /// Applies one `ACL SETUSER` rule.
    pub fn apply(&mut self, rule: &[u8]) -> Result<(), RuleError> {
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
            b"allkeys" => self.set_keys(READ | WRITE, b"*")?,
            b"resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
            }
            b"allchannels" => self.add_channel(b"*")?,
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
            }
            b"allcommands" | b"+@all" => self.base_commands(true),
            b"nocommands" | b"-@all" => self.base_commands(false),
            b"sanitize-payload" => self.sanitize = Some(true),
            b"skip-sanitize-payload" => self.sanitize = Some(false),
            b"clearselectors" => {}
            b"reset" => {
                for r in ["resetpass", "resetkeys", "resetchannels", "off", "-@all"] {
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
            b'~' => self.set_keys(READ | WRITE, rest),
            b'%' => {
                let tilde = rest
                    .iter()
                    .position(|&c| c == b'~')
                    .ok_or(RuleError::Syntax)?;
                let mut perms = 0;
                for c in &rest[..tilde] {
                    perms |= match c.to_ascii_uppercase() {
                        b'R' => READ,
                        b'W' => WRITE,
                        _ => return Err(RuleError::Syntax),
                    };
                }
                if perms == 0 {
                    return Err(RuleError::Syntax);
                }
                self.set_keys(perms, &rest[tilde + 1..])
            }
            b'&' => self.add_channel(rest),
            b'+' | b'-' => self.command_rule(first == b'+', rest),
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

    fn set_keys(&mut self, perms: u8, pattern: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeysAfterAll);
        }
        if pattern == b"*" && perms == READ | WRITE {
            self.all_keys = true;
            self.keys.clear();
        } else if let Some(k) = self.keys.iter_mut().find(|k| k.pattern == pattern) {
            k.perms |= perms;
        } else {
            self.keys.push(KeyPattern {
                perms,
                pattern: pattern.to_vec(),
            });
        }
        Ok(())
    }

    fn add_channel(&mut self, pattern: &[u8]) -> Result<(), RuleError> {
        if self.all_channels {
            return Err(RuleError::ChannelsAfterAll);
        }
        if pattern == b"*" {
            self.all_channels = true;
            self.channels.clear();
        } else if !self.channels.iter().any(|c| c == pattern) {
            self.channels.push(pattern.to_vec());
        }
        Ok(())
    }

    fn base_commands(&mut self, all: bool) {
        self.all_commands = all;
        self.rules.clear();
        self.allowed.iter_mut().for_each(|a| *a = all);
    }

    /// `+name`, `-name`, `+name|sub`, `+@category`, `-@category`.
    fn command_rule(&mut self, allow: bool, target: &[u8]) -> Result<(), RuleError> {
        let target = std::str::from_utf8(target)
            .map_err(|_| RuleError::Unknown)?
            .to_ascii_lowercase();
        if let Some(cat) = target.strip_prefix('@') {
            let bits = meta::category(cat).ok_or(RuleError::Unknown)?;
            for (i, m) in meta::COMMANDS.iter().enumerate() {
                if m.categories & bits != 0 {
                    self.allowed[i] = allow;
                }
            }
        } else {
            let at = meta::index(&target).ok_or(RuleError::Unknown)?;
            self.allowed[at] = allow;
            if !target.contains('|') {
                let prefix = format!("{target}|");
                for (i, m) in meta::COMMANDS.iter().enumerate() {
                    if m.name.starts_with(&prefix) {
                        self.allowed[i] = allow;
                    }
                }
            }
        }
        // A rule replaces any earlier one on the same target (and on its subcommands).
        let sub = format!("{target}|");
        self.rules
            .retain(|(_, t)| *t != target && !t.starts_with(&sub));
        self.rules.push((allow, target));
        Ok(())
    }

    /// Whether the user may run the command (or subcommand) at `index` of
    /// [`meta::COMMANDS`].
    pub fn may_run(&self, index: usize) -> bool {
        self.allowed
            .get(index)
            .copied()
            .unwrap_or(self.all_commands)
    }

    /// Whether the user may touch `key` with `perms` ([`READ`], [`WRITE`]).
    pub fn may_access(&self, key: &[u8], perms: u8) -> bool {
        self.all_keys
            || self
                .keys
                .iter()
                .any(|k| k.perms & perms == perms && nsqr_kv::glob::matches(&k.pattern, key))
    }

    /// Whether the user may use `channel`; a pattern (PSUBSCRIBE) must be one of the user's
    /// patterns as written.
    pub fn may_use_channel(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|c| {
                if is_pattern {
                    c == channel
                } else {
                    nsqr_kv::glob::matches(c, channel)
                }
            })
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

    /// The command rules: `+@all` or `-@all`, then the rules as given.
    pub fn describe_commands(&self) -> String {
        let mut s = String::from(if self.all_commands { "+@all" } else { "-@all" });
        for (allow, t) in &self.rules {
            s.push(' ');
            s.push(if *allow { '+' } else { '-' });
            s.push_str(t);
        }
        s
    }

    /// The key patterns, as `ACL GETUSER` shows them.
    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let words: Vec<String> = self
            .keys
            .iter()
            .map(|k| {
                let p = String::from_utf8_lossy(&k.pattern);
                match k.perms {
                    READ => format!("%R~{p}"),
                    WRITE => format!("%W~{p}"),
                    _ => format!("~{p}"),
                }
            })
            .collect();
        words.join(" ")
    }

    /// The channel patterns, as `ACL GETUSER` shows them.
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let words: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        words.join(" ")
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
        let keys = self.describe_keys();
        if !keys.is_empty() {
            s.push(' ');
            s.push_str(&keys);
        }
        if !self.all_channels {
            s.push_str(" resetchannels");
        }
        let channels = self.describe_channels();
        if !channels.is_empty() {
            s.push(' ');
            s.push_str(&channels);
        }
        s.push(' ');
        s.push_str(&self.describe_commands());
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(u.describe_keys(), "~a %W~b ~c ~d");
    }

    #[test]
    fn rules_replace_earlier_ones_on_the_same_target() {
        let u = user(&["+get", "+config|get", "-@read", "+get", "-config"]);
        assert_eq!(u.describe_commands(), "-@all -@read +get -config");
        assert!(u.may_run(idx("get")));
        assert!(!u.may_run(idx("config|get")) && !u.may_run(idx("mget")));
        let u = user(&["+@all", "-get"]);
        assert_eq!(u.describe_commands(), "+@all -get");
        assert!(!u.may_run(idx("get")) && u.may_run(idx("set")));
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
        assert!(u.may_access(b"k1", READ | WRITE) && !u.may_access(b"x", READ));
        assert!(u.may_access(b"r1", READ) && !u.may_access(b"r1", WRITE));
        assert!(u.may_use_channel(b"ch1", false) && !u.may_use_channel(b"x", false));
        assert!(u.may_use_channel(b"ch*", true) && !u.may_use_channel(b"ch*x", true));
        let mut u = user(&["allkeys", "allchannels"]);
        assert_eq!(u.apply(b"~x"), Err(RuleError::KeysAfterAll));
        assert_eq!(u.apply(b"&x"), Err(RuleError::ChannelsAfterAll));
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
