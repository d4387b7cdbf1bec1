//! What Redis 7.0 says of every command (subcommands as `name|sub`), including commands this
//! keyspace does not serve yet: flags, ACL categories (`@read`, `@string`, `@fast`, ...),
//! command tips and key specs, as redis-server 7.0.15's own `COMMAND` reply gives them.
//! `COMMAND INFO`, `ACL SETUSER +@cat`, `ACL CAT` and the ACL check read them here, apart
//! from the command table, whose rows stay what the server needs to run a command.

/// One bit per ACL category, in `ACL CAT`'s order.
pub type Categories = u32;

pub const KEYSPACE: Categories = 1 << 0;
pub const READ: Categories = 1 << 1;
pub const WRITE: Categories = 1 << 2;
pub const SET: Categories = 1 << 3;
pub const SORTEDSET: Categories = 1 << 4;
pub const LIST: Categories = 1 << 5;
pub const HASH: Categories = 1 << 6;
pub const STRING: Categories = 1 << 7;
pub const BITMAP: Categories = 1 << 8;
pub const HYPERLOGLOG: Categories = 1 << 9;
pub const GEO: Categories = 1 << 10;
pub const STREAM: Categories = 1 << 11;
pub const PUBSUB: Categories = 1 << 12;
pub const ADMIN: Categories = 1 << 13;
pub const FAST: Categories = 1 << 14;
pub const SLOW: Categories = 1 << 15;
pub const BLOCKING: Categories = 1 << 16;
pub const DANGEROUS: Categories = 1 << 17;
pub const CONNECTION: Categories = 1 << 18;
pub const TRANSACTION: Categories = 1 << 19;
pub const SCRIPTING: Categories = 1 << 20;

/// The categories' names, in `ACL CAT`'s order (bit `i` is `NAMES[i]`).
pub const NAMES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Where a key spec's search for keys begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// At this argument.
    Index(i64),
    /// After this keyword, searched from `startfrom` (from the end if negative).
    Keyword(&'static str, i64),
    Unknown,
}

/// How a key spec finds its keys from where the search began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Find {
    /// (lastkey, keystep, limit).
    Range(i64, i64, i64),
    /// (keynumidx, firstkey, keystep): a count argument, then the keys.
    Keynum(i64, i64, i64),
    Unknown,
}

/// One key spec (Redis 7's `COMMAND INFO` field 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    pub notes: Option<&'static str>,
    pub flags: &'static [&'static str],
    pub begin: Begin,
    pub find: Find,
}

/// One command or subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub name: &'static str,
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub categories: Categories,
    /// (first, last, step) of the keys, as the legacy `COMMAND` fields.
    pub keys: (i32, i32, i32),
    pub tips: &'static [&'static str],
    pub key_specs: &'static [KeySpec],
}

