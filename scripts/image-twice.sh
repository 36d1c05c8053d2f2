#!/usr/bin/env bash
# Builds Portico's image twice from the release bundle (target/bundle) and checks that
# both have one digest: the image is a function of the commit. Prints its size.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/target/image"
mkdir -p "$out"
first="$(bash "$root/scripts/image.sh" oci "$root/target/bundle" "$out/portico.oci.tar")"
second="$(bash "$root/scripts/image.sh" oci "$root/target/bundle" "$out/portico-again.oci.tar")"
digest() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["digest"])' "$1"; }
echo "first:  $first"
echo "second: $second"
if [ "$(digest "$first")" != "$(digest "$second")" ]; then
  echo "image: two builds of one bundle gave two digests" >&2
  exit 1
fi
rm -f "$out/portico-again.oci.tar"
python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("image %s: %s, %.1f MB compressed, %.1f MB unpacked" % (j["ref"], j["digest"], j["compressed_bytes"]/1e6, j["uncompressed_bytes"]/1e6))' "$first"
