#include "server/leader/party_connections.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/base/printable.h"
#include "common/wire/payload_chunks.h"
#include "server/runtime/logging.h"
#include "server/runtime/transport.h"

namespace fedanon::leader_daemon {

// Parties chunk per-record payloads under the limit the leader announces (LeaderOptions).
static_assert(wire::kDefaultMessageLimitBytes == static_cast<uint64_t>(server::kMaxMessageBytes));
namespace {

std::string DurationText(absl::Duration d) {
  if (d >= absl::Seconds(1) && d == absl::Trunc(d, absl::Seconds(1))) {
    return absl::StrCat(absl::ToInt64Seconds(d), " s");
  }
  return absl::FormatDuration(d);
}

absl::Status Disconnect(const std::string& party, std::string_view why = "") {
  return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected", std::string(why)));
}

}  // namespace

absl::Status ErrorReplyToStatus(const std::string& party, const fedanon::v1::ErrorReply& error) {
  int code = error.code();
  if (code <= 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    code = static_cast<int>(absl::StatusCode::kUnknown);
  }
  return absl::Status(static_cast<absl::StatusCode>(code),
                      absl::StrCat("party '", party, "': ", base::Printable(error.message())));
}

PartyConnections::ConnectionId PartyConnections::Connected(const std::string& party,
                                                           const std::string& peer,
                                                           const std::string& seal_cert_pem,
                                                           const std::string& sign_cert_pem,
                                                           std::shared_ptr<PartyStream> stream,
                                                           wire::ProtocolVersion protocol) {
  std::shared_ptr<PartyStream> replaced;
  ConnectionId id = 0;
  {
    absl::MutexLock lock(&mu_);
    id = next_connection_id_++;
    auto it = by_name_.find(party);
    if (it != by_name_.end()) {
      replaced = std::move(it->second.stream);
      FailPendingLocked(
          it->second.id,
          Disconnect(party, absl::StrCat(" (replaced by a new connection from ", peer, ")")));
      spdlog::warn("party '{}' connected again from {}; closing its previous connection from {}",
                   party, peer, it->second.info.peer);
      by_name_.erase(it);
    }
    Connection& c = by_name_[party];
    c.id = id;
    c.info.name = party;
    c.info.peer = peer;
    c.info.seal_cert_pem = seal_cert_pem;
    c.info.sign_cert_pem = sign_cert_pem;
    c.info.protocol = protocol;
    c.info.connected_since_unix = absl::ToUnixSeconds(absl::Now());
    c.stream = std::move(stream);
    c.write_mu = std::make_shared<absl::Mutex>();
  }
  if (replaced != nullptr) replaced->Cancel();
  return id;
}

void PartyConnections::Deliver(ConnectionId connection, fedanon::v1::PartyMessage message) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(message.request_id());
  if (it == pending_.end() || it->second->connection != connection) {
    spdlog::warn(
        "dropping a reply to request {} on connection {}: no call is waiting for it "
        "(timed out or cancelled)",
        message.request_id(), connection);
    return;
  }
  Pending& p = *it->second;
  const size_t size = message.ByteSizeLong();
  if (traffic_ != nullptr) traffic_->Received(p.party, size);
  if (size > static_cast<size_t>(server::kMaxMessageBytes)) {
    // The server reads every parsable message (kMaxServerReceiveBytes) so that this can be said
    // by name and size.
    p.result = absl::ResourceExhaustedError(absl::StrFormat(
        "party '%s' sent a reply of %.1f MiB (%d bytes), over the %d MiB message limit", p.party,
        static_cast<double>(size) / (1024 * 1024), size, server::kMaxMessageBytes / (1024 * 1024)));
    spdlog::warn("{}", std::string(p.result.status().message()));
  } else if (message.has_error()) {
    p.result = ErrorReplyToStatus(p.party, message.error());
  } else {
    p.result = std::move(message);
  }
  p.done = true;
  p.cv.Signal();
  pending_.erase(it);
}

bool PartyConnections::UpdateSealCertificate(ConnectionId connection,
                                             const std::string& seal_cert_pem,
                                             const std::string& sign_cert_pem) {
  absl::MutexLock lock(&mu_);
  for (auto& [name, c] : by_name_) {
    if (c.id == connection) {
      c.info.seal_cert_pem = seal_cert_pem;
      c.info.sign_cert_pem = sign_cert_pem;
      return true;
    }
  }
  return false;
}

