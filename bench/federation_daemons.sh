#!/usr/bin/env bash
# Benchmark of a horizontal job through real daemons (prints figures; not a test): a leader and
# three party daemons on loopback with mutual TLS (`fedanon federation up`), each party holding N
# generated Adult-like records (3N in all), next to `fedanon anonymize` on the 3N-record union
# with the same spec. The set-up is the papers' scalability setting: the Adult
# blow-up with all 13 QID attributes (fnlwgt a continuous QID on a public grid), L=4, K=20,
# C=0.2 (C is the LKC model's confidence bound on the sensitive values Divorced and Separated;
# C=1 would switch that constraint off).
# Prints: wall time, user CPU and peak RSS of both runs; per-party and leader peak RSS; the
# job's phases, rounds, secure sums and bytes from the job report; the ratio federated /
# centralized; whether the two released tables hold the same rows (SHA-256 of the sorted rows);
# and the load average (the machine may be shared).
# Mode `local`: the same through daemons with `recoding: local`, on gen-data's own
# horizontal job (12 QIDs, L=4, K=20, C=0.2: the setting of bench/local_recoding.sh's 1M speed
# figure), against `fedanon anonymize` with `recoding: local` on the union; also prints the waves
# (distinct rounds of the leader's `local_group` view-log lines, less the root's) and the
# integration path. gen-data's job declares every released non-QID domain (income, marital-status;
# fnlwgt is not released), so it integrates by one secure sum of released counts (view log
# `released_counts`), as a global job does; a job with an undeclared value would take the
# sealed-row union. It passes `--round-timeout 3600`: the union of 3 x 333,334 rows outlasts the
# default 60 s, and a loaded machine may slow a round past it.
# Usage: bench/federation_daemons.sh [rows-per-party=333334] [build-dir=build/default] [global|local]
#   e.g. bench/federation_daemons.sh 1000000; bench/federation_daemons.sh 10000000;
#        bench/federation_daemons.sh 333334 build/default local
# FEDANON_BENCH_TMP chooses where the tables go (default: $TMPDIR or /tmp); 3 × 10M needs about
# 12 GB (the union, the party tables, each daemon's copy and both outputs).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/bench_lib.sh
per_party="${1:-333334}"
build="${2:-build/default}"
mode="${3:-global}"
case "$mode" in global | local) ;; *) echo "mode: global or local, not '$mode'" >&2; exit 2 ;; esac
bin="$build/bin"
rows=$((3 * per_party))
[ -x "$bin/fedanon" ] || { echo "build first: $bin/fedanon not found" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work="$(mktemp -d "${FEDANON_BENCH_TMP:-${TMPDIR:-/tmp}}/fedanon-fbench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$bin/fedanon" gen-data --rows "$rows" --seed 1 --parties 3 --out "$work/data" >/dev/null 2>&1
timeout_args=()
if [ "$mode" = local ]; then
  echo "recoding: local" >> "$work/data/horizontal.yaml"
  # A sealed-row union hop over 333,334 rows takes minutes on 2 shared cores, past the leader's
  # default 60 s per request (released counts take seconds, but keep the margin).
  timeout_args=(--round-timeout 3600)
  setting="gen-data's 12 QIDs, L=4 K=20 C=0.2, recoding: local"
else
  setting="13 QIDs, L=4 K=20 C=0.2"
  # The papers' 13 QIDs: fnlwgt is a QID too (gen-data's federated spec leaves it out), on a
  # public grid (bench/bench_lib.sh).
  fnlwgt_qid "$work/data/horizontal.yaml"
  grep -q "L: 4, K: 20, C: 0.2" "$work/data/horizontal.yaml" || { echo "expected L=4 K=20 C=0.2" >&2; exit 1; }
fi
for p in 1 2 3; do
  n=$(($(wc -l < "$work/data/party$p.csv") - 1))
  [ "$n" = "$per_party" ] || echo "note: party$p holds $n records (gen-data's split of $rows)"
done

echo "horizontal job, 3 party daemons + leader on loopback mTLS; $rows records" \
  "($per_party per party); $setting; $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
"$bin/fedanon" --version
load0="$(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "%e %M %U %S" -o "$work/central.time" "$bin/fedanon" anonymize --quiet \
  --spec "$work/data/horizontal.yaml" --input "$work/data/table.csv" \
  --output "$work/central.csv" --report "$work/central.json"
rm -f "$work/data/table.csv"  # the daemons get their own copies of the party tables

# The federation runs in the background; its daemons' peak RSS (VmHWM) is sampled until it ends.
load1="$(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "%e %M %U %S" -o "$work/fed.time" "$bin/fedanon" federation up \
  --spec "$work/data/horizontal.yaml" \
  --party-data "$work/data/party1.csv,$work/data/party2.csv,$work/data/party3.csv" \
  --dir "$work/fed" --wait --result "$work/fed.csv" --report "$work/fed.json" \
  --leader-view "$work/view.jsonl" "${timeout_args[@]}" \
  > "$work/up.log" 2>&1 &
timer=$!
# `federation up` is the child of /usr/bin/time; its daemons are watched (bench_lib.sh).
up=""
while [ -z "$up" ] && kill -0 "$timer" 2> /dev/null; do
  read -r up _ < "/proc/$timer/task/$timer/children" 2> /dev/null || up="$(pgrep -P "$timer" || true)"
done
declare -A hwm
if [ -n "$up" ]; then
  while read -r n kb _; do
    case "$n" in
      fedanon-leader*) hwm[leader]="$kb" ;;
      fedanon-party\(*) party="${n#*(}" && hwm[${party%)}]="$kb" ;;
    esac
  done < <(watch_daemons "$up")
