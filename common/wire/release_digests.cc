#include "common/wire/release_digests.h"

#include <string>
#include <unordered_set>
#include <utility>

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
  // Where each cut attribute is: (part, column), and the values the cut allows for it.
  struct Column {
    size_t part = 0;
    size_t index = 0;
    std::unordered_set<std::string_view> values;
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
    for (const auto& v : attribute.values()) c.values.insert(v);
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
  ReleaseGroupTally tally;
  std::vector<std::vector<std::string_view>> row(parts.size());
  std::string key;
  for (uint64_t r = 0; r < rows; ++r) {
    for (size_t p = 0; p < parts.size(); ++p) {
      if (!parts[p].names().empty()) parts[p].Row(r, &row[p]);
    }
    key.clear();
    for (size_t a = 0; a < columns.size(); ++a) {
      const std::string_view cell = row[columns[a].part][columns[a].index];
      if (!columns[a].values.count(cell)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the released table's QID attribute '", cut[static_cast<int>(a)].attribute(),
            "' holds, in row ", r + 1, ", a value outside the cut every replica agreed on"));
      }
      AppendGroupLabel(cell, &key);
    }
    tally.Add(key);
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
