#!/usr/bin/env bash
# Quickstart: install what is missing and start Sandlot with embedded defaults (SQLite store
# in ./.sandlot, Docker when its engine answers, else the local runtime under bubblewrap).
# With Docker it prepares every image the README's tour uses. Sandlot prints its address, and
# on the first start the operator key, once it answers.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_uv
uv sync --frozen --no-dev -q
if docker info >/dev/null 2>&1; then
  missing=()
  for image in sandlot/busybox:latest sandlot/python:3; do
    docker image inspect "$image" >/dev/null 2>&1 || missing+=(--image "$image")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    apt_install busybox-static mmdebstrap
    uv run --no-dev sandlot images build-offline "${missing[@]}"
  fi
else
  log "no Docker engine answers: sandboxes will run on the local runtime"
  apt_install bubblewrap || log "bubblewrap unavailable: local sandboxes will not be isolated"
fi
exec uv run --no-dev sandlot serve "$@"
