#[allow(dead_code, unused_imports)] // until main wires the options in
mod options;

fn main() {}
