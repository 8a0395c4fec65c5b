//! The `loam` built for the tests (`loam-under-test`), run as a process in a folder the test
//! chooses. The integration tests share one process, so no test may change the process's
//! current folder; a test whose paths must be relative to a folder runs loam there instead.

use loam_tests::tools::run;
use std::path::Path;
use std::process::Output;

/// Runs `loam --color never ARGS` in `dir` and returns what it printed.
pub fn output_in(dir: &Path, args: &[&str]) -> Output {
    let args = [&["--color", "never"], args].concat();
    run(env!("CARGO_BIN_EXE_loam-under-test"), &args, dir)
}

/// Runs `loam --color never ARGS` in `dir`: exit code, stdout, stderr.
pub fn loam_in(dir: &Path, args: &[&str]) -> (u8, String, String) {
    let out = output_in(dir, args);
    let code = out.status.code().expect("loam was killed by a signal");
    (
        u8::try_from(code).unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
