#!/usr/bin/env bash
# The job pages in a real browser (docs/steward-guide.md): one of each kind — a centralized run
# (`fedanon anonymize --html`), a horizontal federation (`fedanon federation up --html`) and a
# vertical one (`fedanonctl report --html` against the running federation, with the parties' own
# risk from `fedanon party risk`) — each opened in headless Chromium by check_page.sh (no console
# error, no failed load or fetch, a screenshot), and every figure on it compared with the
# report.json and view log it was made from (check_report_values.py).
# Usage: steward_reports_test.sh BIN_DIR     (exit 77: skipped with FEDANON_NO_BROWSER=1)
# FEDANON_BROWSER_KEEP=DIR keeps the pages, reports and screenshots there (e.g. as CI artifacts).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/browser_test_env.sh"
require_browser
bin="$1"
out="$(mktemp -d)"
fed_pid=""
cleanup() {
  if [ -n "$fed_pid" ]; then kill "$fed_pid" 2> /dev/null || true; wait "$fed_pid" 2> /dev/null || true; fi
  if [ -n "${FEDANON_BROWSER_KEEP:-}" ]; then
    mkdir -p "$FEDANON_BROWSER_KEEP" && cp -r "$out"/*.html "$out"/*.json "$out"/centralized \
      "$out"/horizontal "$out"/vertical "$FEDANON_BROWSER_KEEP"/ 2> /dev/null || true
  fi
  rm -rf "$out"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
check() {  # check NAME REPORT.json [check_report_values args...]
  local name="$1" report="$2"
  shift 2
  "$here/check_page.sh" "$out/$name.html" "$out/$name" || fail "the $name page did not load cleanly"
  python3 "$here/check_report_values.py" "$report" "$out/$name/values.json" "$@" ||
    fail "the $name page's figures differ from its files"
  python3 -c 'import sys; png = open(sys.argv[1], "rb").read(); assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000, len(png)' \
    "$out/$name/screenshot.png" || fail "no screenshot of the $name page"
  echo "$name page: loaded cleanly, figures equal its report"
}

"$bin/fedanon" gen-data --rows 1200 --seed 5 --parties 2 --out "$out/h" > /dev/null 2>&1
"$bin/fedanon" gen-data --rows 800 --seed 5 --parties 2 --partition vertical --out "$out/v" \
  > /dev/null 2>&1

# Centralized: the raw table's risk, the release's, BE/CE/UE, the cut on its taxonomies.
"$bin/fedanon" anonymize --spec "$out/h/job.yaml" --input "$out/h/table.csv" \
  --output "$out/c.csv" --report "$out/c.json" --html "$out/centralized.html" \
  --population-size 1000000 --quiet
check centralized "$out/c.json" --require records_in risk_before.prosecutor.highest \
  risk_after.prosecutor.highest risk_after.uniqueness.3.uniques utility.classification_error \
  utility.attribute_loss.0.loss cut.0.values.0 model_checks.0.passed
# The comparison can fail: one figure changed on the page, or a required one missing, is caught.
python3 - "$out/centralized/values.json" "$out/changed.json" << 'PY'
import json, sys
values = json.load(open(sys.argv[1]))
values["risk_after.prosecutor.highest"] = "0.9999"
json.dump(values, open(sys.argv[2], "w"))
PY
if python3 "$here/check_report_values.py" "$out/c.json" "$out/changed.json" 2> /dev/null; then
  fail "a changed figure was not caught"
fi
if python3 "$here/check_report_values.py" "$out/c.json" "$out/centralized/values.json" \
  --require no.such.figure 2> /dev/null; then
  fail "a missing figure was not caught"
fi

# Horizontal: federation up --html (each party's own risk, the release's, the leader's view).
"$bin/fedanon" federation up --spec "$out/h/horizontal.yaml" \
  --party-data "$out/h/party1.csv,$out/h/party2.csv" --wait --result "$out/h.csv" \
  --report "$out/h.json" --leader-view "$out/h.view.jsonl" --html "$out/horizontal.html" \
  > /dev/null 2> "$out/h.log" || { cat "$out/h.log" >&2; fail "federation up (horizontal)"; }
check horizontal "$out/h.json" --view "$out/h.view.jsonl" --require records_out \
  risk_after.prosecutor.highest party_risk.0.risk.prosecutor.highest \
  party_risk.1.risk.records utility.attribute_loss.0.loss view.entries cut.0.values.0

# Vertical: a running federation, the job followed and reported with fedanonctl.
"$bin/fedanon" federation up --spec "$out/v/vertical.yaml" \
  --party-data "$out/v/party1.csv,$out/v/party2.csv" --dir "$out/fed" \
  > "$out/v.id" 2> "$out/v.log" &
fed_pid=$!
for _ in $(seq 1 600); do
  [ -s "$out/v.id" ] && break
  kill -0 "$fed_pid" 2> /dev/null || { cat "$out/v.log" >&2; fail "federation up (vertical) ended"; }
  sleep 0.1
done
job="$(head -1 "$out/v.id")"
[ -n "$job" ] || fail "no job id from federation up"
ctl=("$bin/fedanonctl" --config "$out/fed/admin/admin.yaml")
"${ctl[@]}" watch "$job" > /dev/null 2>&1 || fail "the vertical job did not finish"
"${ctl[@]}" result "$job" -o "$out/v.csv" > /dev/null
"${ctl[@]}" view-log "$job" > "$out/v.view.jsonl"
party_risk=()
for party in party1 party2; do
  "$bin/fedanon" party risk --config "$out/fed/$party/party.yaml" --spec "$out/v/vertical.yaml" \
    --json > "$out/$party.risk.json"
  party_risk+=(--party-risk "$party=$out/$party.risk.json")
done
"${ctl[@]}" report "$job" --html "$out/vertical.html" --spec "$out/v/vertical.yaml" \
  --result "$out/v.csv" --report "$out/v.json" "${party_risk[@]}" 2> /dev/null
kill "$fed_pid"
wait "$fed_pid" 2> /dev/null || true
fed_pid=""
check vertical "$out/v.json" --view "$out/v.view.jsonl" --require records_out \
  risk_after.prosecutor.highest party_risk.0.risk.prosecutor.highest \
  party_risk.1.risk.records view.entries cut.0.values.0
echo "steward reports: centralized, horizontal and vertical pages checked in Chromium"
