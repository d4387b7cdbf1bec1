//! MODULE: no module can be loaded into this server. LIST answers none; LOAD, LOADEX and
//! UNLOAD get the answer Redis gives while `enable-module-command` is `no`.

use resp_wire::Args;

use super::introspection::help;
use super::session::Ctx;
use super::table::wrong_arity;

const HELP: [&str; 11] = [
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Prints this help.",
];

const NOT_ALLOWED: &str = "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

pub fn module(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1).to_ascii_lowercase();
    match (sub.as_slice(), a.len()) {
        (b"list", 2) => ctx.out.array(0),
        (b"help", 2) => help(ctx, &HELP),
        (b"load" | b"loadex", n) if n >= 3 => ctx.out.error(NOT_ALLOWED),
        (b"unload", 3) => ctx.out.error(NOT_ALLOWED),
        (b"list" | b"help" | b"load" | b"loadex" | b"unload", _) => {
            wrong_arity(ctx, &format!("module|{}", String::from_utf8_lossy(&sub)))
        }
        _ => ctx.out.error(&format!(
            "ERR unknown subcommand '{}'. Try MODULE HELP.",
            String::from_utf8_lossy(a.get(1))
        )),
    }
}
