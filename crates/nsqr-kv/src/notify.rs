//! Keyspace notifications, configured as Redis's `notify-keyspace-events`: which classes of
//! events are announced (`g` generic, `$` string, `x` expired, `e` evicted, `n` new key, `m`
//! key miss; `A` for all but `n` and `m`) and on which channels (`K`: `__keyspace@0__:<key>`
//! with the event as message; `E`: `__keyevent@0__:<event>` with the key as message).

use std::fmt;

use crate::feed::Op;

/// Redis's notification classes, as bits.
pub mod class {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const KEYEVENT: u32 = 1 << 1;
    pub const GENERIC: u32 = 1 << 2;
    pub const STRING: u32 = 1 << 3;
    pub const LIST: u32 = 1 << 4;
    pub const SET: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const ZSET: u32 = 1 << 7;
    pub const EXPIRED: u32 = 1 << 8;
    pub const EVICTED: u32 = 1 << 9;
    pub const STREAM: u32 = 1 << 10;
    pub const KEY_MISS: u32 = 1 << 11;
    pub const MODULE: u32 = 1 << 12;
    pub const NEW: u32 = 1 << 13;
    /// `A`: every class except key misses and new keys.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// The error text of `CONFIG SET notify-keyspace-events` with a bad character.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")]
pub struct BadEventClass;

/// A `notify-keyspace-events` setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotifyFlags(pub u32);

impl NotifyFlags {
    /// Parses Redis's class string (`"KEA"`, `"Ex"`, `""` for off).
    pub fn parse(s: &str) -> Result<NotifyFlags, BadEventClass> {
        let mut f = 0;
        for c in s.chars() {
            f |= match c {
                'A' => class::ALL,
                'g' => class::GENERIC,
                '$' => class::STRING,
                'l' => class::LIST,
                's' => class::SET,
                'h' => class::HASH,
                'z' => class::ZSET,
                'x' => class::EXPIRED,
                'e' => class::EVICTED,
                'K' => class::KEYSPACE,
                'E' => class::KEYEVENT,
                't' => class::STREAM,
                'm' => class::KEY_MISS,
                'd' => class::MODULE,
                'n' => class::NEW,
                _ => return Err(BadEventClass),
            };
        }
        Ok(NotifyFlags(f))
    }

    /// Whether an event of `class` is announced at all (on either kind of channel).
    pub fn wants(self, event_class: u32) -> bool {
        self.0 & event_class != 0 && self.0 & (class::KEYSPACE | class::KEYEVENT) != 0
    }

    pub fn keyspace(self) -> bool {
        self.0 & class::KEYSPACE != 0
    }

    pub fn keyevent(self) -> bool {
        self.0 & class::KEYEVENT != 0
    }
}

impl fmt::Display for NotifyFlags {
    /// Redis's canonical form, as `CONFIG GET` shows it (`A` or the classes, then `n`, `K`,
    /// `E`, `m`; Redis 7.0 leaves out `n` after `A`, this does not).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        let mut s = String::new();
        if v & class::ALL == class::ALL {
            s.push('A');
        } else {
            for (bit, c) in [
                (class::GENERIC, 'g'),
                (class::STRING, '$'),
                (class::LIST, 'l'),
                (class::SET, 's'),
                (class::HASH, 'h'),
                (class::ZSET, 'z'),
                (class::EXPIRED, 'x'),
                (class::EVICTED, 'e'),
                (class::STREAM, 't'),
                (class::MODULE, 'd'),
            ] {
                if v & bit != 0 {
                    s.push(c);
                }
            }
        }
        for (bit, c) in [
            (class::NEW, 'n'),
            (class::KEYSPACE, 'K'),
            (class::KEYEVENT, 'E'),
            (class::KEY_MISS, 'm'),
        ] {
            if v & bit != 0 {
                s.push(c);
            }
        }
        f.write_str(&s)
    }
}

