#include "common/engine/final_check.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fedanon::engine {
namespace {

// a * b, or nullopt-like false when it exceeds `cap` (never wraps).
bool MulWithin(uint64_t a, uint64_t b, uint64_t cap, uint64_t* out) {
  if (a != 0 && b > cap / a) return false;
  *out = a * b;
  return *out <= cap;
}

}  // namespace

std::vector<std::vector<int64_t>> FinalCheckCutPositions(
    const std::vector<AttributeHierarchy>& hier) {
  std::vector<std::vector<int64_t>> pos(hier.size());
  for (size_t a = 0; a < hier.size(); ++a) {
    pos[a].assign(hier[a].size(), -1);
    int64_t next = 0;
    for (size_t n = 0; n < hier[a].size(); ++n) {
      if (hier[a].node(static_cast<NodeIndex>(n)).children.empty()) pos[a][n] = next++;
    }
  }
  return pos;
}

std::string FinalCheckGroupName(const FinalCheckConstraint& c, uint64_t group) {
  // Mixed radix, the last attribute varying fastest.
  std::vector<std::string> parts(c.attrs.size());
  for (size_t i = c.attrs.size(); i-- > 0;) {
    const uint64_t radix = c.cut_labels[i].size();
    parts[i] = absl::StrCat(c.attr_names[i], "=", c.cut_labels[i][group % radix]);
    group /= radix;
  }
  return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
}

absl::StatusOr<FinalCheckLayout> BuildFinalCheckLayout(const PrivacyModel& model,
                                                       const table::Dataset& data,
                                                       const std::vector<AttributeHierarchy>& hier,
                                                       const std::string& suppression_token) {
  FinalCheckLayout layout;
  for (const auto& t : data.tracked) layout.tracked.push_back(t.value);
  layout.stride = 1 + layout.tracked.size();
  if (model.distribution.has_value()) {
    layout.distribution = model.distribution;
    layout.hist_words = model.distribution->domain;
  }
  const auto positions = FinalCheckCutPositions(hier);
  for (size_t j = 0; j < model.constraints.size(); ++j) {
    const Constraint& con = model.constraints[j];
    FinalCheckConstraint c;
    c.description = model.Describe(static_cast<int>(j), data);
    c.attrs = con.attrs;
    c.k = con.k;
    c.sensitive_mask = con.sensitive_mask;
    c.max_conf = con.max_conf;
    c.distribution = con.distribution && layout.distribution.has_value();
    c.offset = layout.words;
    uint64_t groups = 1;
    for (int a : con.attrs) {
      if (a < 0 || static_cast<size_t>(a) >= hier.size()) {
        return absl::InvalidArgumentError("final check: a constraint names no QID attribute");
      }
      c.attr_names.push_back(data.qids[a].name);
      std::vector<std::string> labels;
      for (size_t n = 0; n < hier[a].size(); ++n) {
        if (positions[a][n] >= 0) {
          labels.push_back(hier[a].Label(static_cast<NodeIndex>(n), suppression_token));
        }
      }
      if (!MulWithin(groups, labels.size(), kMaxFinalCheckWords, &groups)) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "final check: the count vector of ", c.description, " exceeds the cap of ",
            kMaxFinalCheckWords,
            " words (too many combinations of cut values); the parties cannot re-check the "
            "model and release nothing"));
      }
      c.cut_labels.push_back(std::move(labels));
    }
    c.groups = groups;
    uint64_t words = 0;
    if (!MulWithin(groups, layout.Slot(c), kMaxFinalCheckWords, &words) ||
        words > kMaxFinalCheckWords - layout.words) {
      return absl::ResourceExhaustedError(
          absl::StrCat("final check: the count vector exceeds the cap of ", kMaxFinalCheckWords,
                       " words at constraint ", c.description,
                       "; the parties cannot re-check the model and release nothing"));
    }
    layout.words += words;
    layout.constraints.push_back(std::move(c));
  }
  return layout;
}

