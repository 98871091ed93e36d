#!/bin/sh
# First start: make the cluster in $PGDATA with the password from
# POSTGRES_PASSWORD (password logins over the network only) and the
# database POSTGRES_DB. Every start: run postgres in the foreground.
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
db="${POSTGRES_DB:-sluice}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U postgres --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  psql -v ON_ERROR_STOP=1 -q -U postgres -d postgres -c "CREATE DATABASE \"$db\""
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql
