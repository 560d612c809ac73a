#!/usr/bin/env bash
# Benchmark of `fedanon anonymize --previous-release` (prints figures; not a test): the thesis'
# §6.4 setting on a generated Adult-like table of 45,222 records split by columns into a
# "Taxation" release T1 and an earlier "Immigration" release T2 sharing marital-status,
# relationship and sex (the join attributes):
#  * A: T1 categorical only, anonymity <{Ms, Re, Sx, Ed, Oc, Wc, Ra, Nc}, T1 record, 40> (Top6);
#  * B: A plus five continuous QIDs in T1 (not in X: specialized without touching the join);
#  * C: confidentiality of three occupations given X = the T1 QIDs, both sides of the join
#       attributes and T2's race, at most 0.5;
#  * D: <{Ms, Re, Sx, Ed, Oc, Wc} of T1, {T2 race, T2 native-country}, 10> (Y not a key).
# Whole process (read + anonymize + write), best of 3, with peak RSS.
# Usage: bench/sequential_release.sh [build-dir]   (default build/default; build it first)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/default}"
fedanon="$build/bin/fedanon"
[ -x "$fedanon" ] || { echo "build first: $fedanon not found" >&2; exit 1; }
fedanon="$(realpath "$fedanon")"
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work="$(mktemp -d -t fedanon-seqbench.XXXXXX)"
trap 'rm -rf "$work"' EXIT

"$fedanon" gen-data --rows 45222 --seed 3 --out "$work" 2>/dev/null
cd "$work"
# table.csv: age,workclass,fnlwgt,education,education-num,marital-status,occupation,
#            relationship,race,sex,capital-gain,capital-loss,hours-per-week,native-country,income
awk -F, 'BEGIN{OFS=","} {print $2,$4,$6,$7,$8,$10,$15}' table.csv > t1a.csv
awk -F, 'BEGIN{OFS=","} {print $1,$2,$4,$5,$6,$7,$8,$10,$11,$12,$13,$15}' table.csv > t1b.csv
awk -F, 'BEGIN{OFS=","} {print $6,$8,$10,$9,$14}' table.csv > t2.csv

categorical='  - {name: workclass, role: qid, taxonomy: tax/workclass.csv}
  - {name: education, role: qid, taxonomy: tax/education.csv}
  - {name: marital-status, role: qid, taxonomy: tax/marital-status.csv}
  - {name: relationship, role: qid, taxonomy: tax/relationship.csv}
  - {name: sex, role: qid, taxonomy: tax/sex.csv}
  - {name: income, role: class}'
continuous='  - {name: age, role: qid, type: continuous}
  - {name: education-num, role: qid, type: continuous}
  - {name: capital-gain, role: qid, type: continuous}
  - {name: capital-loss, role: qid, type: continuous}
  - {name: hours-per-week, role: qid, type: continuous}'
top6='    - x: [marital-status, relationship, sex, education, occupation, workclass, race, native-country]
      y: [current.@record]
      k: 40'
printf 'attributes:\n%s\n  - {name: occupation, role: qid, taxonomy: tax/occupation.csv}\nsequential:\n  anonymity:\n%s\n' \
  "$categorical" "$top6" > A.yaml
printf 'attributes:\n%s\n%s\n  - {name: occupation, role: qid, taxonomy: tax/occupation.csv}\nsequential:\n  anonymity:\n%s\n' \
  "$continuous" "$categorical" "$top6" > B.yaml
printf 'attributes:\n%s\n%s\n  - {name: occupation, role: sensitive}\nsequential:\n  confidentiality:\n%s\n' \
  "$continuous" "$categorical" '    - x: [age, education-num, workclass, education, marital-status, relationship, sex, race]
      attribute: occupation
      sensitive_values: [Armed-Forces, Priv-house-serv, Protective-serv]
      max: 0.5' > C.yaml
printf 'attributes:\n%s\n  - {name: occupation, role: qid, taxonomy: tax/occupation.csv}\nsequential:\n  anonymity:\n%s\n' \
  "$categorical" '    - x: [current.marital-status, current.relationship, current.sex, education, occupation, workclass]
      y: [previous.race, previous.native-country]
      k: 10' > D.yaml

run() {
  local label="$1" input="$2" best="" rss=""
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %M" -o time.txt "$fedanon" anonymize --quiet --spec "$label.yaml" \
      --input "$input" --previous-release t2.csv --output out.csv --report report.json
    read -r secs kb < time.txt
    if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best="$secs"; rss="$kb"; fi
  done
  local steps groups smallest conf
  steps=$(grep -c '"round"' report.json || true)
  groups=$(sed -n 's/.*"groups": "\([0-9]*\)".*/\1/p' report.json)
  smallest=$(sed -n 's/.*"smallest_group": "\([0-9]*\)".*/\1/p' report.json)
  conf=$(sed -n 's/.*"largest_confidence": \([0-9.e-]*\).*/\1/p' report.json)
  printf '%s: %s s, %s MB peak, %s specializations, %s groups, smallest A %s, largest C %s\n' \
    "$label" "$best" "$((rss / 1024))" "$steps" "$groups" "$smallest" "$conf"
}
run A t1a.csv
run B t1b.csv
run C t1b.csv
run D t1a.csv
