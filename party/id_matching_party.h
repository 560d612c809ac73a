// ID matching at a party (vertical jobs; mohammed2011 §5, docs/crypto.md "ID matching"): in
// batches, each party's ID list commutatively encrypted by every party of the ring in turn
// (blinded by its owner first with three or more parties), its own list's digests, the leader's
// intersection signed by every party, and the alignment of this party's records on the common ids.
// Every hop is checked against the ring agreed at Prepare: the origin of each batch, its hop in
// the walk, the predecessor it comes from and the successor it goes to. Each batch answered once.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "fedanon/v1/federation.pb.h"
#include "party/id_matching.h"
#include "party/job_context.h"
#include "party/vertical_party.h"

namespace fedanon::party {

class IdMatchingParty {
 public:
  IdMatchingParty(JobContext& ctx, VerticalParty& replica) : ctx_(ctx), replica_(replica) {}

  // A batch of this party's own list, encrypted (and blinded) by this party.
  absl::Status EncryptBatch(const fedanon::v1::IdEncrypt& step, uint64_t round,
                            fedanon::v1::VerticalStepResult* out);
  // A hop of a batch of any list (its own last one with three or more parties).
  absl::Status ReencryptBatch(const fedanon::v1::IdReEncrypt& re, uint64_t round,
                              fedanon::v1::VerticalStepResult* out);
  // ReencryptBatch's last hop: the digests sealed for the leader and the list's owner (kept when
  // this party owns the list); the receivers.
  absl::StatusOr<std::vector<std::string>> SealFinalDigests(const fedanon::v1::IdReEncrypt& re,
                                                            uint64_t round,
                                                            const std::vector<std::string>& again,
                                                            fedanon::v1::VerticalStepResult* out);
  // Its own list's digests (two parties).
  absl::Status Digests(const fedanon::v1::IdDigests& d, uint64_t round,
                       fedanon::v1::VerticalStepResult* out);
  // The leader's common ids, a batch at a time; once complete, this party's signed statement.
  absl::Status Common(const fedanon::v1::IdCommon& c, uint64_t round,
                      fedanon::v1::VerticalStepResult* out);
  // The alignment on the common ids: the replica keeps the common records in canonical order.
  absl::Status Align(const fedanon::v1::IdAlign& align, uint64_t round,
                     fedanon::v1::VerticalStepResult* out);

  // After a restart: the ID matcher's secret, the statement's signature that left, and the
  // alignment recorded (the matching's hops need not be replayed).
  void RestoreSecret(std::string secret) { restored_secret_ = std::move(secret); }
  void RestoreCommonSignature(std::string signature) {
    restored_common_signature_ = std::move(signature);
  }
  void RestoreAlignment(IdAlignment alignment) { restored_alignment_ = std::move(alignment); }
  void ClearRestored() {
    restored_secret_.clear();
    restored_alignment_.reset();
    restored_common_signature_.clear();
  }

 private:
  JobContext& ctx_;
  VerticalParty& replica_;
  std::unique_ptr<IdMatcher> matcher_;
  double cpu_start_ = 0;  // process CPU seconds at IdEncrypt (for the log)
  // The batch size, fixed by the first step; each origin's batch count; per (origin and hop,
  // batch) the digest of the request answered (a byte-identical repeat is answered again, another
  // request refused); this party's own list as digests per batch (from its own last hop, or
  // delivered by the other of two parties: digests_delivered_ holds the digest of each delivery);
  // the leader's common ids as they arrive, with the answer to each batch; the alignment on them
  // once complete (until IdAlign).
  uint32_t batch_ids_ = 0;
  std::map<std::string, uint32_t> batches_;
  std::map<std::pair<std::string, uint32_t>, std::string> batch_answered_;
  std::map<uint32_t, std::string> own_digests_;
  std::map<uint32_t, std::string> digests_delivered_;
  std::string common_;
  uint32_t common_batches_ = 0;
  std::map<uint32_t, std::pair<std::string, fedanon::v1::VerticalStepResult>> common_answered_;
  std::optional<IdAlignment> alignment_;
  std::string restored_secret_;
  std::optional<IdAlignment> restored_alignment_;
  std::string restored_common_signature_;
};

}  // namespace fedanon::party
