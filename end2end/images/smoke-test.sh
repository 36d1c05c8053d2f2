#!/usr/bin/env bash
# Runs the images build.sh makes without Kubernetes, as Portico's Pods would run them:
# runc (what containerd runs), the image's entrypoint and user, the fsGroup as an extra
# group, no capabilities, no new privileges, a network namespace of their own (lo up).
# SECCOMP_PROFILE=FILE adds a seccomp profile (e.g. containerd's RuntimeDefault, as JSON);
# SMOKE_LOGS=DIR keeps the containers' output there.
# Checks:
#   pause    runs, prints its version, exits 0 on SIGTERM
#   mariadb  initialises an empty volume (root-owned 0777, and root:999 2775 as fsGroup
#            makes it), answers `mysqladmin ping -h 127.0.0.1` (the readiness probe),
#            takes root's password over TCP on a non-loopback address, keeps a row across
#            a restart, never logs the password, refuses to initialise without one
#   tomcat   answers GET / on 8080 with 200
# Leaves nothing behind (containers, processes, temporary files). Needs root, runc, jq, curl.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
declare -A image
while IFS=$'\t' read -r ref path; do image[${ref%%:*}]=$path; done < <(bash "$here/build.sh")
t="$(mktemp -d /tmp/portico-smoke.XXXXXX)"
runc() { command runc --root "$t/runc" "$@"; }
netns_pid=
cleanup() {
  local id
  for id in $(runc list -q 2>/dev/null); do runc delete --force "$id" >/dev/null 2>&1 || true; done
  if [ -n "$netns_pid" ]; then kill "$netns_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  if [ -n "${SMOKE_LOGS:-}" ]; then mkdir -p "$SMOKE_LOGS" && cp "$t"/*.log "$SMOKE_LOGS/" 2>/dev/null || true; fi
  rm -rf "$t"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
  echo "FAIL: $*" >&2
  for f in "$t"/*.log; do if [ -e "$f" ]; then echo "--- ${f##*/}" && tail -n 20 "$f"; fi; done >&2
  exit 1
}
ok() { echo "ok: $*" >&2; }

# The Pods' network namespace, held by a sleeping process; 10.254.0.2 stands for a Pod IP.
unshare --net sleep infinity &
netns_pid=$!
until [ "$(readlink "/proc/$netns_pid/ns/net")" != "$(readlink /proc/self/ns/net)" ]; do sleep 0.1; done
net() { nsenter --net="/proc/$netns_pid/ns/net" "$@"; }
net ip link set lo up
net ip addr add 10.254.0.2/32 dev lo
ip=10.254.0.2

