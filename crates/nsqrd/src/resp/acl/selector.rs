//! One ACL selector: which commands a user may run, on which keys and channels. A user has
//! its root selector and any number of others (`(...)` in `ACL SETUSER`); a request is allowed
//! if any of them allows all of it.

use super::user::RuleError;
use crate::resp::command_meta as meta;

/// A key pattern's permissions (`%R~`, `%W~`, `~` is both).
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;

/// A key pattern and what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    pub perms: u8,
    pub pattern: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct Selector {
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

impl Default for Selector {
    /// Nothing allowed (`-@all`, no keys, no channels).
    fn default() -> Selector {
        Selector {
            all_commands: false,
            rules: Vec::new(),
            allowed: vec![false; meta::COMMANDS.len()],
            all_keys: false,
            keys: Vec::new(),
            all_channels: false,
            channels: Vec::new(),
        }
    }
}

impl Selector {
    /// A selector from `(rule rule ...)`.
    pub fn parse(rules: &[u8]) -> Result<Selector, RuleError> {
        let mut s = Selector::default();
        for r in rules
            .split(u8::is_ascii_whitespace)
            .filter(|r| !r.is_empty())
        {
            if !s.apply(r)? {
                return Err(RuleError::Syntax);
            }
        }
        Ok(s)
    }

    /// Whether it allows anything on anything.
    pub fn unrestricted(&self) -> bool {
        self.all_commands && self.rules.is_empty() && self.all_keys && self.all_channels
    }

    /// Applies one rule about commands, keys or channels; false if it is about none of them.
    pub fn apply(&mut self, rule: &[u8]) -> Result<bool, RuleError> {
        let lower = rule.to_ascii_lowercase();
        match lower.as_slice() {
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
            _ => return self.apply_prefixed(rule),
        }
        Ok(true)
    }

    fn apply_prefixed(&mut self, rule: &[u8]) -> Result<bool, RuleError> {
        let Some((&first, rest)) = rule.split_first() else {
            return Ok(false);
        };
        match first {
            b'~' => self.set_keys(READ | WRITE, rest)?,
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
                self.set_keys(perms, &rest[tilde + 1..])?
            }
            b'&' => self.add_channel(rest)?,
            b'+' | b'-' => self.command_rule(first == b'+', rest)?,
            _ => return Ok(false),
        }
        Ok(true)
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

    /// Whether the selector allows running the command (or subcommand) at `index` of
    /// [`meta::COMMANDS`].
    pub fn may_run(&self, index: usize) -> bool {
        self.allowed
            .get(index)
            .copied()
            .unwrap_or(self.all_commands)
    }

    /// Whether the selector allows touching `key` with `perms` ([`READ`], [`WRITE`]).
    pub fn may_access(&self, key: &[u8], perms: u8) -> bool {
        self.all_keys
            || self
                .keys
                .iter()
                .any(|k| k.perms & perms == perms && nsqr_kv::glob::matches(&k.pattern, key))
    }

    /// Whether the selector allows using `channel`; a pattern (PSUBSCRIBE) must be one of the user's
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

    /// As `ACL LIST` shows a selector: keys, channels, commands.
    pub fn describe(&self) -> String {
        let mut words = Vec::new();
        let keys = self.describe_keys();
        if !keys.is_empty() {
            words.push(keys);
        }
        if !self.all_channels {
            words.push("resetchannels".into());
        }
        let channels = self.describe_channels();
        if !channels.is_empty() {
            words.push(channels);
        }
        words.push(self.describe_commands());
        words.join(" ")
    }
}
