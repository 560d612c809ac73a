#!/usr/bin/env bash
# Benchmark of a vertical job through real daemons (prints figures; not a test): a leader and two
# party daemons on loopback with mutual TLS (`fedanon federation up`), generated Adult-like
# records split by columns (party1: age..occupation, party2: relationship..native-country), one
# QID template over all 13 QID attributes (or those of TEMPLATE, below) (marital-status turned into a QID; fnlwgt, a
# near-unique weight, left out) with k = 50 — mohammed2011 §7.3's AllAttQID setting; the spec of
# bench/bench_lib.sh's write_vertical_template_spec — next to
# `fedanon anonymize` on the joined table with the same spec. The job report separates the ID
# matching from the anonymization rounds.
# Also printed, for the targets on a shared machine: the load average before and after;
# `openssl speed -multi <cores> ecdhp256` before and after the job (its mean gives the limit: 4
# scalar multiplications per matched id, 2 parties); ID matching's and the whole job's fraction of
# that limit by the wall clock; the same by CPU time (each party logs its process CPU during ID
# matching; one multiplication's thread CPU cost comes from `id_matching_bench --micro`); and each
# daemon's peak RSS (VmHWM, polled from /proc every 0.2 s) and CPU time, per process.
# Each daemon also logs its memory (RSS and peak RSS) at the phase boundaries (ID matching done,
# rounds done, release sealed / joined, release done); those lines are printed per daemon.
# With overlap F < 1 ("1M x 1M ids, half overlapping"), each party holds `rows` ids of
# which round(rows * F) are common to both (`fedanon gen-data --overlap F`); the centralized run
# is on the join (the common records), and the limit still counts 4 multiplications per party id.
# TEMPLATE (comma-separated attribute names) makes the template cover only those QIDs, e.g.
# mohammed2011's Top7 `capital-gain,age,marital-status,education-num,relationship,hours-per-week,sex`
# (the other attributes stay QIDs of the spec, outside the template).
# With FEDANON_BENCH_SUMMARY=FILE the figures printed are also written to FILE as JSON
# (bench/perf.sh reads it). With FEDANON_BENCH_KEEP=1 the working directory (the daemons' logs
# under fed/logs) stays, and its path is printed at the end.
# Usage: bench/vertical_daemons.sh [rows=200000] [build-dir=build/default] [overlap=1] [template]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/bench_lib.sh
rows="${1:-200000}"
build="${2:-build/default}"
overlap="${3:-1}"
template="${4:-}"
common_rows="$(python3 -c "print(round($rows * $overlap))")"
bin="$build/bin"
cores="$(nproc)"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
openssl_speed() {
  openssl speed -seconds 5 -multi "$cores" ecdhp256 2>/dev/null |
    awk '/ecdh \(nistp256\)/ {print $NF}' | tail -1
}
mul_us="$("$build/bench/id_matching_bench" --micro 2000 |
  awk '/EC_POINT_mul, variable point/ {print $NF}')"
ops_before="$(openssl_speed)"
work="$(mktemp -d -t fedanon-vbench.XXXXXX)"
if [[ "${FEDANON_BENCH_KEEP:-0}" == 1 ]]; then
  trap 'echo "kept: $work"' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
"$bin/fedanon" gen-data --rows "$common_rows" --seed 1 --parties 2 --partition vertical \
  --overlap "$overlap" --out "$work/data" 2>/dev/null
write_vertical_template_spec "$work/data/vertical.yaml" "$template"
t0=$(date +%s.%N)
"$bin/fedanon" anonymize --quiet --spec "$work/data/vertical.yaml" --input "$work/data/table.csv" \
  --output "$work/central.csv" --report "$work/central.json"
t1=$(date +%s.%N)
"$bin/fedanon" federation up --spec "$work/data/vertical.yaml" --dir "$work/fed" --keep \
  --party-data "$work/data/party1.csv,$work/data/party2.csv" \
  --wait --result "$work/fed.csv" --report "$work/fed.json" > "$work/up.log" 2>&1 &
up=$!
# Per daemon: the last VmHWM (monotone) and CPU ticks seen while it ran (bench_lib.sh).
watch_daemons "$up" > "$work/usage.txt" &
watcher=$!
wait "$up" || { cat "$work/up.log"; exit 1; }
t2=$(date +%s.%N)
wait "$watcher" || true
ops_after="$(openssl_speed)"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
usage="$(sort "$work/usage.txt")"
idcpu="$(grep -ho 'process CPU [0-9.]* s since IdEncrypt, peak RSS [0-9]* MB' "$work"/fed/logs/*.log |
  awk '{print $3, $9}' || true)"
