#!/usr/bin/env bash
# The performance figures of docs/performance.md in one command (prints figures; --quick is also
# CI's check). Every figure is the median of several whole-process runs, next to its goal (--full)
# or to the committed baseline (--quick), with the load average.
#
# --quick (CI, about 1-2 minutes on 2 cores, no ../shared data): gen-data tables only — 45,222
#   records (UCI Adult's size) and 1,000,000 records, the 13-QID job of bench/large_tables.sh
#   (L=4 K=20 C=0.2) — and a vertical job through daemons (`fedanon federation up`, leader + 2
#   parties, mTLS on loopback) over 20,000 ids with one template of mohammed2011's Top7 QIDs,
#   k = 50 (bench/vertical_daemons.sh's spec). For each: the process CPU time (user + system; a
#   daemon job's is that of every daemon, which `federation up` reaps) and the peak RSS (of the
#   largest single process), compared with bench/perf_baseline.json. Exits 1 when a median CPU time
#   exceeds its baseline × speed ratio × (1 + TOL_CPU) or a median peak RSS its baseline ×
#   (1 + TOL_MEM); wall time is printed, never judged. The speed ratio is the baseline machine's
#   `openssl speed sha256` over this one's (CPU-time based, so load does not move it): a baseline
#   taken on one machine judges another's CPU times in proportion. Page faults are apart: each
#   job's count is in the baseline, and the CPU they took there (count × the baseline machine's
#   CPU time per fault) is replaced by the same count at this machine's cost per fault (a second
#   yardstick, dd first-touching 64 MiB), the rest scaled by the speed ratio. The tolerances come
#   from 20 runs under load (docs/performance.md, "The quick form's tolerance").
# --full: issue #48's figures beside their goals: UCI Adult (mohammed2010 §6: 45,222 records, 13
#   QIDs with fnlwgt, L=4 K=20 C=0.2, ARX hierarchies; bench/adult_lkc_spec.sh), then tables of
#   1M and 10M records (--with-100m: also 100M, about 11 GB of CSV and as much output) — the Adult
#   blow-up (rows resampled with replacement, bench/bench_lib.sh) when ../shared/datasets/adult
#   exists, else gen-data's table with its 13-QID job —, CPU time per record across those sizes,
#   and the vertical job of bench/vertical_daemons.sh (Top7 template, k = 50) at 200,000 and
#   1,000,000 ids against the elliptic-curve limit (4 P-256 multiplications per id at
#   `openssl speed -multi <cores> ecdhp256`, measured in the same run) with each phase's share.
#   Table times are also given as a ratio to a plain scan of the same CSV (`cut -d, -f15`, run
#   after each anonymize run: the ratio is taken pair by pair).
# Options: --build DIR (default build/default), --baseline FILE (default bench/perf_baseline.json),
#   --write-baseline FILE (quick: write this run's medians as a new baseline; commit it on its own),
#   --json FILE (this run's medians and ratios), --vertical-runs N (full; default 1),
#   --large-runs N (full, 1M and 10M; default 3), --keep (leave the samples and the vertical runs'
#   figures in the working directory; the tables themselves are deleted as they are done).
# FEDANON_BENCH_TMP chooses where the tables go (default: $TMPDIR or /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/bench_lib.sh
. bench/adult_lkc_spec.sh

# Allowed excess over the baseline before --quick fails (docs/performance.md: set from the spread
# of 20 runs under load).
TOL_CPU=0.50
TOL_MEM=0.25

mode=quick
build=build/default
baseline=bench/perf_baseline.json
write_baseline=""
json_out=""
with_100m=0
vertical_runs=1
large_runs=3
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --with-100m) with_100m=1 ;;
    --build) build="$2"; shift ;;
    --baseline) baseline="$2"; shift ;;
    --write-baseline) write_baseline="$2"; shift ;;
    --json) json_out="$2"; shift ;;
    --vertical-runs) vertical_runs="$2"; shift ;;
    --large-runs) large_runs="$2"; shift ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$with_100m" = 0 ] || [ "$mode" = full ] || { echo "--with-100m needs --full" >&2; exit 2; }
