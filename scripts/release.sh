#!/usr/bin/env bash
# Builds what ships, the one way it is built: the release `portico` server and its site
# (wasm optimised for size by the pinned wasm-opt, file names content-hashed, brotli and
# gzip copies beside every file), assembled in one directory:
#
#   DIR/portico    the server
#   DIR/hash.txt   the hashed bundle names (read from beside the binary)
#   DIR/site/      the site root (PORTICO_SITE_ROOT)
#
# CI runs the browser suite against exactly this directory (scripts/test.sh), and the
# Dockerfile copies it into the image.
#
# Usage: scripts/release.sh [DIR]    (default: target/bundle)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$(realpath -m "${1:-target/bundle}")"
# What it empties (DIR, the sources' copy) is never the repository, a folder holding
# it, or the root.
refuse_holder() {
  if [ "$1" = / ] || [[ "$root/" == "${1%/}/"* ]]; then
    echo "release: refusing to replace $1 (it holds the repository)" >&2
    exit 2
  fi
}
refuse_holder "$out"

bash scripts/install.sh --for-build
export PATH="$root/scripts/binaryen/node_modules/.bin:$HOME/.cargo/bin:$PATH"

# The optimiser must be the pinned binaryen, not an older one found first on PATH.
want="$(node -p "require('./scripts/binaryen/package.json').devDependencies.binaryen.split('.')[0]")"
have="$(wasm-opt --version)"
case "$have" in
  "wasm-opt version $want "*) ;;
  *) echo "release: wasm-opt is '$have' ($(command -v wasm-opt)), expected binaryen $want" >&2; exit 1 ;;
esac

# The release site gets its own root so the debug build's target/site stays as it is.
# Emptied first: a target directory kept between runs (scripts/test.sh) would otherwise
# carry the last build's hashed files into the bundle.
export LEPTOS_SITE_ROOT=target/release-site
rm -rf "$LEPTOS_SITE_ROOT"
# The site and the server at once: cargo-leptos builds them one after the other when
# files are hashed, for servers that embed the site, which this one does not (it reads
# the site and hash.txt at run time). Each half has long stretches on one core (the
# wasm's single-unit LTO and wasm-opt; the server crate's front end), so together they
# fill both. They share no cargo target directory (target/front, target/release), and
# the server's half gets a site root of its own, so the two never touch one directory.
rm -f target/release/hash.txt
# The site is kept by what it is built from: every file of the crates it compiles (app,
# core), its styles and assets (public/ with xterm.js, untracked), the workspace's
# manifests, lock file and cargo configuration (Leptos' settings, rustflags), the
# optimiser's pin, and the tools' versions. The same inputs give the same site, so a
# run whose browser side did not change takes the last one built (about 190 s: the
# wasm's one-unit LTO, wasm-bindgen and wasm-opt) instead of building it again.
site_key() {
  {
    find app core style public .cargo scripts/binaryen/package.json scripts/binaryen/package-lock.json \
      Cargo.toml Cargo.lock server/Cargo.toml -type f -not -path '*/node_modules/*' -print0 \
      | sort -z | xargs -0 sha256sum
    rustc -vV
    cargo leptos --version
    wasm-bindgen --version
    wasm-opt --version
    env | grep '^LEPTOS_' | sort || true
  } | sha256sum | cut -c1-32
}
sites="${PORTICO_CACHE_DIR:-$HOME/.cache/portico}/release-site"
kept="$sites/$(site_key)"
front_log="$(mktemp)"
front=""
# (The trap must not fail: under `set -e` a failing command in it becomes the script's status.)
trap 'if [ -n "$front" ]; then kill "$front" 2>/dev/null || true; fi; rm -f "$front_log"' EXIT
if [ -s "$kept/hash.txt" ] && [ -d "$kept/site" ]; then
  echo "release: the site as built from the same inputs before ($kept)" >&2
  cp -a "$kept/site" "$LEPTOS_SITE_ROOT"
else
  cargo leptos build --release --split --precompress --cargo-locked --frontend-only >"$front_log" 2>&1 &
  front=$!
fi
server_status=0
# The server's half compiles incrementally: its crates' unchanged parts are taken from
# the last release build, so a change recompiles what it touches instead of the whole
# server at opt-level 3 (about 450 s here). rustc keeps an incremental cache only for
# the same working directory (it is one of the options the cache is checked against),
# and every CI run is a fresh clone somewhere else: the sources are copied to one
# fixed directory and built there, into this checkout's target directory. What is
# tested is what ships either way: CI runs its browser suite against this very
# binary, and the image copies it.
build_dir="${PORTICO_RELEASE_SOURCES:-${PORTICO_CACHE_DIR:-$HOME/.cache/portico}/release-sources}"
build_dir="$(realpath -m "$build_dir")"
target_dir="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
refuse_holder "$build_dir"
rm -rf "$build_dir" && mkdir -p "$build_dir"
# tar keeps the files' times, so cargo sees the copy as new as the checkout.
tar -C "$root" --exclude=./target --exclude=./.git --exclude=./.portico \
  --exclude=node_modules --exclude=./end2end/.state --exclude=./end2end/test-results -cf - . \
  | tar -C "$build_dir" -xf -
(cd "$build_dir" && CARGO_INCREMENTAL=1 CARGO_TARGET_DIR="$target_dir" \
  LEPTOS_SITE_ROOT=target/release-server-site \
  cargo leptos build --release --cargo-locked --server-only) || server_status=$?
front_status=0
built_site=""
if [ -n "$front" ]; then
  wait "$front" || front_status=$?
  front=""
  built_site=yes
  cat "$front_log" >&2
else
  cp "$kept/hash.txt" target/release/hash.txt
fi
if [ "$server_status" -ne 0 ] || [ "$front_status" -ne 0 ]; then
  echo "release: the server's build exited $server_status, the site's $front_status" >&2
  exit 1
fi
test -s target/release/hash.txt || { echo "release: the site's build wrote no target/release/hash.txt" >&2; exit 1; }

if [ -n "$built_site" ]; then
  # cargo-leptos' gzip copies use a fast level; browsers without brotli (plain HTTP) get
  # level 9 instead (the wasm: about 740 KB rather than 860 KB).
  find "$LEPTOS_SITE_ROOT" -name '*.gz' | while read -r packed; do
    gzip -9 -n -c "${packed%.gz}" > "$packed"
  done
  # Kept for the next build from the same inputs; the two newest are enough.
  rm -rf "$kept.new" && mkdir -p "$kept.new"
  cp -a "$LEPTOS_SITE_ROOT" "$kept.new/site"
  cp target/release/hash.txt "$kept.new/hash.txt"
  rm -rf "$kept" && mv "$kept.new" "$kept"
  ls -1td "$sites"/*/ | tail -n +3 | xargs -r rm -rf
fi

rm -rf "$out"
mkdir -p "$out"
cp target/release/portico target/release/hash.txt "$out/"
cp -r "$LEPTOS_SITE_ROOT" "$out/site"
echo "release: $out" >&2
ls -l "$out/site/pkg" >&2
