#!/usr/bin/env bash
# Make sure a Docker engine answers on the default socket. Idempotent: does nothing when one
# already answers. Otherwise it installs Debian's docker.io when dockerd is missing and starts
# dockerd in the background (log: /var/log/sandlot-dockerd.log).
#
# The engine it starts keeps its data on a btrfs filesystem with quotas on (a sparse file,
# loop-mounted at /var/lib/sandlot-docker), so Docker's btrfs storage driver can give every
# container a writable layer of a fixed size: that is how sandboxes' disk_mb is enforced. When
# that cannot be set up (no loop devices, not root), dockerd starts on its default storage and
# Sandlot logs that disk limits are not enforced.
set -euo pipefail

if docker info >/dev/null 2>&1; then
  exit 0
fi
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v mkfs.btrfs >/dev/null 2>&1 || missing+=(btrfs-progs)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[sandlot] installing ${missing[*]} from Debian packages..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

image=${SANDLOT_DOCKER_IMAGE_FILE:-/var/lib/sandlot-docker.btrfs}
mnt=${SANDLOT_DOCKER_ROOT:-/var/lib/sandlot-docker}
args=()
if mountpoint -q "$mnt" 2>/dev/null || {
  { [ -f "$image" ] || { truncate -s "${SANDLOT_DOCKER_DISK:-64G}" "$image" && mkfs.btrfs -q "$image" >/dev/null; }; } &&
    mkdir -p "$mnt" && mount -o loop "$image" "$mnt"
} 2>/dev/null; then
  btrfs quota enable "$mnt" 2>/dev/null || true
  args=(--data-root "$mnt/docker" --storage-driver btrfs)
  echo "[sandlot] Docker data on btrfs at $mnt (disk limits enforced)"
else
  echo "[sandlot] could not mount a btrfs data root; Docker uses its default storage (disk limits not enforced)"
fi

echo "[sandlot] starting dockerd..."
nohup dockerd "${args[@]}" >/var/log/sandlot-dockerd.log 2>&1 &
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
