#!/bin/bash
# /usr/local/bin/docker-entrypoint.sh of portico.local/mariadb (built by build.sh):
# the official mysql/mariadb images' environment contract on Debian's MariaDB.
#   MYSQL_ROOT_PASSWORD (or MARIADB_ROOT_PASSWORD)  required to initialise
#   MYSQL_DATABASE, MYSQL_USER + MYSQL_PASSWORD      optional (MARIADB_* too)
# Runs as whatever user the Pod chooses (the image's is mysql, 999): there is no
# root step-down, so the data directory must be writable by that user.
# Never prints a password; logs to stderr.
set -euo pipefail

log() { printf '%s [Entrypoint]: %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ $# -gt 0 ] || set -- mariadbd
# Options alone are the server's, as in the official images.
if [ "${1:0:1}" = - ]; then set -- mariadbd "$@"; fi
# Anything else (a client Pod's `mariadb -h ...`, a shell) runs as given.
case "$1" in mariadbd | mysqld) ;; *) exec "$@" ;; esac

root_password=${MARIADB_ROOT_PASSWORD:-${MYSQL_ROOT_PASSWORD:-}}
database=${MARIADB_DATABASE:-${MYSQL_DATABASE:-}}
user=${MARIADB_USER:-${MYSQL_USER:-}}
password=${MARIADB_PASSWORD:-${MYSQL_PASSWORD:-}}

# SQL quoting, so that any password or name is taken literally (the bootstrap session
# clears NO_BACKSLASH_ESCAPES so that backslash escapes mean what they say).
literal() {
  local s=${1//\\/\\\\}
  printf "'%s'" "${s//\'/\\\'}"
}
identifier() { printf '`%s`' "${1//\`/\`\`}"; }

# The server's settings: Debian's configuration, ours, then the arguments.
settings="$("$@" --verbose --help 2>/dev/null)"
setting() { awk -v n="$1" '/^[^ \t]/ && $1 == n { print $2; exit }' <<<"$settings"; }
datadir="$(setting datadir)"
datadir=${datadir%/}
[ -n "$datadir" ] || die "cannot determine the server's datadir (does $1 start?)"
# The image's /run/mysqld belongs to 999; a runtime that mounts an empty /run over it
# (ctr run does, Kubernetes does not) or another user leaves socket and PID file nowhere.
socket="$(setting socket)"
if [ ! -w "${socket%/*}" ]; then
  log "${socket%/*} is not writable: socket and PID file go to /tmp"
  set -- "$@" --socket=/tmp/mysqld.sock --pid-file=/tmp/mysqld.pid
fi

# Initialises a scratch directory inside the volume and moves it into place at the end,
# mysql/ last: a start killed half-way (say by a liveness probe) leaves no
# half-initialised datadir behind; the next start just begins again.
initialise() {
  local scratch="$datadir/.portico-init" run pid name output
  log "initialising $datadir as uid $(id -u)"
  rm -rf "$scratch"
  mkdir "$scratch" || die "$datadir is not writable by uid $(id -u) gid $(id -g) (groups $(id -G))"
  # Its output is advice (set a root password...) that the steps below follow: shown
  # only if it fails.
  output="$(mariadb-install-db "${@:2}" --datadir="$scratch" --rpm --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve --skip-log-bin 2>&1)" || {
    printf '%s\n' "$output" >&2
    die "mariadb-install-db failed"
  }
  # A temporary server on a private socket, without networking: nothing can connect
  # before root has its password, and TCP probes do not see it as up.
  run=$(mktemp -d)
  "$@" --datadir="$scratch" --skip-networking --skip-log-bin \
    --socket="$run/mysqld.sock" --pid-file="$run/mysqld.pid" &
  pid=$!
  for _ in $(seq 60); do
    mariadb-admin --socket="$run/mysqld.sock" -uroot --silent ping >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || die "the temporary server did not start"
    sleep 1
  done
  # Through stdin, never a command line.
  {
    printf '%s\n' "SET @@SESSION.SQL_LOG_BIN=0;"
    printf '%s\n' "SET @@SESSION.SQL_MODE=REPLACE(@@SESSION.SQL_MODE, 'NO_BACKSLASH_ESCAPES', '');"
    printf '%s\n' "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1';"
    printf '%s\n' "EXECUTE IMMEDIATE CONCAT('DROP USER IF EXISTS root@\\'', @@hostname, '\\'');"
    printf '%s\n' "ALTER USER 'root'@'localhost' IDENTIFIED BY $(literal "$root_password");"
    printf '%s\n' "CREATE USER 'root'@'%' IDENTIFIED BY $(literal "$root_password");"
    printf '%s\n' "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;"
    printf '%s\n' "GRANT PROXY ON ''@'%' TO 'root'@'%' WITH GRANT OPTION;"
    if [ -n "$database" ]; then
      printf '%s\n' "CREATE DATABASE IF NOT EXISTS $(identifier "$database");"
    fi
    if [ -n "$user" ]; then
      printf '%s\n' "CREATE USER $(literal "$user")@'%' IDENTIFIED BY $(literal "$password");"
      if [ -n "$database" ]; then
        printf '%s\n' "GRANT ALL ON $(identifier "$database").* TO $(literal "$user")@'%';"
      fi
    fi
  } | mariadb --socket="$run/mysqld.sock" -uroot --batch --binary-mode ||
    { kill "$pid"; die "setting up users and databases failed"; }
  kill "$pid"
  wait "$pid" || die "the temporary server did not stop cleanly"
  rm -rf "$run"
  for name in "$scratch"/*; do
    name=${name##*/}
    [ "$name" = mysql ] && continue
    rm -rf "${datadir:?}/$name"
    mv "$scratch/$name" "$datadir/"
  done
  mv "$scratch/mysql" "$datadir/mysql"
  rmdir "$scratch"
  log "initialised${database:+ with database $database}${user:+ and user $user}"
}

if [ ! -d "$datadir/mysql" ]; then
  [ -n "$root_password" ] || die "$datadir holds no database and no root password is given: set MYSQL_ROOT_PASSWORD (or MARIADB_ROOT_PASSWORD)"
  if [ -n "$user" ]; then
    [ -n "$password" ] || die "MYSQL_USER is set but MYSQL_PASSWORD is not"
    [ "$user" != root ] || die "MYSQL_USER must not be root (MYSQL_ROOT_PASSWORD sets root's password)"
  fi
  initialise "$@"
else
  log "$datadir already holds a database: starting it"
fi
exec "$@"
