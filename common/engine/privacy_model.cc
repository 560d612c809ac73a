#include "common/engine/privacy_model.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"

namespace fedanon::engine {
namespace {

absl::StatusOr<std::vector<int>> QidIndices(
    const google::protobuf::RepeatedPtrField<std::string>& names, const table::Dataset& data,
    const std::string& where) {
  std::vector<int> out;
  for (const std::string& name : names) {
    auto it = std::find_if(data.qids.begin(), data.qids.end(),
                           [&](const table::QidColumn& q) { return q.name == name; });
    if (it == data.qids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " names '", name, "', which is not a QID attribute"));
    }
    out.push_back(static_cast<int>(it - data.qids.begin()));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(where, " has no attributes"));
  return out;
}

uint64_t MaskOf(const table::Dataset& data, const std::string& attribute,
                const google::protobuf::RepeatedPtrField<std::string>& values) {
  uint64_t mask = 0;
  for (size_t bit = 0; bit < data.tracked.size(); ++bit) {
    for (const std::string& v : values) {
      if (data.tracked[bit].value == v &&
          (attribute.empty() || data.tracked[bit].attribute == attribute)) {
        mask |= uint64_t{1} << bit;
      }
    }
  }
  return mask;
}

// Binomial coefficient, saturating at `cap`.
uint64_t Choose(uint64_t n, uint64_t k, uint64_t cap) {
  uint64_t r = 1;
  for (uint64_t i = 1; i <= k; ++i) {
    r = r * (n - k + i) / i;
    if (r > cap) return cap + 1;
  }
  return r;
}

}  // namespace

std::string PrivacyModel::Describe(int constraint, const table::Dataset& data) const {
  const Constraint& c = constraints[constraint];
  std::vector<std::string> names;
  for (int a : c.attrs) names.push_back(data.qids[a].name);
  std::string out = absl::StrCat("{", absl::StrJoin(names, ", "), "}");
  if (c.k > 1) absl::StrAppend(&out, " k=", c.k);
  if (c.distribution && distribution.has_value()) {
    absl::StrAppend(&out, " ", distribution->Describe());
  }
  if (c.sensitive_mask != 0) {
    std::vector<std::string> vals;
    for (size_t b = 0; b < data.tracked.size(); ++b) {
      if (c.sensitive_mask >> b & 1) vals.push_back(data.tracked[b].value);
    }
    absl::StrAppend(&out, " conf(", absl::StrJoin(vals, "|"), ") <= ", c.max_conf);
  }
  return out;
}

absl::StatusOr<PrivacyModel> BuildPrivacyModel(const fedanon::v1::JobSpec& spec,
                                               const table::Dataset& data) {
  PrivacyModel model;
  const int q = static_cast<int>(data.qids.size());
  const auto& p = spec.privacy();
  if (p.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ||
      p.model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS) {
    ASSIGN_OR_RETURN(SensitiveDistribution d, BuildSensitiveDistribution(spec, data));
    Constraint c;
    for (int a = 0; a < q; ++a) c.attrs.push_back(a);
    // Every group the requirement accepts holds at least ImpliedGroupSize() records, so raising
    // k to it changes nothing; it is the least size of a group whose histogram the leader of a
    // horizontal job may decode (docs/threat-model.md).
    c.k = std::max<uint64_t>({1, p.k(), d.ImpliedGroupSize()});
    c.distribution = true;
    model.constraints.push_back(std::move(c));
    model.distribution = std::move(d);
  } else if (p.model() == fedanon::v1::PRIVACY_MODEL_TEMPLATES) {
    for (int i = 0; i < p.templates_size(); ++i) {
      auto attrs = QidIndices(p.templates(i).qid(), data, absl::StrCat("template ", i + 1));
      if (!attrs.ok()) return attrs.status();
      model.constraints.push_back({*attrs, std::max<uint64_t>(1, p.templates(i).k()), 0, 1.0});
    }
  } else {
    const int size = std::min<int>(static_cast<int>(p.l()), q);
    constexpr uint64_t kMaxSubsets = 5'000'000;
    if (Choose(q, size, kMaxSubsets) > kMaxSubsets) {
      return absl::InvalidArgumentError(absl::StrCat("L = ", p.l(), " over ", q,
                                                     " QID attributes gives more than ",
                                                     kMaxSubsets, " attribute subsets to enforce"));
    }
    const uint64_t mask = MaskOf(data, "", p.sensitive_values());
    std::vector<int> idx(size);
    for (int i = 0; i < size; ++i) idx[i] = i;
    while (true) {
      model.constraints.push_back({idx, std::max<uint64_t>(1, p.k()), mask, mask ? p.c() : 1.0});
      int i = size - 1;
      while (i >= 0 && idx[i] == q - size + i) --i;
      if (i < 0) break;
      ++idx[i];
      for (int j = i + 1; j < size; ++j) idx[j] = idx[j - 1] + 1;
    }
  }
  for (int i = 0; i < p.confidence_size(); ++i) {
    const auto& c = p.confidence(i);
    auto attrs = QidIndices(c.qid(), data, absl::StrCat("confidence template ", i + 1));
    if (!attrs.ok()) return attrs.status();
    model.constraints.push_back(
        {*attrs, 1, MaskOf(data, c.attribute(), c.sensitive_values()), c.max()});
  }
  model.by_attr.assign(q, {});
  for (size_t i = 0; i < model.constraints.size(); ++i) {
    const Constraint& c = model.constraints[i];
    for (int a : c.attrs) model.by_attr[a].push_back(static_cast<int>(i));
    if (c.k > 1) model.has_anonymity = true;
    if (c.sensitive_mask != 0) model.has_confidence = true;
  }
  return model;
}