fedanon="$build/bin/fedanon"
[ -x "$fedanon" ] || { echo "build first: $fedanon not found" >&2; exit 1; }
work="$(mktemp -d "${FEDANON_BENCH_TMP:-${TMPDIR:-/tmp}}/fedanon-perf.XXXXXX")"
if [ "$keep" = 1 ]; then
  echo "keeping the samples in $work (rerun the report: bench/perf_report.py --samples $work/samples.tsv ...)"
else
  trap 'rm -rf "$work"' EXIT
fi
samples="$work/samples.tsv"  # workload kind wall user sys peak-KiB faults load1 [steps]
: > "$samples"
top7=capital-gain,age,marital-status,education-num,relationship,hours-per-week,sex
adult=../shared/datasets/adult

version="$("$fedanon" --version | head -1)"
started="$(date -u '+%Y-%m-%d %H:%M UTC')"
load_start="$(loadavg)"
echo "bench/perf.sh --$mode: $version; $(nproc) cores; $started; load average $load_start"

# tables NAME RUNS WARMUPS SPEC INPUT: `fedanon anonymize` RUNS times after WARMUPS uncounted runs,
# each followed by the yardstick, a plain scan of the same CSV.
tables() {
  local name="$1" runs="$2" warmups="$3" spec="$4" input="$5" i load steps
  echo "  $name: $(($(wc -l < "$input") - 1)) records, $runs counted runs after $warmups uncounted"
  for ((i = 1; i <= warmups + runs; ++i)); do
    load="$(cut -d' ' -f1 /proc/loadavg)"
    timed "$work/t" "$fedanon" anonymize --quiet --spec "$spec" --input "$input" \
      --output "$work/out.csv" --report "$work/report.json"
    # shellcheck disable=SC2016  # $1 is the inner shell's
    timed "$work/s" sh -c 'exec cut -d, -f15 "$1" > /dev/null' scan "$input"
    [ "$i" -gt "$warmups" ] || continue
    steps="$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' \
      "$work/report.json")"
    echo "$name job $(cat "$work/t") $load $steps" >> "$samples"
    echo "$name scan $(cat "$work/s") $load" >> "$samples"
  done
  rm -f "$work/out.csv"
}

# A generated table of ROWS records (DIR/table.csv, DIR/job13.yaml), or the Adult blow-up.
large_table() {
  local rows="$1" dir="$2" need_kb free_kb
  mkdir -p "$dir"
  need_kb=$((rows * 230 / 1024))  # about 110 bytes a row, read once and written once
  free_kb=$(df -Pk "$dir" | awk 'NR==2 {print $4}')
  if [ "$free_kb" -lt "$need_kb" ]; then
    echo "  $rows records: skipped (needs about $((need_kb / 1048576)) GiB free, has $((free_kb / 1048576)))"
    return 1
  fi
  if [ "$mode" = full ] && [ -f "$adult/adult_clean.csv" ]; then
    adult_blowup "$rows" "$dir/table.csv"
    write_adult_lkc_spec "$(cd "$adult" && pwd)" "$dir/job13.yaml"
  else
    gen_table13 "$fedanon" "$rows" "$dir"
  fi
}

# vertical_quick ROWS RUNS: the whole job through daemons (timed: the CPU of every daemon).
vertical_quick() {
  local rows="$1" runs="$2" i load dir="$work/v$1"
  "$fedanon" gen-data --rows "$rows" --seed 1 --parties 2 --partition vertical --out "$dir" 2> /dev/null
  write_vertical_template_spec "$dir/vertical.yaml" "$top7"
  echo "  vertical-${rows}: $runs runs, leader + 2 party daemons, $rows ids, Top7 template k=50"
  for ((i = 1; i <= runs; ++i)); do
    load="$(cut -d' ' -f1 /proc/loadavg)"
    timed "$work/t" "$fedanon" federation up --spec "$dir/vertical.yaml" \
      --party-data "$dir/party1.csv,$dir/party2.csv" --wait --result "$dir/out.csv" \
      --report "$dir/report.json" > "$dir/up.log" 2>&1 || { tail -30 "$dir/up.log"; exit 1; }
    echo "vertical-$rows job $(cat "$work/t") $load $(python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); t = r["timings_seconds"]
print(len(r["steps"]), *(f"{k}={v}" for k, v in sorted(t.items())))' "$dir/report.json")" >> "$samples"
  done
  # The yardstick: `openssl speed` (2 s) after the runs.
  echo "vertical-$rows openssl $(openssl speed -seconds 2 -multi "$(nproc)" ecdhp256 2> /dev/null |
    awk '/ecdh \(nistp256\)/ {print $NF}' | tail -1) $(cut -d' ' -f1 /proc/loadavg)" >> "$samples"
}

