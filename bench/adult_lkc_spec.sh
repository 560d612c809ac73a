# shellcheck shell=bash
# Sourced by the benchmarks that run UCI Adult in the mohammed2010 §6 setting (not run alone):
# write_adult_lkc_spec HIERARCHY_ROOT OUT writes the job spec (13 QID attributes with the continuous
# fnlwgt, capital-gain and capital-loss without a grid, the ARX hierarchies under HIERARCHY_ROOT —
# an absolute ../shared/datasets/adult —, L=4, K=20, C=0.2, S = {Divorced, Separated} of
# marital-status) to OUT.
write_adult_lkc_spec() {
  local h="$1" out="$2"
  cat > "$out" <<YAML
name: adult-mohammed2010
attributes:
  - {name: age, role: qid, type: continuous}
  - {name: workclass, role: qid, taxonomy: $h/arx-hierarchies/adult_hierarchy_workclass.csv}
  - {name: fnlwgt, role: qid, type: continuous}
  - {name: education, role: qid, taxonomy: $h/arx-hierarchies/adult_hierarchy_education.csv}
  - {name: education-num, role: qid, type: continuous}
  - {name: marital-status, role: sensitive}
  - {name: occupation, role: qid, taxonomy: $h/arx-hierarchies/adult_hierarchy_occupation.csv}
  - {name: relationship, role: qid, taxonomy: $h/extra-hierarchies/adult_hierarchy_relationship.csv}
  - {name: race, role: qid, taxonomy: $h/arx-hierarchies/adult_hierarchy_race.csv}
  - {name: sex, role: qid, taxonomy: $h/arx-hierarchies/adult_hierarchy_sex.csv}
  - {name: capital-gain, role: qid, type: continuous}
  - {name: capital-loss, role: qid, type: continuous}
  - {name: hours-per-week, role: qid, type: continuous}
  - {name: native-country, role: qid, taxonomy: $h/arx-hierarchies/adult_hierarchy_native-country.csv}
  - {name: income, role: class}
privacy: {model: lkc, L: 4, K: 20, C: 0.2, sensitive_values: [Divorced, Separated]}
score: infogain
YAML
}