/// An event a command causes: a change to a key (named as the change feed names it, which is
/// Redis's event name), a key created, or a read that missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Change(Op),
    New,
    KeyMiss,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Change(op) => op.name(),
            Event::New => "new",
            Event::KeyMiss => "keymiss",
        }
    }

    pub fn class(self) -> u32 {
        match self {
            Event::Change(
                Op::Set | Op::Incrby | Op::IncrbyFloat | Op::Append | Op::SetRange | Op::SetBit,
            ) => class::STRING,
            Event::Change(Op::Pfadd) => class::STRING,
            Event::Change(
                Op::Lpush
                | Op::Rpush
                | Op::Lpop
                | Op::Rpop
                | Op::Lset
                | Op::Linsert
                | Op::Lrem
                | Op::Ltrim
                | Op::Sortstore,
            ) => class::LIST,
            Event::Change(Op::Hset | Op::Hdel | Op::Hincrby | Op::Hincrbyfloat) => class::HASH,
            Event::Change(
                Op::Sadd | Op::Srem | Op::Spop | Op::Sinterstore | Op::Sunionstore | Op::Sdiffstore,
            ) => class::SET,
            Event::Change(
                Op::Xadd
                | Op::Xtrim
                | Op::Xdel
                | Op::XgroupCreate
                | Op::XgroupCreateconsumer
                | Op::XgroupDelconsumer
                | Op::XgroupDestroy
                | Op::XgroupSetid
                | Op::Xsetid,
            ) => class::STREAM,
            Event::Change(
                Op::Zadd
                | Op::Zincr
                | Op::Zrem
                | Op::Zrembyscore
                | Op::Zrembyrank
                | Op::Zrembylex
                | Op::Zpopmin
                | Op::Zpopmax
                | Op::Zunionstore
                | Op::Zinterstore
                | Op::Zdiffstore
                | Op::Zrangestore,
            ) => class::ZSET,
            Event::Change(Op::Georadiusstore | Op::Geosearchstore) => class::ZSET,
            Event::Change(Op::Expired) => class::EXPIRED,
            Event::Change(Op::Evicted) => class::EVICTED,
            Event::Change(_) => class::GENERIC,
            Event::New => class::NEW,
            Event::KeyMiss => class::KEY_MISS,
        }
    }
}

/// `__keyspace@<db>__:<key>` of an internal key name (`db.rs`).
pub fn keyspace_channel(name: &[u8], out: &mut Vec<u8>) {
    let (db, key) = crate::db::split(name);
    out.clear();
    out.extend_from_slice(b"__keyspace@");
    out.extend_from_slice(itoa::Buffer::new().format(db).as_bytes());
    out.extend_from_slice(b"__:");
    out.extend_from_slice(key);
}

/// `__keyevent@<db>__:<event>`.
pub fn keyevent_channel(db: u8, event: Event, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(b"__keyevent@");
    out.extend_from_slice(itoa::Buffer::new().format(db).as_bytes());
    out.extend_from_slice(b"__:");
    out.extend_from_slice(event.name().as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_show_like_redis() {
        assert_eq!(NotifyFlags::parse("KEA").unwrap().to_string(), "AKE");
        assert_eq!(NotifyFlags::parse("Ex").unwrap().to_string(), "xE");
        assert_eq!(NotifyFlags::parse("Exgn").unwrap().to_string(), "gxnE");
        assert_eq!(NotifyFlags::parse("KEAm").unwrap().to_string(), "AKEm");
        assert_eq!(NotifyFlags::parse("").unwrap().to_string(), "");
        assert_eq!(NotifyFlags::parse("Z"), Err(BadEventClass));
    }

    #[test]
    fn wants_needs_a_channel_kind_and_the_class() {
        let f = NotifyFlags::parse("Ex").unwrap();
        assert!(f.wants(Event::Change(Op::Expired).class()));
        assert!(!f.wants(Event::Change(Op::Set).class()));
        assert!(!NotifyFlags::parse("x").unwrap().wants(class::EXPIRED));
        let all = NotifyFlags::parse("KA").unwrap();
        assert!(all.wants(Event::Change(Op::Evicted).class()) && !all.wants(Event::New.class()));
    }
}
