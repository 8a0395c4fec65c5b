//! The `loam` binary.
fn main() {}
