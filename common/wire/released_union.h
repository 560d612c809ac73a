// What a recipient opens at the end of a federated job, shared by the party agent and the leader
// (either may be the recipient): the secure set union's sealed list and rows (horizontal jobs),
// and the join of the parties' released columns (vertical jobs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::common {

// Union rows are sealed ANONYMOUSLY (crypto::Seal, no sender name): the recipient must not learn
// their origin (mohammed2010 §5.4).
crypto::SealContext UnionRowContext(const std::string& job_id, uint64_t round,
                                    const std::string& recipient);
// The union list is sealed hop to hop, sender-authenticated (crypto::SealFrom), from `sender` to
// `receiver`.
crypto::SealContext UnionListContext(const std::string& job_id, uint64_t round,
                                     const std::string& sender, const std::string& receiver);

// The secure union's wire format: opens the set sealed for `receiver` by `sender` (whose
// certified key is `sender_key`; PermissionDenied when the payload names or was sealed by anyone
// else), then the rows sealed anonymously for `recipient` (one CSV line each).
absl::StatusOr<fedanon::v1::UnionList> OpenUnionList(const crypto::SealKeyPair& keys,
                                                     const std::string& job_id, uint64_t round,
                                                     const std::string& receiver,
                                                     const std::string& sender,
                                                     const crypto::SealPublicKey& sender_key,
                                                     const fedanon::v1::SealedPayload& sealed);
absl::StatusOr<std::vector<std::string>> OpenUnionRows(
    const crypto::SealKeyPair& keys, const std::string& job_id, uint64_t round,
    const std::string& recipient, const google::protobuf::RepeatedPtrField<std::string>& rows);

// The joined table from every party's released columns: the columns in `header` order, one row
// per common record, rows in a random order (OpenSSL CSPRNG). Fails when a column is missing or
// the parts disagree on the number of records.
absl::StatusOr<std::string> JoinReleasedColumns(
    const std::vector<fedanon::v1::VerticalColumns>& parts, const std::vector<std::string>& header);

}  // namespace fedanon::common
