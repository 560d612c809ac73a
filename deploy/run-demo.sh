#!/usr/bin/env bash
# README's main command: install dependencies, build, and run a local federation of three
# hospitals on loopback — generate a synthetic Adult-like table split over three parties, start a
# leader and three party daemons (mutual TLS, one throwaway CA), run a horizontal LKC-privacy job
# on it and print a summary of the report. No party's raw records leave its daemon; the leader
# receives the integrated anonymized table.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/build.sh default >/dev/null
bin=build/default/server
work="${FEDANON_DEMO_DIR:-$(mktemp -d -t fedanon-demo.XXXXXX)}"
echo "fedanon demo: working in $work" >&2
"$bin/fedanon" --version
"$bin/fedanon" gen-data --rows 30000 --seed 7 --parties 3 --out "$work/data"

# The generated job.yaml as a horizontal federated job: a federation needs public domains (class
# values, continuous ranges and grid precision), so that no party reveals which values it holds.
# With the domains of every released non-QID attribute declared (and the near-unique fnlwgt left
# out), the integrated table is assembled by one more secure sum instead of a sealed-row union.
# Taxonomy paths are relative to this file; `federation up` copies them to every party.
cat >"$work/data/horizontal.yaml" <<'YAML'
name: demo-three-hospitals
partitioning: horizontal
attributes:
  - {name: age, role: qid, type: continuous, range: [17, 91], precision: 1}
  - {name: workclass, role: qid, taxonomy: tax/workclass.csv}
  - {name: education, role: qid, taxonomy: tax/education.csv}
  - {name: education-num, role: qid, type: continuous, range: [1, 17], precision: 1}
  - {name: marital-status, role: sensitive, values: [Married-civ-spouse, Divorced, Never-married, Separated, Widowed, Married-spouse-absent, Married-AF-spouse]}
  - {name: occupation, role: qid, taxonomy: tax/occupation.csv}
  - {name: relationship, role: qid, taxonomy: tax/relationship.csv}
  - {name: race, role: qid, taxonomy: tax/race.csv}
  - {name: sex, role: qid, taxonomy: tax/sex.csv}
  - {name: capital-gain, role: qid, type: continuous, range: [0, 100000], precision: 1}
  - {name: capital-loss, role: qid, type: continuous, range: [0, 4357], precision: 1}
  - {name: hours-per-week, role: qid, type: continuous, range: [1, 100], precision: 1}
  - {name: native-country, role: qid, taxonomy: tax/native-country.csv}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy:
  model: lkc
  L: 4
  K: 20
  C: 0.2
  sensitive_values: [Divorced, Separated]
score: infogain
missing: drop
YAML

# Leader + three parties as child processes; prints progress on stderr and the report summary.
"$bin/fedanon" federation up --spec "$work/data/horizontal.yaml" \
  --party-data "$work/data/party1.csv,$work/data/party2.csv,$work/data/party3.csv" \
  --wait --result "$work/anonymized.csv" --report "$work/report.json"
echo "--- first rows of $work/anonymized.csv"
head -n 6 "$work/anonymized.csv"
echo "--- full report: $work/report.json"
