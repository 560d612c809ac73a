#include "common/risk/risk_analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"

namespace fedanon::risk {
namespace {

using fedanon::v1::QidCombinationRisk;
using fedanon::v1::RiskSummary;

// Number of combinations of at most `k` of `m` attributes, capped at kMaxCombinations + 1.
size_t CountCombinations(int m, int k) {
  size_t total = 0;
  double choose = 1;  // C(m, j)
  for (int j = 1; j <= k; ++j) {
    choose = choose * (m - j + 1) / j;
    total += static_cast<size_t>(std::llround(choose));
    if (total > kMaxCombinations) return kMaxCombinations + 1;
  }
  return total;
}

QidCombinationRisk CombinationRisk(const QidCodes& table, const std::vector<int>& attributes,
                                   const ClassIds& groups) {
  const ClassSizeHistogram histogram = HistogramOf(groups);
  QidCombinationRisk risk;
  for (int a : attributes) risk.add_attributes(table.names[a]);
  risk.set_distinction(Distinction(histogram));
  risk.set_separation(Separation(histogram));
  risk.set_classes(groups.classes);
  risk.set_smallest_class(histogram.empty() ? 0 : histogram.begin()->first);
  auto unique = histogram.find(1);
  risk.set_uniques(unique == histogram.end() ? 0 : unique->second);
  return risk;
}

// Visits every combination of 1..max_size attributes (in lexicographic order of indices) with
// its grouping, each refined from its prefix's.
void ForEachCombination(
    const QidCodes& table, int max_size,
    const std::function<void(const std::vector<int>&, const ClassIds&)>& visit) {
  const int m = static_cast<int>(table.columns.size());
  std::vector<int> chosen;
  std::vector<ClassIds> stack;
  stack.push_back(GroupRecords(table, {}));
  std::function<void(int)> extend = [&](int from) {
    if (static_cast<int>(chosen.size()) == max_size) return;
    for (int a = from; a < m; ++a) {
      chosen.push_back(a);
      stack.push_back(RefineGroups(stack.back(), table.columns[a]));
      visit(chosen, stack.back());
      extend(a + 1);
      stack.pop_back();
      chosen.pop_back();
    }
  };
  extend(0);
}

absl::Status FillPopulation(const ClassSizeHistogram& histogram, double records,
                            const fedanon::v1::RiskOptions& options, RiskSummary* summary) {
  if (options.population_size() > 0 && options.sampling_fraction() > 0) {
    return absl::InvalidArgumentError(
        "give either the population size or the sampling fraction, not both");
  }
  double population = 0;
  if (options.population_size() > 0) {
    population = static_cast<double>(options.population_size());
    if (population < records) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the population size ", options.population_size(), " is smaller than the table (",
          static_cast<uint64_t>(records), " records): the table must be a sample of it"));
    }
  } else if (options.sampling_fraction() != 0) {
    if (!(options.sampling_fraction() > 0 && options.sampling_fraction() <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the sampling fraction must lie in (0, 1], got ", options.sampling_fraction()));
    }
    population = records / options.sampling_fraction();
  } else {
    return absl::OkStatus();  // no population: the models are not computed
  }
  summary->set_population_size(population);
  summary->set_sampling_fraction(records / population);
  auto add = [&](const char* model, const PopulationEstimate& e) {
    fedanon::v1::PopulationUniqueness* p = summary->add_uniqueness();
    p->set_model(model);
    p->set_available(e.available);
    p->set_uniques(e.uniques);
    p->set_fraction(e.uniques / population);
    p->set_note(e.note);
    return p;
  };
  if (population <= records) {
    // The table is the whole population: its uniques are the population's.
    const PopulationEstimate whole{.available = true,
                                   .uniques = static_cast<double>(summary->sample_uniques()),
                                   .note = "the table is the whole population"};
    for (const char* model : {"pitman", "zayatz", "snb", "dankar"}) add(model, whole);
    return absl::OkStatus();
  }
  const PopulationEstimate pitman = PitmanUniques(histogram, population);
  const PopulationEstimate zayatz = ZayatzUniques(histogram, population);
  const PopulationEstimate snb = SnbUniques(histogram, population);
  add("pitman", pitman);
  add("zayatz", zayatz);
  add("snb", snb);
  const DankarEstimate dankar = DankarRule(records / population, pitman, zayatz, snb);
  add("dankar", dankar.estimate)->set_chosen_model(UniquenessModelName(dankar.chosen));
  return absl::OkStatus();
}

}  // namespace

double Distinction(const ClassSizeHistogram& histogram) {
  double records = 0, classes = 0;
  for (const auto& [size, count] : histogram) {
    records += static_cast<double>(size) * static_cast<double>(count);
    classes += static_cast<double>(count);
  }
  return records > 0 ? classes / records : 0;
}

double Separation(const ClassSizeHistogram& histogram) {
  double records = 0, same = 0;
  for (const auto& [size, count] : histogram) {
    const double s = static_cast<double>(size);
    records += s * static_cast<double>(count);
    same += static_cast<double>(count) * s * (s - 1) / 2;
  }
  const double pairs = records * (records - 1) / 2;
  return pairs > 0 ? 1 - same / pairs : 1;
}