# bundle ID IMAGE [JQ-ARGS... FILTER]: a runc bundle at $t/ID from the image's layer and
# config, adjusted by FILTER (given $spec).
bundle() {
  local id=$1 archive=$2 b="$t/$1" manifest
  shift 2
  mkdir -p "$b/rootfs"
  manifest="$(tar -xOf "$archive" manifest.json)"
  tar -xOf "$archive" "$(jq -r '.[0].Layers[0]' <<<"$manifest")" | tar -x -C "$b/rootfs" --numeric-owner
  tar -xOf "$archive" "$(jq -r '.[0].Config' <<<"$manifest")" >"$b/image.json"
  (cd "$b" && command runc spec)
  jq --slurpfile image "$b/image.json" --arg netns "/proc/$netns_pid/ns/net" --arg id "$id" \
    --slurpfile seccomp "${SECCOMP_PROFILE:-/dev/null}" '
    $image[0].config as $c | ($c.User | split(":") | map(tonumber)) as $u |
    .process.args = ($c.Entrypoint // []) + ($c.Cmd // []) | .process.env = $c.Env |
    .process.cwd = ($c.WorkingDir // "/") | .process.terminal = false |
    .process.user = {uid: $u[0], gid: $u[1]} | del(.process.rlimits) |
    .process.capabilities = {bounding: [], effective: [], inheritable: [], permitted: [], ambient: []} |
    .process.noNewPrivileges = true | .root = {path: "rootfs", readonly: false} | .hostname = $id |
    .linux.namespaces |= map(if .type == "network" then .path = $netns else . end) |
    if $seccomp == [] then . else .linux.seccomp = $seccomp[0] end' \
    "$b/config.json" >"$b/spec.json"
  jq "$@" <"$b/spec.json" >"$b/config.json"
}
# start ID: runs bundle ID (in the background; its output in $t/ID.log).
declare -A pid
start() {
  runc run --bundle "$t/$1" "$1" >"$t/$1.log" 2>&1 </dev/null &
  pid[$1]=$!
}
# stop ID: SIGTERM, then its exit status.
stop() {
  local rc=0
  runc kill "$1" TERM
  wait "${pid[$1]}" || rc=$?
  runc delete "$1" >/dev/null 2>&1 || true
  return "$rc"
}
# until_ok SECONDS WHAT COMMAND...: retries COMMAND once a second.
until_ok() {
  local s=$1 what=$2
  shift 2
  for _ in $(seq "$s"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  fail "$what did not happen within ${s}s"
}

echo "== pause" >&2
bundle pause "${image[portico.local/pause]}" .
start pause
sleep 1
[ "$(runc state pause | jq -r .status)" = running ] || fail "pause is not running: $(cat "$t/pause.log")"
runc exec pause /pause -v | grep -q '^pause.c v' || fail "pause -v"
ok "pause runs as $(runc exec pause /pause -v), uid $(jq -r .process.user.uid "$t/pause/config.json")"
rc=0 && stop pause || rc=$?
[ "$rc" = 0 ] && grep -q 'Shutting down, got signal: Terminated' "$t/pause.log" ||
  fail "pause on SIGTERM: exit $rc, $(cat "$t/pause.log")"
ok "pause exits 0 on SIGTERM"

echo "== mariadb" >&2
pw="s3cret 'quoted' \\ \"pw\" \$x"
mysql_bundle() { # ID VOLUME ENV...
  local id=$1 vol=$2
  shift 2
  bundle "$id" "${image[portico.local/mariadb]}" --arg vol "$vol" --args '
    .process.user.additionalGids = [999] | .process.env += $ARGS.positional |
    .mounts += [{destination: "/var/lib/mysql", type: "bind", source: $vol, options: ["rbind", "rw"]}]' "$@"
}
probe() { runc exec "$1" mysqladmin ping -h 127.0.0.1 --silent; }
sql() { # ID SQL: as root over TCP to the "Pod IP", password from the environment
  runc exec --env "MYSQL_PWD=$pw" "$1" mariadb -h "$ip" -P 3306 -u root --batch --skip-column-names app -e "$2"
}
mkdir -m 0777 "$t/data" # an empty volume owned by root, as a hostPath or local PV may be
mysql_bundle mysql1 "$t/data" "MYSQL_ROOT_PASSWORD=$pw" MYSQL_DATABASE=app
start mysql1
SECONDS=0
until_ok 120 "mysqladmin ping (first start)" probe mysql1
ok "first start: initialised and ready in ${SECONDS}s"
[ "$(sql mysql1 "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40)); INSERT INTO t VALUES (1, 'survives a restart'); SELECT v FROM t")" = "survives a restart" ] ||
  fail "create/insert/select over TCP"
ok "root over TCP ($ip:3306) with the password: created a table, inserted, selected"
# A client Pod: the same image, another container, `mariadb -h HOST ...` as its command.
bundle client "${image[portico.local/mariadb]}" --arg ip "$ip" --arg pw "-p$pw" \
  '.process.args = ["mariadb", "-h", $ip, "-P", "3306", "-u", "root", $pw, "-e", "SELECT 1"]'
start client
wait "${pid[client]}" || fail "client container: $(cat "$t/client.log")"
ok "a client container reached it with mariadb -h $ip"
! runc exec --env "MYSQL_PWD=wrong" mysql1 mariadb -h "$ip" -u root -e 'SELECT 1' 2>/dev/null || fail "a wrong password was accepted"
ok "a wrong password is refused"
rc=0 && stop mysql1 || rc=$?
[ "$rc" = 0 ] || fail "mariadbd exit status $rc on SIGTERM"
ok "stopped (exit 0); the volume holds $(find "$t/data" -mindepth 1 -maxdepth 1 | wc -l) entries, owned by $(stat -c %u:%g "$t/data/mysql")"
mysql_bundle mysql2 "$t/data" "MYSQL_ROOT_PASSWORD=$pw" MYSQL_DATABASE=app
start mysql2
until_ok 60 "mysqladmin ping (second start)" probe mysql2
[ "$(sql mysql2 'SELECT v FROM t WHERE id = 1')" = "survives a restart" ] || fail "the row did not survive"
grep -q 'already holds a database' "$t/mysql2.log" || fail "the second start initialised again"
ok "second start on the same volume: the row is still there"
stop mysql2 || fail "mariadbd (second start) did not stop cleanly"
! grep -F -- "$pw" "$t"/mysql*.log "$t/client.log" || fail "a log shows the password"
ok "no log shows the password"
grep -q '0.0.0.0' "$t/mysql1.log" && ok "listens on 0.0.0.0: $(grep -m1 -o "port: 3306.*" "$t/mysql1.log" || true)"

mkdir "$t/empty" && chmod 0777 "$t/empty"
mysql_bundle mysql3 "$t/empty" MYSQL_DATABASE=app
start mysql3
rc=0 && wait "${pid[mysql3]}" || rc=$?
[ "$rc" != 0 ] && grep -q 'no root password is given' "$t/mysql3.log" || fail "started without a root password"
ok "refuses to initialise without a root password (exit $rc): $(grep -o 'error: .*' "$t/mysql3.log")"

mkdir "$t/fsgroup" && chgrp 999 "$t/fsgroup" && chmod 2775 "$t/fsgroup" # what fsGroup: 999 makes
mysql_bundle mysql4 "$t/fsgroup" "MYSQL_ROOT_PASSWORD=$pw" MYSQL_DATABASE=app MYSQL_USER=appuser MYSQL_PASSWORD=apppw
start mysql4
until_ok 120 "mysqladmin ping (fsGroup volume)" probe mysql4
[ "$(runc exec --env MYSQL_PWD=apppw mysql4 mariadb -h "$ip" -u appuser --batch --skip-column-names app \
  -e 'CREATE TABLE u (i INT); SELECT CURRENT_USER()')" = "appuser@%" ] || fail "MYSQL_USER cannot use MYSQL_DATABASE"
stop mysql4 || fail "mariadbd (fsGroup volume) did not stop cleanly"
ok "initialises a root:999 2775 (fsGroup) volume too, with MYSQL_USER owning MYSQL_DATABASE"

echo "== tomcat" >&2
bundle tomcat "${image[portico.local/tomcat]}" .
start tomcat
SECONDS=0
until_ok 120 "GET / = 200" net curl -fsS -o /dev/null "http://$ip:8080/"
ok "GET http://$ip:8080/ = $(net curl -sS -o /dev/null -w '%{http_code}' "http://$ip:8080/") after ${SECONDS}s, as uid:gid $(jq -r '.process.user | "\(.uid):\(.gid)"' "$t/tomcat/config.json")"
grep -q 'Server startup in' "$t/tomcat.log" || fail "no startup line in tomcat's output"
rc=0 && stop tomcat || rc=$?
ok "tomcat stopped on SIGTERM (exit $rc)"
echo "PASS" >&2
