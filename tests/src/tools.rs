//! What the real-tool tests share: finding the tools `scripts/backend-tools.sh` installs (and
//! skipping, or failing under CI, without them), scratch folders, running commands, the plan
//! fixtures and the tenant they are emitted for.

use loam_ir::cluster::Tenancy;
use loam_ir::plan::PlanDocument;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where `scripts/backend-tools.sh` keeps its state (venv, Slurm, sshd).
pub fn ci_dir() -> PathBuf {
    std::env::var_os("LOAM_CI_DIR").map_or_else(|| PathBuf::from("/var/lib/loam-ci"), PathBuf::from)
}

/// Whether `tool` is usable; when not, fails under CI (`CI` or `LOAM_REQUIRE_TOOLS` set) and
/// skips (returns false) elsewhere.
#[allow(clippy::print_stderr)] // the skip message is for the person running the tests
pub fn have(tool: &str, usable: bool) -> bool {
    if usable {
        return true;
    }
    let required =
        std::env::var_os("CI").is_some() || std::env::var_os("LOAM_REQUIRE_TOOLS").is_some();
    assert!(
        !required,
        "{tool} is missing; run scripts/backend-tools.sh start (as root)"
    );
    eprintln!(
        "skipping: {tool} is missing (run scripts/backend-tools.sh start as root; CI requires it)"
    );
    false
}

/// Whether `program args` runs and exits 0.
pub fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The Python of the kubernetes-validate venv.
pub fn python() -> PathBuf {
    ci_dir().join("venv/bin/python")
}

/// Whether the kubernetes-validate venv works.
pub fn have_python() -> bool {
    have(
        "the kubernetes-validate venv",
        runs(
            python().to_str().unwrap(),
            &["-c", "import kubernetes_validate, yaml, jsonschema"],
        ),
    )
}

/// Whether slurmctld answers.
pub fn have_slurm() -> bool {
    have(
        "slurmctld",
        Command::new("scontrol")
            .arg("ping")
            .output()
            .is_ok_and(|o| {
                o.status.success() && String::from_utf8_lossy(&o.stdout).contains("is UP")
            }),
    )
}

/// The Chromium the report tests drive: the first `chromium` on `PATH` (Debian's package, which
/// `scripts/backend-tools.sh` installs).
pub fn chromium() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("chromium"))
        .find(|path| path.is_file())
}

/// Whether Chromium starts (`chromium --version`).
pub fn have_chromium() -> bool {
    have(
        "chromium",
        chromium().is_some_and(|path| {
            Command::new(path)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        }),
    )
}

/// The ssh configuration of the private sshd on 127.0.0.1 and 127.0.0.2.
pub fn ssh_config() -> PathBuf {
    ci_dir().join("ssh/ssh_config")
}

/// Whether the private sshd answers. It is asked up to three times, a second apart: on a
/// loaded two-core machine one handshake may outlast the client's five-second `ConnectTimeout`,
/// and a test should not fail for that alone.
pub fn have_ssh() -> bool {
    let config = ssh_config();
    let answers = || {
        runs(
            "ssh",
            &["-F", config.to_str().unwrap(), "127.0.0.2", "true"],
        )
    };
    let up = config.is_file()
        && (0..3).any(|attempt| {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
            answers()
        });
    have("the private sshd", up)
}

/// The first port of the band [`rendezvous_port`] hands out: above the Slurm nodes' ports
/// (`tests/backends/slurm-cluster.sh` numbers its nodes up to 23,958), so that no slurmd a test
/// starts takes it.
const RENDEZVOUS_PORTS_FROM: u16 = 24_000;
/// The end of that band: where Linux's default ephemeral range begins
/// (`net.ipv4.ip_local_port_range`, 32768–60999), so that no outgoing connection (an ssh client,
/// slurmd talking to slurmctld) and no port bound to 0 (srun, slurmstepd) holds it.
const RENDEZVOUS_PORTS_TO: u16 = 32_768;

/// A TCP port for a launched job's rendezvous (`MASTER_PORT`), free on every local address
/// when asked for. Each call in a process gets another port; the test processes of one run
/// start at different places (after their process id) and skip a port another one holds.
/// Rank 0 binds it moments later, so a port anything else binds in between is the one race
/// left; the band keeps Slurm's daemons and the kernel's ephemeral ports out of it.
pub fn rendezvous_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let band = u32::from(RENDEZVOUS_PORTS_TO - RENDEZVOUS_PORTS_FROM);
    let start = (std::process::id() % 64) * (band / 64);
    for _ in 0..band {
        let offset = (start + NEXT.fetch_add(1, Ordering::Relaxed)) % band;
        let port = RENDEZVOUS_PORTS_FROM + u16::try_from(offset).unwrap();
        // Bound on the wildcard address with SO_REUSEADDR (the standard library sets it on
        // Unix), as the payload's rank 0 binds: fails while anything listens on the port, on any
        // address, or holds it in a connection of its own.
        if std::net::TcpListener::bind(("0.0.0.0", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port between {RENDEZVOUS_PORTS_FROM} and {RENDEZVOUS_PORTS_TO}");
}

/// An empty scratch folder `loam-<kind>-<pid>-<name>` in the temporary folder.
pub fn scratch(kind: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loam-{kind}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `program args` in `cwd`.
pub fn run(program: impl AsRef<std::ffi::OsStr>, args: &[&str], cwd: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// A command's standard output and error together.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The plan fixture `tests/cases/emit/plans/<name>.json`.
pub fn plan_fixture(name: &str) -> PlanDocument {
    let path = crate::repo_root().join(format!("tests/cases/emit/plans/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The fixtures' tenant `nlp` as the catalogue names it, with its checkpoints under `root`.
pub fn nlp_tenancy(root: &str) -> Tenancy {
    Tenancy {
        namespace: "team-nlp".to_string(),
        queue: "nlp-train".to_string(),
        slurm_account: "nlp".to_string(),
        slurm_qos: None,
        checkpoint_root: root.to_string(),
        ..Tenancy::derived("nlp")
    }
}

/// Gives tenant `nlp` of both fixture pools (`lab` and `xirang`) the `tenancy`: tenancies are
/// keyed by (pool, tenant), and the fixtures name `nlp` in both pools.
pub fn insert_nlp(options: &mut loam_backends::Options, tenancy: &Tenancy) {
    for pool in ["lab", "xirang"] {
        options
            .tenants
            .insert((pool.to_string(), "nlp".to_string()), tenancy.clone());
    }
}