void PartyConnections::Disconnected(ConnectionId connection) {
  absl::MutexLock lock(&mu_);
  for (auto it = by_name_.begin(); it != by_name_.end(); ++it) {
    if (it->second.id == connection) {
      const std::string party = it->first;
      by_name_.erase(it);
      FailPendingLocked(connection, Disconnect(party));
      return;
    }
  }
  // Already replaced: its calls were failed then.
}

void PartyConnections::FailPendingLocked(ConnectionId connection, const absl::Status& status) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& p = *it->second;
    if (p.connection == connection) {
      p.result = status;
      p.done = true;
      p.cv.Signal();
      pending_.erase(it++);
    } else {
      ++it;
    }
  }
}

void PartyConnections::CancelAll() {
  std::vector<std::shared_ptr<PartyStream>> streams;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, c] : by_name_) streams.push_back(c.stream);
  }
  for (const auto& s : streams) s->Cancel();
}

size_t PartyConnections::size() const {
  absl::MutexLock lock(&mu_);
  return by_name_.size();
}

bool PartyConnections::IsConnected(const std::string& party) const {
  absl::MutexLock lock(&mu_);
  return by_name_.contains(party);
}

absl::StatusOr<fedanon::v1::PartyMessage> PartyConnections::Call(
    const std::string& party, const fedanon::v1::LeaderMessage& request, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  // The request_id adds at most 11 bytes (tag + 10-byte varint).
  const size_t size = request.ByteSizeLong() + 11;
  if (size > static_cast<size_t>(server::kMaxMessageBytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("request for party '", party, "' is ", size, " bytes, over the ",
                     server::kMaxMessageBytes / (1024 * 1024), " MiB message limit"));
  }
  fedanon::v1::LeaderMessage message = request;
  auto pending = std::make_shared<Pending>();
  pending->party = party;
  std::shared_ptr<PartyStream> stream;
  std::shared_ptr<absl::Mutex> write_mu;
  uint64_t request_id = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = by_name_.find(party);
    if (it == by_name_.end()) {
      return absl::UnavailableError(absl::StrCat("party '", party, "' is not connected"));
    }
    request_id = next_request_id_++;
    pending->connection = it->second.id;
    stream = it->second.stream;
    write_mu = it->second.write_mu;
    pending_[request_id] = pending;
  }
  message.set_request_id(request_id);
  bool written = false;
  bool in_time = true;
  {
    absl::MutexLock write_lock(write_mu.get());
    // A party that stops reading would block this Write on flow control for ever.
    const uint64_t token = write_deadlines_.Arm(deadline, [stream] { stream->Cancel(); });
    written = stream->Write(message);
    in_time = write_deadlines_.Disarm(token);
  }
  if (written && traffic_ != nullptr) traffic_->Sent(party, message.ByteSizeLong());
  if (!in_time) {
    {
      absl::MutexLock lock(&mu_);
      pending_.erase(request_id);
    }
    spdlog::warn("{} party '{}' did not take request {} within {}; its stream was cancelled",
                 server::LogJob(request.job_id(), request.round()), party, request_id,
                 DurationText(timeout));
    return absl::DeadlineExceededError(absl::StrCat(
        "party '", party, "' did not take the request within ", DurationText(timeout)));
  }
  absl::MutexLock lock(&mu_);
  if (!written && !pending->done) {
    pending_.erase(request_id);
    return Disconnect(party);
  }
  while (!pending->done) {
    if (pending->cv.WaitWithDeadline(&mu_, deadline) && !pending->done) {
      pending_.erase(request_id);
      spdlog::warn("{} party '{}' did not answer request {} within {}",
                   server::LogJob(request.job_id(), request.round()), party, request_id,
                   DurationText(timeout));
      return absl::DeadlineExceededError(
          absl::StrCat("party '", party, "' did not answer within ", DurationText(timeout)));
    }
  }
  return std::move(pending->result);
}

std::vector<wire::ConnectedParty> PartyConnections::Parties() const {
  std::vector<wire::ConnectedParty> parties;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, c] : by_name_) parties.push_back(c.info);
  }
  std::sort(parties.begin(), parties.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return parties;
}

}  // namespace fedanon::leader_daemon
