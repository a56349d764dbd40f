#!/usr/bin/env bash
# Runs every check and test. On a fresh machine it first installs and starts what is missing:
# Python dependencies (uv), Docker (Debian's docker.io, dockerd in the background), the
# offline-built images, bubblewrap, and PostgreSQL (uses 127.0.0.1:5432, or
# SANDLOT_TEST_DATABASE_URL). Extra arguments go to pytest. A failed test is rerun once; see
# tests/flaky.py.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_uv
uv sync --frozen -q
apt_install busybox-static mmdebstrap bubblewrap chromium strace
./scripts/ensure-docker.sh
uv run sandlot images build-offline

if [ -z "${SANDLOT_TEST_DATABASE_URL:-}" ]; then
  if ! uv run python -c "import socket; socket.create_connection(('127.0.0.1', 5432), 2)" 2>/dev/null; then
    apt_install postgresql
    log "starting PostgreSQL..."
    clusters=(/etc/postgresql/*)  # one per installed version, in order: the first
    pg_ctlcluster --skip-systemctl-redirect "${clusters[0]##*/}" main start
  fi
fi

log "lint and types"
uv run ruff check .
uv run ruff format --check .
uv run mypy
uv run lint-imports --no-cache  # the import contracts in pyproject.toml

log "unit tests with no Docker and no database reachable"
DOCKER_HOST=unix:///nonexistent SANDLOT_TEST_DATABASE_URL=postgresql://nobody@127.0.0.1:1/none \
  uv run pytest tests/unit -q -p no:cacheprovider

log "tests"
# A test that fails runs once more at once (pytest-rerunfailures); the run passes only if that
# try passes, and names each such test at its very end: FLAKY <test id>: <first error line>
# (the first try's traceback is printed above). At most 5 reruns in a run: past that it is red.
uv run pytest --reruns 1 --max-suite-reruns 5 --rerun-show-tracebacks --durations=25 "$@"
