#include "tests/support/adult_data.h"

#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::string AdultDir() { return SharedDir() + "/datasets/adult"; }

const char kAdultHorizontalSpec[] = R"(name: adult-horizontal
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: workclass, role: qid, taxonomy: workclass.csv}
  - {name: education, role: qid, taxonomy: education.csv}
  - {name: education-num, role: qid, type: continuous, range: [0, 20], precision: 1}
  - {name: marital-status, role: sensitive, values: [Married-civ-spouse, Divorced, Never-married, Separated, Widowed, Married-spouse-absent, Married-AF-spouse]}
  - {name: occupation, role: qid, taxonomy: occupation.csv}
  - {name: relationship, role: qid, taxonomy: relationship.csv}
  - {name: race, role: qid, taxonomy: race.csv}
  - {name: sex, role: qid, taxonomy: sex.csv}
  - {name: capital-gain, role: qid, type: continuous, range: [0, 100000], precision: 1}
  - {name: capital-loss, role: qid, type: continuous, range: [0, 5000], precision: 1}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: native-country, role: qid, taxonomy: native-country.csv}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy: {model: lkc, L: 4, K: 20, C: 0.2, sensitive_values: [Divorced, Separated]}
partitioning: horizontal
)";

std::map<std::string, std::string> AdultTaxonomies() {
  std::map<std::string, std::string> taxonomies;
  for (const char* attr :
       {"workclass", "education", "occupation", "race", "sex", "native-country"}) {
    taxonomies[absl::StrCat(attr, ".csv")] =
        Slurp(absl::StrCat(AdultDir(), "/arx-hierarchies/adult_hierarchy_", attr, ".csv"));
  }
  taxonomies["relationship.csv"] =
      Slurp(AdultDir() + "/extra-hierarchies/adult_hierarchy_relationship.csv");
  return taxonomies;
}

}  // namespace fedanon::testing
