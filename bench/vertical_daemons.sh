#!/usr/bin/env bash
# Benchmark of a vertical job through real daemons (prints figures; not a test): a leader and two
# party daemons on loopback with mutual TLS (`fedanon federation up`), generated Adult-like
# records split by columns (party1: age..occupation, party2: relationship..native-country), one
# QID template over all 13 QID attributes (marital-status turned into a QID; fnlwgt, a
# near-unique weight, left out) with k = 50 — mohammed2011 §7.3's AllAttQID setting — next to
# `fedanon anonymize` on the joined table with the same spec. The job report separates the ID
# matching from the anonymization rounds.
# Usage: bench/vertical_daemons.sh [rows=200000] [build-dir=build/default]
set -euo pipefail
cd "$(dirname "$0")/.."
rows="${1:-200000}"
bin="${2:-build/default}/bin"
work="$(mktemp -d -t fedanon-vbench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$bin/fedanon" gen-data --rows "$rows" --seed 1 --parties 2 --partition vertical \
  --out "$work/data" 2>/dev/null
python3 - "$work/data/vertical.yaml" <<'PY'
import re, sys
path = sys.argv[1]
y = open(path).read()
y = re.sub(r"\{name: marital-status, role: sensitive, values: \[[^\]]*\]",
           "{name: marital-status, role: qid, taxonomy: tax/marital-status.csv", y)
qids = re.findall(r"\{name: ([\w-]+), role: qid", y)
y = re.sub(r"privacy: .*\n", "privacy:\n  model: templates\n  templates:\n    - {qid: [" +
           ", ".join(qids) + "], k: 50}\n", y)
open(path, "w").write(y)
PY
t0=$(date +%s.%N)
"$bin/fedanon" anonymize --quiet --spec "$work/data/vertical.yaml" --input "$work/data/table.csv" \
  --output "$work/central.csv" --report "$work/central.json"
t1=$(date +%s.%N)
"$bin/fedanon" federation up --spec "$work/data/vertical.yaml" \
  --party-data "$work/data/party1.csv,$work/data/party2.csv" \
  --wait --result "$work/fed.csv" --report "$work/fed.json" > "$work/up.log" 2>&1 || {
  cat "$work/up.log"; exit 1; }
t2=$(date +%s.%N)
python3 - "$work/central.json" "$work/fed.json" "$t0" "$t1" "$t2" "$rows" "$work/central.csv" "$work/fed.csv" <<'PY'
import collections, csv, json, sys
c = json.load(open(sys.argv[1])); f = json.load(open(sys.argv[2]))
t0, t1, t2, rows = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
ft = f["timings_seconds"]; steps = len(f["steps"])
print(f"vertical job, 2 party daemons + leader on loopback mTLS, {rows} records, one QID of "
      f"13 attributes, k=50")
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
PY
