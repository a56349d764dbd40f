#!/usr/bin/env bash
# Quickstart: install what is missing and start Sandlot with embedded defaults
# (SQLite store in ./.sandlot, Docker when its engine answers, else the local runtime).
# Prints the API address and, on first start, the operator key.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_uv
uv sync --frozen --no-dev -q
if docker info >/dev/null 2>&1; then
  if ! docker image inspect sandlot/busybox:latest >/dev/null 2>&1; then
    apt_install busybox-static
    uv run --no-dev sandlot images build-offline --image sandlot/busybox:latest
  fi
else
  apt_install bubblewrap || log "bubblewrap unavailable: local sandboxes will not be isolated"
fi
exec uv run --no-dev sandlot serve "$@"
