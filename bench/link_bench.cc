// The leader <-> party link over real loopback mutual TLS (LeaderServer + PartyClient, as in the
// daemons): round-trip latency of a Ping (leader -> party -> leader), and throughput of a 16 MiB
// payload sent in a Call and echoed back by the party.
//
//   build/<dir>/bench/link_bench [--benchmark_repetitions=5]
// Reported counters: median_us / p99_us (round trip, per call) and MB/s (payload bytes carried
// one way per second; each iteration moves the payload to the party and back).
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "server/leader/leader_server.h"
#include "server/leader/party_connections.h"
#include "server/party/party_client.h"
#include "tests/server/test_pki.h"

namespace fedanon::server {
namespace {

fedanon::v1::PartyMessage Echo(const fedanon::v1::LeaderMessage& m) {
  fedanon::v1::PartyMessage r;
  if (m.has_ping()) {
    r.mutable_pong()->set_echoed_unix_nanos(m.ping().sent_unix_nanos());
  } else {
    r.mutable_sum_step()->mutable_sealed()->set_ciphertext(m.sum_step().sealed().ciphertext());
  }
  return r;
}

// One leader and one connected party for the whole program.
struct Link {
  Link() {
    spdlog::set_level(spdlog::level::warn);
    leader_daemon::LeaderServerOptions options;
    options.listen = "127.0.0.1:0";
    options.tls = pki.Leader();
    server = std::move(leader_daemon::LeaderServer::Start(options, &connections, nullptr)).value();
    party_daemon::PartyClientOptions party;
    party.name = "hospital-a";
    party.leader_address = "127.0.0.1:" + std::to_string(server->port());
    party.tls = pki.Party("hospital-a");
    party.seal_cert_pem = pki.SealCert("hospital-a");
    client = std::make_unique<party_daemon::PartyClient>(std::move(party), Echo);
    client->Start();
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!connections.IsConnected("hospital-a") && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    if (!connections.IsConnected("hospital-a")) {
      std::fprintf(stderr, "link_bench: the party did not connect\n");
      std::abort();
    }
  }
  testing::TestPki pki{"bench"};
  leader_daemon::PartyConnections connections;
  std::unique_ptr<leader_daemon::LeaderServer> server;
  std::unique_ptr<party_daemon::PartyClient> client;
};

Link& TheLink() {
  static Link* link = new Link();  // lives until exit
  return *link;
}

void BM_PingRoundTrip(benchmark::State& state) {
  Link& link = TheLink();
  fedanon::v1::LeaderMessage ping;
  std::vector<double> micros;
  micros.reserve(100000);
  for (auto _ : state) {
    ping.mutable_ping()->set_sent_unix_nanos(static_cast<int64_t>(micros.size()));
    const auto start = std::chrono::steady_clock::now();
    auto reply = link.connections.Call("hospital-a", ping, absl::Seconds(10));
    const auto end = std::chrono::steady_clock::now();
    if (!reply.ok()) {
      state.SkipWithError(reply.status().ToString().c_str());
      break;
    }
    micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  if (micros.empty()) return;
  std::sort(micros.begin(), micros.end());
  state.counters["median_us"] = micros[micros.size() / 2];
  state.counters["p99_us"] = micros[std::min(micros.size() - 1, micros.size() * 99 / 100)];
}
BENCHMARK(BM_PingRoundTrip)->MinTime(2.0)->UseRealTime();

void BM_Echo16MiB(benchmark::State& state) {
  Link& link = TheLink();
  constexpr size_t kPayload = size_t{16} * 1024 * 1024;
  fedanon::v1::LeaderMessage step;
  step.mutable_sum_step()->mutable_sealed()->set_ciphertext(std::string(kPayload, 'x'));
  for (auto _ : state) {
    auto reply = link.connections.Call("hospital-a", step, absl::Seconds(60));
    if (!reply.ok() || reply->sum_step().sealed().ciphertext().size() != kPayload) {
      state.SkipWithError("echo failed");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kPayload);
}
BENCHMARK(BM_Echo16MiB)->MinTime(3.0)->UseRealTime()->Unit(benchmark::kMillisecond);

// Sealed relay between two parties through the leader, as in a secure-sum hop: hospital-a seals
// 16 MiB of its own for hospital-b (ECDH P-256 + AES-256-GCM), the leader carries the sealed bytes
// from a's reply into its request to b, and b opens them. MB/s counts plaintext bytes delivered
// per second, end to end (seal + two TLS transfers + open).
struct Relay {
  Relay() {
    spdlog::set_level(spdlog::level::warn);
    leader_daemon::LeaderServerOptions options;
    options.listen = "127.0.0.1:0";
    options.tls = pki.Leader();
    server = std::move(leader_daemon::LeaderServer::Start(options, &connections, nullptr)).value();
    const crypto::IssuedCertificate issued_b = pki.SealIssued("hospital-b");
    b_public = std::move(crypto::VerifiedSealKey(issued_b.cert_pem, pki.ca_pem(),
                                                 {crypto::Role::kParty, "hospital-b"}))
                   .value();
    b_keys = std::move(crypto::SealKeyPairFromPem(issued_b.key_pem)).value();
    const crypto::SealContext context{"job-relay", "run-1", 1, "hospital-a", "hospital-b", "bench"};
    auto seal_for_b = [this, context](const fedanon::v1::LeaderMessage& m) {
      // The payload originates at party a (only its size travels in the request).
      static const std::string payload(m.sum_step().total_words(), 'y');
      fedanon::v1::PartyMessage r;
      auto sealed = crypto::Seal(*b_public, context, payload);
      r.mutable_sum_step()->mutable_sealed()->set_ciphertext(sealed.ok() ? *sealed : "");
      return r;
    };
    auto open_at_b = [this, context](const fedanon::v1::LeaderMessage& m) {
      fedanon::v1::PartyMessage r;
      auto opened = crypto::Open(*b_keys, context, m.sum_step().sealed().ciphertext());
      r.mutable_sum_step()->mutable_sealed()->set_ciphertext(
          opened.ok() ? std::to_string(opened->size()) : "error");
      return r;
    };
    for (const auto& [name, handler] :
         std::vector<std::pair<std::string, party_daemon::PartyHandler>>{
             {"hospital-a", seal_for_b}, {"hospital-b", open_at_b}}) {
      party_daemon::PartyClientOptions party;
      party.name = name;
      party.leader_address = "127.0.0.1:" + std::to_string(server->port());
      party.tls = pki.Party(name);
      party.seal_cert_pem = pki.SealCert(name);
      clients.push_back(std::make_unique<party_daemon::PartyClient>(std::move(party), handler));
      clients.back()->Start();
    }
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while ((!connections.IsConnected("hospital-a") || !connections.IsConnected("hospital-b")) &&
           absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
  }
  testing::TestPki pki{"relay"};
  std::unique_ptr<crypto::SealPublicKey> b_public;
  std::unique_ptr<crypto::SealKeyPair> b_keys;
  leader_daemon::PartyConnections connections;
  std::unique_ptr<leader_daemon::LeaderServer> server;
  std::vector<std::unique_ptr<party_daemon::PartyClient>> clients;
};

void BM_SealedRelay16MiB(benchmark::State& state) {
  static Relay* relay = new Relay();
  constexpr size_t kPayload = size_t{16} * 1024 * 1024;
  fedanon::v1::LeaderMessage to_a;
  to_a.mutable_sum_step()->set_total_words(kPayload);
  for (auto _ : state) {
    auto sealed = relay->connections.Call("hospital-a", to_a, absl::Seconds(60));
    if (!sealed.ok()) {
      state.SkipWithError(sealed.status().ToString().c_str());
      break;
    }
    fedanon::v1::LeaderMessage to_b;
    *to_b.mutable_sum_step()->mutable_sealed() = sealed->sum_step().sealed();
    auto opened = relay->connections.Call("hospital-b", to_b, absl::Seconds(60));
    if (!opened.ok() || opened->sum_step().sealed().ciphertext() != std::to_string(kPayload)) {
      state.SkipWithError("relay failed");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kPayload);
}
BENCHMARK(BM_SealedRelay16MiB)->MinTime(3.0)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fedanon::server

BENCHMARK_MAIN();
