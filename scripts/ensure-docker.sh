#!/usr/bin/env bash
# Make sure a Docker engine answers on the default socket. Idempotent: does nothing when one
# already answers; installs Debian's docker.io when dockerd is missing; starts dockerd in the
# background with its log in /var/log/sandlot-dockerd.log otherwise.
set -euo pipefail

if docker info >/dev/null 2>&1; then
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "[sandlot] installing docker.io from Debian packages..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io >/dev/null
fi
echo "[sandlot] starting dockerd..."
nohup dockerd >/var/log/sandlot-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    echo "[sandlot] dockerd is up"
    exit 0
  fi
  sleep 0.5
done
echo "[sandlot] dockerd did not come up; see /var/log/sandlot-dockerd.log" >&2
tail -20 /var/log/sandlot-dockerd.log >&2 || true
exit 1
