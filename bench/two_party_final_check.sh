#!/usr/bin/env bash
# The final check of a two-party horizontal job by secure comparison (issue #44; prints figures,
# not a test): gen-data's Adult-like table (ROWS records, 13 QIDs with fnlwgt on a public grid,
# L=4, K=20, C=0.2 — the setting of bench/federation_daemons.sh) split over 2 and over 3 data
# parties, each run through real daemons on loopback with mutual TLS (`fedanon federation up`).
# Prints, per run: the job's total and final-check seconds from the report (timings_seconds), the
# report's final_check line, the bytes the leader relayed, and the load average.
# Usage: bench/two_party_final_check.sh [rows=45222] [build-dir=build/default]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/bench_lib.sh
rows="${1:-45222}"
build="${2:-build/default}"
bin="$build/bin"
[ -x "$bin/fedanon" ] || { echo "build first: $bin/fedanon not found" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/fedanon-fc2.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "final check, 2 and 3 data parties, $rows records, 13 QIDs, L=4 K=20 C=0.2;" \
  "$(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
for parties in 2 3; do
  data="$work/data$parties"
  "$bin/fedanon" gen-data --rows "$rows" --seed 1 --parties "$parties" --out "$data" >/dev/null 2>&1
  fnlwgt_qid "$data/horizontal.yaml"
  files="$(for p in $(seq 1 "$parties"); do printf '%s,' "$data/party$p.csv"; done)"
  load="$(cut -d' ' -f1-3 /proc/loadavg)"
  "$bin/fedanon" federation up --spec "$data/horizontal.yaml" --party-data "${files%,}" \
    --dir "$work/fed$parties" --wait --result "$work/fed$parties.csv" \
    --report "$work/fed$parties.json" > "$work/up$parties.log" 2>&1 ||
    { echo "federation up failed:"; tail -30 "$work/up$parties.log"; exit 1; }
  python3 - "$work/fed$parties.json" "$parties" "$load" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); parties, load0, load1 = sys.argv[2:5]
t = r.get("timings_seconds", {})
print(f"{parties} parties: total {t.get('total', 0):.2f} s; "
      + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(t.items()) if k != "total"))
print(f"  final_check: {r.get('final_check', '')}")
print(f"  bytes to parties {int(r.get('bytes_to_parties', 0)):,}, "
      f"from parties {int(r.get('bytes_from_parties', 0)):,}; load {load0} -> {load1}")
PY
done
