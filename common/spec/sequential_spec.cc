#include "common/spec/sequential_spec.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace fedanon::spec {
namespace {

using ::absl::StrCat;
using ::fedanon::v1::JobSpec;

}  // namespace

absl::StatusOr<SequentialRef> ParseSequentialRef(const std::string& text,
                                                 const std::string& where) {
  SequentialRef ref;
  std::string_view rest = text;
  if (rest.rfind("current.", 0) == 0) {
    ref.side = SequentialSide::kCurrent;
    rest.remove_prefix(8);
  } else if (rest.rfind("previous.", 0) == 0) {
    ref.side = SequentialSide::kPrevious;
    rest.remove_prefix(9);
  } else if (rest.rfind("previous", 0) == 0) {
    // "previousI.NAME": the i-th previous release (digits, then a dot).
    size_t end = 8;
    while (end < rest.size() && rest[end] >= '0' && rest[end] <= '9') ++end;
    if (end > 8 && end < rest.size() && rest[end] == '.') {
      int release = 0;
      for (size_t i = 8; i < end && release < 1000000; ++i)
        release = release * 10 + (rest[i] - '0');
      if (release < 1) {
        return absl::InvalidArgumentError(
            StrCat(where, ": '", text, "': previous releases are numbered from 1 (previous1.)"));
      }
      ref.side = SequentialSide::kPrevious;
      ref.release = release;
      rest.remove_prefix(end + 1);
    }
  }
  ref.name = std::string(rest);
  if (ref.name.empty()) return absl::InvalidArgumentError(StrCat(where, ": empty attribute name"));
  if (ref.name == kSequentialRecord && ref.side == SequentialSide::kAny) {
    return absl::InvalidArgumentError(
        StrCat(where, ": write current.@record or previous.@record, not @record"));
  }
  return ref;
}

std::string SequentialTemplateWhere(bool anonymity, int i) {
  return StrCat("sequential.", anonymity ? "anonymity" : "confidentiality", " template ", i + 1);
}

absl::Status ValidateSequentialSpec(const JobSpec& spec) {
  const auto& p = spec.privacy();
  if ((p.model() != fedanon::v1::PRIVACY_MODEL_UNSPECIFIED &&
       p.model() != fedanon::v1::PRIVACY_MODEL_LKC) ||
      p.l() != 0 || p.k() != 0 || p.c() != 0 || p.sensitive_values_size() > 0 ||
      !p.sensitive_attribute().empty() || p.templates_size() > 0 || p.confidence_size() > 0) {
    return absl::InvalidArgumentError(
        "a job with a sequential section takes its privacy templates from "
        "sequential.anonymity and sequential.confidentiality; leave privacy out");
  }
  if (spec.partitioning() != fedanon::v1::PARTITIONING_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        "sequential releases are anonymized centrally (fedanon anonymize --previous-release); "
        "remove partitioning");
  }
  if (spec.score() == fedanon::v1::SCORE_FUNCTION_DISCERNIBILITY) {
    return absl::InvalidArgumentError(
        "score discernibility is not supported with sequential releases; use infogain, "
        "gainratio or infogain_privloss");
  }
  const auto& seq = spec.sequential();
  if (seq.anonymity_size() + seq.confidentiality_size() == 0) {
    return absl::InvalidArgumentError(
        "sequential needs at least one entry in sequential.anonymity or "
        "sequential.confidentiality");
  }
  for (int i = 0; i < seq.anonymity_size(); ++i) {
    const auto& t = seq.anonymity(i);
    const std::string where = SequentialTemplateWhere(true, i);
    if (t.x_size() == 0) return absl::InvalidArgumentError(StrCat(where, " has no x attributes"));
    if (t.y_size() == 0) return absl::InvalidArgumentError(StrCat(where, " has no y attributes"));
    if (t.k() < 1) return absl::InvalidArgumentError(StrCat(where, ": k = 0 must be >= 1"));
    for (const auto& x : t.x()) RETURN_IF_ERROR(ParseSequentialRef(x, where).status());
    for (const auto& y : t.y()) RETURN_IF_ERROR(ParseSequentialRef(y, where).status());
  }
  for (int i = 0; i < seq.inconsistent_size(); ++i) {
    const auto& r = seq.inconsistent(i);
    if (r.current().empty() || r.current_value().empty() || r.previous().empty() ||
        r.previous_value().empty()) {
      return absl::InvalidArgumentError(
          StrCat("sequential.inconsistent rule ", i + 1,
                 " needs current, current_value, previous and previous_value"));
    }
  }
  for (int i = 0; i < seq.confidentiality_size(); ++i) {
    const auto& t = seq.confidentiality(i);
    const std::string where = SequentialTemplateWhere(false, i);
    if (t.x_size() == 0) return absl::InvalidArgumentError(StrCat(where, " has no x attributes"));
    for (const auto& x : t.x()) RETURN_IF_ERROR(ParseSequentialRef(x, where).status());
    if (t.attribute().empty())
      return absl::InvalidArgumentError(StrCat(where, " has no attribute"));
    ASSIGN_OR_RETURN(SequentialRef ref, ParseSequentialRef(t.attribute(), where));
    if (ref.name == kSequentialRecord) {
      return absl::InvalidArgumentError(StrCat(where, ": attribute cannot be ", t.attribute()));
    }
    if (t.sensitive_values_size() == 0) {
      return absl::InvalidArgumentError(StrCat(where, " has no sensitive_values"));
    }
    if (!(t.max() > 0 && t.max() <= 1)) {
      return absl::InvalidArgumentError(StrCat(where, ": max = ", t.max(), " must be in (0, 1]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace fedanon::spec