if [ "$mode" = quick ]; then
  # The machine's speed, so that a baseline taken on one machine judges another: SHA-256 over
  # 16 KiB blocks for 2 s of CPU time (`openssl speed` divides by user CPU time, not wall time, so
  # load does not move it), median of three.
  for _ in 1 2 3; do
    echo "machine sha256 $(openssl speed -seconds 2 -bytes 16384 sha256 2> /dev/null |
      awk '$1 == "sha256" {sub(/k$/, "", $2); print $2}')" >> "$samples"
  done
  # And what a first touch of a page costs here (the kernel zeroing it and mapping it in, which on
  # some virtual machines costs ten times what it costs on others, while hashing does not move):
  # dd reading 64 MiB of zeros into a fresh buffer, CPU time over page faults, median of five.
  for _ in 1 2 3 4 5; do
    timed "$work/t" dd if=/dev/zero of=/dev/null bs=64M count=1 2> /dev/null
    echo "machine touch $(cat "$work/t")" >> "$samples"
  done
  gen_table13 "$fedanon" 45222 "$work/small"
  tables small-45k 9 1 "$work/small/job13.yaml" "$work/small/table.csv"
  rm -rf "$work/small"
  gen_table13 "$fedanon" 1000000 "$work/large"
  tables table-1m 5 0 "$work/large/job13.yaml" "$work/large/table.csv"
  rm -rf "$work/large"
  vertical_quick 20000 5
else
  if [ -f "$adult/adult_clean.csv" ]; then
    write_adult_lkc_spec "$(cd "$adult" && pwd)" "$work/adult.yaml"
    tables adult 5 1 "$work/adult.yaml" "$adult/adult_clean.csv"
  else
    echo "  (no $adult: gen-data's 45,222 records stand in for UCI Adult)"
    gen_table13 "$fedanon" 45222 "$work/small"
    tables adult 5 1 "$work/small/job13.yaml" "$work/small/table.csv"
  fi
  sizes=(1000000 10000000)
  [ "$with_100m" = 0 ] || sizes+=(100000000)
  for rows in "${sizes[@]}"; do
    runs="$large_runs"
    [ "$rows" -lt 100000000 ] || runs=1
    if large_table "$rows" "$work/large"; then
      tables "table-$((rows / 1000000))m" "$runs" 0 "$work/large/job13.yaml" "$work/large/table.csv"
    fi
    rm -rf "$work/large"
  done
  for rows in 200000 1000000; do
    for ((i = 1; i <= vertical_runs; ++i)); do
      echo "  vertical-$rows: run $i of $vertical_runs (bench/vertical_daemons.sh $rows $build 1 $top7)"
      FEDANON_BENCH_SUMMARY="$work/vertical-$rows-$i.json" \
        bench/vertical_daemons.sh "$rows" "$build" 1 "$top7" > "$work/vertical-$rows-$i.log" 2>&1 ||
        { cat "$work/vertical-$rows-$i.log"; exit 1; }
    done
  done
fi

python3 bench/perf_report.py --mode "$mode" --samples "$samples" --work "$work" \
  --baseline "$baseline" --write-baseline "$write_baseline" --json "$json_out" \
  --tolerance-cpu "$TOL_CPU" --tolerance-mem "$TOL_MEM" --load-start "$load_start" \
  --load-end "$(loadavg)" --produced "$version; $started"
