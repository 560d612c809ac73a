// Push-down mode of a PostgreSQL source (party.yaml `tables: {x: {mode: push-down, ...}}`,
// docs/postgres.md): a horizontal party's count statistics computed inside the database with
// plain SQL aggregation, so that the party never loads its table.
//
// The job's public cut (the hierarchies the party keeps up to date) becomes, per QID attribute, a
// CASE expression mapping each raw value (text of a categorical column, grid index of a
// continuous one) to its current cut node and to its fine child under that node. Each answer is
// then at most four plain GROUP BY statements over the source (range counts; node class
// counts and rank histograms; group statistics of the requested keys; released counts of the
// requested keys), whose rows fill exactly the words engine::AppendLocalStats writes from a TIPS
// over the same records (count_source.h). Standard SQL only (no extension, no function created,
// no GROUPING SETS / ROLLUP / CUBE, which Citus runs on a single shard only: several GROUP BYs
// are joined by UNION ALL instead), so it can run unchanged on PostgreSQL-compatible distributed
// engines such as Citus (not tested against Citus itself).
//
// The job's queries run in one REPEATABLE READ READ ONLY transaction opened at Open and kept until
// the object is destroyed: every round sees the same snapshot. Open checks the table once (column
// types, NULLs, values outside a taxonomy or declared domain, values off a continuous grid) with
// the in-memory reader's messages. Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/table/dataset.h"
#include "common/table_postgres/postgres_source.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::table_postgres {

class Connection;

class PostgresPushdown {
 public:
  // Connects, opens the job's snapshot, checks the source against `spec` encoded with the public
  // `schema` (a federated job: every domain declared, continuous attributes on a grid).
  // Unavailable (cannot connect); InvalidArgument with the reader's message otherwise.
  static absl::StatusOr<std::unique_ptr<PostgresPushdown>> Open(const fedanon::v1::JobSpec& spec,
                                                                const PostgresSource& source,
                                                                const table::Dataset& schema);
  ~PostgresPushdown();

  // The schema with the source's header and record counts (no per-record codes): the party's
  // hierarchies are built over its QID columns.
  const table::Dataset& data() const { return *data_; }

  // Candidate `c` of (attr, node) was applied to the hierarchies (needed for ⊥ nodes, whose
  // children depend on the disclosed value).
  void Specialize(int attr, engine::NodeIndex node, int c);

  // Appends the answer to `request` over the current cut of `hier` (built over data().qids),
  // word for word what AppendLocalStats gives on the loaded table.
  absl::Status AppendStats(const std::vector<engine::AttributeHierarchy>& hier,
                           const engine::StatsRequest& request, std::vector<uint64_t>* out);

  // The non-empty groups of the current cut: key -> [count, tracked_1..m] (the final check).
  absl::StatusOr<std::map<std::vector<engine::NodeIndex>, std::vector<uint64_t>>> GroupCounts(
      const std::vector<engine::AttributeHierarchy>& hier);

  // Calls `emit` once per kept record with its released values for `columns` (indices into
  // data().header), QID values replaced by the label of their cut node, as ForEachReleasedRow
  // does; in no particular order (the caller shuffles).
  absl::Status ForEachReleasedRow(
      const std::vector<engine::AttributeHierarchy>& hier, const std::vector<int>& columns,
      const std::function<void(const std::vector<std::string_view>&)>& emit);

  // A fingerprint of the job's snapshot (16 hex digits): a hash of the row counts and of every
  // value, with its count per class, of every column the job reads, taken by the check at Open
  // (no extra scan). Two Opens of an unchanged table give the same; a restarted party could
  // compare it with the one recorded at prepare to name a table that changed under the job.
  // A change that keeps every column's value counts (values swapped between rows) is not seen.
  const std::string& fingerprint() const { return fingerprint_; }

  // Queries run for statistics so far (the bound per round is four).
  uint64_t queries() const { return queries_; }

  // Sizes that choose the SQL's shape (tests set small ones to run the other shapes).
  struct Limits {
    // Group statistics: one plain GROUP BY over (key, every fine child) while the requested keys
    // have at most this many such cells, else one GROUP BY (key) and one GROUP BY (key, fine
    // child) per refinable attribute, joined by UNION ALL.
    uint64_t max_combined_cells = uint64_t{1} << 20;
    // A packed key column holds attributes while the product of their radices stays below this;
    // the next attribute starts a new BIGINT column.
    uint64_t pack_limit = uint64_t{1} << 62;
  };
  void set_limits(const Limits& limits) { limits_ = limits; }

