//! Fuzz target: parsing and checking arbitrary text must never panic or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loam_compiler::check::check_file;
use loam_compiler::syntax::{decode_utf8, parse};
use loam_ir::span::FileId;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = decode_utf8(FileId(0), data) else { return };
    let parsed = parse(FileId(0), &text);
    if let Some(file) = parsed.file {
        let _ = check_file(&file);
    }
});
