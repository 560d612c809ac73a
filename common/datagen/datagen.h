// Synthetic Adult-like data for `fedanon gen-data`: a table with UCI Adult's 15 columns, value
// vocabularies and (approximately) its marginals and correlations with the income class, plus
// taxonomies for the categorical attributes and a ready-to-run LKC job spec.
//
// Everything is generated from scratch: the marginals, conditional tables and the income model
// (a logistic score over education, age, household, occupation, workclass, hours and race; capital
// gain/loss drawn given the class) are hand-rounded approximations of Adult's summary statistics.
// No record, value list or hierarchy file of the real data is embedded.
// The output depends only on (rows, seed, parties, partition, overlap): sampling uses a private
// xoshiro256** generator and integer-only arithmetic, so the same options give byte-identical files
// with every compiler, standard library and platform.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace fedanon::datagen {

struct DatagenOptions {
  uint64_t rows = 10000;
  uint64_t seed = 1;
  std::string out_dir;  // created if missing
  int parties = 1;      // > 1: also write per-party files
  enum class Partition { kHorizontal, kVertical } partition = Partition::kHorizontal;
  // Vertical with parties > 1 only: the share of each party's ids that every party has, in
  // [0.01, 1]. Below 1 each party file also gets round(rows * (1 - overlap) / overlap) records of
  // its own (ids no other party has, drawn from a separate stream, interleaved with the common
  // ones); table.csv stays the `rows` common records, i.e. the join.
  double overlap = 1.0;
};

// Writes into out_dir:
//   table.csv          header + `rows` records (vertical: with a leading unique `id` column);
//   tax/<attr>.csv     ARX-format taxonomies (`leaf;parent;...;ANY`) for workclass, education,
//                      marital-status, occupation, relationship, race, sex, native-country;
//   horizontal.yaml    (horizontal) the same job for a federation, with public domains declared;
//   vertical.yaml      (vertical, parties > 1) the same job for a vertical federation: public
//                      domains declared and the `party:` of every attribute;
//   job.yaml           an LKC job spec (L=4, K=20, C=0.2, sensitive Divorced/Separated) over it;
//   party<i>.csv       (parties > 1, i = 1..parties) horizontal: the rows with index % parties ==
//                      i - 1 (round robin), same header; vertical: `id`, a contiguous block of the
//                      14 attributes, and `income` (with overlap < 1 also its own extra
//                      records, whose ids follow the common ids r..rows; see `overlap`).
// Returns a one-line summary (row count and files written).
// Errors: rows == 0 or above kMaxDatagenRows, parties < 1, an empty out_dir, or (vertical) more
// parties than the 14 attributes, an overlap outside [0.01, 1] or below 1 without a vertical
// split over several parties -> InvalidArgument; a directory or file that cannot be created or
// written -> an error naming the path.
inline constexpr uint64_t kMaxDatagenRows = 100'000'000;  // about 10 GB of CSV
absl::StatusOr<std::string> GenerateDataset(const DatagenOptions& options);

}  // namespace fedanon::datagen
