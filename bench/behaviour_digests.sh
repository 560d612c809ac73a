#!/usr/bin/env bash
# Digests of what a fixed set of jobs releases, to show that a restructuring left behaviour
# unchanged: run it with the build before and the build after, and compare the two outputs line by
# line. Prints, per job, the SHA-256 of the sorted released rows and of the steps (attribute,
# value, children and score to 12 significant digits, in order). Federated rows arrive in a random
# order and reports carry job ids and timings, so neither is hashed as a file.
#   * adult-centralized: UCI Adult (../shared/datasets/adult; skipped when absent), 13 QIDs with
#     fnlwgt, ARX hierarchies, LKC L=4 K=20 C=0.2, S = {Divorced, Separated};
#   * horizontal-global / horizontal-local: gen-data's 3-party horizontal job, 30,000 rows, seed 7
#     (README's demo), global and `recoding: local`;
#   * vertical-global / vertical-local: gen-data's 2-party vertical job, 5,000 rows, seed 3; the
#     local one has a judge (party1 holds the sensitive marital-status under C = 0.2).
# The generated inputs' digests are printed too (the two builds must generate the same data).
# The federated jobs run through real daemons (`fedanon federation up`, loopback, mTLS).
# Usage: bench/behaviour_digests.sh [build-dir]   (default build/default)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/default}"
case "$build" in /*) bin="$build/bin" ;; *) bin="$(pwd)/$build/bin" ;; esac
[ -x "$bin/fedanon" ] || { echo "build first: $bin/fedanon not found" >&2; exit 1; }
work="$(mktemp -d -t fedanon-digests.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# digest LABEL CSV REPORT: prints "LABEL rows=<sha256> steps=<sha256> (<n> rows, <m> steps)".
digest() {
  local label="$1" csv="$2" report="$3" rows steps
  rows="$(LC_ALL=C sort "$csv" | sha256sum | cut -c1-64)"
  steps="$(python3 - "$report" << 'EOF'
import hashlib, json, sys
steps = json.load(open(sys.argv[1])).get("steps", [])
text = "".join("%s|%s|%s|%.12g\n" % (s["attribute"], s["value"], ",".join(s.get("children", [])),
                                       s["score"]) for s in steps)
print(hashlib.sha256(text.encode()).hexdigest(), len(steps))
EOF
)"
  echo "$label rows=$rows steps=${steps% *} ($(($(wc -l < "$csv") - 1)) rows, ${steps#* } steps)"
}

adult="$(pwd)/../shared/datasets/adult"
if [ -f "$adult/adult_clean.csv" ]; then
  arx="$adult/arx-hierarchies/adult_hierarchy_"
  cat > "$work/adult.yaml" << EOF
name: adult-13qid
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: workclass, role: qid, taxonomy: "${arx}workclass.csv"}
  - {name: fnlwgt, role: qid, type: continuous, range: [0, 1500000], precision: 1}
  - {name: education, role: qid, taxonomy: "${arx}education.csv"}
  - {name: education-num, role: qid, type: continuous, range: [0, 20], precision: 1}
  - {name: marital-status, role: sensitive}
  - {name: occupation, role: qid, taxonomy: "${arx}occupation.csv"}
  - {name: relationship, role: qid, taxonomy: "$adult/extra-hierarchies/adult_hierarchy_relationship.csv"}
  - {name: race, role: qid, taxonomy: "${arx}race.csv"}
  - {name: sex, role: qid, taxonomy: "${arx}sex.csv"}
  - {name: capital-gain, role: qid, type: continuous, range: [0, 100000], precision: 1}
  - {name: capital-loss, role: qid, type: continuous, range: [0, 5000], precision: 1}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: native-country, role: qid, taxonomy: "${arx}native-country.csv"}
  - {name: income, role: class}
privacy: {model: lkc, L: 4, K: 20, C: 0.2, sensitive_values: [Divorced, Separated]}
score: infogain
EOF
  "$bin/fedanon" anonymize --quiet --spec "$work/adult.yaml" --input "$adult/adult_clean.csv" \
    --output "$work/adult.csv" --report "$work/adult.json"
  digest adult-centralized "$work/adult.csv" "$work/adult.json"
else
  echo "adult-centralized skipped (no $adult/adult_clean.csv)"
fi

# federated LABEL SPEC PARTY-CSVS
federated() {
  "$bin/fedanon" federation up --spec "$2" --party-data "$3" --wait --result "$work/$1.csv" \
    --report "$work/$1.json" > "$work/$1.log" 2>&1 || { cat "$work/$1.log" >&2; exit 1; }
  digest "$1" "$work/$1.csv" "$work/$1.json"
}

"$bin/fedanon" gen-data --rows 30000 --seed 7 --parties 3 --out "$work/h" > /dev/null 2>&1
echo "horizontal-input $(cat "$work/h"/party*.csv | sha256sum | cut -c1-64)"
{ cat "$work/h/horizontal.yaml"; echo "recoding: local"; } > "$work/h/local.yaml"
parts="$work/h/party1.csv,$work/h/party2.csv,$work/h/party3.csv"
federated horizontal-global "$work/h/horizontal.yaml" "$parts"
federated horizontal-local "$work/h/local.yaml" "$parts"

"$bin/fedanon" gen-data --rows 5000 --seed 3 --parties 2 --partition vertical --out "$work/v" \
  > /dev/null 2>&1
echo "vertical-input $(cat "$work/v"/party*.csv | sha256sum | cut -c1-64)"
{ cat "$work/v/vertical.yaml"; echo "recoding: local"; } > "$work/v/local.yaml"
parts="$work/v/party1.csv,$work/v/party2.csv"
federated vertical-global "$work/v/vertical.yaml" "$parts"
federated vertical-local "$work/v/local.yaml" "$parts"
