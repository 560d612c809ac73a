#include "server/party/party_client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/support/sync_stream.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/printable.h"
#include "common/base/version.h"
#include "fedanon/v1/federation.grpc.pb.h"
#include "server/runtime/status_convert.h"
#include "server/runtime/transport.h"

namespace fedanon::party_daemon {
namespace {

using Stream = grpc::ClientReaderWriter<fedanon::v1::PartyMessage, fedanon::v1::LeaderMessage>;

fedanon::v1::PartyMessage ErrorMessage(uint64_t request_id, absl::StatusCode code,
                                       std::string message) {
  fedanon::v1::PartyMessage reply;
  reply.set_request_id(request_id);
  reply.mutable_error()->set_code(static_cast<int32_t>(code));
  reply.mutable_error()->set_message(std::move(message));
  return reply;
}

// Requests queued by the reader, in one lane per job id: each lane has its own worker thread, so
// the requests of one job are answered in order, one at a time, while another job's (or a ping)
// need not wait for them. A lane's thread ends when its queue is empty and is joined by the
// next Push or by Close.
class RequestLanes {
 public:
  using Answer = std::function<void(const fedanon::v1::LeaderMessage&)>;
  explicit RequestLanes(Answer answer) : answer_(std::move(answer)) {}
  ~RequestLanes() { Close(); }

  void Push(fedanon::v1::LeaderMessage message) ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::thread> finished;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      finished.swap(finished_);
      const std::string job_id = message.job_id();
      Lane& lane = lanes_[job_id];
      lane.queue.push_back(std::move(message));
      if (!lane.busy) {
        lane.busy = true;
        const uint64_t id = ++next_thread_;
        threads_.emplace(id, std::thread([this, job_id, id] { Work(job_id, id); }));
      }
    }
    for (std::thread& t : finished) t.join();
  }

  // Drops what is still queued (the stream is gone), waits for the requests being answered.
  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    std::map<uint64_t, std::thread> running;
    std::vector<std::thread> finished;
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
      for (auto& [id, lane] : lanes_) lane.queue.clear();
      running.swap(threads_);
      finished.swap(finished_);
    }
    for (auto& [id, t] : running) t.join();
    for (std::thread& t : finished) t.join();
  }

 private:
  struct Lane {
    std::deque<fedanon::v1::LeaderMessage> queue;
    bool busy = false;  // a thread works on this lane
  };

  void Work(const std::string& job_id, uint64_t thread_id) ABSL_LOCKS_EXCLUDED(mu_) {
    while (true) {
      fedanon::v1::LeaderMessage request;
      {
        absl::MutexLock lock(&mu_);
        Lane& lane = lanes_[job_id];
        if (lane.queue.empty()) {
          lanes_.erase(job_id);
          // Joined by the next Push or by Close (a thread cannot join itself).
          if (auto it = threads_.find(thread_id); it != threads_.end()) {
            finished_.push_back(std::move(it->second));
            threads_.erase(it);
          }
          return;
        }
        request = std::move(lane.queue.front());
        lane.queue.pop_front();
      }
      answer_(request);
    }
  }

  const Answer answer_;
  absl::Mutex mu_;
  std::map<std::string, Lane> lanes_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);  // lanes' workers, by id
  std::vector<std::thread> finished_ ABSL_GUARDED_BY(mu_);        // ended, not yet joined
  uint64_t next_thread_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

double Jitter() {
  thread_local std::mt19937 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.8, 1.2)(rng);
}

// The leader's identity (its certificate) when the server that answered our hello is the
// federation leader; else why it is not.
absl::StatusOr<crypto::Identity> CheckHelloAck(const fedanon::v1::LeaderMessage& ack,
                                               const grpc::ClientContext& context,
                                               const server::RevocationCheck* revocation) {
  if (!ack.has_hello_ack()) {
    return absl::FailedPreconditionError("it did not answer our hello with a hello_ack");
  }
  absl::StatusOr<crypto::Identity> server = server::ServerIdentity(context);
  if (!server.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the server's certificate carries no identity: ", server.status().message()));
  }
  if (server->role != crypto::Role::kLeader) {
    return absl::FailedPreconditionError(
        absl::StrCat("it is not the federation leader (its certificate is for ",
                     server::IdentityString(*server), ")"));
  }
  if (revocation != nullptr && revocation->enabled()) {
    if (absl::Status st = revocation->Check(server::ServerCertificatePem(context)); !st.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("the leader's certificate is refused: ", st.message()));
    }
  }
  return *server;
}

