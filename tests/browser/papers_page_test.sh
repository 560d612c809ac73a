#!/usr/bin/env bash
# The papers' reproduction page in a real browser: a fixture run of bench/papers/reproduce.sh (a
# generated table, the smallest grids), the page opened in headless Chromium (no console error,
# page error or failed load; a screenshot), and every number on the page asserted equal to the
# runner's CSVs (results.csv by id, claims.csv by claim).
# Usage: tests/browser/papers_page_test.sh FEDANON [KEEP_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/browser_test_env.sh"
require_browser
fedanon="$1"
if [ -n "${2:-}" ]; then out="$2"; mkdir -p "$out"; else
  out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT; fi
"$here/../../bench/papers/reproduce.sh" --fixture --fedanon "$fedanon" --out "$out/run"
"$here/check_page.sh" "$out/run/papers.html" "$out/browser"
python3 - "$out" << 'PY'
import csv, json, sys
out = sys.argv[1]
values = json.load(open(f"{out}/browser/values.json", encoding="utf-8"))
results = list(csv.DictReader(open(f"{out}/run/results.csv", encoding="utf-8")))
claims = list(csv.DictReader(open(f"{out}/run/claims.csv", encoding="utf-8")))
problems = []
for r in results:
    shown = values.get("v:" + r["id"])
    if shown != r["value"]:
        problems.append(f"result {r['id']}: CSV {r['value']!r}, page {shown!r}")
for c in claims:
    for field in ("ours", "verdict"):
        shown = values.get(f"c:{c['claim']}:{field}")
        if shown != c[field]:
            problems.append(f"claim {c['claim']} {field}: CSV {c[field]!r}, page {shown!r}")
shown_results = sum(1 for k in values if k.startswith("v:"))
if shown_results != len(results):
    problems.append(f"{shown_results} result values on the page, {len(results)} in results.csv")
if values.get("meta:mode") != "fixture":
    problems.append(f"mode on the page: {values.get('meta:mode')!r}")
if len(results) < 50 or len(claims) < 20:
    problems.append(f"too few numbers: {len(results)} results, {len(claims)} claims")
for p in problems[:20]:
    print("FAIL:", p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"papers page: {len(results)} results and {len(claims)} claims on the page equal the CSVs")
PY
