#!/usr/bin/env bash
# Benchmark of `fedanon anonymize` on a small table, where fixed costs show (prints figures; not a
# test): UCI Adult in the mohammed2010 §6 setting (45,222 records, 13 QID attributes with the
# continuous fnlwgt, capital-gain and capital-loss without a grid, ARX hierarchies, L=4, K=20,
# C=0.2, S = {Divorced, Separated} of marital-status), the spec of bench/adult_lkc_spec.sh.
# Whole process (start-up, read, anonymize, write, report): one warm-up, then
# RUNS runs; prints the median wall, user and system seconds, the median and largest peak RSS, the
# load average before and after, and the SHA-256 of the released table (to compare two builds).
# Usage: bench/small_tables.sh [build-dir=build/default] [runs=7]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/adult_lkc_spec.sh
build="${1:-build/default}"
runs="${2:-7}"
fedanon="$build/bin/fedanon"
[ -x "$fedanon" ] || { echo "build first: $fedanon not found" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
adult="../shared/datasets/adult"
[ -f "$adult/adult_clean.csv" ] || { echo "UCI Adult not found in $adult" >&2; exit 1; }
h="$(cd "$adult" && pwd)"
work="$(mktemp -d -t fedanon-small.XXXXXX)"
trap 'rm -rf "$work"' EXIT
write_adult_lkc_spec "$h" "$work/adult.yaml"

# Seconds to the millisecond from bash's `time` (/usr/bin/time rounds them to 10 ms), the peak
# RSS from /usr/bin/time.
TIMEFORMAT='%3R %3U %3S'
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 0 "$runs"); do  # run 0 is the warm-up
  { time /usr/bin/time -f "%M" -o "$work/rss" "$fedanon" anonymize --quiet \
      --spec "$work/adult.yaml" --input "$adult/adult_clean.csv" --output "$work/out.csv" \
      --report "$work/report.json"; } 2> "$work/time"
  [ "$i" -gt 0 ] && echo "$(tail -1 "$work/time") $(cat "$work/rss")" >> "$work/times"
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "fedanon anonymize, UCI Adult 45,222 records, 13 QIDs, L=4 K=20 C=0.2; $(nproc) cores," \
  "$(date -u '+%Y-%m-%d %H:%M UTC')"
"$fedanon" --version
python3 - "$work/times" "$load_before" "$load_after" <<'PY'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
wall, user, sys_, kb = (sorted(c) for c in zip(*rows))
med = statistics.median
print(f"{len(rows)} runs, medians: wall {med(wall):.3f} s, user {med(user):.3f} s, "
      f"sys {med(sys_):.3f} s, peak RSS {med(kb) / 1024:.1f} MiB (largest {max(kb) / 1024:.1f} MiB)")
print(f"load average before: {sys.argv[2]}, after: {sys.argv[3]}")
PY
echo "released table sha256 $(sha256sum < "$work/out.csv" | cut -c1-64)"
