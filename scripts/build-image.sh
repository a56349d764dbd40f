#!/usr/bin/env bash
# Build the server's container image with no registry: prepares build/ (the uv binary, a wheel
# for every locked dependency, the project's wheel) and runs `docker build`.
#   ./scripts/build-image.sh [TAG] [BASE_IMAGE]     (default: sandlot:latest sandlot/python:3)
# The base image must have python3 >= 3.11 on its PATH and useradd (Debian-like, e.g.
# python:3.11-slim where a registry is reachable);

# without it, ./scripts/start.sh (with Docker) or `sandlot images build-offline` makes one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

tag=${1:-sandlot:latest}
base=${2:-sandlot/python:3}
ensure_uv
rm -rf build/wheels && mkdir -p build/wheels
cp "$(uv_binary)" build/uv


uv export --frozen --no-dev --no-hashes --no-emit-project --no-header -q -o build/requirements.txt
log "collecting wheels for $(grep -c '==' build/requirements.txt) locked dependencies..."
# the base's Python decides which wheels fit; here the host's stands in for it (same minor)
uv tool run --from pip pip wheel -q --disable-pip-version-check -r build/requirements.txt -w build/wheels

uv build --wheel -q -o build/wheels
log "building $tag from $base..."
docker build -q --build-arg "BASE_IMAGE=$base" -t "$tag" . >/dev/null
log "built $tag"