# The leader's ID-matching breakdown (lists in batches).
grep -ho 'ID matching in [0-9]* batches.*' "$work"/fed/logs/*.log |
  sed 's/^/leader: /' || true
phases="$(for f in "$work"/fed/logs/*.log; do
  grep -ho 'memory at [a-zA-Z ]*: RSS [0-9]* MB, peak RSS [0-9]* MB' "$f" |
    sed "s|^|$(basename "$f" .log): |" || true
done)"
python3 - "$work/central.json" "$work/fed.json" "$t0" "$t1" "$t2" "$rows" "$work/central.csv" "$work/fed.csv" \
  "$ops_before" "$ops_after" "$cores" "$mul_us" "$load_before" "$load_after" "$usage" "$idcpu" \
  "$(getconf CLK_TCK)" "$common_rows" "$phases" "$work/data/vertical.yaml" <<'PY'
import collections, csv, json, re, sys
c = json.load(open(sys.argv[1])); f = json.load(open(sys.argv[2]))
t0, t1, t2, rows = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
ops_before, ops_after, cores, mul_us = float(sys.argv[9]), float(sys.argv[10]), int(sys.argv[11]), float(sys.argv[12])
load_before, load_after, usage, idcpu, tck = sys.argv[13], sys.argv[14], sys.argv[15], sys.argv[16], float(sys.argv[17])
common_rows, phases = int(sys.argv[18]), sys.argv[19]
template = re.search(r"\{qid: \[([^\]]*)\]", open(sys.argv[20]).read()).group(1).split(", ")
ft = f["timings_seconds"]; steps = len(f["steps"])
print(f"vertical job, 2 party daemons + leader on loopback mTLS, {rows} records per party "
      f"({common_rows} common), one QID template of {len(template)} attributes, k=50")
print(f"  centralized anonymize on the joined table {t1 - t0:8.2f} s ({len(c['steps'])} specializations)")
print(f"  federated job (leader's clock)            {ft['total']:8.2f} s ({steps} specializations)")
print(f"    validate + parties load data            {ft['validate']:8.2f} s")
print(f"    ID matching                             {ft['id_matching']:8.2f} s")
print(f"    rounds                                  {ft['rounds']:8.2f} s ({1000 * ft['rounds'] / max(1, steps):.1f} ms per round)")
print(f"    release (join at the recipient)         {ft['union']:8.2f} s")
print(f"    total excluding ID matching             {ft['total'] - ft['id_matching']:8.2f} s (target < 10 s)")
print(f"  federation up end to end                  {t2 - t1:8.2f} s")
def rows_of(p):
    r = list(csv.reader(open(p))); return r[0], r[1:]
hc, rc = rows_of(sys.argv[7]); hf, rf = rows_of(sys.argv[8])
idx = [hf.index(h) for h in hc]
same = collections.Counter(map(tuple, rc)) == collections.Counter(tuple(r[i] for i in idx) for r in rf)
print(f"  same specialization sequence: {[s['value'] for s in c['steps']] == [s['value'] for s in f['steps']]}, "
      f"same joined table: {same}")
ops = (ops_before + ops_after) / 2
limit_s = 4 * rows / ops  # 4 multiplications per matched id (2 parties), every core
print(f"load average before {load_before}, after {load_after}; {cores} cores")
print(f"  openssl speed -multi {cores} ecdhp256: {ops:.0f} multiplications/s (mean of {ops_before:.0f} "
      f"before and {ops_after:.0f} after)")
print(f"  limit: {4 * rows} multiplications = {limit_s:.2f} s ({ops / 4:.0f} ids/s)")
print(f"  ID matching: {rows / ft['id_matching']:.0f} ids/s, {limit_s / ft['id_matching']:.2f} of the limit "
      f"(wall; target >= 0.75)")
print(f"  whole job: {limit_s / ft['total']:.2f} of the limit by the leader's clock, "
      f"{limit_s / (t2 - t1):.2f} by federation up end to end (wall; target >= 0.65)")
cpu = [tuple(map(float, l.split())) for l in idcpu.splitlines() if l.strip()]
if cpu:
    spent = sum(s for s, _ in cpu)
    ideal = 4 * rows * mul_us * 1e-6
    print(f"  ID matching by CPU time: the parties used {spent:.1f} s of CPU "
          f"({', '.join(f'{s:.1f} s' for s, _ in cpu)}); 4 x {rows} multiplications at {mul_us:.1f} us "
          f"(id_matching_bench --micro, thread CPU) = {ideal:.1f} s: {ideal / spent:.2f} of the limit")
    print(f"  peak RSS at the end of ID matching: {', '.join(f'{m:.0f} MB' for _, m in cpu)}")
    busy = spent / (cores * ft['id_matching'])
    print(f"  parties' CPU during ID matching / ({cores} cores x its wall {ft['id_matching']:.2f} s): "
          f"{busy:.2f} busy, {1 - busy:.2f} idle (includes the leader's and other processes' share)")
if phases.strip():
    print("  memory at phase boundaries (each daemon's log):")
    for line in phases.splitlines():
        print(f"    {line}")
processes = {}
for line in usage.splitlines():
    name, kb, t = line.split()
    processes[name] = {"peak_rss_kib": int(kb), "cpu_s": float(t) / tck}
    print(f"  {name:40s} peak RSS {int(kb) / 1024:7.0f} MB, CPU {float(t) / tck:8.1f} s")
import os
if os.environ.get("FEDANON_BENCH_SUMMARY"):
    json.dump({"rows": rows, "common_rows": common_rows, "cores": cores,
               "openssl_mults_per_s": [ops_before, ops_after], "limit_s": limit_s,
               "timings_s": ft, "specializations": steps, "end_to_end_s": t2 - t1,
               "centralized_s": t1 - t0, "same_table": same,
               "same_sequence": [s["value"] for s in c["steps"]] == [s["value"] for s in f["steps"]],
               "id_matching_party_cpu_s": [s for s, _ in cpu], "processes": processes,
               "load_before": load_before, "load_after": load_after},
              open(os.environ["FEDANON_BENCH_SUMMARY"], "w"), indent=1)
PY
