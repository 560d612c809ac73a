#include "common/wire/release_digests.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace fedanon::wire {

namespace {

constexpr char kGroupsDomain[] = "fedanon vertical release groups v1";
constexpr char kPartitionDomain[] = "fedanon vertical release partition v1";
constexpr char kOrderSeedDomain[] = "fedanon vertical release order seed v1";

void AppendWord(uint64_t v, std::string* out) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

void AppendGroupLabel(std::string_view label, std::string* key) {
  const auto n = static_cast<uint32_t>(label.size());
  for (int i = 3; i >= 0; --i) key->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  key->append(label.data(), label.size());
}

std::string ReleaseGroupTally::Digest() const {
  crypto::Sha256Stream stream;
  stream.Update(kGroupsDomain);
  std::string word;
  for (const auto& [key, count] : counts_) {
    word.clear();
    AppendWord(key.size(), &word);
    stream.Update(word);
    stream.Update(key);
    word.clear();
    AppendWord(count, &word);
    stream.Update(word);
  }
  return stream.Finish();
}

ReleasePartitionHasher::ReleasePartitionHasher() { stream_.Update(kPartitionDomain); }

void ReleasePartitionHasher::Add(std::string_view key) {
  length_.clear();
  AppendWord(key.size(), &length_);
  stream_.Update(length_);
  stream_.Update(key);
}

std::string ReleasePartitionHasher::Finish() { return stream_.Finish(); }

std::string OrderSeedDigest(std::string_view job_id, std::string_view seed) {
  std::string bytes = kOrderSeedDomain;
  AppendWord(job_id.size(), &bytes);
  bytes.append(job_id.data(), job_id.size());
  AppendWord(seed.size(), &bytes);
  bytes.append(seed.data(), seed.size());
  return crypto::Sha256(bytes);
}

absl::Status CheckJoinedRelease(
    const std::vector<VerticalColumnsView>& parts,
    const google::protobuf::RepeatedPtrField<fedanon::v1::AttributeCut>& cut,
    std::string_view groups_digest) {
  // Where each cut attribute is: (part, column), and the values the cut allows for it, each with
  // its index in the cut.
  struct Column {
    size_t part = 0;
    size_t index = 0;
    std::vector<std::string_view> values;
    absl::flat_hash_map<std::string_view, uint64_t> value_index;
  };
  std::vector<Column> columns;
  for (const auto& attribute : cut) {
    Column c;
    int found = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      const auto& names = parts[p].names();
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] != attribute.attribute()) continue;
        c.part = p;
        c.index = i;
        ++found;
      }
    }
    if (found != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the released table ", found == 0 ? "has no column" : "has more than one column",
          " for the QID attribute '", attribute.attribute(), "' of the agreed cut"));
    }
    for (const auto& v : attribute.values()) {
      if (c.value_index.emplace(v, c.values.size()).second) c.values.push_back(v);
    }
    columns.push_back(std::move(c));
  }
  uint64_t rows = 0;
  for (const auto& part : parts) {
    if (!part.names().empty()) rows = part.rows();
  }
  for (const auto& part : parts) {
    if (!part.names().empty() && part.rows() != rows) {
      return absl::InvalidArgumentError("the released parts disagree on the number of records");
    }
  }
  // A row's group is the tuple of its cells' indices in the cut, one number in mixed radix when
  // the cut's combinations fit 64 bits (always, but for cuts of astronomically many values), and
  // the groups are counted by that number; each group's key of labels is built once at the end.
  // Otherwise each row's key of labels is counted directly.
  bool packed = true;
  {
    uint64_t combinations = 1;
    for (const Column& c : columns) {
      const uint64_t radix = std::max<uint64_t>(1, c.values.size());
      if (combinations > std::numeric_limits<uint64_t>::max() / radix) {
        packed = false;
        break;
      }
      combinations *= radix;
    }
  }
  ReleaseGroupTally tally;
  absl::flat_hash_map<uint64_t, uint64_t> packed_counts;
  std::vector<std::vector<std::string_view>> row(parts.size());
  std::string key;
  for (uint64_t r = 0; r < rows; ++r) {
    for (size_t p = 0; p < parts.size(); ++p) {
      if (!parts[p].names().empty()) parts[p].Row(r, &row[p]);
    }
    key.clear();
    uint64_t group = 0;
    for (size_t a = 0; a < columns.size(); ++a) {
      const Column& c = columns[a];
      const std::string_view cell = row[c.part][c.index];
      const auto it = c.value_index.find(cell);
      if (it == c.value_index.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the released table's QID attribute '", cut[static_cast<int>(a)].attribute(),
            "' holds, in row ", r + 1, ", a value outside the cut every replica agreed on"));
      }
      if (packed) {
        group = group * c.values.size() + it->second;
      } else {
        AppendGroupLabel(cell, &key);
      }
    }
    if (packed) {
      ++packed_counts[group];
    } else {
      tally.Add(key);
    }
  }
  std::vector<uint64_t> digits(columns.size());
  for (const auto& [group, count] : packed_counts) {
    uint64_t rest = group;
    for (size_t a = columns.size(); a-- > 0;) {
      digits[a] = rest % columns[a].values.size();
      rest /= columns[a].values.size();
    }
    key.clear();
    for (size_t a = 0; a < columns.size(); ++a)
      AppendGroupLabel(columns[a].values[digits[a]], &key);
    tally.Add(key, count);
  }
  if (tally.Digest() != groups_digest) {
    return absl::DataLossError(absl::StrCat(
        "the released table's groups (", tally.groups(), " over ", rows,
        " rows) differ from the groups every replica agreed on: its rows are not the agreed "
        "generalization of the common records"));
  }
  return absl::OkStatus();
}

}  // namespace fedanon::wire