/// Every command and subcommand, sorted by name.
#[rustfmt::skip]
pub static COMMANDS: &[Meta] = &[
    Meta { name: "acl", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|cat", arity: -2, flags: &["noscript", "loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|deluser", arity: -3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|dryrun", arity: -4, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|genpass", arity: -2, flags: &["noscript", "loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|getuser", arity: 3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|help", arity: 2, flags: &["loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|list", arity: 2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|load", arity: 2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|log", arity: -2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|save", arity: 2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|setuser", arity: -3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|users", arity: 2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "acl|whoami", arity: 2, flags: &["noscript", "loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "append", arity: 3, flags: &["write", "denyoom", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "asking", arity: 1, flags: &["fast"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "auth", arity: -2, flags: &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "bgrewriteaof", arity: 1, flags: &["admin", "noscript", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "bgsave", arity: -1, flags: &["admin", "noscript", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "bitcount", arity: -2, flags: &["readonly"], categories: READ | BITMAP | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "bitfield", arity: -2, flags: &["write", "denyoom"], categories: WRITE | BITMAP | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: Some("This command allows both access and modification of the key"), flags: &["RW", "access", "update", "variable_flags"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "bitfield_ro", arity: -2, flags: &["readonly", "fast"], categories: READ | BITMAP | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "bitop", arity: -4, flags: &["write", "denyoom"], categories: WRITE | BITMAP | SLOW, keys: (2, -1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(3), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "bitpos", arity: -3, flags: &["readonly"], categories: READ | BITMAP | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "blmove", arity: 6, flags: &["write", "denyoom", "noscript", "blocking"], categories: WRITE | LIST | SLOW | BLOCKING, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "blmpop", arity: -5, flags: &["write", "blocking", "movablekeys"], categories: WRITE | LIST | SLOW | BLOCKING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "blpop", arity: -3, flags: &["write", "noscript", "blocking"], categories: WRITE | LIST | SLOW | BLOCKING, keys: (1, -2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }] },
    Meta { name: "brpop", arity: -3, flags: &["write", "noscript", "blocking"], categories: WRITE | LIST | SLOW | BLOCKING, keys: (1, -2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }] },
    Meta { name: "brpoplpush", arity: 4, flags: &["write", "denyoom", "noscript", "blocking"], categories: WRITE | LIST | SLOW | BLOCKING, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "bzmpop", arity: -5, flags: &["write", "blocking", "movablekeys"], categories: WRITE | SORTEDSET | SLOW | BLOCKING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "bzpopmax", arity: -3, flags: &["write", "noscript", "blocking", "fast"], categories: WRITE | SORTEDSET | FAST | BLOCKING, keys: (1, -2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }] },
    Meta { name: "bzpopmin", arity: -3, flags: &["write", "noscript", "blocking", "fast"], categories: WRITE | SORTEDSET | FAST | BLOCKING, keys: (1, -2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }] },
    Meta { name: "client", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|caching", arity: 3, flags: &["noscript", "loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|getname", arity: 2, flags: &["noscript", "loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|getredir", arity: 2, flags: &["noscript", "loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|help", arity: 2, flags: &["loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|id", arity: 2, flags: &["noscript", "loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|info", arity: 2, flags: &["noscript", "loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "client|kill", arity: -3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|list", arity: -2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS | CONNECTION, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "client|no-evict", arity: 3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|pause", arity: -3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|reply", arity: 3, flags: &["noscript", "loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|setname", arity: 3, flags: &["noscript", "loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|tracking", arity: -3, flags: &["noscript", "loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|trackinginfo", arity: 2, flags: &["noscript", "loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|unblock", arity: -3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "client|unpause", arity: 2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|addslots", arity: -3, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|addslotsrange", arity: -4, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|bumpepoch", arity: 2, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "cluster|count-failure-reports", arity: 3, flags: &["admin", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "cluster|countkeysinslot", arity: 3, flags: &["stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|delslots", arity: -3, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|delslotsrange", arity: -4, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|failover", arity: -2, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|flushslots", arity: 2, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|forget", arity: 3, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|getkeysinslot", arity: 4, flags: &["stale"], categories: SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "cluster|help", arity: 2, flags: &["loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|info", arity: 2, flags: &["stale"], categories: SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "cluster|keyslot", arity: 3, flags: &["stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|links", arity: 2, flags: &["stale"], categories: SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "cluster|meet", arity: -4, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|myid", arity: 2, flags: &["stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|nodes", arity: 2, flags: &["stale"], categories: SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "cluster|replicas", arity: 3, flags: &["admin", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "cluster|replicate", arity: 3, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|reset", arity: -2, flags: &["admin", "noscript", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|saveconfig", arity: 2, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|set-config-epoch", arity: 3, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|setslot", arity: -4, flags: &["admin", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "cluster|shards", arity: 2, flags: &["stale"], categories: SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "cluster|slaves", arity: 3, flags: &["admin", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "cluster|slots", arity: 2, flags: &["stale"], categories: SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "command", arity: -1, flags: &["loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &["nondeterministic_output_order"], key_specs: &[] },
    Meta { name: "command|count", arity: 2, flags: &["loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "command|docs", arity: -2, flags: &["loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &["nondeterministic_output_order"], key_specs: &[] },
    Meta { name: "command|getkeys", arity: -4, flags: &["loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "command|getkeysandflags", arity: -4, flags: &["loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "command|help", arity: 2, flags: &["loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "command|info", arity: -2, flags: &["loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &["nondeterministic_output_order"], key_specs: &[] },
    Meta { name: "command|list", arity: -2, flags: &["loading", "stale"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &["nondeterministic_output_order"], key_specs: &[] },
    Meta { name: "config", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "config|get", arity: -3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "config|help", arity: 2, flags: &["loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "config|resetstat", arity: 2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "config|rewrite", arity: 2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "config|set", arity: -4, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["request_policy:all_nodes", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "copy", arity: -3, flags: &["write", "denyoom"], categories: KEYSPACE | WRITE | SLOW, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "dbsize", arity: 1, flags: &["readonly", "fast"], categories: KEYSPACE | READ | FAST, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:agg_sum"], key_specs: &[] },
    Meta { name: "debug", arity: -2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "decr", arity: 2, flags: &["write", "denyoom", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "decrby", arity: 3, flags: &["write", "denyoom", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "del", arity: -2, flags: &["write"], categories: KEYSPACE | WRITE | SLOW, keys: (1, -1, 1), tips: &["request_policy:multi_shard", "response_policy:agg_sum"], key_specs: &[KeySpec { notes: None, flags: &["RM", "delete"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "discard", arity: 1, flags: &["noscript", "loading", "stale", "fast", "allow_busy"], categories: FAST | TRANSACTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "dump", arity: 2, flags: &["readonly"], categories: KEYSPACE | READ | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "echo", arity: 2, flags: &["loading", "stale", "fast"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "eval", arity: -3, flags: &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: Some("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"), flags: &["RW", "access", "update"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "eval_ro", arity: -3, flags: &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: Some("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"), flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "evalsha", arity: -3, flags: &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "evalsha_ro", arity: -3, flags: &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "exec", arity: 1, flags: &["noscript", "loading", "stale", "skip_slowlog"], categories: SLOW | TRANSACTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "exists", arity: -2, flags: &["readonly", "fast"], categories: KEYSPACE | READ | FAST, keys: (1, -1, 1), tips: &["request_policy:multi_shard", "response_policy:agg_sum"], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "expire", arity: -3, flags: &["write", "fast"], categories: KEYSPACE | WRITE | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "expireat", arity: -3, flags: &["write", "fast"], categories: KEYSPACE | WRITE | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "expiretime", arity: 2, flags: &["readonly", "fast"], categories: KEYSPACE | READ | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "failover", arity: -1, flags: &["admin", "noscript", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "fcall", arity: -3, flags: &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: Some("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"), flags: &["RW", "access", "update"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "fcall_ro", arity: -3, flags: &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: Some("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"), flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "flushall", arity: -1, flags: &["write"], categories: KEYSPACE | WRITE | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "flushdb", arity: -1, flags: &["write"], categories: KEYSPACE | WRITE | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "function", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "function|delete", arity: 3, flags: &["write", "noscript"], categories: WRITE | SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "function|dump", arity: 2, flags: &["noscript"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "function|flush", arity: -2, flags: &["write", "noscript"], categories: WRITE | SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "function|help", arity: 2, flags: &["loading", "stale"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "function|kill", arity: 2, flags: &["noscript", "allow_busy"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:one_succeeded"], key_specs: &[] },
    Meta { name: "function|list", arity: -2, flags: &["noscript"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["nondeterministic_output_order"], key_specs: &[] },
    Meta { name: "function|load", arity: -3, flags: &["write", "denyoom", "noscript"], categories: WRITE | SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "function|restore", arity: -3, flags: &["write", "denyoom", "noscript"], categories: WRITE | SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "function|stats", arity: 2, flags: &["noscript", "allow_busy"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], key_specs: &[] },
    Meta { name: "geoadd", arity: -5, flags: &["write", "denyoom"], categories: WRITE | GEO | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "geodist", arity: -4, flags: &["readonly"], categories: READ | GEO | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "geohash", arity: -2, flags: &["readonly"], categories: READ | GEO | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "geopos", arity: -2, flags: &["readonly"], categories: READ | GEO | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "georadius", arity: -6, flags: &["write", "denyoom", "movablekeys"], categories: WRITE | GEO | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Keyword("STORE", 6), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Keyword("STOREDIST", 6), find: Find::Range(0, 1, 0) }] },
    Meta { name: "georadius_ro", arity: -6, flags: &["readonly"], categories: READ | GEO | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "georadiusbymember", arity: -5, flags: &["write", "denyoom", "movablekeys"], categories: WRITE | GEO | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Keyword("STORE", 5), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Keyword("STOREDIST", 5), find: Find::Range(0, 1, 0) }] },
    Meta { name: "georadiusbymember_ro", arity: -5, flags: &["readonly"], categories: READ | GEO | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "geosearch", arity: -7, flags: &["readonly"], categories: READ | GEO | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "geosearchstore", arity: -8, flags: &["write", "denyoom"], categories: WRITE | GEO | SLOW, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "get", arity: 2, flags: &["readonly", "fast"], categories: READ | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "getbit", arity: 3, flags: &["readonly", "fast"], categories: READ | BITMAP | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "getdel", arity: 2, flags: &["write", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "getex", arity: -2, flags: &["write", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: Some("RW and UPDATE because it changes the TTL"), flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "getrange", arity: 4, flags: &["readonly"], categories: READ | STRING | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "getset", arity: 3, flags: &["write", "denyoom", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hdel", arity: -3, flags: &["write", "fast"], categories: WRITE | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hello", arity: -1, flags: &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "hexists", arity: 3, flags: &["readonly", "fast"], categories: READ | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hget", arity: 3, flags: &["readonly", "fast"], categories: READ | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hgetall", arity: 2, flags: &["readonly"], categories: READ | HASH | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output_order"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hincrby", arity: 4, flags: &["write", "denyoom", "fast"], categories: WRITE | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hincrbyfloat", arity: 4, flags: &["write", "denyoom", "fast"], categories: WRITE | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hkeys", arity: 2, flags: &["readonly"], categories: READ | HASH | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output_order"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hlen", arity: 2, flags: &["readonly", "fast"], categories: READ | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hmget", arity: -3, flags: &["readonly", "fast"], categories: READ | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hmset", arity: -4, flags: &["write", "denyoom", "fast"], categories: WRITE | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hrandfield", arity: -2, flags: &["readonly"], categories: READ | HASH | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hscan", arity: -3, flags: &["readonly"], categories: READ | HASH | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hset", arity: -4, flags: &["write", "denyoom", "fast"], categories: WRITE | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hsetnx", arity: 4, flags: &["write", "denyoom", "fast"], categories: WRITE | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hstrlen", arity: 3, flags: &["readonly", "fast"], categories: READ | HASH | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "hvals", arity: 2, flags: &["readonly"], categories: READ | HASH | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output_order"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "incr", arity: 2, flags: &["write", "denyoom", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "incrby", arity: 3, flags: &["write", "denyoom", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "incrbyfloat", arity: 3, flags: &["write", "denyoom", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "info", arity: -1, flags: &["loading", "stale"], categories: SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], key_specs: &[] },
    Meta { name: "keys", arity: 2, flags: &["readonly"], categories: KEYSPACE | READ | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["request_policy:all_shards", "nondeterministic_output_order"], key_specs: &[] },
    Meta { name: "lastsave", arity: 1, flags: &["loading", "stale", "fast"], categories: ADMIN | FAST | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "latency", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "latency|doctor", arity: 2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], key_specs: &[] },
    Meta { name: "latency|graph", arity: 3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], key_specs: &[] },
    Meta { name: "latency|help", arity: 2, flags: &["loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "latency|histogram", arity: -2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], key_specs: &[] },
    Meta { name: "latency|history", arity: 3, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], key_specs: &[] },
    Meta { name: "latency|latest", arity: 2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], key_specs: &[] },
    Meta { name: "latency|reset", arity: -2, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["request_policy:all_nodes", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "lcs", arity: -3, flags: &["readonly"], categories: READ | STRING | SLOW, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(1, 1, 0) }] },
    Meta { name: "lindex", arity: 3, flags: &["readonly"], categories: READ | LIST | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "linsert", arity: 5, flags: &["write", "denyoom"], categories: WRITE | LIST | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "llen", arity: 2, flags: &["readonly", "fast"], categories: READ | LIST | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "lmove", arity: 5, flags: &["write", "denyoom"], categories: WRITE | LIST | SLOW, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "lmpop", arity: -4, flags: &["write", "movablekeys"], categories: WRITE | LIST | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "lolwut", arity: -1, flags: &["readonly", "fast"], categories: READ | FAST, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "lpop", arity: -2, flags: &["write", "fast"], categories: WRITE | LIST | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "lpos", arity: -3, flags: &["readonly"], categories: READ | LIST | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "lpush", arity: -3, flags: &["write", "denyoom", "fast"], categories: WRITE | LIST | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "lpushx", arity: -3, flags: &["write", "denyoom", "fast"], categories: WRITE | LIST | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "lrange", arity: 4, flags: &["readonly"], categories: READ | LIST | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "lrem", arity: 4, flags: &["write"], categories: WRITE | LIST | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "lset", arity: 4, flags: &["write", "denyoom"], categories: WRITE | LIST | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "ltrim", arity: 4, flags: &["write"], categories: WRITE | LIST | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "memory", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "memory|doctor", arity: 2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], key_specs: &[] },
    Meta { name: "memory|help", arity: 2, flags: &["loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "memory|malloc-stats", arity: 2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], key_specs: &[] },
    Meta { name: "memory|purge", arity: 2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "memory|stats", arity: 2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], key_specs: &[] },
    Meta { name: "memory|usage", arity: -3, flags: &["readonly"], categories: READ | SLOW, keys: (2, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "mget", arity: -2, flags: &["readonly", "fast"], categories: READ | STRING | FAST, keys: (1, -1, 1), tips: &["request_policy:multi_shard"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "migrate", arity: -6, flags: &["write", "movablekeys"], categories: KEYSPACE | WRITE | SLOW | DANGEROUS, keys: (3, 3, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(3), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RW", "access", "delete", "incomplete"], begin: Begin::Keyword("KEYS", -2), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "module", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "module|help", arity: 2, flags: &["loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "module|list", arity: 2, flags: &["admin", "noscript"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["nondeterministic_output_order"], key_specs: &[] },
    Meta { name: "module|load", arity: -3, flags: &["admin", "noscript", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "module|loadex", arity: -3, flags: &["admin", "noscript", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "module|unload", arity: 3, flags: &["admin", "noscript", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "monitor", arity: 1, flags: &["admin", "noscript", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "move", arity: 3, flags: &["write", "fast"], categories: KEYSPACE | WRITE | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "mset", arity: -3, flags: &["write", "denyoom"], categories: WRITE | STRING | SLOW, keys: (1, -1, 2), tips: &["request_policy:multi_shard", "response_policy:all_succeeded"], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(-1, 2, 0) }] },
    Meta { name: "msetnx", arity: -3, flags: &["write", "denyoom"], categories: WRITE | STRING | SLOW, keys: (1, -1, 2), tips: &["request_policy:multi_shard", "response_policy:agg_min"], key_specs: &[KeySpec { notes: None, flags: &["OW", "insert"], begin: Begin::Index(1), find: Find::Range(-1, 2, 0) }] },
    Meta { name: "multi", arity: 1, flags: &["noscript", "loading", "stale", "fast", "allow_busy"], categories: FAST | TRANSACTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "object", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "object|encoding", arity: 3, flags: &["readonly"], categories: KEYSPACE | READ | SLOW, keys: (2, 2, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "object|freq", arity: 3, flags: &["readonly"], categories: KEYSPACE | READ | SLOW, keys: (2, 2, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "object|help", arity: 2, flags: &["loading", "stale"], categories: KEYSPACE | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "object|idletime", arity: 3, flags: &["readonly"], categories: KEYSPACE | READ | SLOW, keys: (2, 2, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "object|refcount", arity: 3, flags: &["readonly"], categories: KEYSPACE | READ | SLOW, keys: (2, 2, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "persist", arity: 2, flags: &["write", "fast"], categories: KEYSPACE | WRITE | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "pexpire", arity: -3, flags: &["write", "fast"], categories: KEYSPACE | WRITE | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "pexpireat", arity: -3, flags: &["write", "fast"], categories: KEYSPACE | WRITE | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "pexpiretime", arity: 2, flags: &["readonly", "fast"], categories: KEYSPACE | READ | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "pfadd", arity: -2, flags: &["write", "denyoom", "fast"], categories: WRITE | HYPERLOGLOG | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "pfcount", arity: -2, flags: &["readonly"], categories: READ | HYPERLOGLOG | SLOW, keys: (1, -1, 1), tips: &[], key_specs: &[KeySpec { notes: Some("RW because it may change the internal representation of the key, and propagate to replicas"), flags: &["RW", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "pfdebug", arity: 3, flags: &["write", "denyoom", "admin"], categories: WRITE | HYPERLOGLOG | ADMIN | SLOW | DANGEROUS, keys: (2, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "pfmerge", arity: -2, flags: &["write", "denyoom"], categories: WRITE | HYPERLOGLOG | SLOW, keys: (1, -1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "pfselftest", arity: 1, flags: &["admin"], categories: HYPERLOGLOG | ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "ping", arity: -1, flags: &["fast"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "psetex", arity: 4, flags: &["write", "denyoom"], categories: WRITE | STRING | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "psubscribe", arity: -2, flags: &["pubsub", "noscript", "loading", "stale"], categories: PUBSUB | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "psync", arity: -3, flags: &["admin", "noscript", "no_async_loading", "no_multi"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "pttl", arity: 2, flags: &["readonly", "fast"], categories: KEYSPACE | READ | FAST, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "publish", arity: 3, flags: &["pubsub", "loading", "stale", "fast"], categories: PUBSUB | FAST, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "pubsub", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "pubsub|channels", arity: -2, flags: &["pubsub", "loading", "stale"], categories: PUBSUB | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "pubsub|help", arity: 2, flags: &["loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "pubsub|numpat", arity: 2, flags: &["pubsub", "loading", "stale"], categories: PUBSUB | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "pubsub|numsub", arity: -2, flags: &["pubsub", "loading", "stale"], categories: PUBSUB | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "pubsub|shardchannels", arity: -2, flags: &["pubsub", "loading", "stale"], categories: PUBSUB | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "pubsub|shardnumsub", arity: -2, flags: &["pubsub", "loading", "stale"], categories: PUBSUB | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "punsubscribe", arity: -1, flags: &["pubsub", "noscript", "loading", "stale"], categories: PUBSUB | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "quit", arity: -1, flags: &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "randomkey", arity: 1, flags: &["readonly"], categories: KEYSPACE | READ | SLOW, keys: (0, 0, 0), tips: &["request_policy:all_shards", "nondeterministic_output"], key_specs: &[] },
    Meta { name: "readonly", arity: 1, flags: &["loading", "stale", "fast"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "readwrite", arity: 1, flags: &["loading", "stale", "fast"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "rename", arity: 3, flags: &["write"], categories: KEYSPACE | WRITE | SLOW, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "renamenx", arity: 3, flags: &["write", "fast"], categories: KEYSPACE | WRITE | FAST, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["OW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "replconf", arity: -1, flags: &["admin", "noscript", "loading", "stale", "allow_busy"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "replicaof", arity: 3, flags: &["admin", "noscript", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "reset", arity: 1, flags: &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "restore", arity: -4, flags: &["write", "denyoom"], categories: KEYSPACE | WRITE | SLOW | DANGEROUS, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "restore-asking", arity: -4, flags: &["write", "denyoom", "asking"], categories: KEYSPACE | WRITE | SLOW | DANGEROUS, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "role", arity: 1, flags: &["noscript", "loading", "stale", "fast"], categories: ADMIN | FAST | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "rpop", arity: -2, flags: &["write", "fast"], categories: WRITE | LIST | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "rpoplpush", arity: 3, flags: &["write", "denyoom"], categories: WRITE | LIST | SLOW, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "rpush", arity: -3, flags: &["write", "denyoom", "fast"], categories: WRITE | LIST | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "rpushx", arity: -3, flags: &["write", "denyoom", "fast"], categories: WRITE | LIST | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "sadd", arity: -3, flags: &["write", "denyoom", "fast"], categories: WRITE | SET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "save", arity: 1, flags: &["admin", "noscript", "no_async_loading", "no_multi"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "scan", arity: -2, flags: &["readonly"], categories: KEYSPACE | READ | SLOW, keys: (0, 0, 0), tips: &["nondeterministic_output", "request_policy:special"], key_specs: &[] },
    Meta { name: "scard", arity: 2, flags: &["readonly", "fast"], categories: READ | SET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "script", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "script|debug", arity: 3, flags: &["noscript"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "script|exists", arity: -3, flags: &["noscript"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:agg_logical_and"], key_specs: &[] },
    Meta { name: "script|flush", arity: -2, flags: &["noscript"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["request_policy:all_nodes", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "script|help", arity: 2, flags: &["loading", "stale"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "script|kill", arity: 2, flags: &["noscript", "allow_busy"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:one_succeeded"], key_specs: &[] },
    Meta { name: "script|load", arity: 3, flags: &["noscript", "stale"], categories: SLOW | SCRIPTING, keys: (0, 0, 0), tips: &["request_policy:all_nodes", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "sdiff", arity: -2, flags: &["readonly"], categories: READ | SET | SLOW, keys: (1, -1, 1), tips: &["nondeterministic_output_order"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "sdiffstore", arity: -3, flags: &["write", "denyoom"], categories: WRITE | SET | SLOW, keys: (1, -1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "select", arity: 2, flags: &["loading", "stale", "fast"], categories: FAST | CONNECTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "set", arity: -3, flags: &["write", "denyoom"], categories: WRITE | STRING | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: Some("RW and ACCESS due to the optional `GET` argument"), flags: &["RW", "access", "update", "variable_flags"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "setbit", arity: 4, flags: &["write", "denyoom"], categories: WRITE | BITMAP | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "setex", arity: 4, flags: &["write", "denyoom"], categories: WRITE | STRING | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "setnx", arity: 3, flags: &["write", "denyoom", "fast"], categories: WRITE | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "setrange", arity: 4, flags: &["write", "denyoom"], categories: WRITE | STRING | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "shutdown", arity: -1, flags: &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "sinter", arity: -2, flags: &["readonly"], categories: READ | SET | SLOW, keys: (1, -1, 1), tips: &["nondeterministic_output_order"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "sintercard", arity: -3, flags: &["readonly", "movablekeys"], categories: READ | SET | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "sinterstore", arity: -3, flags: &["write", "denyoom"], categories: WRITE | SET | SLOW, keys: (1, -1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "sismember", arity: 3, flags: &["readonly", "fast"], categories: READ | SET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "slaveof", arity: 3, flags: &["admin", "noscript", "stale", "no_async_loading"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "slowlog", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "slowlog|get", arity: -2, flags: &["admin", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["request_policy:all_nodes", "nondeterministic_output"], key_specs: &[] },
    Meta { name: "slowlog|help", arity: 2, flags: &["loading", "stale"], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "slowlog|len", arity: 2, flags: &["admin", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"], key_specs: &[] },
    Meta { name: "slowlog|reset", arity: 2, flags: &["admin", "loading", "stale"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &["request_policy:all_nodes", "response_policy:all_succeeded"], key_specs: &[] },
    Meta { name: "smembers", arity: 2, flags: &["readonly"], categories: READ | SET | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output_order"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "smismember", arity: -3, flags: &["readonly", "fast"], categories: READ | SET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "smove", arity: 4, flags: &["write", "fast"], categories: WRITE | SET | FAST, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "sort", arity: -2, flags: &["write", "denyoom", "movablekeys"], categories: WRITE | SET | SORTEDSET | LIST | SLOW | DANGEROUS, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: Some("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"), flags: &["RO", "access"], begin: Begin::Unknown, find: Find::Unknown }, KeySpec { notes: Some("For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array"), flags: &["OW", "update"], begin: Begin::Unknown, find: Find::Unknown }] },
    Meta { name: "sort_ro", arity: -2, flags: &["readonly", "movablekeys"], categories: READ | SET | SORTEDSET | LIST | SLOW | DANGEROUS, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: Some("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"), flags: &["RO", "access"], begin: Begin::Unknown, find: Find::Unknown }] },
    Meta { name: "spop", arity: -2, flags: &["write", "fast"], categories: WRITE | SET | FAST, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "spublish", arity: 3, flags: &["pubsub", "loading", "stale", "fast"], categories: PUBSUB | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["not_key"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "srandmember", arity: -2, flags: &["readonly"], categories: READ | SET | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "srem", arity: -3, flags: &["write", "fast"], categories: WRITE | SET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "sscan", arity: -3, flags: &["readonly"], categories: READ | SET | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "ssubscribe", arity: -2, flags: &["pubsub", "noscript", "loading", "stale"], categories: PUBSUB | SLOW, keys: (1, -1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["not_key"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "strlen", arity: 2, flags: &["readonly", "fast"], categories: READ | STRING | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "subscribe", arity: -2, flags: &["pubsub", "noscript", "loading", "stale"], categories: PUBSUB | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "substr", arity: 4, flags: &["readonly"], categories: READ | STRING | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "sunion", arity: -2, flags: &["readonly"], categories: READ | SET | SLOW, keys: (1, -1, 1), tips: &["nondeterministic_output_order"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "sunionstore", arity: -3, flags: &["write", "denyoom"], categories: WRITE | SET | SLOW, keys: (1, -1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "sunsubscribe", arity: -1, flags: &["pubsub", "noscript", "loading", "stale"], categories: PUBSUB | SLOW, keys: (1, -1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["not_key"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "swapdb", arity: 3, flags: &["write", "fast"], categories: KEYSPACE | WRITE | FAST | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "sync", arity: 1, flags: &["admin", "noscript", "no_async_loading", "no_multi"], categories: ADMIN | SLOW | DANGEROUS, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "time", arity: 1, flags: &["loading", "stale", "fast"], categories: FAST, keys: (0, 0, 0), tips: &["nondeterministic_output"], key_specs: &[] },
    Meta { name: "touch", arity: -2, flags: &["readonly", "fast"], categories: KEYSPACE | READ | FAST, keys: (1, -1, 1), tips: &["request_policy:multi_shard", "response_policy:agg_sum"], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "ttl", arity: 2, flags: &["readonly", "fast"], categories: KEYSPACE | READ | FAST, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "type", arity: 2, flags: &["readonly", "fast"], categories: KEYSPACE | READ | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "unlink", arity: -2, flags: &["write", "fast"], categories: KEYSPACE | WRITE | FAST, keys: (1, -1, 1), tips: &["request_policy:multi_shard", "response_policy:agg_sum"], key_specs: &[KeySpec { notes: None, flags: &["RM", "delete"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "unsubscribe", arity: -1, flags: &["pubsub", "noscript", "loading", "stale"], categories: PUBSUB | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "unwatch", arity: 1, flags: &["noscript", "loading", "stale", "fast", "allow_busy"], categories: FAST | TRANSACTION, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "wait", arity: 3, flags: &["noscript"], categories: SLOW | CONNECTION, keys: (0, 0, 0), tips: &["request_policy:all_shards", "response_policy:agg_min"], key_specs: &[] },
    Meta { name: "watch", arity: -2, flags: &["noscript", "loading", "stale", "fast", "allow_busy"], categories: FAST | TRANSACTION, keys: (1, -1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }] },
    Meta { name: "xack", arity: -4, flags: &["write", "fast"], categories: WRITE | STREAM | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xadd", arity: -5, flags: &["write", "denyoom", "fast"], categories: WRITE | STREAM | FAST, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: Some("UPDATE instead of INSERT because of the optional trimming feature"), flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xautoclaim", arity: -6, flags: &["write", "fast"], categories: WRITE | STREAM | FAST, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xclaim", arity: -6, flags: &["write", "fast"], categories: WRITE | STREAM | FAST, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xdel", arity: -3, flags: &["write", "fast"], categories: WRITE | STREAM | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xgroup", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "xgroup|create", arity: -5, flags: &["write", "denyoom"], categories: WRITE | STREAM | SLOW, keys: (2, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xgroup|createconsumer", arity: 5, flags: &["write", "denyoom"], categories: WRITE | STREAM | SLOW, keys: (2, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xgroup|delconsumer", arity: 5, flags: &["write"], categories: WRITE | STREAM | SLOW, keys: (2, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xgroup|destroy", arity: 4, flags: &["write"], categories: WRITE | STREAM | SLOW, keys: (2, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xgroup|help", arity: 2, flags: &["loading", "stale"], categories: STREAM | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "xgroup|setid", arity: -5, flags: &["write"], categories: WRITE | STREAM | SLOW, keys: (2, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xinfo", arity: -2, flags: &[], categories: SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "xinfo|consumers", arity: 4, flags: &["readonly"], categories: READ | STREAM | SLOW, keys: (2, 2, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xinfo|groups", arity: 3, flags: &["readonly"], categories: READ | STREAM | SLOW, keys: (2, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xinfo|help", arity: 2, flags: &["loading", "stale"], categories: STREAM | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[] },
    Meta { name: "xinfo|stream", arity: -3, flags: &["readonly"], categories: READ | STREAM | SLOW, keys: (2, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xlen", arity: 2, flags: &["readonly", "fast"], categories: READ | STREAM | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xpending", arity: -3, flags: &["readonly"], categories: READ | STREAM | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xrange", arity: -4, flags: &["readonly"], categories: READ | STREAM | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xread", arity: -4, flags: &["readonly", "blocking", "movablekeys"], categories: READ | STREAM | SLOW | BLOCKING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Keyword("STREAMS", 1), find: Find::Range(-1, 1, 2) }] },
    Meta { name: "xreadgroup", arity: -7, flags: &["write", "blocking", "movablekeys"], categories: WRITE | STREAM | SLOW | BLOCKING, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Keyword("STREAMS", 4), find: Find::Range(-1, 1, 2) }] },
    Meta { name: "xrevrange", arity: -4, flags: &["readonly"], categories: READ | STREAM | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xsetid", arity: -3, flags: &["write", "denyoom", "fast"], categories: WRITE | STREAM | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "xtrim", arity: -4, flags: &["write"], categories: WRITE | STREAM | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zadd", arity: -4, flags: &["write", "denyoom", "fast"], categories: WRITE | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zcard", arity: 2, flags: &["readonly", "fast"], categories: READ | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zcount", arity: 4, flags: &["readonly", "fast"], categories: READ | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zdiff", arity: -3, flags: &["readonly", "movablekeys"], categories: READ | SORTEDSET | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "zdiffstore", arity: -4, flags: &["write", "denyoom", "movablekeys"], categories: WRITE | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "zincrby", arity: 4, flags: &["write", "denyoom", "fast"], categories: WRITE | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zinter", arity: -3, flags: &["readonly", "movablekeys"], categories: READ | SORTEDSET | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "zintercard", arity: -3, flags: &["readonly", "movablekeys"], categories: READ | SORTEDSET | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "zinterstore", arity: -4, flags: &["write", "denyoom", "movablekeys"], categories: WRITE | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "zlexcount", arity: 4, flags: &["readonly", "fast"], categories: READ | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zmpop", arity: -4, flags: &["write", "movablekeys"], categories: WRITE | SORTEDSET | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "zmscore", arity: -3, flags: &["readonly", "fast"], categories: READ | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zpopmax", arity: -2, flags: &["write", "fast"], categories: WRITE | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zpopmin", arity: -2, flags: &["write", "fast"], categories: WRITE | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrandmember", arity: -2, flags: &["readonly"], categories: READ | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrange", arity: -4, flags: &["readonly"], categories: READ | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrangebylex", arity: -4, flags: &["readonly"], categories: READ | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrangebyscore", arity: -4, flags: &["readonly"], categories: READ | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrangestore", arity: -5, flags: &["write", "denyoom"], categories: WRITE | SORTEDSET | SLOW, keys: (1, 2, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrank", arity: 3, flags: &["readonly", "fast"], categories: READ | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrem", arity: -3, flags: &["write", "fast"], categories: WRITE | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zremrangebylex", arity: 4, flags: &["write"], categories: WRITE | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zremrangebyrank", arity: 4, flags: &["write"], categories: WRITE | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zremrangebyscore", arity: 4, flags: &["write"], categories: WRITE | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrevrange", arity: -4, flags: &["readonly"], categories: READ | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrevrangebylex", arity: -4, flags: &["readonly"], categories: READ | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrevrangebyscore", arity: -4, flags: &["readonly"], categories: READ | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zrevrank", arity: 3, flags: &["readonly", "fast"], categories: READ | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zscan", arity: -3, flags: &["readonly"], categories: READ | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &["nondeterministic_output"], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zscore", arity: 3, flags: &["readonly", "fast"], categories: READ | SORTEDSET | FAST, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }] },
    Meta { name: "zunion", arity: -3, flags: &["readonly", "movablekeys"], categories: READ | SORTEDSET | SLOW, keys: (0, 0, 0), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }] },
    Meta { name: "zunionstore", arity: -4, flags: &["write", "denyoom", "movablekeys"], categories: WRITE | SORTEDSET | SLOW, keys: (1, 1, 1), tips: &[], key_specs: &[KeySpec { notes: None, flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: None, flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }] },
];

/// Where `name` (lower case: `cmd` or `cmd|sub`) is in [`COMMANDS`].
pub fn index(name: &str) -> Option<usize> {
    COMMANDS.binary_search_by(|m| m.name.cmp(name)).ok()
}

/// What Redis 7.0 says of `name` (lower case).
pub fn get(name: &str) -> Option<&'static Meta> {
    index(name).map(|i| &COMMANDS[i])
}

/// The bit of category `name` (any case, without `@`); `all` is every bit.
pub fn category(name: &str) -> Option<Categories> {
    if name.eq_ignore_ascii_case("all") {
        return Some(Categories::MAX);
    }
    NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// The names of the categories in `bits`, in `ACL CAT`'s order.
pub fn category_names(bits: Categories) -> impl Iterator<Item = &'static str> {
    NAMES
        .iter()
        .enumerate()
        .filter(move |(i, _)| bits & (1 << i) != 0)
        .map(|(_, n)| *n)
}

/// What a request runs as Redis names it: `config|get` for a subcommand Redis knows, else
/// the command's own name; and where that is in [`COMMANDS`].
pub fn of_request(name: &str, args: &resp_wire::Args<'_>) -> (String, Option<usize>) {
    if args.len() >= 2 && !subcommands(name).is_empty() {
        let sub = String::from_utf8_lossy(args.get(1)).to_ascii_lowercase();
        let full = format!("{name}|{sub}");
        if let Some(i) = index(&full) {
            return (full, Some(i));
        }
    }
    (name.to_owned(), index(name))
}

/// The subcommands of `name` (`config|get`, ...), in name order.
pub fn subcommands(name: &str) -> &'static [Meta] {
    let start = COMMANDS.partition_point(|m| m.name <= name);
    let len = COMMANDS[start..]
        .iter()
        .take_while(|m| {
            m.name.len() > name.len()
                && m.name.starts_with(name)
                && m.name.as_bytes()[name.len()] == b'|'
        })
        .count();
    &COMMANDS[start..start + len]
}

impl Meta {
    /// The keys a request names, as Redis's key specs find them: each key's position, and
    /// its flags (`RO`, `access`, `update`, ...). Specs Redis marks `unknown` find nothing; a
    /// spec that points outside the request (a bad count) makes the request name no keys, as
    /// in Redis.
    pub fn keys(&self, args: &resp_wire::Args<'_>) -> Vec<(usize, &'static [&'static str])> {
        let argc = args.len() as i64;
        let mut found = Vec::new();
        for spec in self.key_specs {
            let Some(start) = spec.begin.start(args) else {
                continue;
            };
            let (first, last, step) = match spec.find {
                Find::Range(last, step, limit) => {
                    let last = if last >= 0 {
                        start + last
                    } else if limit <= 1 {
                        argc + last
                    } else {
                        start + (argc - start) / limit + last
                    };
                    (start, last, step)
                }
                Find::Keynum(idx, first, step) => {
                    let count = usize::try_from(start + idx)
                        .ok()
                        .filter(|&i| i < args.len())
                        .and_then(|i| resp_wire::parse_i64(args.get(i)))
                        .filter(|&n| n >= 0);
                    let Some(n) = count else {
                        return Vec::new();
                    };
                    (start + first, start + first + n - 1, step)
                }
                Find::Unknown => continue,
            };
            if first < 1 || first >= argc || last >= argc || last < first {
                return Vec::new();
            }
            let flags = self.variable_flags(spec, args);
            let mut i = first;
            while i <= last {
                found.push((i as usize, flags));
                i += step.max(1);
            }
        }
        found
    }

    /// A spec's flags; for the two commands whose flags depend on their options, the ones
    /// Redis gives this request: `SET` reads its key only with `GET`, `BITFIELD` writes only
    /// with `SET` or `INCRBY`.
    fn variable_flags(
        &self,
        spec: &KeySpec,
        args: &resp_wire::Args<'_>,
    ) -> &'static [&'static str] {
        if !spec.flags.contains(&"variable_flags") {
            return spec.flags;
        }
        let has = |word: &str| {
            args.iter()
                .skip(2)
                .any(|a| a.eq_ignore_ascii_case(word.as_bytes()))
        };
        match self.name {
            "set" if !has("get") => &["OW", "update"],
            "bitfield" if !has("set") && !has("incrby") => &["RO", "access"],
            _ => &["RW", "access", "update"],
        }
    }
}

impl Begin {
    /// Where the search starts in `args`, if it finds a place.
    fn start(self, args: &resp_wire::Args<'_>) -> Option<i64> {
        let argc = args.len() as i64;
        match self {
            Begin::Index(i) => Some(i),
            Begin::Keyword(kw, from) => {
                let at = |i: i64| args.get(i as usize).eq_ignore_ascii_case(kw.as_bytes());
                let found = if from >= 0 {
                    (from..argc).find(|&i| at(i))
                } else {
                    (1..=argc + from).rev().find(|&i| at(i))
                };
                found.map(|i| i + 1)
            }
            Begin::Unknown => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn categories_of(name: &str) -> Categories {
        get(name).map_or(0, |m| m.categories)
    }

    #[test]
    fn sorted_unique_and_lower_case() {
        for w in COMMANDS.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
        assert!(COMMANDS
            .iter()
            .all(|m| m.name == m.name.to_ascii_lowercase()));
    }

    #[test]
    fn every_served_command_is_known() {
        for c in super::super::table::COMMANDS {
            let m = get(c.name).unwrap_or_else(|| panic!("{} is not a Redis 7.0 command", c.name));
            assert_ne!(m.categories, 0, "{}", c.name);
            assert_eq!(m.arity, c.arity, "{}", c.name);
        }
    }

    #[test]
    fn lookups_as_redis_7_0() {
        assert_eq!(categories_of("get"), READ | STRING | FAST);
        assert_eq!(categories_of("set"), WRITE | STRING | SLOW);
        assert_eq!(categories_of("config|get"), ADMIN | SLOW | DANGEROUS);
        assert_eq!(categories_of("nosuch"), 0);
        assert_eq!(category("@x"), None);
        assert_eq!(category("STRING"), Some(STRING));
        assert_eq!(
            category_names(READ | FAST).collect::<Vec<_>>(),
            ["read", "fast"]
        );
        assert!(subcommands("config").iter().any(|m| m.name == "config|get"));
        assert!(subcommands("get").is_empty() && subcommands("zzz").is_empty());
        let get_spec = get("get").map(|m| m.key_specs[0]);
        assert_eq!(
            get_spec.map(|k| (k.begin, k.find)),
            Some((Begin::Index(1), Find::Range(0, 1, 0)))
        );
    }

    fn positions(name: &str, request: &[&str]) -> Vec<usize> {
        let owned = resp_wire::OwnedArgs::from_parts(request);
        let m = get(name).unwrap();
        m.keys(&owned.args()).into_iter().map(|(i, _)| i).collect()
    }

    #[test]
    fn keys_found_by_the_key_specs() {
        assert_eq!(positions("get", &["get", "k"]), [1]);
        assert_eq!(positions("mset", &["mset", "a", "1", "b", "2"]), [1, 3]);
        assert_eq!(
            positions("eval", &["eval", "s", "2", "a", "b", "c"]),
            [3, 4]
        );
        assert_eq!(
            positions("eval", &["eval", "s", "0", "a"]),
            Vec::<usize>::new()
        );
        assert_eq!(positions("eval", &["eval", "s", "x"]), Vec::<usize>::new());
        assert_eq!(
            positions("eval", &["eval", "s", "9", "a"]),
            Vec::<usize>::new()
        );
        assert_eq!(
            positions("object|encoding", &["object", "encoding", "k"]),
            [2]
        );
        assert_eq!(
            positions(
                "migrate",
                &["migrate", "h", "p", "", "0", "5", "KEYS", "a", "b"]
            ),
            [3, 7, 8]
        );
        assert_eq!(
            positions("bitop", &["bitop", "and", "d", "s1", "s2"]),
            [2, 3, 4]
        );
        let set = get("set").unwrap();
        let flags = set.keys(&resp_wire::OwnedArgs::from_parts(&["set", "k", "v"]).args());
        assert_eq!(flags[0].1, ["OW", "update"]);
        let flags = set.keys(&resp_wire::OwnedArgs::from_parts(&["set", "k", "v", "get"]).args());
        assert_eq!(flags[0].1, ["RW", "access", "update"]);
    }
}
