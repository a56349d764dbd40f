#!/usr/bin/env bash
# Regenerates the low-level client (clients/python/sandlot_client/_api) from the service's
# OpenAPI document. Never edit the generated files by hand; run this instead.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-clients/python/sandlot_client/_api}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
uv run sandlot openapi --output "$tmp/openapi.json" >/dev/null
uv run openapi-python-client generate --path "$tmp/openapi.json" --meta none \
  --output-path "$tmp/gen" --overwrite --config clients/python/openapi-generator.yaml >/dev/null 2>"$tmp/log" \
  || { cat "$tmp/log" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$(dirname "$out")"
cp -r "$tmp/gen" "$out"
echo "generated $out"
