// Not wired into the daemon yet: the entry points are used by the tests only.
#[allow(dead_code, unused_imports)]
mod http;

fn main() {}
