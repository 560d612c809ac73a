#!/usr/bin/env bash
# Push-down against in-memory for one party's table in PostgreSQL (docs/postgres.md,
# "Push-down"): bench/pushdown_setup.sh loads gen-data's ROWS records into a private cluster,
# then build/default/bench/pushdown_bench runs the whole job over the table both ways under
# /usr/bin/time -v (wall time, party peak RSS; the server's own CPU and memory are not included).
# Usage: bench/pushdown_bench.sh [ROWS] [DIR] [PORT] [MAX_ROUNDS]
set -euo pipefail
ROWS=${1:-10000000}
DIR=${2:-/tmp/pd_bench}
PORT=${3:-55433}
MAX_ROUNDS=${4:-0}
BUILD=${BUILD:-build/default}
BENCH=$(realpath "$BUILD/bench/pushdown_bench")
"$(dirname "$0")/pushdown_setup.sh" "$ROWS" "$DIR" "$PORT"
CONN="host=$DIR/pgc port=$PORT user=fedanon dbname=postgres"
cd "$DIR"
for mode in memory push-down; do
  /usr/bin/time -v "$BENCH" data/horizontal.yaml "$mode" "$CONN" adult "$MAX_ROUNDS" \
    2>"$DIR/$mode.time" | tee "$DIR/$mode.out"
  grep -E "Elapsed|Maximum resident" "$DIR/$mode.time"
done
