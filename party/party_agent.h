// The party role: answers the leader's requests from the party's own table. Raw values never
// leave this class — it replies only with digests, masked/sealed count vectors and rows sealed
// for the job's recipient. No gRPC types: server/party_client feeds it the requests that arrive
// on the party's outbound stream; party/in_process_channel calls it directly in tests.
// Thread-safe (requests are handled one at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::party {

struct PartyAgentOptions {
  std::string name;               // this party's identity (as in its certificate)
  std::string data_dir;           // tables and taxonomies; relative paths resolve here
  std::string default_data_path;  // the table used when a job names none (relative to data_dir)
  std::string output_dir;         // where integrated tables land when this party is recipient
  uint64_t max_input_bytes = uint64_t{64} << 30;  // the largest table it reads (common/base)
  std::string ca_pem;         // the federation CA (verifies other parties' seal certs)
  std::string seal_cert_pem;  // this party's sealing certificate and key
  std::string seal_key_pem;
  // Tests and demonstrations of mohammed2011 §6 only: "" (default), "never-participate" or
  // "under-declare" — this party then misbehaves in vertical jobs (loudly logged).
  std::string misbehave;
  // Tests only: called with (sender, plaintext) of every sealed payload this party opens in a
  // secure sum or a vertical job — what it learns from the others.
  std::function<void(const std::string& sender, const std::string& plaintext)> observe_opened;
};

class PartyAgent {
 public:
  static absl::StatusOr<std::unique_ptr<PartyAgent>> Create(PartyAgentOptions options);
  ~PartyAgent();

  // Handles one request and returns the reply (an ErrorReply on failure; never throws).
  fedanon::v1::PartyMessage Handle(const fedanon::v1::LeaderMessage& request);

  const std::string& name() const { return options_.name; }
  const std::string& seal_cert_pem() const { return options_.seal_cert_pem; }

 private:
  struct JobState;
  PartyAgent(PartyAgentOptions options, std::unique_ptr<crypto::SealKeyPair> seal_keys);
  absl::StatusOr<fedanon::v1::PartyMessage> Dispatch(const fedanon::v1::LeaderMessage& request);
  absl::Status ApplyUpdates(
      const google::protobuf::RepeatedPtrField<fedanon::v1::StateUpdate>& updates);
  absl::StatusOr<fedanon::v1::PartyMessage> HandleSumStep(
      const fedanon::v1::LeaderMessage& request);
  absl::StatusOr<fedanon::v1::PartyMessage> HandleUnionStep(
      const fedanon::v1::LeaderMessage& request);
  absl::StatusOr<fedanon::v1::PartyMessage> HandleVertical(
      const fedanon::v1::LeaderMessage& request);
  absl::StatusOr<fedanon::v1::SealedPayload> SealFor(const std::string& receiver, uint64_t round,
                                                     const std::string& purpose,
                                                     const std::string& bytes) const;
  absl::StatusOr<std::string> OpenSealed(const fedanon::v1::SealedPayload& payload, uint64_t round,
                                         const std::string& purpose) const;

  PartyAgentOptions options_;
  std::unique_ptr<crypto::SealKeyPair> seal_keys_;  // parsed once from options_.seal_key_pem
  std::mutex mu_;
  std::unique_ptr<JobState> job_;
};

}  // namespace fedanon::party