absl::Status CheckVerticalScoreComputable(const fedanon::v1::JobSpec& spec) {
  if (spec.partitioning() != fedanon::v1::PARTITIONING_VERTICAL ||
      spec.score() != fedanon::v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS) {
    return absl::OkStatus();
  }
  const auto& p = spec.privacy();
  // With an anonymity threshold PrivLoss is the loss of anonymity (thesis Eq. 4.4): group sizes,
  // which every replica knows from the public partition.
  bool has_anonymity = p.model() == fedanon::v1::PRIVACY_MODEL_LKC && p.k() > 1;
  for (const auto& t : p.templates()) has_anonymity = has_anonymity || t.k() > 1;
  if (has_anonymity) return absl::OkStatus();
  std::map<std::string, std::string> party_of;  // attribute -> party
  std::string single_sensitive;
  std::vector<std::string> qids;
  for (const auto& a : spec.attributes()) {
    party_of[a.name()] = a.party();
    if (a.role() == fedanon::v1::ROLE_SENSITIVE) single_sensitive = a.name();
    if (a.role() == fedanon::v1::ROLE_QID) qids.push_back(a.name());
  }
  // Without one, PrivLoss is the rise of the confidence (thesis Eq. 5.1): it needs the children
  // of a candidate (its owner's values) and the sensitive values (their holder's) together.
  auto check = [&](const std::string& where, const std::string& attribute,
                   const std::vector<std::string>& scope) -> absl::Status {
    const std::string holder = party_of[attribute];
    for (const auto& q : scope) {
      if (party_of[q] == holder) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          kPrivLossNotComputable, ": QID attribute '", q, "' (at '", party_of[q], "') is in ",
          where, " on '", attribute, "' (at '", holder,
          "'), so the privacy loss of its candidates needs both parties' values; use another "
          "score (infogain, gainratio, discernibility), add an anonymity template with k > 1, "
          "or let the holder of the sensitive attribute hold the QID attributes it bounds"));
    }
    return absl::OkStatus();
  };
  if (p.model() == fedanon::v1::PRIVACY_MODEL_LKC && p.sensitive_values_size() > 0 && p.l() > 0) {
    const std::string attr =
        p.sensitive_attribute().empty() ? single_sensitive : p.sensitive_attribute();
    if (absl::Status s = check("the LKC model's confidence bound", attr, qids); !s.ok()) return s;
  }
  for (int i = 0; i < p.confidence_size(); ++i) {
    const auto& c = p.confidence(i);
    const std::string attr = c.attribute().empty() ? single_sensitive : c.attribute();
    if (absl::Status s = check(absl::StrCat("confidence template ", i + 1), attr,
                               {c.qid().begin(), c.qid().end()});
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace fedanon::engine
