#!/usr/bin/env bash
# Prepares the push-down benchmark (bench/pushdown_bench.sh): gen-data's Adult-like table of ROWS
# records (default 10M) loaded into a private PostgreSQL cluster (initdb as `nobody` when run as
# root, Unix socket in $DIR/pgc, port $PORT, fsync=off). Not a test; takes a while for 10M rows.
# Usage: bench/pushdown_setup.sh [ROWS] [DIR] [PORT]
set -euo pipefail
ROWS=${1:-10000000}
DIR=${2:-/tmp/pd_bench}
PORT=${3:-55433}
BUILD=${BUILD:-build/default}
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
mkdir -p "$DIR"
if [ ! -f "$DIR/data/table.csv" ]; then
  "$BUILD/bin/fedanon" gen-data --rows "$ROWS" --seed 1 --out "$DIR/data"
fi
RUN=()
if [ "$(id -u)" = 0 ]; then RUN=(runuser -u nobody --); fi
if [ ! -d "$DIR/pgc" ]; then
  mkdir -p "$DIR/pgc" && chown nobody "$DIR/pgc" 2>/dev/null || true
  "${RUN[@]}" "$BIN/initdb" -D "$DIR/pgc/db" -U fedanon --auth=trust >"$DIR/initdb.log"
  chmod 755 "$DIR"
fi
if ! "${RUN[@]}" "$BIN/pg_ctl" -D "$DIR/pgc/db" status >/dev/null 2>&1; then
  "${RUN[@]}" "$BIN/pg_ctl" -D "$DIR/pgc/db" -l "$DIR/pgc/server.log" -w start \
    -o "-k $DIR/pgc -p $PORT -c listen_addresses='' -c fsync=off -c shared_buffers=512MB \
        -c max_parallel_workers_per_gather=0"
fi
CONN="host=$DIR/pgc port=$PORT user=fedanon dbname=postgres"
HEADER=$(head -1 "$DIR/data/table.csv")
COLS=""
IFS=',' read -ra NAMES <<<"$HEADER"
for n in "${NAMES[@]}"; do
  case "$n" in
    age|fnlwgt|education-num|capital-gain|capital-loss|hours-per-week) t=integer ;;
    *) t=text ;;
  esac
  COLS+="${COLS:+, }\"$n\" $t"
done
if [ "$(psql "$CONN" -At -c "SELECT to_regclass('adult') IS NOT NULL")" != t ]; then
  psql "$CONN" -v ON_ERROR_STOP=1 -q -c "CREATE TABLE adult ($COLS)"
  psql "$CONN" -v ON_ERROR_STOP=1 -q -c "\\copy adult FROM '$DIR/data/table.csv' WITH (FORMAT csv, HEADER true)"
  psql "$CONN" -v ON_ERROR_STOP=1 -q -c "VACUUM ANALYZE adult"
fi
psql "$CONN" -At -c "SELECT count(*), pg_size_pretty(pg_total_relation_size('adult')) FROM adult"
