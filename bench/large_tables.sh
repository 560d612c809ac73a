#!/usr/bin/env bash
# Benchmark of `fedanon anonymize` on large generated tables (prints figures; not a test): the
# blow-up of Adult with all 13 QID attributes (fnlwgt a QID too), L=4, K=20, C=0.2 — the papers'
# scalability setting. Per size: wall time and peak RSS
# of the whole process (read + anonymize + write; /usr/bin/time), its user CPU time, the phases
# from the report, and the load average when it ran (the machine may be shared).
# Tables are generated under a temporary directory (deleted afterwards, also on failure).
# Usage: bench/large_tables.sh [build-dir=build/default] [sizes=1000000,10000000]
#   e.g. bench/large_tables.sh build/default 1000000,10000000,100000000
#   (100M records: about 10.6 GB of CSV plus as much output; the script checks the free space.)
# FEDANON_BENCH_TMP chooses where the tables go (default: $TMPDIR or /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/bench_lib.sh
build="${1:-build/default}"
sizes="${2:-1000000,10000000}"
fedanon="$build/bin/fedanon"
[ -x "$fedanon" ] || { echo "build first: $fedanon not found" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work="$(mktemp -d "${FEDANON_BENCH_TMP:-${TMPDIR:-/tmp}}/fedanon-large.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "fedanon anonymize on generated Adult-like tables, 13 QIDs, L=4 K=20 C=0.2;" \
  "$(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
"$fedanon" --version
printf "%-12s %9s %10s %8s %8s %8s %8s %8s %6s  %s\n" records wall "peak RSS" "user CPU" read \
  anonym write steps groups "load average (1, 5, 15 min)"
for rows in ${sizes//,/ }; do
  # About 110 bytes per row of CSV, read once and written once (the output is about as large).
  need_kb=$(( rows * 230 / 1024 ))
  free_kb=$(df -Pk "$work" | awk 'NR==2 {print $4}')
  if [ "$free_kb" -lt "$need_kb" ]; then
    echo "$rows: skipped (needs about $((need_kb / 1048576)) GiB free in $work, has $((free_kb / 1048576)) GiB)"
    continue
  fi
  dir="$work/gen$rows"
  # The papers' 13 QIDs: fnlwgt is a QID too (bench/bench_lib.sh).
  gen_table13 "$fedanon" "$rows" "$dir"
  load="$(loadavg)"
  /usr/bin/time -f "%e %M %U" -o "$dir/time" "$fedanon" anonymize --quiet --spec "$dir/job13.yaml" \
    --input "$dir/table.csv" --output "$dir/out.csv" --report "$dir/report.json"
  read -r secs kb user < "$dir/time"
  python3 - "$dir/report.json" "$rows" "$secs" "$kb" "$load" "$user" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["timings_seconds"]
rows, secs, kb, load, user = sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5], float(sys.argv[6])
print(f"{int(rows):>12,} {secs:8.1f}s {kb / 1024:7.0f}MiB {user:7.1f}s {t['read']:7.1f}s {t['anonymize']:7.1f}s "
      f"{t['write']:7.1f}s {len(r['steps']):8} {int(r['groups']):6}  {load}")
PY
  rm -rf "$dir"
done