absl::StatusOr<std::vector<uint64_t>> LocalFinalCheckCounts(
    const FinalCheckLayout& layout, const table::Dataset& data,
    const std::vector<AttributeHierarchy>& hier, const Tips& tips) {
  std::map<std::vector<NodeIndex>, std::vector<uint64_t>> groups;
  const size_t m = layout.tracked.size();
  const int32_t* values = nullptr;  // the sensitive attribute's value codes (a histogram)
  if (layout.hist_words > 0) {
    const int col = data.distribution_column;
    if (col < 0 ||
        data.value_columns[static_cast<size_t>(col)].values.size() != layout.hist_words ||
        data.value_columns[static_cast<size_t>(col)].codes.size() != data.num_records) {
      return absl::InvalidArgumentError("final check: the table lacks the sensitive histogram");
    }
    values = data.value_columns[static_cast<size_t>(col)].codes.data();
  }
  for (size_t p = 0; p < tips.partition_count(); ++p) {
    const int32_t part = static_cast<int32_t>(p);
    if (!tips.alive(part) || tips.records(part).empty()) continue;
    // Sensitive counts of the partition.
    std::vector<uint64_t>& local = groups[tips.key(part)];
    local.assign(1 + m + layout.hist_words, 0);
    for (uint32_t r : tips.records(part)) {
      local[0] += 1;
      const uint64_t bits = data.sensitive_bits.empty() ? 0 : data.sensitive_bits[r];
      for (size_t b = 0; b < m; ++b) local[1 + b] += bits >> b & 1;
      if (values != nullptr) ++local[1 + m + static_cast<size_t>(values[r])];
    }
  }
  return FinalCheckCountsOfGroups(layout, data, hier, groups);
}

absl::StatusOr<std::vector<uint64_t>> FinalCheckCountsOfGroups(
    const FinalCheckLayout& layout, const table::Dataset& data,
    const std::vector<AttributeHierarchy>& hier,
    const std::map<std::vector<NodeIndex>, std::vector<uint64_t>>& groups) {
  const auto positions = FinalCheckCutPositions(hier);
  std::vector<uint64_t> out(layout.words, 0);
  const size_t m = layout.tracked.size();
  if (data.tracked.size() != m) {
    return absl::InvalidArgumentError("final check: tracked sensitive values differ");
  }
  for (const auto& [key, local] : groups) {
    if (key.size() != hier.size()) return absl::InternalError("final check: key of wrong size");
    if (layout.hist_words > 0 && local.size() == 1 + m) {
      return absl::FailedPreconditionError(
          "final check: this table's group counts carry no sensitive histograms (a push-down "
          "table cannot re-check ldiversity or tcloseness)");
    }
    if (local.size() != 1 + m + layout.hist_words) {
      return absl::InternalError("final check: counts of wrong size");
    }
    for (const FinalCheckConstraint& c : layout.constraints) {
      uint64_t index = 0;
      for (size_t i = 0; i < c.attrs.size(); ++i) {
        const int a = c.attrs[i];
        const NodeIndex node = key[a];
        if (node < 0 || static_cast<size_t>(node) >= positions[a].size() ||
            positions[a][node] < 0) {
          return absl::InvalidArgumentError(
              "final check: a partition holds a value that is not in the current cut");
        }
        index = index * c.cut_labels[i].size() + static_cast<uint64_t>(positions[a][node]);
      }
      uint64_t* w = out.data() + c.offset + index * layout.Slot(c);
      for (size_t i = 0; i < layout.Slot(c); ++i) w[i] += local[i];
    }
  }
  return out;
}

