#!/usr/bin/env bash
# Benchmark of `fedanon anonymize` (prints figures; not a test). Measures the whole process
# (read + anonymize + write) and its peak memory:
#  * UCI Adult in the mohammed2010 §6 setting (45,222 records, 13 QID attributes, L=4, K=20,
#    C=0.2, S={Divorced, Separated}) when ../shared/datasets/adult exists;
#  * generated Adult-like tables of 250k, 500k and 1M records with L=4, K=20, C=1 (the paper's
#    scalability setting), to show linear growth.
# Usage: bench/anonymize_scaling.sh [build-dir]   (default build/default; build it first)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/adult_lkc_spec.sh
build="${1:-build/default}"
fedanon="$build/bin/fedanon"
[ -x "$fedanon" ] || { echo "build first: $fedanon not found" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work="$(mktemp -d -t fedanon-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# run LABEL SPEC INPUT: best of 3 wall-clock times, and the peak RSS of that run.
run() {
  local label="$1" spec="$2" input="$3" best="" rss=""
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %M" -o "$work/time" "$fedanon" anonymize --quiet --spec "$spec" \
      --input "$input" --output "$work/out.csv" --report "$work/report.json"
    read -r secs kb < "$work/time"
    if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best="$secs"; rss="$kb"; fi
  done
  local steps groups visits
  steps=$(grep -c '"round"' "$work/report.json" || true)
  groups=$(sed -n 's/.*"groups": "\([0-9]*\)".*/\1/p' "$work/report.json")
  # Record visits: the records read by all specializations (the work the algorithm does).
  visits=$(sed -n 's/.*"records": "\([0-9]*\)".*/\1/p' "$work/report.json" | awk '{s+=$1} END{print s+0}')
  printf "%-34s %8.2f s %8.1f MiB  %4s specializations %7s groups  %6.0f ns/record-visit\n" \
    "$label" "$best" "$(awk "BEGIN{print $rss/1024}")" "$steps" "$groups" \
    "$(awk "BEGIN{print $best * 1e9 / ($visits > 0 ? $visits : 1)}")"
}

echo "fedanon anonymize benchmark on $(nproc) cores ($(date -u +%Y-%m-%d))"
echo "$("$fedanon" --version)"

adult="../shared/datasets/adult"
if [ -f "$adult/adult_clean.csv" ]; then
  h="$(cd "$adult" && pwd)"
  write_adult_lkc_spec "$h" "$work/adult.yaml"
  run "Adult 45,222 L=4 K=20 C=0.2" "$work/adult.yaml" "$adult/adult_clean.csv"
else
  echo "Adult: skipped ($adult not found)"
fi

for rows in 250000 500000 1000000; do
  "$fedanon" gen-data --rows "$rows" --seed 1 --out "$work/gen$rows" 2>/dev/null
  sed -e 's/C: 0.2/C: 1/' "$work/gen$rows/job.yaml" > "$work/gen$rows/job_c1.yaml"
  run "generated $rows L=4 K=20 C=1" "$work/gen$rows/job_c1.yaml" "$work/gen$rows/table.csv"
  rm -rf "$work/gen$rows"
done
