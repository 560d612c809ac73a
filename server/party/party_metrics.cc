#include "server/party/party_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"

namespace fedanon::party_daemon {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

// "PERMISSION_DENIED" style code names, lower-cased: 17 values at most.
std::string CodeLabel(absl::StatusCode code) {
  return absl::AsciiStrToLower(absl::StatusCodeToString(code));
}

}  // namespace

std::string RequestKind(const fedanon::v1::LeaderMessage& request) {
  using M = fedanon::v1::LeaderMessage;
  switch (request.body_case()) {
    case M::kHelloAck:
      return "hello_ack";
    case M::kPrepare:
      return "prepare";
    case M::kSumStep:
      return "sum_step";
    case M::kUnionStep:
      return "union_step";
    case M::kEndJob:
      return "end_job";
    case M::kPing:
      return "ping";
    case M::kVertical:
      return "vertical";
    case M::kFinalCheck:
      return "final_check";
    case M::kChunkGet:
      return "chunk_get";
    case M::kChunkPut:
      return "chunk_put";
    case M::kSumUnmask:
      return "sum_unmask";
    case M::kSumBinCheck:
      return "sum_bin_check";
    case M::BODY_NOT_SET:
      return "none";
  }
  return "other";
}

PartyMetrics::PartyMetrics(server::MetricsRegistry* registry)
    : link_up_(BuildGauge()
                   .Name("fedanon_party_link_up")
                   .Help("1 while the party's stream to the leader is established, else 0")
                   .Register(registry->registry())
                   .Add({})),
      sessions_(BuildCounter()
                    .Name("fedanon_party_link_sessions_total")
                    .Help("Sessions with the leader that completed the hello")
                    .Register(registry->registry())
                    .Add({})),
      link_failures_(BuildCounter()
                         .Name("fedanon_party_link_failures_total")
                         .Help("Sessions that ended or failed to start, by status code")
                         .Register(registry->registry())),
      answered_(BuildCounter()
                    .Name("fedanon_party_requests_answered_total")
                    .Help("Leader requests answered (including refusals), by request kind")
                    .Register(registry->registry())),
      refused_(BuildCounter()
                   .Name("fedanon_party_requests_refused_total")
                   .Help("Leader requests answered with an error, by status code")
                   .Register(registry->registry())),
      rounds_(BuildCounter()
                  .Name("fedanon_party_rounds_answered_total")
                  .Help("Distinct (job, round) pairs the party answered requests of")
                  .Register(registry->registry())
                  .Add({})),
      bytes_received_(BuildCounter()
                          .Name("fedanon_party_bytes_received_total")
                          .Help("Bytes of requests received from the leader")
                          .Register(registry->registry())
                          .Add({})),
      bytes_sent_(BuildCounter()
                      .Name("fedanon_party_bytes_sent_total")
                      .Help("Bytes of replies sent to the leader")
                      .Register(registry->registry())
                      .Add({})) {}

void PartyMetrics::LinkUp(const std::string& /*leader*/) {
  link_up_.Set(1);
  sessions_.Increment();
}

void PartyMetrics::LinkDown(const absl::Status& why, absl::Duration /*retry_in*/) {
  link_up_.Set(0);
  link_failures_.Add({{"reason", CodeLabel(why.code())}}).Increment();
}

void PartyMetrics::Answered(const fedanon::v1::LeaderMessage& request,
                            const fedanon::v1::PartyMessage& reply) {
  answered_.Add({{"kind", RequestKind(request)}}).Increment();
  bytes_received_.Increment(static_cast<double>(request.ByteSizeLong()));
  bytes_sent_.Increment(static_cast<double>(reply.ByteSizeLong()));
  if (reply.has_error()) {
    int code = reply.error().code();
    if (code <= 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
      code = static_cast<int>(absl::StatusCode::kUnknown);
    }
    refused_.Add({{"reason", CodeLabel(static_cast<absl::StatusCode>(code))}}).Increment();
  }
  if (request.job_id().empty()) return;
  absl::MutexLock lock(&mu_);
  if (request.job_id() != last_job_ || request.round() != last_round_) {
    last_job_ = request.job_id();
    last_round_ = request.round();
    rounds_.Increment();
  }
}

}  // namespace fedanon::party_daemon
