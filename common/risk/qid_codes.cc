#include "common/risk/qid_codes.h"

#include "absl/container/flat_hash_map.h"

namespace fedanon::risk {

ClassIds RefineGroups(const ClassIds& parent, const std::vector<uint32_t>& column) {
  ClassIds out;
  out.ids.resize(parent.ids.size());
  absl::flat_hash_map<uint64_t, uint32_t> id_of;
  id_of.reserve(parent.classes);
  for (size_t r = 0; r < parent.ids.size(); ++r) {
    const uint64_t key = (static_cast<uint64_t>(parent.ids[r]) << 32) | column[r];
    auto [it, inserted] = id_of.try_emplace(key, out.classes);
    if (inserted) ++out.classes;
    out.ids[r] = it->second;
  }
  return out;
}

ClassIds GroupRecords(const QidCodes& table, const std::vector<int>& subset) {
  ClassIds groups;
  groups.ids.assign(table.records, 0);
  groups.classes = table.records > 0 ? 1 : 0;
  for (int attribute : subset) groups = RefineGroups(groups, table.columns[attribute]);
  return groups;
}

ClassSizeHistogram HistogramOf(const ClassIds& groups) {
  std::vector<uint64_t> sizes(groups.classes, 0);
  for (uint32_t id : groups.ids) ++sizes[id];
  ClassSizeHistogram histogram;
  for (uint64_t size : sizes) ++histogram[size];
  return histogram;
}

}  // namespace fedanon::risk
