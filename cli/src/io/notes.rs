//! What a command skipped while searching folders, said once on standard error at its end.
//!
//! The file-system layer has no terminal of its own, so it records here and `crate::run` prints
//! the notes after the command. The list lives per thread: the tests run the CLI in-process on
//! several threads at once, and each run is on one thread.

use std::cell::RefCell;

/// How many skipped paths are named; the rest are counted, so a hostile tree of a million
/// links cannot flood the log.
pub const SHOWN: usize = 10;

thread_local! {
    static SKIPPED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Records that `path` (as shown to users) was skipped, and why.
pub fn skipped(path: &str, why: &str) {
    SKIPPED.with(|s| s.borrow_mut().push(format!("`{path}`: {why}")));
}

/// Forgets what was recorded (the start of a run).
pub fn clear() {
    SKIPPED.with(|s| s.borrow_mut().clear());
}

/// The notes to print, one line each, and forgets them: at most [`SHOWN`] paths, then a count.
pub fn take() -> String {
    let skipped = SKIPPED.with(|s| std::mem::take(&mut *s.borrow_mut()));
    let mut text = String::new();
    for line in skipped.iter().take(SHOWN) {
        text.push_str(&format!("note: skipped {line}\n"));
    }
    if skipped.len() > SHOWN {
        text.push_str(&format!(
            "note: skipped {} more paths\n",
            skipped.len() - SHOWN
        ));
    }
    text
}
