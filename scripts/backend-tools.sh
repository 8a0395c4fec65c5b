#!/usr/bin/env bash
# Installs and starts what the backend tests validate manifests with, on a fresh Debian 12 machine
# as root: a Slurm cluster (slurmctld + slurmd, fake GPUs), a private sshd on 127.0.0.1 and
# 127.0.0.2, shellcheck, a Python venv with kubernetes-validate, and the headless Chromium (with
# the DejaVu fonts, so text measures the same everywhere) that the report tests render pages in,
# Neovim, the editor the language server's test drives, tree-sitter's Python bindings (in the
# venv) for the tree-sitter grammar's test, and Node, which runs the shipped workflow's comment
# script in the CI-comment tests.
# Skips whatever is already installed or running, so a second run takes a second or two.
#
# Usage: scripts/backend-tools.sh [start|stop]     (default: start)
# Env:   LOAM_CI_DIR   state dir (default /var/lib/loam-ci): venv/, slurm/, ssh/
set -euo pipefail
cd "$(dirname "$0")/.."
CMD=${1:-start}
export LOAM_CI_DIR=${LOAM_CI_DIR:-/var/lib/loam-ci}
VENV=$LOAM_CI_DIR/venv

log() { printf '[backend-tools %s] %s\n' "$(date +%T)" "$*" >&2; }

install_packages() {
  local need=()
  command -v slurmctld >/dev/null || need+=(slurmctld)
  command -v slurmd >/dev/null || need+=(slurmd)
  command -v sbatch >/dev/null || need+=(slurm-client)
  command -v munged >/dev/null || need+=(munge)
  [[ -x /usr/sbin/sshd ]] || need+=(openssh-server)
  command -v ssh >/dev/null || need+=(openssh-client)
  command -v shellcheck >/dev/null || need+=(shellcheck)
  command -v python3 >/dev/null || need+=(python3)
  python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
  command -v ps >/dev/null || need+=(procps)
  command -v chromium >/dev/null || need+=(chromium)
  [[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]] || need+=(fonts-dejavu-core)
  command -v nvim >/dev/null || need+=(neovim)
  # Node: the CI-comment tests run the shipped workflow's github-script under it.
  command -v node >/dev/null || need+=(nodejs)
  ((${#need[@]} == 0)) && return 0
  log "apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The downloaded packages are not needed once installed; on a CI machine with little disk the
  # test build needs the room.
  apt-get clean
}

install_venv() {
  if "$VENV/bin/python" -c 'import kubernetes_validate, yaml, jsonschema, tree_sitter' 2>/dev/null; then return; fi
  log "creating $VENV with kubernetes-validate"
  rm -rf "$VENV"
  mkdir -p "$LOAM_CI_DIR"
  python3 -m venv "$VENV"
  # tree-sitter: the bindings the tree-sitter grammar's test parses with (ABI 15 parsers).
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-cache-dir 'kubernetes-validate>=1.31' pyyaml jsonschema 'tree-sitter>=0.25'
}

case $CMD in
  start)
    [[ $(id -u) == 0 ]] || { log "must run as root"; exit 1; }
    t0=$SECONDS
    install_packages
    install_venv
    tests/backends/slurm-cluster.sh start
    # A second slurmctld (multifactor priority, backfill) for tests/tests/schedule_slurm.rs.
    tests/backends/slurm-schedule-cluster.sh start
    tests/backends/ssh-setup.sh start
    log "backend tools ready in $((SECONDS - t0))s"
    ;;
  stop)
    tests/backends/ssh-setup.sh stop || true
    tests/backends/slurm-schedule-cluster.sh stop || true
    tests/backends/slurm-cluster.sh stop || true
    ;;
  *) log "usage: $0 [start|stop]"; exit 2 ;;
esac