 private:
  PostgresPushdown() = default;
  struct Sets;
  absl::Status Check();
  // Check()'s distinct values: per column read (QIDs, class, sensitive and released columns), its
  // values with their records, and per value its records by class.
  struct DistinctValues {
    std::vector<int> columns;
    std::vector<std::map<std::string, uint64_t>> seen;
    std::vector<std::map<std::string, std::map<int, uint64_t>>> by_class;
    const std::map<std::string, uint64_t>& Of(int column) const;
  };
  absl::Status CountRowsAndNulls();
  absl::StatusOr<DistinctValues> ListDistinctValues();
  absl::Status CheckValuesAreKnown(const DistinctValues& values) const;
  void TakeFingerprint(const DistinctValues& values);
  absl::Status BuildHistograms(const DistinctValues& values);
  int ColumnOf(const std::string& name) const;  // the table column of an attribute
  // AppendStats by kind of statistic.
  void AppendHistogramStats(const std::vector<engine::AttributeHierarchy>& hier,
                            const engine::StatsRequest& request, std::vector<uint64_t>* out) const;
  absl::Status AppendGroupStats(const std::vector<engine::AttributeHierarchy>& hier,
                                const engine::StatsRequest& request, std::vector<uint64_t>* out);
  absl::Status AppendReleasedCounts(const std::vector<engine::AttributeHierarchy>& hier,
                                    const engine::StatsRequest& request,
                                    std::vector<uint64_t>* out);
  // Per requested group key: where its words start in the output, and each refinable attribute's
  // offset there (-1: not refinable).
  using GroupPlaces = std::map<std::vector<engine::NodeIndex>,
                               std::vector<std::pair<size_t, std::vector<int64_t>>>>;
  // AppendGroupStats' query: the packed cut, the refinable attributes, the places of the keys,
  // the packed key columns g0.. and the filter on the requested keys.
  struct GroupQuery;
  // The group statistics in one GROUP BY over the key and every fine child, or (very many cells)
  // one GROUP BY per refinable attribute.
  absl::Status SumCombinedGroups(const std::vector<engine::AttributeHierarchy>& hier,
                                 const GroupQuery& q, std::vector<uint64_t>* out);
  absl::Status SumGroupsPerAttribute(const std::vector<engine::AttributeHierarchy>& hier,
                                     const GroupQuery& q, std::vector<uint64_t>* out);
  std::string Lit(std::string_view text) const;
  std::string Text(int column) const;                // the column's text
  std::string Rank(int attr) const;                  // a continuous attribute's grid index
  std::string RankBelow(int attr, int64_t j) const;  // SQL of "grid index < j"
  // Per QID attribute: the SQL of a per-code integer function (codes: leaves / values / ranks).
  std::string CodeCase(int attr, const std::vector<int64_t>& per_code) const;
  std::string CutExpr(const std::vector<engine::AttributeHierarchy>& hier, int attr) const;
  std::string FineExpr(const std::vector<engine::AttributeHierarchy>& hier, int attr) const;
  // The current cut's group key packed into BIGINT columns g0, g1, ... (usually one).
  struct PackedCut {
    std::vector<std::string> columns;  // SQL of each packed column
    std::vector<int> chunk;            // per attribute: its column
    std::vector<uint64_t> mult;        // per attribute: its multiplier in that column
    std::vector<std::vector<engine::NodeIndex>> nodes;  // per attribute: position -> cut node
    std::vector<std::map<engine::NodeIndex, int64_t>>
        position;  // per attribute: cut node -> position
  };
  PackedCut Pack(const std::vector<engine::AttributeHierarchy>& hier) const;
  // Fills p->columns, chunk and mult from each attribute's per-code digit (radix: nodes[a].size()).
  void PackColumns(const std::vector<std::vector<int64_t>>& digits, PackedCut* p) const;
  // The fine children (+1) of the refinable attributes packed the same way.
  PackedCut PackFine(const std::vector<engine::AttributeHierarchy>& hier,
                     const std::vector<bool>& refinable) const;
  std::optional<std::vector<int64_t>> Encode(const PackedCut& p,
                                             const std::vector<engine::NodeIndex>& key) const;
  std::vector<engine::NodeIndex> Decode(const PackedCut& p, const int64_t* packed) const;
  std::string PackedFilter(const PackedCut& p,
                           const std::vector<std::vector<engine::NodeIndex>>& keys) const;
  bool Occurs(int attr, int32_t code) const;  // the code has a kept record
  std::string KeyFilter(const std::vector<std::vector<engine::NodeIndex>>& keys) const;
  std::string From(const std::vector<std::pair<std::string, std::string>>& columns) const;
  engine::NodeIndex CurrentNode(const engine::AttributeHierarchy& h, int attr, int32_t code) const;
  absl::StatusOr<std::vector<std::vector<int64_t>>> Rows(const std::string& sql,
                                                         std::string_view what);

  fedanon::v1::JobSpec spec_;
  PostgresSource source_;
  std::string label_;
  std::unique_ptr<Connection> conn_;
  std::string query_;
  std::unique_ptr<table::Dataset> data_;
  std::vector<int> qid_column_;              // per QID: its column in the source
  std::vector<unsigned> column_types_;       // per source column: its type oid
  std::vector<std::vector<int32_t>> codes_;  // per QID: every code (leaf ids / values / ranks)
  std::vector<std::vector<std::string>> code_text_;  // categorical: the text of each code
  std::string kept_;                                 // SQL condition of a kept row
  std::string class_expr_, value_index_expr_;
  std::vector<std::string> sensitive_expr_;                   // per tracked value: 1 or 0
  std::map<std::pair<int, engine::NodeIndex>, int> applied_;  // (attr, node) -> candidate
  std::vector<std::vector<uint64_t>> hist_;  // per QID: [code * classes + class] kept records
  uint64_t queries_ = 0;
  Limits limits_;
  std::string fingerprint_;
};

}  // namespace fedanon::table_postgres