// The handler's reply to one request, with its request_id; a thrown exception or a reply over
// the message limit becomes an ErrorReply.
fedanon::v1::PartyMessage Answer(const PartyHandler& handler, const std::string& party,
                                 const fedanon::v1::LeaderMessage& request) {
  fedanon::v1::PartyMessage reply;
  try {
    reply = handler(request);
  } catch (const std::exception& e) {
    reply = ErrorMessage(request.request_id(), absl::StatusCode::kInternal,
                         absl::StrCat("party handler failed: ", e.what()));
  }
  reply.set_request_id(request.request_id());
  if (const size_t size = reply.ByteSizeLong();
      size > static_cast<size_t>(server::kMaxMessageBytes)) {
    spdlog::error("party '{}': reply to request {} is {} bytes, over the message limit", party,
                  request.request_id(), size);
    reply =
        ErrorMessage(request.request_id(), absl::StatusCode::kResourceExhausted,
                     absl::StrCat("reply of ", size, " bytes exceeds the ",
                                  server::kMaxMessageBytes / (1024 * 1024), " MiB message limit"));
  }
  return reply;
}

// Until the stream ends: this thread reads requests and queues them in their job's lane; each
// lane's worker answers them, writes each reply under the write mutex and tells the observers.
// `write_mu` serializes the workers' writes and the client's announcements (the reader only reads).
void ServeRequests(Stream* stream, const PartyHandler& handler, const std::string& party,
                   const std::vector<PartyLinkObserver*>& observers, absl::Mutex& write_mu) {
  RequestLanes lanes([&](const fedanon::v1::LeaderMessage& request) {
    const fedanon::v1::PartyMessage reply = Answer(handler, party, request);
    absl::MutexLock lock(&write_mu);
    if (stream->Write(reply)) {  // a failure ends the reader's Read too
      for (PartyLinkObserver* o : observers) o->Answered(request, reply);
    }
  });
  while (true) {
    fedanon::v1::LeaderMessage request;
    if (!stream->Read(&request)) break;
    lanes.Push(std::move(request));
  }
  lanes.Close();
}

}  // namespace

PartyClient::PartyClient(PartyClientOptions options, PartyHandler handler)
    : options_(std::move(options)), handler_(std::move(handler)) {
  absl::MutexLock lock(&mu_);
  seal_cert_pem_ = options_.seal_cert_pem;
  sign_cert_pem_ = options_.sign_cert_pem;
}

bool PartyClient::AnnounceSealCertificate(std::string seal_cert_pem, std::string sign_cert_pem) {
  fedanon::v1::PartyMessage hello;
  hello.set_request_id(0);
  hello.mutable_hello()->set_version(std::string(base::Version()));
  hello.mutable_hello()->set_seal_certificate(seal_cert_pem);
  hello.mutable_hello()->set_sign_certificate(sign_cert_pem);
  *hello.mutable_hello()->mutable_protocol_version() = wire::ToProto(options_.protocol_version);
  {
    absl::MutexLock lock(&mu_);
    seal_cert_pem_ = std::move(seal_cert_pem);
    sign_cert_pem_ = std::move(sign_cert_pem);
  }
  absl::MutexLock lock(&write_mu_);
  if (live_stream_ == nullptr) return false;
  return live_stream_->Write(hello);
}

PartyClient::~PartyClient() { Stop(); }

void PartyClient::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

void PartyClient::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

bool PartyClient::connected() const {
  absl::MutexLock lock(&mu_);
  return connected_;
}

