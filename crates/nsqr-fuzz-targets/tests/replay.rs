//! Every saved fuzz input, replayed on stable: `fuzz/corpus/<target>/` (the minimised corpus)
//! and `fuzz/regressions/<target>/` (every crash input ever found, kept forever) go through
//! the same function as the libFuzzer target, so `cargo test --workspace` fails if any of them
//! panics again.

use std::fs;
use std::path::{Path, PathBuf};

use nsqr_fuzz_targets::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The input files of one directory (dotfiles such as `.gitkeep` are not inputs).
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    files
}

fn replay(kind: &str) -> usize {
    let mut total = 0;
    for (name, target) in TARGETS {
        for file in inputs(&fuzz_dir().join(kind).join(name)) {
            let data = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let run = std::panic::catch_unwind(|| target(&data));
            assert!(run.is_ok(), "{name} fails on {}", file.display());
            total += 1;
        }
    }
    total
}

#[test]
fn the_corpus_replays() {
    for (name, _) in TARGETS {
        let n = inputs(&fuzz_dir().join("corpus").join(name)).len();
        assert!(n > 0, "fuzz/corpus/{name} is empty or missing");
    }
    let n = replay("corpus");
    eprintln!("replayed {n} corpus inputs");
}

#[test]
fn every_crash_ever_found_replays() {
    let n = replay("regressions");
    eprintln!("replayed {n} regression inputs");
}

/// The libFuzzer targets, the table and the corpus directories name the same targets, so
/// none is fuzzed without being replayed or replayed without being fuzzed.
#[test]
fn targets_corpus_and_fuzz_binaries_agree() {
    let mut table: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
    table.sort_unstable();
    let names = |dir: &str, strip: &str| {
        let mut v: Vec<String> = fs::read_dir(fuzz_dir().join(dir))
            .unwrap_or_else(|e| panic!("fuzz/{dir}: {e}"))
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .map(|n| n.strip_suffix(strip).map(str::to_string).unwrap_or(n))
            .collect();
        v.sort();
        v
    };
    assert_eq!(names("fuzz_targets", ".rs"), table, "fuzz/fuzz_targets");
    assert_eq!(names("corpus", ""), table, "fuzz/corpus");
    for dir in names("regressions", "") {
        assert!(
            table.contains(&dir.as_str()),
            "fuzz/regressions/{dir} has no target"
        );
    }
}
