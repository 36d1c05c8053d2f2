#!/usr/bin/env bash
# The attack script: hostile requests (forged identity headers and session cookies,
# oversized cookies and bodies, crafted names and selectors, 500 live views by one
# person, token guessing, cross-site submits, DNS rebinding) against a locally served
# Portico in token, single sign-on and local modes, on a real kube-apiserver. Prints a table of attempts
# and outcomes; fails if any attempt got through or anything was written.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# One mode at a time, so that each prints its table whole. `attack` also selects the
# attacks that live beside their area's helpers (`live_logs::attack_…` on the real
# node, `identity::attack_…`, `stacks::attack_…`); the reconciler's admission attacks
# and the proof of both accounts' rights are deploy's.
exec cargo test --workspace --test it -- attack deploy::admission_lets deploy::rights \
  --nocapture --test-threads=1
