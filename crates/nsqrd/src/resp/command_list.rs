//! COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]: the names of the
//! commands this server runs and of their subcommands (`config|get`), as Redis 7.0 lists
//! them. No module is loaded, so a MODULE filter lists nothing.

use resp_wire::Args;

use super::args::{is, SYNTAX};
use super::command_meta as meta;
use super::session::Ctx;
use super::table::COMMANDS;

/// What a name must satisfy to be listed.
enum Filter<'a> {
    All,
    Module,
    Category(Option<meta::Categories>),
    Pattern(&'a [u8]),
}

impl Filter<'_> {
    fn admits(&self, name: &str) -> bool {
        match self {
            Filter::All => true,
            Filter::Module => false,
            Filter::Category(None) => false,
            Filter::Category(Some(bit)) => meta::get(name).is_some_and(|m| m.categories & bit != 0),
            Filter::Pattern(p) => nsqr_kv::glob::matches(&p.to_ascii_lowercase(), name.as_bytes()),
        }
    }
}

pub fn list(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let filter = match a.len() {
        2 => Filter::All,
        5 if is(a.get(2), "filterby") => {
            let (kind, value) = (a.get(3), a.get(4));
            if is(kind, "module") {
                Filter::Module
            } else if is(kind, "aclcat") {
                let name = String::from_utf8_lossy(value);
                // `all` is a selector of ACL rules, not a category of its own.
                Filter::Category(meta::category(&name).filter(|&b| b != meta::Categories::MAX))
            } else if is(kind, "pattern") {
                Filter::Pattern(value)
            } else {
                return ctx.out.error(SYNTAX);
            }
        }
        _ => return ctx.out.error(SYNTAX),
    };
    let mut names: Vec<&str> = Vec::new();
    for c in COMMANDS {
        if filter.admits(c.name) {
            names.push(c.name);
        }
        for sub in meta::subcommands(c.name) {
            if filter.admits(sub.name) {
                names.push(sub.name);
            }
        }
    }
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
}
