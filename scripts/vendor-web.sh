#!/usr/bin/env bash
# Refreshes the console's third-party browser files in web/static/vendor from their npm packages,
# at the pinned versions below, each with its licence. Nothing is built: the files are served as
# they are. Run it after changing a version; commit what it writes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

# package@version  files to keep (paths inside the package)
PACKAGES=(
  "htmx.org@2.0.11        dist/htmx.min.js LICENSE"
  "htmx-ext-sse@2.2.4     dist/sse.min.js LICENSE"
  "@xterm/xterm@6.0.0     lib/xterm.js css/xterm.css LICENSE"
  "@xterm/addon-fit@0.11.0 lib/addon-fit.js LICENSE"
  "uplot@1.6.32           dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=web/static/vendor
rm -rf "$out"
mkdir -p "$out"
for entry in "${PACKAGES[@]}"; do
  read -r spec files <<<"$entry"
  name=${spec%@*}
  base=${name#@}
  dir="$out/${base//\//-}"   # @xterm/xterm -> xterm-xterm
  log "vendoring $spec"
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null 2>&1)
  archive=$(ls "$tmp"/*.tgz)
  mkdir -p "$tmp/unpacked" "$dir"
  tar -xzf "$archive" -C "$tmp/unpacked"
  for f in $files; do
    cp "$tmp/unpacked/package/$f" "$dir/"
  done
  echo "$spec" > "$dir/VERSION"
  rm -rf "$tmp/unpacked" "$archive"
done
log "vendored into $out"
