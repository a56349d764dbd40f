# Shared helpers for the scripts in this folder. Every step is idempotent: it does nothing
# when what it provides is already there.

log() { echo "[sandlot] $*" >&2; }

apt_install() {
  # apt_install PKG... : install the Debian packages that are missing, with one update.
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
}

ensure_uv() {
  if ! command -v uv >/dev/null 2>&1; then
    log "installing uv..."
    python3 -m pip install -q uv
  fi
}
