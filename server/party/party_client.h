// The party's side of the link: dials the leader over mutual TLS, holds the one PartyLink.Connect
// stream, and answers every LeaderMessage with the reply of a handler (in the daemon
// party::PartyAgent::Handle; in tests a fake).
//
// 1. Dial the leader, open Connect, send PartyHello (version + our seal certificate PEM).
// 2. Expect HelloAck, and check that the server's certificate is the federation *leader's*
//    (any other identity of the same CA is refused).
// 3. Reader thread: read LeaderMessages and queue them by job id; one worker thread per job with
//    requests waiting calls the handler for that job's requests one at a time, in order, and
//    writes each reply (same request_id) under the write mutex, so a long computation for one
//    job does not hold up another job's requests. Replies over the 64 MiB message limit become
//    an ErrorReply (RESOURCE_EXHAUSTED) so the stream survives.
// 4. When the stream fails: log why ("cannot reach leader at X: ..." / "leader rejected our
//    certificate: ..."), wait with exponential backoff (0.5 s doubling to 30 s, +-20 % jitter,
//    reset after every successful hello) and go to 1. A protocol version the leader does not
//    serve (or a leader whose version we do not: common/wire/protocol_version.h) is logged as an
//    error naming both versions and retried only after the longest backoff: an operator must
//    upgrade one side.
// Stop() cancels the stream, lets the request in progress finish, and returns.
// A sealing key rotated while the party runs is announced with AnnounceSealCertificate(): a
// PartyHello with request_id 0 on the open stream (the leader then puts the new certificate into
// the jobs it prepares from then on; a leader that predates announcements logs and drops it),
// and every later hello carries it.
// Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/wire/protocol_version.h"
#include "fedanon/v1/federation.pb.h"
#include "server/runtime/revocation.h"
#include "server/runtime/tls.h"

namespace grpc {
class ClientContext;
}

namespace fedanon::party_daemon {

// Handles one request; never throws (a thrown exception becomes an INTERNAL ErrorReply). Called
// from several threads at once for requests of different jobs (never for two of one job).
using PartyHandler = std::function<fedanon::v1::PartyMessage(const fedanon::v1::LeaderMessage&)>;

// Told how the link fares (server/party/party_metrics.h, server/party/party_link_reporter.h). Calls
// come from the link's threads, never two at once for one client; they must not block for long.
class PartyLinkObserver {
 public:
  virtual ~PartyLinkObserver() = default;
  // The hello completed: linked to the leader named `leader` (its certificate name).
  virtual void LinkUp(const std::string& /*leader*/) {}
  // A session ended or failed to start; the next attempt is in `retry_in`.
  virtual void LinkDown(const absl::Status& /*why*/, absl::Duration /*retry_in*/) {}
  // `reply` (possibly an ErrorReply) was written for `request`.
  virtual void Answered(const fedanon::v1::LeaderMessage& /*request*/,
                        const fedanon::v1::PartyMessage& /*reply*/) {}
};

struct PartyClientOptions {
  std::string name;            // our party name (logs only; the leader reads our certificate)
  std::string leader_address;  // host:port
  server::TlsMaterial tls;
  // When set, called before each connection: the TLS material to dial with (the files as they
  // are now, so a renewed certificate is used from the next connection on without a restart).
  // An error is logged and `tls` (or the last material that loaded) is used instead.
  std::function<absl::StatusOr<server::TlsMaterial>()> reload_tls;
  std::string seal_cert_pem;  // sent in the hello (AnnounceSealCertificate replaces it)
  std::string sign_cert_pem;  // likewise, the statement-signing certificate ("" for none)
  // The party's revocation list (party.yaml `crl:`; not owned, may be null): a leader whose TLS
  // certificate it revokes (or a list it cannot use: fails closed) is refused after the hello.
  const server::RevocationCheck* revocation = nullptr;
  // Tests only: the protocol version the hello advertises (an old or future party).
  wire::ProtocolVersion protocol_version = wire::kProtocolVersion;
  std::vector<PartyLinkObserver*> observers;  // not owned; must outlive the client
  // Told the name in the leader's TLS certificate once a hello is accepted, before any request
  // of the session is handled (the party daemon: PartyAgent::SetLinkedLeader).
  std::function<void(const std::string&)> leader_identity;
  absl::Duration initial_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(30);
};

class PartyClient {
 public:
  PartyClient(PartyClientOptions options, PartyHandler handler);
  ~PartyClient();  // Stop()
  PartyClient(const PartyClient&) = delete;
  PartyClient& operator=(const PartyClient&) = delete;

  // Starts connecting in the background (once).
  void Start();
  // Ends the link promptly: cancels the stream and any backoff wait, waits for the request being
  // handled (if any), joins the threads. Idempotent.
  void Stop();

  // The party's sealing certificate changed (a rotated seal.crt): sent now on the open stream,
  // if there is one, and in every later hello. False when no stream took it now (the next
  // hello carries it).
  bool AnnounceSealCertificate(std::string seal_cert_pem, std::string sign_cert_pem)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  bool connected() const;
  // Number of sessions that completed the hello so far.
  int sessions() const;
  // Blocks until connected (true) or `timeout` passes (false).
  bool WaitUntilConnected(absl::Duration timeout) const;

 private:
  void Run();
  // One connection, from dialling to the end of the stream. Returns why it ended and sets
  // `established` when the hello completed.
  // `protocol_mismatch` when the versions are incompatible (either side refused).
  absl::Status RunSession(bool* established, bool* protocol_mismatch);
  // The TLS material to dial with: re-read through options_.reload_tls when set (a file that cannot
  // be read keeps the material loaded before), and remembered for the next dial.
  server::TlsMaterial TlsForNextDial() ABSL_LOCKS_EXCLUDED(mu_);
  // This party's hello: software and protocol versions, sealing and statement-signing
  // certificates.
  fedanon::v1::PartyMessage Hello() const ABSL_LOCKS_EXCLUDED(mu_);
  // Announces the certificates when they changed since `hello` was sent.
  void AnnounceIfRotatedSince(const fedanon::v1::PartyHello& hello)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  void LogFailure(const absl::Status& status, bool established, absl::Duration retry_in) const;

  const PartyClientOptions options_;
  const PartyHandler handler_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  int sessions_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;  // of the current session
  server::TlsMaterial current_tls_ ABSL_GUARDED_BY(mu_);  // what the last connection dialled with
  std::string seal_cert_pem_ ABSL_GUARDED_BY(mu_);        // what hellos carry
  std::string sign_cert_pem_ ABSL_GUARDED_BY(mu_);
  // Serializes writes on the open stream (replies and announcements); the stream while its
  // requests are served, else null.
  absl::Mutex write_mu_ ABSL_ACQUIRED_AFTER(mu_);
  grpc::ClientReaderWriter<fedanon::v1::PartyMessage, fedanon::v1::LeaderMessage>* live_stream_
      ABSL_GUARDED_BY(write_mu_) = nullptr;
  std::thread thread_;
};

}  // namespace fedanon::party_daemon
