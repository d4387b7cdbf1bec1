//! Every ACL user, by name, in memory (there is no ACL file). Connections keep an `Arc` of
//! their user and look again only when the generation moved (one relaxed load per command):
//! `ACL SETUSER` publishes a changed copy, `ACL DELUSER` removes one (and its clients are
//! closed).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::user::{RuleError, User};

/// Why `ACL SETUSER` refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetUserError {
    #[error("ERR Usernames can't contain spaces or null characters")]
    BadName,
    #[error("ERR Error in ACL SETUSER modifier '{rule}': {error}")]
    Rule { rule: String, error: RuleError },
    #[error("ERR Unmatched parenthesis in acl selector starting at '{0}'.")]
    Unmatched(String),
}

/// Joins a selector given over several arguments (`(+get` `~k*)`) into one rule, as Redis.
fn merge_selectors(rules: &[&[u8]]) -> Result<Vec<Vec<u8>>, SetUserError> {
    let mut merged = Vec::with_capacity(rules.len());
    let mut open: Option<Vec<u8>> = None;
    for r in rules {
        match open.as_mut() {
            Some(sel) => {
                sel.push(b' ');
                sel.extend_from_slice(r);
                if r.ends_with(b")") {
                    merged.extend(open.take());
                }
            }
            None if r.starts_with(b"(") && !r.ends_with(b")") => open = Some(r.to_vec()),
            None => merged.push(r.to_vec()),
        }
    }
    match open {
        Some(sel) => {
            let first = sel.split(|&c| c == b' ').next().unwrap_or_default();
            Err(SetUserError::Unmatched(
                String::from_utf8_lossy(first).into_owned(),
            ))
        }
        None => Ok(merged),
    }
}

#[derive(Debug)]
pub struct Users {
    by_name: RwLock<BTreeMap<String, Arc<User>>>,
    /// Moves with every change, so connections know to look their user up again.
    generation: AtomicU64,
}

impl Users {
    /// Only the `default` user, with `--kv-password` if given.
    pub fn new(password: Option<&str>) -> Users {
        let default = Arc::new(User::default_user(password));
        Users {
            by_name: RwLock::new(BTreeMap::from([("default".to_owned(), default)])),
            generation: AtomicU64::new(0),
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn get(&self, name: &str) -> Option<Arc<User>> {
        self.by_name.read().get(name).cloned()
    }

    /// The `default` user (it cannot be deleted).
    pub fn default_user(&self) -> Arc<User> {
        self.get("default")
            .unwrap_or_else(|| Arc::new(User::default_user(None)))
    }

    /// Whether a new connection is logged in as `default` without AUTH.
    pub fn default_is_open(&self) -> bool {
        self.default_user().open()
    }

    /// Every user, by name.
    pub fn all(&self) -> Vec<Arc<User>> {
        self.by_name.read().values().cloned().collect()
    }

    /// `ACL SETUSER`: creates the user if needed and applies every rule, or none.
    pub fn set(&self, name: &[u8], rules: &[&[u8]]) -> Result<(), SetUserError> {
        if name.iter().any(|&c| c == b' ' || c == 0) {
            return Err(SetUserError::BadName);
        }
        let name = String::from_utf8_lossy(name).into_owned();
        let rules = merge_selectors(rules)?;
        let mut map = self.by_name.write();
        let mut user = match map.get(&name) {
            Some(u) => User::clone(u),
            None => User::new(&name),
        };
        for r in &rules {
            user.apply(r).map_err(|error| SetUserError::Rule {
                rule: String::from_utf8_lossy(r).into_owned(),
                error,
            })?;
        }
        map.insert(name, Arc::new(user));
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// `ACL DELUSER`: the names removed.
    pub fn delete(&self, names: &[String]) -> Vec<String> {
        let mut map = self.by_name.write();
        let gone: Vec<String> = names
            .iter()
            .filter(|n| map.remove(n.as_str()).is_some())
            .cloned()
            .collect();
        self.generation.fetch_add(1, Ordering::AcqRel);
        gone
    }

    /// The user `name` if `password` logs it in.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        let name = std::str::from_utf8(name).ok()?;
        self.get(name).filter(|u| u.accepts(password))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_is_all_or_nothing() {
        let users = Users::new(None);
        assert!(users.default_is_open());
        users.set(b"bob", &[b"on", b">pw"]).unwrap();
        let g = users.generation();
        let e = users.set(b"bob", &[b"nopass", b"+nosuch"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
        );
        assert_eq!(users.generation(), g);
        assert!(users.authenticate(b"bob", b"pw").is_some());
        assert!(users.authenticate(b"bob", b"other").is_none());
        assert!(users.authenticate(b"nobody", b"pw").is_none());
        assert_eq!(users.set(b"a b", &[]), Err(SetUserError::BadName));
        assert_eq!(users.delete(&["bob".into(), "nob".into()]), ["bob"]);
        assert!(users.get("bob").is_none());
        assert!(users.generation() > g);
    }

    #[test]
    fn selectors_over_several_arguments() {
        let users = Users::new(None);
        users.set(b"s", &[b"(+get", b"~x)", b"(+set)"]).unwrap();
        assert_eq!(
            users.get("s").map(|u| u.describe()),
            Some("user s off resetchannels -@all (~x resetchannels -@all +get) (resetchannels -@all +set)".into())
        );
        assert_eq!(
            users
                .set(b"s", &[b"on", b"(+get", b"~x"])
                .unwrap_err()
                .to_string(),
            "ERR Unmatched parenthesis in acl selector starting at '(+get'."
        );
    }

    #[test]
    fn password_closes_the_default_user() {
        let users = Users::new(Some("secret"));
        assert!(!users.default_is_open());
        assert!(users.authenticate(b"default", b"secret").is_some());
        assert!(users.authenticate(b"default", b"x").is_none());
    }
}
