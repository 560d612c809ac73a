// A party played by the test (tests only): the real party logic (party::PartyAgent over the
// party's own bundle and data directory) on its own PartyLink.Connect stream to the leader, with
// the party's real certificate, whose replies the test can corrupt one at a time. Unlike
// party_daemon::PartyClient it imposes no size limit of its own on what it sends (the channel's
// send limit is lifted), so an oversized reply really reaches the leader's gRPC server.
//
// After a session ends (the leader cut the stream) it reconnects within 200 ms until stopped.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "fedanon/v1/federation.pb.h"
#include "party/party_agent.h"
#include "server/runtime/tls.h"

namespace grpc {
class ClientContext;
}

namespace fedanon::testing {

enum class Corruption {
  kNone,
  // The first secure-sum reply carries random bytes instead of its sealed ciphertext (same size).
  kGarbageCiphertext,
  // The first secure-sum reply is a Pong (a well-formed message of the wrong kind).
  kWrongReplyKind,
  // The first secure-sum reply is padded to 65 MiB, over the 64 MiB message limit.
  kOversized,
  // The first secure-sum reply is padded to 200 MiB, over what the leader's gRPC server read
  // before it read every parsable message (128 MiB).
  kOversized200MiB,
};

class FakeParty {
 public:
  // `bundle` holds party.yaml's files (ca.crt, tls.crt, tls.key, seal.crt, seal.key).
  static absl::StatusOr<std::unique_ptr<FakeParty>> Create(const std::string& name,
                                                           const std::string& bundle,
                                                           const std::string& data_dir,
                                                           const std::string& output_dir,
                                                           const std::string& leader_address);
  ~FakeParty();  // Stop()

  void Start();
  void Stop();
  // Corrupts the next matching reply (once); then answers honestly again.
  void CorruptNext(Corruption c) { corruption_ = c; }
  bool corrupted() const { return corrupted_; }
  int sessions() const { return sessions_; }

 private:
  FakeParty() = default;
  void Run();
  void Session();
  fedanon::v1::PartyMessage Corrupt(fedanon::v1::PartyMessage reply);

  std::string name_;
  std::string leader_address_;
  server::TlsMaterial tls_;
  std::string seal_cert_pem_;
  std::string sign_cert_pem_;
  std::unique_ptr<party::PartyAgent> agent_;
  std::atomic<Corruption> corruption_{Corruption::kNone};
  std::atomic<bool> corrupted_{false};
  std::atomic<int> sessions_{0};
  std::thread thread_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace fedanon::testing
