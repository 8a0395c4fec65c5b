//! Fuzz target: formatting any text that parses gives text that parses, and formatting is a
//! fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loam_compiler::fmt::format_source;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Some(once) = format_source(text) {
        let twice = format_source(&once).expect("formatted text must parse");
        assert_eq!(twice, once, "fmt is not a fixed point");
    }
});
