#include "app/job_assessment.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "app/table_risk.h"
#include "common/base/status_macros.h"
#include "common/evaluation/utility_evaluation.h"
#include "common/risk/risk_analysis.h"
#include "common/risk/risk_table.h"
#include "common/table/csv.h"

namespace fedanon::app {

absl::StatusOr<std::map<std::string, std::shared_ptr<const table::Taxonomy>>> LoadSpecTaxonomies(
    const fedanon::v1::JobSpec& spec) {
  std::map<std::string, std::shared_ptr<const table::Taxonomy>> taxonomies;
  for (const auto& a : spec.attributes()) {
    if (a.role() != fedanon::v1::ROLE_QID || a.taxonomy().empty()) continue;
    ASSIGN_OR_RETURN(table::Taxonomy t, table::Taxonomy::LoadArx(a.taxonomy(), a.name()));
    if (spec.missing() == fedanon::v1::MISSING_KEEP && !t.FindLeaf(spec.missing_token())) {
      RETURN_IF_ERROR(t.AddLeafUnderRoot(spec.missing_token()).status());  // as the job does
    }
    taxonomies[a.name()] = std::make_shared<const table::Taxonomy>(std::move(t));
  }
  return taxonomies;
}

std::vector<fedanon::v1::ModelCheck> MeasureModelChecks(const fedanon::v1::JobSpec& spec,
                                                        const risk::QidCodes& release,
                                                        const fedanon::v1::Report& report) {
  std::vector<fedanon::v1::ModelCheck> checks;
  const fedanon::v1::Privacy& p = spec.privacy();
  const bool local = spec.recoding() == fedanon::v1::RECODING_LOCAL;
  auto index_of = [&](const std::string& name) {
    auto it = std::find(release.names.begin(), release.names.end(), name);
    return it == release.names.end() ? -1 : static_cast<int>(it - release.names.begin());
  };
  auto names_of = [&](const std::vector<int>& attributes) {
    std::vector<std::string> names;
    names.reserve(attributes.size());
    for (int a : attributes) names.push_back(release.names[a]);
    return absl::StrJoin(names, ", ");
  };
  if (spec.has_sequential()) return checks;  // its templates hold on the join, not the table
  if (p.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ||
      p.model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS) {
    // The groups are those of every QID together; each holds >= K records, and its sensitive
    // distribution meets the model (the engine's figure: the release is re-checked by the test
    // suite's independent checker, not here).
    fedanon::v1::ModelCheck size;
    size.set_requirement(
        absl::StrCat("every combination of values of all QIDs has >= ", p.k(), " records"));
    if (local) {
      size.set_measured(absl::StrCat("engine's smallest group ", report.smallest_group(),
                                     " (local recoding: not re-measured on the release)"));
      size.set_passed(report.smallest_group() >= p.k());
    } else {
      std::vector<int> all(release.names.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
      const uint64_t smallest = risk::SmallestClass(release, all);
      size.set_measured(absl::StrCat("smallest class ", smallest));
      size.set_passed(smallest >= p.k());
    }
    checks.push_back(std::move(size));
    fedanon::v1::ModelCheck d;
    if (p.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY) {
      const bool recursive = p.variant() == fedanon::v1::DIVERSITY_VARIANT_RECURSIVE;
      d.set_requirement(recursive ? absl::StrCat("every group is recursive (", p.recursive_c(),
                                                 ", ", p.diversity(), ")-diverse")
                                  : absl::StrCat("every group is ", p.diversity(), "-diverse"));
      d.set_measured(recursive
                         ? absl::StrCat("engine's largest r1 / (rl + ... + rm) ",
                                        report.largest_recursive_ratio(), " (not re-measured)")
                         : absl::StrCat("engine's smallest diversity ", report.smallest_diversity(),
                                        " (not re-measured)"));
      d.set_passed(recursive ? report.largest_recursive_ratio() < p.recursive_c()
                             : report.smallest_diversity() + 1e-9 >= p.diversity());
    } else {
      d.set_requirement(
          absl::StrCat("every group's distance to the table's distribution is <= ", p.t()));
      d.set_measured(absl::StrCat("engine's largest distance ", report.largest_closeness(),
                                  " (not re-measured)"));
      d.set_passed(report.largest_closeness() <= p.t() + 1e-12);
    }
    checks.push_back(std::move(d));
    return checks;
  }
  if (p.model() == fedanon::v1::PRIVACY_MODEL_TEMPLATES) {
    for (const auto& t : p.templates()) {
      fedanon::v1::ModelCheck c;
      c.set_requirement(absl::StrCat("every combination of values of {",
                                     absl::StrJoin(t.qid(), ", "), "} has >= ", t.k(), " records"));
      std::vector<int> subset;
      for (const std::string& q : t.qid()) {
        if (index_of(q) >= 0) subset.push_back(index_of(q));
      }
      if (local) {
        c.set_measured("not re-measured: local recoding's groups are the engine's");
        c.set_passed(report.smallest_group() >= t.k());
      } else {
        const uint64_t smallest = risk::SmallestClass(release, subset);
        c.set_measured(absl::StrCat("smallest class ", smallest));
        c.set_passed(smallest >= t.k());
      }
      checks.push_back(std::move(c));
    }
  } else {
    const int l = std::min<int>(static_cast<int>(p.l()), static_cast<int>(release.names.size()));
    fedanon::v1::ModelCheck c;
    c.set_requirement(absl::StrCat("every combination of values of ", l, " QIDs has >= ", p.k(),
                                   " records (L = ", p.l(), ", K = ", p.k(), ")"));
    if (local) {
      c.set_measured(absl::StrCat("engine's smallest group ", report.smallest_group(),
                                  " (local recoding: not re-measured on the release)"));
      c.set_passed(report.smallest_group() >= p.k());
    } else if (absl::StatusOr<risk::SmallestOverCombinations> m =
                   risk::SmallestClassOverCombinations(release, l);
               m.ok()) {
      c.set_measured(absl::StrCat("smallest class ", m->smallest, " over ", m->combinations,
                                  " combinations (e.g. ", names_of(m->attributes), ")"));
      c.set_passed(m->smallest >= p.k());
    } else {
      c.set_measured(absl::StrCat("not re-measured: ", m.status().message()));
      c.set_passed(report.smallest_group() >= p.k());
    }
    checks.push_back(std::move(c));
  }
  const double c_bound = p.model() == fedanon::v1::PRIVACY_MODEL_TEMPLATES
                             ? 0
                             : (p.sensitive_values().empty() ? 0 : p.c());
  if (c_bound > 0) {
    fedanon::v1::ModelCheck c;
    c.set_requirement(absl::StrCat("no combination of at most ", p.l(), " QID values infers {",
                                   absl::StrJoin(p.sensitive_values(), ", "),
                                   "} with confidence above ", c_bound));
    c.set_measured(absl::StrCat("engine's largest confidence ", report.largest_confidence(),
                                " (not re-measured)"));
    c.set_passed(report.largest_confidence() <= c_bound + 1e-12);
    checks.push_back(std::move(c));
  }
  return checks;
}

absl::Status AssessRelease(const fedanon::v1::JobSpec& spec, const std::string& released_path,
                           const evaluation::LossContext& loss_context,
                           fedanon::v1::Report* report) {
  ASSIGN_OR_RETURN(const risk::QidCodes release, risk::ReadQidCodes(spec, released_path));
  ASSIGN_OR_RETURN(*report->mutable_risk_after(),
                   risk::AnalyzeRisk(release, EffectiveRiskOptions(spec, {}), "release"));
  ASSIGN_OR_RETURN(const std::vector<fedanon::v1::AttributeLoss> losses,
                   evaluation::AttributeLosses(spec, released_path, loss_context));
  fedanon::v1::UtilitySummary* utility = report->mutable_utility();
  utility->clear_attribute_loss();
  double total = 0;
  for (const auto& l : losses) {
    *utility->add_attribute_loss() = l;
    total += l.loss();
  }
  utility->set_average_loss(losses.empty() ? 0 : total / static_cast<double>(losses.size()));
  report->clear_model_checks();
  for (auto& c : MeasureModelChecks(spec, release, *report)) *report->add_model_checks() = c;
  return absl::OkStatus();
}

absl::Status AssessClassification(const fedanon::v1::JobSpec& spec, const std::string& raw_path,
                                  const std::string& released_path, fedanon::v1::Report* report) {
  const bool has_class =
      std::any_of(spec.attributes().begin(), spec.attributes().end(),
                  [](const auto& a) { return a.role() == fedanon::v1::ROLE_CLASS; });
  if (!has_class) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::unique_ptr<evaluation::UtilityEvaluator> evaluator,
                   evaluation::UtilityEvaluator::Create(spec, raw_path));
  ASSIGN_OR_RETURN(const evaluation::AnonymizedUtility u, evaluator->Evaluate(released_path));
  fedanon::v1::UtilitySummary* utility = report->mutable_utility();
  utility->set_classification(true);
  utility->set_baseline_error(evaluator->baselines().baseline_error);
  utility->set_upper_bound_error(evaluator->baselines().upper_bound_error);
  utility->set_classification_error(u.classification_error);
  return absl::OkStatus();
}

absl::Status WriteReportHtml(const std::string& path, const html_report::ReportPage& page) {
  return table::WriteFileAtomically(path, html_report::RenderReportHtml(page));
}

}  // namespace fedanon::app
