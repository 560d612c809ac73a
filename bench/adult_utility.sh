#!/usr/bin/env bash
# The Adult utility experiments of ../shared/docs/WORKED-EXAMPLES.md §E with `fedanon sweep` and
# `fedanon evaluate` (prints figures; not a test). docs/evaluation.md quotes its output.
#  * mohammed2010 §6 (QID = 13 attributes, sensitive marital-status, S = {Divorced, Separated},
#    class income): CE and DR for L = 2, 4, 6 and K = 20..100 at C = 0.2, with the naive
#    generalize-then-integrate baseline over 3 parties (Fig. 6a, 7a, 8); CE against C at K = 100
#    (Fig. 6b, 7b);
#  * mohammed2011 §7: UE and IE (k-anonymity on one QID of the top 5 / 7 / 9 attributes, k from
#    20 to 1000) and the source errors SE of the 2- and 4-party vertical splits.
# Usage: bench/adult_utility.sh [build-dir] [out-dir]   (defaults build/default and a temporary
# directory that is removed; give out-dir to keep the HTML and CSV reports)
# NUMERIC_SPLIT=exact runs the per-value threshold search instead of the default binned rule (the
# utility price of binning: docs/evaluation.md). Continuous attributes have the declared ranges
# of the issue's Adult case (precision 1), so that the public cells are the same in every run.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/default}"
fedanon="$(pwd)/$build/bin/fedanon"
[ -x "$fedanon" ] || { echo "build first: $fedanon not found" >&2; exit 1; }
adult="$(pwd)/../shared/datasets/adult"
[ -f "$adult/adult_clean.csv" ] || { echo "UCI Adult not found in $adult" >&2; exit 1; }
if [ $# -ge 2 ]; then out="$2"; mkdir -p "$out"; else
  out="$(mktemp -d -t fedanon-utility.XXXXXX)"; trap 'rm -rf "$out"' EXIT; fi
raw="$adult/adult_clean.csv"
numeric_split="${NUMERIC_SPLIT:-binned}"
arx="$adult/arx-hierarchies/adult_hierarchy_"
all="age workclass fnlwgt education education-num marital-status occupation relationship race sex
     capital-gain capital-loss hours-per-week native-country"

# attribute NAME ROLE [PARTY]: one spec line; continuous attributes have no taxonomy, QID
# categorical ones ARX's hierarchy (relationship: the shared extra one).
attribute() {
  local name="$1" role="$2" party="${3:-}" extra=""
  case "$name" in
    age|hours-per-week) extra=", type: continuous, range: [0, 100], precision: 1" ;;
    fnlwgt) extra=", type: continuous, range: [0, 1500000], precision: 1" ;;
    education-num) extra=", type: continuous, range: [0, 20], precision: 1" ;;
    capital-gain) extra=", type: continuous, range: [0, 100000], precision: 1" ;;
    capital-loss) extra=", type: continuous, range: [0, 5000], precision: 1" ;;
    relationship) [ "$role" = qid ] &&
      extra=", taxonomy: \"$adult/extra-hierarchies/adult_hierarchy_relationship.csv\"" ;;
    *) [ "$role" = qid ] && extra=", taxonomy: \"$arx$name.csv\"" ;;
  esac
  [ -n "$party" ] && extra="$extra, party: $party"
  echo "  - {name: $name, role: $role$extra}"
}

# mohammed2010 §6.
{
  echo "name: adult-mohammed2010"; echo "attributes:"
  for a in $all; do
    if [ "$a" = marital-status ]; then attribute "$a" sensitive; else attribute "$a" qid; fi
  done
  echo "  - {name: income, role: class}"
  echo "privacy: {model: lkc, L: 2, K: 100, C: 0.2, sensitive_values: [Divorced, Separated]}"
  echo "score: infogain"
  echo "numeric_split: $numeric_split"
} > "$out/mohammed2010.yaml"

