#!/usr/bin/env bash
# Global vs local recoding (`recoding: local`, docs/engine.md "Local recoding"); prints figures,
# not a test.
#  * utility (UCI Adult, when ../shared/datasets/adult exists): the issue's 8-QID k-anonymity task
#    (age, education, marital-status, occupation, race, sex, native-country, workclass; class
#    income) at k = 20, 50, 100, and mohammed2010 §6's 13-QID LKC task (L=2, K=100, C=0.2,
#    S = {Divorced, Separated}): CE, CE - BE, DR, groups and anonymization time, global and local
#    side by side (`fedanon evaluate --anonymized G --local L`);
#  * speed: a generated 1M-record table (`fedanon gen-data --rows 1000000`, its LKC job L=4,
#    K=20, C=0.2): wall-clock time and peak RSS of `fedanon anonymize`, global and local, and the
#    RSS ratio.
# Usage: bench/local_recoding.sh [build-dir] [utility|speed|all]   (default build/default, all)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/default}"
what="${2:-all}"
case "$build" in /*) fedanon="$build/bin/fedanon" ;; *) fedanon="$(pwd)/$build/bin/fedanon" ;; esac
[ -x "$fedanon" ] || { echo "build first: $fedanon not found" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work="$(mktemp -d -t fedanon-local.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# anonymize SPEC INPUT OUT: runs fedanon anonymize; prints "seconds peak-KiB".
anonymize() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$fedanon" anonymize --quiet --spec "$1" --input "$2" \
    --output "$3" --report "$3.json"
  cat "$work/time"
}

# utility LABEL SPEC(without recoding) RAW
utility() {
  local label="$1" spec="$2" raw="$3"
  cp "$spec" "$work/global.yaml"
  { cat "$spec"; echo "recoding: local"; } > "$work/local.yaml"
  read -r gs _ < <(anonymize "$work/global.yaml" "$raw" "$work/global.csv")
  read -r ls _ < <(anonymize "$work/local.yaml" "$raw" "$work/local.csv")
  echo "== $label (anonymize: global ${gs} s, local ${ls} s)"
  "$fedanon" evaluate --spec "$work/global.yaml" --raw "$raw" --anonymized "$work/global.csv" \
    --local "$work/local.csv"
}

adult="$(pwd)/../shared/datasets/adult"
if [ "$what" != speed ] && [ -f "$adult/adult_clean.csv" ]; then
  arx="$adult/arx-hierarchies/adult_hierarchy_"
  for k in 20 50 100; do
    {
      echo "name: adult-8qid-k$k"; echo "attributes:"
      echo "  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}"
      for a in education marital-status occupation race sex native-country workclass; do
        echo "  - {name: $a, role: qid, taxonomy: \"$arx$a.csv\"}"
      done
      echo "  - {name: income, role: class}"
      echo "privacy:"; echo "  model: templates"; echo "  templates:"
      echo "    - {qid: [age, education, marital-status, occupation, race, sex, native-country, workclass], k: $k}"
      echo "score: infogain"
    } > "$work/adult8.yaml"
    utility "Adult, 8 QIDs, k-anonymity k=$k" "$work/adult8.yaml" "$adult/adult_clean.csv"
  done
  {
    echo "name: adult-mohammed2010"; echo "attributes:"
    echo "  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}"
    echo "  - {name: workclass, role: qid, taxonomy: \"${arx}workclass.csv\"}"
    echo "  - {name: fnlwgt, role: qid, type: continuous, range: [0, 1500000], precision: 1}"
    echo "  - {name: education, role: qid, taxonomy: \"${arx}education.csv\"}"
    echo "  - {name: education-num, role: qid, type: continuous, range: [0, 20], precision: 1}"
    echo "  - {name: marital-status, role: sensitive}"
    echo "  - {name: occupation, role: qid, taxonomy: \"${arx}occupation.csv\"}"
    echo "  - {name: relationship, role: qid, taxonomy: \"$adult/extra-hierarchies/adult_hierarchy_relationship.csv\"}"
    echo "  - {name: race, role: qid, taxonomy: \"${arx}race.csv\"}"
    echo "  - {name: sex, role: qid, taxonomy: \"${arx}sex.csv\"}"
    echo "  - {name: capital-gain, role: qid, type: continuous, range: [0, 100000], precision: 1}"
    echo "  - {name: capital-loss, role: qid, type: continuous, range: [0, 5000], precision: 1}"
    echo "  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1}"
    echo "  - {name: native-country, role: qid, taxonomy: \"${arx}native-country.csv\"}"
    echo "  - {name: income, role: class}"
    echo "privacy: {model: lkc, L: 2, K: 100, C: 0.2, sensitive_values: [Divorced, Separated]}"
    echo "score: infogain"
  } > "$work/adult13.yaml"
  utility "Adult, 13 QIDs, LKC L=2 K=100 C=0.2" "$work/adult13.yaml" "$adult/adult_clean.csv"
fi

if [ "$what" != utility ]; then
  "$fedanon" gen-data --rows 1000000 --seed 1 --out "$work/gen" > /dev/null
  { cat "$work/gen/job.yaml"; echo "recoding: local"; } > "$work/gen/local.yaml"
  read -r gs gk < <(anonymize "$work/gen/job.yaml" "$work/gen/table.csv" "$work/g.csv")
  read -r ls lk < <(anonymize "$work/gen/local.yaml" "$work/gen/table.csv" "$work/l.csv")
  ggroups=$(sed -n 's/.*"groups": "\([0-9]*\)".*/\1/p' "$work/g.csv.json")
  lgroups=$(sed -n 's/.*"groups": "\([0-9]*\)".*/\1/p' "$work/l.csv.json")
  echo "== 1M generated records, gen-data job (L=4, K=20, C=0.2), $(nproc) cores"
  printf "global: %7.2f s  peak RSS %8.1f MiB  %7s groups\n" "$gs" "$(awk "BEGIN{print $gk/1024}")" "$ggroups"
  printf "local:  %7.2f s  peak RSS %8.1f MiB  %7s groups\n" "$ls" "$(awk "BEGIN{print $lk/1024}")" "$lgroups"
  printf "local / global peak RSS: %.2f\n" "$(awk "BEGIN{print $lk/$gk}")"
fi