absl::Status CheckFinalTotalsBounds(const FinalCheckLayout& layout,
                                    const std::vector<uint64_t>& total,
                                    const std::vector<uint64_t>& own, uint64_t max_records) {
  if (total.size() != layout.words || own.size() != layout.words) {
    return absl::InvalidArgumentError(absl::StrCat(
        "final check: the summed vector has ", total.size(), " words, the layout ", layout.words));
  }
  const auto forged = [](const std::string& what) {
    return absl::DataLossError(absl::StrCat(
        "final check: the summed counts are not ones honest parties can produce (", what,
        "): a party added to the sum what it does not hold; nothing is released"));
  };
  for (uint64_t w = 0; w < total.size(); ++w) {
    if (total[w] < own[w]) {
      return forged(
          absl::StrCat("word ", w, " is ", total[w], ", below this party's own ", own[w]));
    }
  }
  std::optional<uint64_t> records;
  for (const FinalCheckConstraint& c : layout.constraints) {
    uint64_t sum = 0;
    for (uint64_t g = 0; g < c.groups; ++g) {
      const uint64_t size = total[c.offset + g * layout.Slot(c)];
      if (size > max_records - sum) {
        return forged(absl::StrCat("the groups of ", c.description, " hold more than the job's ",
                                   max_records, " records at most"));
      }
      sum += size;
    }
    if (records.has_value() && *records != sum) {
      return forged(absl::StrCat("the groups of ", c.description, " hold ", sum,
                                 " records, those of ", layout.constraints.front().description, " ",
                                 *records));
    }
    records = sum;
  }
  return absl::OkStatus();
}

absl::Status CheckFinalCounts(const FinalCheckLayout& layout, const std::vector<uint64_t>& counts) {
  if (counts.size() != layout.words) {
    return absl::InvalidArgumentError(absl::StrCat(
        "final check: the summed vector has ", counts.size(), " words, the layout ", layout.words));
  }
  for (const FinalCheckConstraint& c : layout.constraints) {
    // t-closeness compares each group with the whole table: the sum of the groups' histograms.
    std::vector<uint64_t> overall(c.distribution ? layout.hist_words : 0, 0);
    for (uint64_t g = 0; g < c.groups && c.distribution; ++g) {
      const uint64_t* h = counts.data() + c.offset + g * layout.Slot(c) + layout.stride;
      for (size_t v = 0; v < overall.size(); ++v) overall[v] += h[v];
    }
    for (uint64_t g = 0; g < c.groups; ++g) {
      const uint64_t* w = counts.data() + c.offset + g * layout.Slot(c);
      const uint64_t size = w[0];
      if (size == 0) continue;  // no record has these cut values
      if (c.distribution) {
        const absl::Span<const uint64_t> hist(w + layout.stride, layout.hist_words);
        uint64_t in_hist = 0;
        for (uint64_t v : hist) in_hist += v;
        if (in_hist != size) {
          return absl::FailedPreconditionError(absl::StrCat(
              "final check failed: ", c.description, ": group ", FinalCheckGroupName(c, g),
              " holds ", size, " records but its sensitive histogram ", in_hist));
        }
        if (!layout.distribution->Holds(hist, overall)) {
          return absl::FailedPreconditionError(absl::StrCat(
              "final check failed: ", c.description, ": group ", FinalCheckGroupName(c, g), " of ",
              size, " records fails ", layout.distribution->Describe()));
        }
      }
      if (size < c.k) {
        return absl::FailedPreconditionError(
            absl::StrCat("final check failed: ", c.description, ": group ",
                         FinalCheckGroupName(c, g), " holds ", size, " records, fewer than ", c.k));
      }
      for (size_t b = 0; b < layout.tracked.size(); ++b) {
        if (!(c.sensitive_mask >> b & 1)) continue;
        if (w[1 + b] > size) {
          return absl::FailedPreconditionError(absl::StrCat(
              "final check failed: ", c.description, ": group ", FinalCheckGroupName(c, g),
              " counts ", w[1 + b], " records with '", layout.tracked[b], "' among only ", size));
        }
        const double conf = static_cast<double>(w[1 + b]) / static_cast<double>(size);
        if (conf > c.max_conf + kConfidenceEpsilon) {
          return absl::FailedPreconditionError(absl::StrCat(
              "final check failed: ", c.description, ": group ", FinalCheckGroupName(c, g),
              " infers '", layout.tracked[b], "' with confidence ", w[1 + b], "/", size, " = ",
              conf, ", above ", c.max_conf));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace fedanon::engine