int PartyClient::sessions() const {
  absl::MutexLock lock(&mu_);
  return sessions_;
}

bool PartyClient::WaitUntilConnected(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&connected_), timeout);
}

void PartyClient::Run() {
  absl::Duration backoff = options_.initial_backoff;
  while (true) {
    bool established = false;
    bool protocol_mismatch = false;
    const absl::Status status = RunSession(&established, &protocol_mismatch);
    if (established) backoff = options_.initial_backoff;
    // Retrying sooner cannot help until one side is upgraded.
    if (protocol_mismatch) backoff = options_.max_backoff;
    const absl::Duration wait = backoff * Jitter();
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    if (protocol_mismatch) {
      spdlog::error(
          "the leader at {} and this party speak incompatible protocol versions: {} (upgrade "
          "the older side; docs/operations.md, Upgrades); retrying in {}",
          options_.leader_address, std::string(status.message()),
          absl::FormatDuration(absl::Trunc(wait, absl::Milliseconds(1))));
    } else {
      LogFailure(status, established, wait);
    }
    for (PartyLinkObserver* o : options_.observers) o->LinkDown(status, wait);
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), wait)) break;
    if (!established) backoff = std::min(backoff * 2, options_.max_backoff);
  }
  spdlog::info("party '{}': link to the leader stopped", options_.name);
}

void PartyClient::LogFailure(const absl::Status& status, bool established,
                             absl::Duration retry_in) const {
  const std::string retry = absl::StrCat(
      "; retrying in ", absl::FormatDuration(absl::Trunc(retry_in, absl::Milliseconds(1))));
  const std::string& leader = options_.leader_address;
  const std::string message(status.message());
  if (established) {
    spdlog::warn("lost the connection to the leader at {}: {}{}", leader, status.ToString(), retry);
  } else if (status.code() == absl::StatusCode::kFailedPrecondition) {
    spdlog::error("refusing the server at {}: {}{}", leader, message, retry);
  } else if (status.code() == absl::StatusCode::kPermissionDenied ||
             status.code() == absl::StatusCode::kUnauthenticated) {
    spdlog::error("leader rejected our certificate: {}{}", message, retry);
  } else if (absl::StrContains(message, "SSL") || absl::StrContains(message, "ssl") ||
             absl::StrContains(message, "andshake") || absl::StrContains(message, "certificate")) {
    spdlog::error(
        "TLS handshake with the leader at {} failed (the leader rejected our certificate, or its "
        "certificate is not from our CA or does not name this address): {}{}",
        leader, message, retry);
  } else if (absl::StrContains(message, "Socket closed")) {
    // With TLS 1.3 a refused client certificate shows up only as the socket being closed.
    spdlog::error(
        "cannot reach leader at {}: {} (the connection was closed during setup: if this repeats, "
        "the leader is probably rejecting our certificate; check that tls.crt is issued by the "
        "federation CA){}",
        leader, status.ToString(), retry);
  } else {
    spdlog::warn("cannot reach leader at {}: {}{}", leader, status.ToString(), retry);
  }
}

server::TlsMaterial PartyClient::TlsForNextDial() {
  // The files are read outside the lock (connected() must not wait on a disk).
  std::optional<absl::StatusOr<server::TlsMaterial>> fresh;
  if (options_.reload_tls) fresh = options_.reload_tls();
  absl::MutexLock lock(&mu_);
  if (current_tls_.cert_pem.empty()) current_tls_ = options_.tls;
  if (fresh.has_value() && !fresh->ok()) {
    spdlog::error("cannot reload the TLS files, dialling with the ones loaded before: {}",
                  std::string(fresh->status().message()));
  } else if (fresh.has_value()) {
    if ((*fresh)->cert_pem != current_tls_.cert_pem || (*fresh)->ca_pem != current_tls_.ca_pem) {
      spdlog::info(
          "TLS certificate or CA bundle changed on disk: this connection uses the new files");
    }
    current_tls_ = **std::move(fresh);
  }
  return current_tls_;
}