fi
wait "$timer" || { echo "federation up failed:"; tail -30 "$work/up.log"; exit 1; }
load2="$(cut -d' ' -f1-3 /proc/loadavg)"
rss=""
for name in "${!hwm[@]}"; do rss+="$name=${hwm[$name]} "; done

# Same released rows: SHA-256 of the sorted data rows (the header is compared on its own).
digest() { tail -n +2 "$1" | LC_ALL=C sort -S 2G --parallel=2 -T "$work" | sha256sum | cut -c1-16; }
cd_=$(digest "$work/central.csv"); fd_=$(digest "$work/fed.csv")
same_header=$([ "$(head -1 "$work/central.csv")" = "$(head -1 "$work/fed.csv")" ] && echo yes || echo no)

python3 - "$work" "$rows" "$cd_" "$fd_" "$same_header" "$rss" "$load0" "$load1" "$load2" <<'PY'
import json, re, sys
work, rows, cd, fd, same_header, rss, load0, load1, load2 = sys.argv[1:10]
c = json.load(open(f"{work}/central.json")); f = json.load(open(f"{work}/fed.json"))
cw, cm, cu, cs = open(f"{work}/central.time").read().split()[-4:]
fw, fm, fu, fs = open(f"{work}/fed.time").read().split()[-4:]
cw, cu, cs, fw, fu, fs = map(float, (cw, cu, cs, fw, fu, fs))
# A local report lists the first 1,000 steps; its stop_reason gives the total.
def total_steps(r):
    m = re.search(r"\((\d+) specializations; the report lists", r.get("stop_reason", ""))
    return int(m.group(1)) if m else len(r["steps"])
ft = f["timings_seconds"]; steps = total_steps(f); g = lambda k: ft.get(k, 0.0)
peaks = dict(p.split("=") for p in rss.split())
print(f"  centralized anonymize on the union    {cw:8.2f} s wall, {cu:7.1f} s user + {cs:.1f} s sys, "
      f"{int(cm) / 1024:6.0f} MiB peak RSS ({total_steps(c)} specializations); load {load0}")
print(f"  federated job (leader's clock)        {g('total'):8.2f} s ({steps} specializations, "
      f"{g('total') / cw:.2f}x centralized)")
print(f"    validate + parties load data        {g('validate'):8.2f} s")
print(f"    rounds                              {g('rounds'):8.2f} s ({1000 * g('rounds') / max(1, steps):.1f} ms per round)")
for k in sorted(ft):
    if k not in ("total", "validate", "rounds", "union"):
        print(f"    {k:<35} {ft[k]:8.2f} s")
print(f"    integration                         {g('union'):8.2f} s")
print(f"  federation up end to end              {fw:8.2f} s wall ({fw / cw:.2f}x centralized), "
      f"{fu:7.1f} s user + {fs:.1f} s sys for all daemons; load {load1} -> {load2}")
print("  peak RSS: " + ", ".join(f"{n} {int(k) / 1024:.0f} MiB" for n, k in sorted(peaks.items())))
to, fr = int(f.get("bytes_to_parties", 0)), int(f.get("bytes_from_parties", 0))
print(f"  secure sums {f.get('secure_sums', 0)}, {to / 1e6:.1f} MB to parties, {fr / 1e6:.1f} MB "
      f"from parties ({(to + fr) / 1e3 / max(1, steps):.0f} KB per round); final check: "
      f"{f.get('final_check', '?')}")
view = f"{work}/view.jsonl"
rounds = set()
released_counts = released_rows = 0
for line in open(view):
    if '"kind":"local_group"' in line:
        rounds.add(json.loads(line)["round"])
    released_counts += '"kind":"released_counts"' in line
    released_rows += '"kind":"released_rows"' in line
if rounds:
    print(f"  waves {len(rounds) - 1} (local recoding: every live group splits once per wave)")
print(f"  integration by " + (f"released counts ({released_counts} view-log lines)" if released_counts
      else "the sealed-row union" if released_rows else "?"))
print(f"  same specialization sequence (listed steps): {[s['value'] for s in c['steps']] == [s['value'] for s in f['steps']]}; "
      f"same released rows: {cd == fd} (sorted SHA-256 {cd} / {fd}, same header: {same_header})")
PY