void FillSampleRisk(const ClassSizeHistogram& histogram, double threshold, RiskSummary* summary) {
  uint64_t records = 0, classes = 0, at_risk = 0;
  for (const auto& [size, count] : histogram) {
    records += size * count;
    classes += count;
    if (1.0 / static_cast<double>(size) > threshold) at_risk += size * count;
    (*summary->mutable_class_size_histogram())[size] = count;
  }
  summary->set_records(records);
  summary->set_classes(classes);
  summary->set_threshold(threshold);
  if (records == 0) return;
  const double n = static_cast<double>(records);
  const uint64_t smallest = histogram.begin()->first;
  summary->set_smallest_class(smallest);
  summary->set_average_class_size(n / static_cast<double>(classes));
  fedanon::v1::AttackerRisk* prosecutor = summary->mutable_prosecutor();
  prosecutor->set_records_at_risk(static_cast<double>(at_risk) / n);
  prosecutor->set_records_at_risk_count(at_risk);
  prosecutor->set_highest(1.0 / static_cast<double>(smallest));
  prosecutor->set_average(static_cast<double>(classes) / n);
  *summary->mutable_journalist() = *prosecutor;
  summary->mutable_marketer()->set_average(static_cast<double>(classes) / n);
  auto unique = histogram.find(1);
  const uint64_t uniques = unique == histogram.end() ? 0 : unique->second;
  summary->set_sample_uniques(uniques);
  summary->set_sample_uniques_fraction(static_cast<double>(uniques) / n);
}

absl::StatusOr<RiskSummary> AnalyzeRisk(const QidCodes& table,
                                        const fedanon::v1::RiskOptions& options,
                                        const std::string& table_name) {
  if (table.records == 0) {
    return absl::InvalidArgumentError(absl::StrCat(table_name, " has no records to assess"));
  }
  const double threshold = options.threshold() > 0 ? options.threshold() : kDefaultRiskThreshold;
  if (threshold > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the risk threshold is a probability in (0, 1], got ", threshold));
  }
  const int m = static_cast<int>(table.columns.size());
  int max_size = static_cast<int>(options.max_combination_size());
  if (max_size == 0) max_size = m <= kAllCombinationsUpTo ? m : kDefaultCombinationSize;
  max_size = std::min(max_size, m);
  if (CountCombinations(m, max_size) > kMaxCombinations) {
    return absl::InvalidArgumentError(absl::StrCat("max_combination_size ", max_size, " over ", m,
                                                   " QIDs asks for more than ", kMaxCombinations,
                                                   " combinations; choose a smaller one"));
  }

  RiskSummary summary;
  summary.set_table(table_name);
  for (const std::string& name : table.names) summary.add_qids(name);
  summary.set_records_dropped(table.dropped);
  summary.set_max_combination_size(max_size);
  std::vector<int> all(m);
  for (int a = 0; a < m; ++a) all[a] = a;
  const ClassIds groups = GroupRecords(table, all);
  const ClassSizeHistogram histogram = HistogramOf(groups);
  FillSampleRisk(histogram, threshold, &summary);
  if (absl::Status st =
          FillPopulation(histogram, static_cast<double>(table.records), options, &summary);
      !st.ok()) {
    return st;
  }

  std::vector<QidCombinationRisk> combinations;
  ForEachCombination(table, max_size, [&](const std::vector<int>& attributes, const ClassIds& g) {
    combinations.push_back(CombinationRisk(table, attributes, g));
  });
  if (max_size < m) combinations.push_back(CombinationRisk(table, all, groups));
  // Fewest attributes first; among them the most distinguishing.
  std::stable_sort(combinations.begin(), combinations.end(),
                   [](const QidCombinationRisk& a, const QidCombinationRisk& b) {
                     if (a.attributes_size() != b.attributes_size()) {
                       return a.attributes_size() < b.attributes_size();
                     }
                     return a.distinction() > b.distinction();
                   });
  for (QidCombinationRisk& c : combinations) *summary.add_combinations() = std::move(c);
  return summary;
}

absl::StatusOr<SmallestOverCombinations> SmallestClassOverCombinations(const QidCodes& table,
                                                                       int size) {
  const int m = static_cast<int>(table.columns.size());
  size = std::min(size, m);
  if (CountCombinations(m, size) > kMaxCombinations) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "more than ", kMaxCombinations, " combinations of ", size, " of ", m, " QIDs"));
  }
  SmallestOverCombinations result;
  result.smallest = UINT64_MAX;
  ForEachCombination(table, size, [&](const std::vector<int>& attributes, const ClassIds& g) {
    if (static_cast<int>(attributes.size()) != size) return;
    ++result.combinations;
    const ClassSizeHistogram histogram = HistogramOf(g);
    const uint64_t smallest = histogram.empty() ? 0 : histogram.begin()->first;
    if (smallest < result.smallest) {
      result.smallest = smallest;
      result.attributes = attributes;
    }
  });
  if (result.combinations == 0) result.smallest = 0;
  return result;
}

uint64_t SmallestClass(const QidCodes& table, const std::vector<int>& subset) {
  const ClassSizeHistogram histogram = HistogramOf(GroupRecords(table, subset));
  return histogram.empty() ? 0 : histogram.begin()->first;
}

}  // namespace fedanon::risk
