#!/usr/bin/env bash
# Benchmark of a horizontal job through real daemons (prints figures; not a test): a leader and
# three party daemons on loopback with mutual TLS (`fedanon federation up`), 1,000,000 generated
# records split 333,334 / 333,333 / 333,333, L=4, K=20, C=1 — next to `fedanon anonymize` on the
# union with the same spec. Per-round latency and bytes come from the job report.
# Usage: bench/federation_daemons.sh [rows=1000000] [build-dir=build/default]
set -euo pipefail
cd "$(dirname "$0")/.."
rows="${1:-1000000}"
bin="${2:-build/default}/bin"
work="$(mktemp -d -t fedanon-fbench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$bin/fedanon" gen-data --rows "$rows" --seed 1 --parties 3 --out "$work/data" 2>/dev/null
sed -e 's/C: 0.2/C: 1/' "$work/data/horizontal.yaml" > "$work/data/h.yaml"
mv "$work/data/h.yaml" "$work/data/horizontal.yaml"
t0=$(date +%s.%N)
"$bin/fedanon" anonymize --quiet --spec "$work/data/horizontal.yaml" --input "$work/data/table.csv" \
  --output "$work/central.csv" --report "$work/central.json"
t1=$(date +%s.%N)
"$bin/fedanon" federation up --spec "$work/data/horizontal.yaml" \
  --party-data "$work/data/party1.csv,$work/data/party2.csv,$work/data/party3.csv" \
  --wait --result "$work/fed.csv" --report "$work/fed.json" > "$work/up.log" 2>&1
t2=$(date +%s.%N)
python3 - "$work/central.json" "$work/fed.json" "$t0" "$t1" "$t2" "$rows" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); f = json.load(open(sys.argv[2]))
t0, t1, t2, rows = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
ft = f["timings_seconds"]; steps = len(f["steps"])
print(f"horizontal job, 3 party daemons + leader on loopback mTLS, {rows} records, L=4 K=20 C=1")
print(f"  centralized anonymize on the union    {t1 - t0:8.2f} s ({len(c['steps'])} specializations)")
print(f"  federated job (leader's clock)        {ft['total']:8.2f} s ({steps} specializations, "
      f"{ft['total'] / (t1 - t0):.2f}x centralized)")
print(f"    validate + parties load data        {ft['validate']:8.2f} s")
print(f"    rounds                              {ft['rounds']:8.2f} s ({1000 * ft['rounds'] / max(1, steps):.1f} ms per round)")
print(f"    integration                         {ft['union']:8.2f} s")
print(f"  federation up end to end              {t2 - t1:8.2f} s (incl. provisioning and daemon start/stop)")
to, fr = int(f["bytes_to_parties"]), int(f["bytes_from_parties"])
print(f"  secure sums {f['secure_sums']}, {to / 1e6:.1f} MB to parties, {fr / 1e6:.1f} MB from parties "
      f"({(to + fr) / 1e3 / max(1, steps):.0f} KB per round)")
print(f"  same specialization sequence: {[s['value'] for s in c['steps']] == [s['value'] for s in f['steps']]}")
PY
