#!/usr/bin/env bash
# README's main command: install dependencies, build, and run a local federation of three
# hospitals on loopback — generate a synthetic Adult-like table split over three parties, start a
# leader and three party daemons (mutual TLS, one throwaway CA), run a horizontal LKC-privacy job
# on it and print a summary of the report. No party's raw records leave its daemon; the leader
# receives the integrated anonymized table.
set -euo pipefail
cd "$(dirname "$0")/.."
# Builds only the four programs (not the tests); a first build takes several minutes on two cores
# and prints its progress, a second one reuses the build.
./deploy/build.sh default fedanon fedanon-party fedanon-leader fedanonctl
bin=build/default/bin
work="${FEDANON_DEMO_DIR:-$(mktemp -d -t fedanon-demo.XXXXXX)}"
echo "fedanon demo: working in $work" >&2
"$bin/fedanon" --version
"$bin/fedanon" gen-data --rows 30000 --seed 7 --parties 3 --out "$work/data"

# gen-data also writes horizontal.yaml: the job with the public domains a federation needs
# (class and sensitive values, a grid for each continuous QID), so that no party reveals which
# values it holds and the integrated table is assembled by a secure sum of counts.
# Leader + three parties as child processes; prints progress on stderr and the report summary.
"$bin/fedanon" federation up --spec "$work/data/horizontal.yaml" \
  --party-data "$work/data/party1.csv,$work/data/party2.csv,$work/data/party3.csv" \
  --wait --result "$work/anonymized.csv" --report "$work/report.json"
echo "--- first rows of $work/anonymized.csv"
head -n 6 "$work/anonymized.csv"
echo "--- full report: $work/report.json"
