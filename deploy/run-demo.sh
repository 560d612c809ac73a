#!/usr/bin/env bash
# README's main command: install dependencies, build, and run the embedded default job —
# generate a synthetic Adult-like table, anonymize it centrally with LKC-privacy and print the
# report. (Once the horizontal federation lands this becomes a local federation of three
# hospitals on loopback.)
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/build.sh default >/dev/null
bin=build/default/server
work="${FEDANON_DEMO_DIR:-$(mktemp -d -t fedanon-demo.XXXXXX)}"
echo "fedanon demo: working in $work" >&2
"$bin/fedanon" --version
"$bin/fedanon" gen-data --rows 20000 --seed 7 --out "$work/data"
"$bin/fedanon" anonymize --spec "$work/data/job.yaml" --input "$work/data/table.csv" \
  --output "$work/anonymized.csv" --report "$work/report.json"
echo "--- first rows of $work/anonymized.csv"
head -n 6 "$work/anonymized.csv"
echo "--- report ($work/report.json)"
cat "$work/report.json"