fedanon::v1::PartyMessage PartyClient::Hello() const {
  fedanon::v1::PartyMessage hello;
  hello.mutable_hello()->set_version(std::string(base::Version()));
  {
    absl::MutexLock lock(&mu_);
    hello.mutable_hello()->set_seal_certificate(seal_cert_pem_);
    hello.mutable_hello()->set_sign_certificate(sign_cert_pem_);
  }
  *hello.mutable_hello()->mutable_protocol_version() = wire::ToProto(options_.protocol_version);
  return hello;
}

void PartyClient::AnnounceIfRotatedSince(const fedanon::v1::PartyHello& hello) {
  std::string announced;
  std::string announced_sign;
  {
    absl::MutexLock lock(&mu_);
    announced = seal_cert_pem_;
    announced_sign = sign_cert_pem_;
  }
  if (announced != hello.seal_certificate() || announced_sign != hello.sign_certificate()) {
    AnnounceSealCertificate(announced, announced_sign);
  }
}

absl::Status PartyClient::RunSession(bool* established, bool* protocol_mismatch) {
  const std::shared_ptr<grpc::Channel> channel =
      server::DialLeader(options_.leader_address, TlsForNextDial());
  const std::unique_ptr<fedanon::v1::PartyLink::Stub> stub =
      fedanon::v1::PartyLink::NewStub(channel);
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::CancelledError("stopping");
    context_ = &context;
  }
  const auto forget_context = [&] {
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
    connected_ = false;
  };

  std::unique_ptr<Stream> stream = stub->Connect(&context);
  const fedanon::v1::PartyMessage hello = Hello();
  fedanon::v1::LeaderMessage ack;
  if (!stream->Write(hello) || !stream->Read(&ack)) {
    const grpc::Status status = stream->Finish();
    forget_context();
    // The leader answers a hello it cannot serve with FAILED_PRECONDITION naming both versions.
    *protocol_mismatch = status.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
                         absl::StrContains(status.error_message(), "speaks protocol");
    return server::FromGrpcStatus(status);
  }
  if (ack.has_hello_ack()) {
    if (absl::Status st = wire::CheckLeaderProtocol(wire::ProtocolVersionOf(ack.hello_ack()),
                                                    options_.protocol_version);
        !st.ok()) {
      context.TryCancel();
      stream->Finish();
      forget_context();
      *protocol_mismatch = true;
      return st;
    }
  }
  absl::StatusOr<crypto::Identity> leader = CheckHelloAck(ack, context, options_.revocation);
  if (!leader.ok()) {
    context.TryCancel();
    stream->Finish();
    forget_context();
    return leader.status();
  }
  if (options_.leader_identity) options_.leader_identity(leader->name);
  {
    absl::MutexLock lock(&mu_);
    connected_ = true;
    ++sessions_;
  }
  *established = true;
  spdlog::info("party '{}' connected to leader '{}' at {} (version {}, protocol {}; ours {})",
               options_.name, base::Printable(ack.hello_ack().leader(), 128),
               options_.leader_address, base::Printable(ack.hello_ack().version(), 128),
               wire::ProtocolVersionText(wire::ProtocolVersionOf(ack.hello_ack())),
               wire::ProtocolVersionText(options_.protocol_version));

  for (PartyLinkObserver* o : options_.observers) {
    o->LinkUp(base::Printable(ack.hello_ack().leader(), 128));
  }
  {
    absl::MutexLock lock(&write_mu_);
    live_stream_ = stream.get();
  }
  // A rotation between our hello and now: the leader learns the certificate at once.
  AnnounceIfRotatedSince(hello.hello());
  ServeRequests(stream.get(), handler_, options_.name, options_.observers, write_mu_);
  {
    absl::MutexLock lock(&write_mu_);
    live_stream_ = nullptr;
  }
  const grpc::Status status = stream->Finish();
  forget_context();
  if (status.ok()) return absl::UnavailableError("the leader closed the stream");
  return server::FromGrpcStatus(status);
}

}  // namespace fedanon::party_daemon