# mohammed2011 §7: one QID of the top N attributes, k-anonymity as LKC with L = N.
top() {
  local n="$1"; shift
  echo "name: adult-top$n"; echo "attributes:"
  for a in $all; do
    local role=other
    for q in "$@"; do [ "$q" = "$a" ] && role=qid; done
    attribute "$a" "$role"
  done
  echo "  - {name: income, role: class}"
  echo "privacy: {model: lkc, L: $n, K: 20}"
  echo "score: infogain"
  echo "numeric_split: $numeric_split"
}
ranked="capital-gain age marital-status education-num relationship hours-per-week sex education
        occupation"
# shellcheck disable=SC2086
top 5 $(echo $ranked | cut -d' ' -f1-5) > "$out/top5.yaml"
# shellcheck disable=SC2086
top 7 $(echo $ranked | cut -d' ' -f1-7) > "$out/top7.yaml"
# shellcheck disable=SC2086
top 9 $ranked > "$out/top9.yaml"

# vertical NAME PAIRS...: every attribute a QID held by the party after the colon.
vertical() {
  local name="$1"; shift
  echo "name: $name"; echo "attributes:"
  for pair in "$@"; do attribute "${pair%%:*}" qid "${pair##*:}"; done
  echo "  - {name: income, role: class}"
  echo "privacy: {model: lkc, L: 1, K: 20}"
  echo "score: infogain"
}
vertical adult-2-parties age:A education-num:A fnlwgt:A relationship:A race:A sex:A \
  marital-status:A native-country:A education:A hours-per-week:B capital-gain:B capital-loss:B \
  workclass:B occupation:B > "$out/vertical2.yaml"
vertical adult-4-parties age:A workclass:A fnlwgt:A education-num:A marital-status:B \
  relationship:B race:B sex:B capital-gain:C hours-per-week:C native-country:C education:D \
  occupation:D capital-loss:D > "$out/vertical4.yaml"

echo "fedanon utility experiments on UCI Adult ($(date -u +%Y-%m-%d), $("$fedanon" --version), numeric_split: $numeric_split)"
sweep() {
  local name="$1"; shift
  local start end
  start=$(date +%s.%N)
  "$fedanon" sweep --quiet --raw "$raw" --html "$out/$name.html" --csv "$out/$name.csv" "$@"
  end=$(date +%s.%N)
  echo
  echo "== $name: fedanon sweep $* ($(awk "BEGIN{printf \"%.1f\", $end - $start}") s)"
  awk -F, 'NR == 1 { printf "%-12s %3s %5s %5s %8s %8s %7s\n", "method", "L", "K", "C", "CE %", "DR", "groups"; next }
           { printf "%-12s %3s %5s %5s %8s %8s %7s  %s\n", $1, $2, $3, $4,
               ($5 == "ok" ? sprintf("%.2f", 100 * $6) : "-"), ($5 == "ok" ? sprintf("%.4f", $7) : "-"),
               $8, ($5 == "ok" ? "" : "no release") ; be = $10; ue = $11 }
           END { printf "BE %.2f %%  UE %.2f %%\n", 100 * be, 100 * ue }' "$out/$name.csv"
}
sweep mohammed2010-K --spec "$out/mohammed2010.yaml" --grid 'L=2,4,6 K=20,40,60,80,100' \
  --naive-parties 3
sweep mohammed2010-C --spec "$out/mohammed2010.yaml" \
  --grid 'L=2,4,6 K=100 C=0.05,0.1,0.15,0.2,0.25,0.3'
for n in 5 7 9; do
  sweep "top$n" --spec "$out/top$n.yaml" --grid 'K=20,50,100,200,500,1000'
done
for p in 2 4; do
  echo
  echo "== vertical, $p parties: fedanon evaluate --spec vertical$p.yaml --raw adult_clean.csv"
  "$fedanon" evaluate --spec "$out/vertical$p.yaml" --raw "$raw" | grep -E '^(BE|SE)'
done
echo
echo "== BE and UE (mohammed2010 QID) for split seeds 1-5"
for seed in 1 2 3 4 5; do
  printf "seed %s: " "$seed"
  "$fedanon" evaluate --spec "$out/mohammed2010.yaml" --raw "$raw" --seed "$seed" |
    awk '/^BE/ { be = $NF } /^UE/ { ue = $NF } END { print "BE " be "  UE " ue }'
done
