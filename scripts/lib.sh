# shellcheck shell=bash
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

uv_binary() {
  # The uv executable itself (not a shim script that only works on this host).
  local candidate
  for candidate in "$(command -v uv)" "$(pyenv which uv 2>/dev/null || true)" \
      "$HOME/.local/bin/uv" "$HOME/.cargo/bin/uv" /usr/local/bin/uv /usr/bin/uv; do
    if [ -n "$candidate" ] && [ -f "$candidate" ] && [ "$(head -c 4 "$candidate")" = $'\x7fELF' ]; then
      echo "$candidate"
      return 0
    fi
  done
  python3 -c 'import uv; print(uv.find_uv_bin())'
}
