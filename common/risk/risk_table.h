// Where the QID codes of a risk assessment come from: a CSV table (raw, a party's own, or a
// release: its QID columns compared as written), or the encoded Dataset a job already loaded.
// Rows with the spec's missing token in any of the spec's attributes present in the table are
// left out (counted in `dropped`) unless the spec says `missing: keep`, as `fedanon anonymize`
// drops them.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/risk/qid_codes.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::risk {

// The spec's QID columns of the CSV file `path` ("-" is not special here: pass /dev/stdin).
// InvalidArgument naming the file when a QID column is missing from its header, a row has the
// wrong number of fields (file:line) or the file has no data row; NotFound for a missing file.
absl::StatusOr<QidCodes> ReadQidCodes(const fedanon::v1::JobSpec& spec, const std::string& path,
                                      const table::CsvOptions& options = {});
// The same from a reader already open (the caller's source name appears in errors).
absl::StatusOr<QidCodes> ReadQidCodes(const fedanon::v1::JobSpec& spec, table::CsvReader* reader);

// The QID codes of an encoded dataset (its records as the job kept them).
QidCodes QidCodesOf(const table::Dataset& data);

}  // namespace fedanon::risk
