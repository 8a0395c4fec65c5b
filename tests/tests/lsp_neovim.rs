//! `loam lsp` with a real client: Neovim (Debian's package, which scripts/backend-tools.sh
//! installs) headless, its built-in LSP client driven by `lsp_neovim/session.lua`: it opens a
//! spec, receives the diagnostics, completes a device name, hovers, formats and jumps into the
//! catalogue. Skipped without `nvim`, except under CI, where it fails.

use crate::loam_process::loam_in;
use loam_tests::repo_root;
use loam_tests::tools::{have, runs};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The spec the session edits: `hiden` misspelt (line 6), `tenant="nlp"` not as `loam fmt`
/// writes it (line 2) and the device name half typed (`H1`, line 22).
const SPEC: &str = "job \"demo\" {
tenant=\"nlp\"

  model {
    layers  = 32
    hiden   = 4096
    hidden  = 4096
    ffn     = 14336
    heads   = 32
    vocab   = 128256
    seq_len = 4096
  }

  train {
    tokens       = 2B
    global_batch = 64
    precision    = bf16
  }

  resources {
    pool    = xirang
    devices = [H1]
  }
}
";

/// How long the whole session may take: five steps of at most 10 s each, and Neovim's start.
const SESSION_LIMIT: Duration = Duration::from_secs(90);

#[test]
fn neovim_gets_diagnostics_completion_hover_formatting_and_definition() {
    if !have("neovim", runs("nvim", &["--version"])) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("demo.loam");
    std::fs::write(&spec, SPEC).unwrap();
    let catalogue = repo_root().join("specs");

    // The code of the unknown device, as `loam check` gives it on line 22.
    let (_, out, _) = loam_in(
        dir.path(),
        &[
            "--catalogue",
            catalogue.to_str().unwrap(),
            "check",
            "--format",
            "json",
            "demo.loam",
        ],
    );
    let checked: Value = serde_json::from_str(&out).unwrap();
    let device_code = checked["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["line"] == 22)
        .map(|d| d["code"].as_str().unwrap().to_string())
        .expect("`loam check` reports the unknown device `H1`");

    let result = dir.path().join("result");
    let script = repo_root().join("tests/tests/lsp_neovim/session.lua");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // No user configuration, swap file or shada: the session sees what a new user's would.
    let mut nvim = Command::new("nvim")
        .args(["--headless", "--clean", "-n", "-i", "NONE", "-c"])
        .arg(format!("luafile {}", script.display()))
        .current_dir(dir.path())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("LOAM_BIN", env!("CARGO_BIN_EXE_loam-under-test"))
        .env("LOAM_CATALOGUE", &catalogue)
        .env("LOAM_SPEC", &spec)
        .env("LOAM_RESULT", &result)
        .env("LOAM_DEVICE_CODE", &device_code)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + SESSION_LIMIT;
    let status = loop {
        if let Some(status) = nvim.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = nvim.kill();
            let _ = nvim.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let steps = std::fs::read_to_string(&result).unwrap_or_default();
    assert!(status.is_some(), "Neovim did not finish; steps:\n{steps}");
    assert_eq!(
        steps.lines().collect::<Vec<_>>(),
        [
            "ok diagnostics",
            "ok completion",
            "ok diagnostics after edit",
            "ok hover",
            "ok formatting",
            "ok definition",
        ],
        "the session's steps"
    );
}
