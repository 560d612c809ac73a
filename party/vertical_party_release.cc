// VerticalParty's release (party/vertical_party.h): the check before any release, the released
// columns in the release order (serialized in place), the digests that tie the release to what
// every replica agreed, and the report.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/wire/federation_wire.h"
#include "common/wire/release_digests.h"
#include "party/vertical_party.h"

namespace fedanon::party {

using engine::NodeIndex;
using fedanon::v1::Attribute;

absl::Status VerticalParty::CheckRelease() const {
  if (!engine_) return absl::FailedPreconditionError("the vertical job has not started");
  if (local_) return local_->CheckRelease();
  const size_t bits = data_->tracked.size();
  for (size_t j = 0; j < model_->constraints.size(); ++j) {
    const engine::Constraint& con = model_->constraints[j];
    const uint64_t mask = con.sensitive_mask & held_bits_;
    // Per group of the constraint's attributes: [records, then per tracked bit its count].
    std::map<std::vector<NodeIndex>, std::vector<uint64_t>> groups;
    uint64_t records = 0;
    for (size_t p = 0; p < tips_->partition_count(); ++p) {
      const int32_t id = static_cast<int32_t>(p);
      if (!tips_->alive(id)) continue;
      const auto& key = tips_->key(id);
      std::vector<NodeIndex> projected;
      for (int a : con.attrs) projected.push_back(key[a]);
      std::vector<uint64_t>& g = groups[projected];
      g.resize(1 + bits, 0);
      for (uint32_t r : tips_->records(id)) {
        ++g[0];
        ++records;
        for (size_t b = 0; b < bits; ++b) {
          if ((mask >> b & 1) && (data_->sensitive_bits[r] >> b & 1)) ++g[1 + b];
        }
      }
    }
    if (records != data_->num_records) {
      return absl::InternalError("the final partition does not cover every common record");
    }
    if (con.distribution && holds_distribution_) RETURN_IF_ERROR(CheckReleaseDistribution(j));
    for (const auto& [key, g] : groups) {
      bool ok = g[0] >= con.k;
      for (size_t b = 0; ok && b < bits; ++b) {
        if (!(mask >> b & 1)) continue;
        const double conf = static_cast<double>(g[1 + b]) / static_cast<double>(g[0]);
        ok = conf <= con.max_conf + engine::kConfidenceEpsilon;
      }
      if (!ok) {
        return absl::FailedPreconditionError(absl::StrCat(
            kRefusedRelease, ": a group fails ", model_->Describe(static_cast<int>(j), *data_)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status VerticalParty::CheckReleaseDistribution(size_t constraint) const {
  // Every final group (all QID attributes: the constraint's) against the model's requirement,
  // from this party's own sensitive column; the whole table's histogram for t-closeness.
  const engine::SensitiveDistribution& d = *model_->distribution;
  const auto& codes = data_->value_columns[static_cast<size_t>(data_->distribution_column)].codes;
  std::vector<uint64_t> overall(d.domain, 0);
  for (int32_t code : codes) ++overall[static_cast<size_t>(code)];
  std::vector<uint64_t> hist(d.domain);
  for (size_t p = 0; p < tips_->partition_count(); ++p) {
    const int32_t id = static_cast<int32_t>(p);
    if (!tips_->alive(id) || tips_->records(id).empty()) continue;
    std::fill(hist.begin(), hist.end(), 0);
    for (uint32_t r : tips_->records(id)) ++hist[static_cast<size_t>(codes[r])];
    if (!d.Holds(hist, overall)) {
      return absl::FailedPreconditionError(
          absl::StrCat(kRefusedRelease, ": a group fails ",
                       model_->Describe(static_cast<int>(constraint), *data_)));
    }
  }
  return absl::OkStatus();
}

namespace {

// Protobuf's encoding of one length-delimited field (a string of VerticalColumns): its tag byte,
// the length as a varint, the bytes.
size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
// Writes v as a varint at `at` (VarintSize(v) bytes); returns the byte after it.
char* WriteVarint(char* at, uint64_t v) {
  while (v >= 0x80) {
    *at++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *at++ = static_cast<char>(v);
  return at;
}
void AppendVarint(std::string* out, uint64_t v) {
  char bytes[10];
  out->append(bytes, static_cast<size_t>(WriteVarint(bytes, v) - bytes));
}
constexpr char kNamesTag = 0x0a;  // VerticalColumns.names: field 1, length-delimited
constexpr char kCellsTag = 0x12;  // VerticalColumns.cells: field 2, length-delimited
// Below this many records a release is serialized on one thread.
constexpr size_t kParallelReleaseRows = 65536;

}  // namespace

absl::StatusOr<std::string> VerticalParty::SerializedReleasedColumns(
    const std::vector<size_t>& order) const {
  if (order.size() != data_->num_records) {
    return absl::InvalidArgumentError("the release order does not cover the common records");
  }
  {
    std::vector<bool> used(order.size(), false);
    for (size_t r : order) {
      if (r >= order.size() || used[r]) {
        return absl::InvalidArgumentError("the release order is not a permutation");
      }
      used[r] = true;
    }
  }
  // Columns in spec order: own QIDs (generalized) and own released values.
  std::vector<std::pair<int, int>> columns;  // (qid index or -1, value column or -1)
  for (const Attribute& a : spec_.attributes()) {
    for (size_t q = 0; q < data_->qids.size(); ++q) {
      if (data_->qids[q].name == a.name() && owned_[q]) {
        columns.emplace_back(static_cast<int>(q), -1);
      }
    }
    for (size_t v = 0; v < value_names_.size(); ++v) {
      if (value_names_[v] == a.name()) columns.emplace_back(-1, static_cast<int>(v));
    }
  }
  const size_t width = columns.size();
  // Global recoding: one label per (final group, QID column), and each record's group; nothing
  // per record as a string (the release stays within the party's memory bound).
  std::vector<uint32_t> group_of;
  std::vector<std::vector<std::string>> group_labels;
  if (!local_) {
    group_of.assign(data_->num_records, 0);
    for (size_t p = 0; p < tips_->partition_count(); ++p) {
      const int32_t id = static_cast<int32_t>(p);
      if (!tips_->alive(id)) continue;
      const auto& key = tips_->key(id);
      std::vector<std::string>& labels = group_labels.emplace_back(width);
      for (size_t i = 0; i < width; ++i) {
        const int q = columns[i].first;
        if (q >= 0) labels[i] = hier_[q].Label(key[q], spec_.suppression_token());
      }
      const auto g = static_cast<uint32_t>(group_labels.size() - 1);
      for (uint32_t r : tips_->records(id)) group_of[r] = g;
    }
  }
  // The cell of canonical record r in column i; a local label is made per call into `scratch`
  // (one per thread).
  auto cell = [&](size_t r, size_t i, std::string* scratch) -> std::string_view {
    const auto& [q, v] = columns[i];
    if (v >= 0) return value_cells_[v][r];
    if (local_) {
      *scratch = local_->Label(q, static_cast<uint32_t>(r));
      return *scratch;
    }
    return group_labels[group_of[r]][i];
  };
  // The same bytes as serializing a VerticalColumns with these names and cells, record-major in
  // the release order: the names, then the rows, the rows in two halves that two threads size and
  // write at once (a million records and eight columns take a second on one thread), into one
  // allocation of the exact size.
  std::string header;
  for (const auto& [q, v] : columns) {
    const std::string& name = q >= 0 ? data_->qids[q].name : value_names_[v];
    header.push_back(kNamesTag);
    AppendVarint(&header, name.size());
    header.append(name);
  }
  const size_t halves =
      order.size() >= kParallelReleaseRows && std::thread::hardware_concurrency() >= 2 ? 2 : 1;
  std::vector<size_t> bounds(halves + 1);
  for (size_t h = 0; h <= halves; ++h) bounds[h] = order.size() * h / halves;
  auto for_each_half = [&](const std::function<void(size_t)>& work) {
    if (halves == 1) {
      work(0);
      return;
    }
    std::thread second([&] { work(1); });
    work(0);
    second.join();
  };
  std::vector<size_t> bytes(halves, 0);
  for_each_half([&](size_t h) {
    std::string scratch;
    size_t size = 0;
    for (size_t j = bounds[h]; j < bounds[h + 1]; ++j) {
      for (size_t i = 0; i < width; ++i) {
        const size_t n = cell(order[j], i, &scratch).size();
        size += 1 + VarintSize(n) + n;
      }
    }
    bytes[h] = size;
  });
  std::vector<size_t> starts(halves, header.size());
  for (size_t h = 1; h < halves; ++h) starts[h] = starts[h - 1] + bytes[h - 1];
  std::string out;
  out.resize(header.size() + std::accumulate(bytes.begin(), bytes.end(), size_t{0}));
  std::memcpy(out.data(), header.data(), header.size());
  for_each_half([&](size_t h) {
    std::string scratch;
    char* at = out.data() + starts[h];
    for (size_t j = bounds[h]; j < bounds[h + 1]; ++j) {
      for (size_t i = 0; i < width; ++i) {
        const std::string_view c = cell(order[j], i, &scratch);
        *at++ = kCellsTag;
        at = WriteVarint(at, c.size());
        if (!c.empty()) std::memcpy(at, c.data(), c.size());
        at += c.size();
      }
    }
  });
  return out;
}

VerticalParty::GroupDigests VerticalParty::ReleaseGroupDigests() const {
  GroupDigests out;
  if (!engine_) return out;
  const size_t qids = data_->qids.size();
  wire::ReleasePartitionHasher partition;
  wire::ReleaseGroupTally groups;
  std::string key;
  if (local_) {
    for (size_t r = 0; r < data_->num_records; ++r) {
      key.clear();
      for (size_t q = 0; q < qids; ++q) {
        wire::AppendGroupLabel(local_->Label(static_cast<int>(q), static_cast<uint32_t>(r)), &key);
      }
      partition.Add(key);
      groups.Add(key);
    }
  } else {
    // One key per final group (the labels every party reports in its cut), then each record's.
    std::vector<uint32_t> group_of(data_->num_records, 0);
    std::vector<std::string> keys;
    for (size_t p = 0; p < tips_->partition_count(); ++p) {
      const int32_t id = static_cast<int32_t>(p);
      if (!tips_->alive(id)) continue;
      const auto& node = tips_->key(id);
      key.clear();
      for (size_t q = 0; q < qids; ++q) {
        wire::AppendGroupLabel(hier_[q].Label(node[q], spec_.suppression_token()), &key);
      }
      groups.Add(key, tips_->records(id).size());
      for (uint32_t r : tips_->records(id)) group_of[r] = static_cast<uint32_t>(keys.size());
      keys.push_back(key);
    }
    for (size_t r = 0; r < data_->num_records; ++r) partition.Add(keys[group_of[r]]);
  }
  out.partition = partition.Finish();
  out.groups = groups.Digest();
  return out;
}

void VerticalParty::FillReport(const std::string& stop_reason, fedanon::v1::Report* report) const {
  if (!engine_) return;
  if (local_) {
    local_->FillReport(stop_reason, report);
    return;
  }
  report->set_records_out(engine_->total_records());
  engine_->FillReport(stop_reason, report);
}

}  // namespace fedanon::party
