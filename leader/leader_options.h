// The leader's settings (leader.yaml, server/runtime/config.h): its name and keys, the job store's
// directory, timeouts, the job queue's limits and the transport's message limit.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "leader/leader_observer.h"

namespace fedanon::leader {

// The named reason a job resumed more than LeaderOptions::max_resumes times fails.
inline constexpr char kResumedTooOften[] = "resumed too often";

struct LeaderOptions {
  std::string name = "leader";
  std::string data_dir;  // job store and results
  absl::Duration round_timeout = absl::Seconds(60);
  std::string ca_pem;         // the federation CA (verifies seal certs)
  std::string seal_cert_pem;  // the leader's sealing certificate
  std::string seal_key_pem;   // and key (opens the union when recipient)
  // Jobs that run at once (1..kMaxConcurrentJobsLimit) and jobs that may wait for a free worker
  // (0..kMaxQueuedJobsLimit); Create refuses values outside those ranges.
  int max_concurrent_jobs = 4;
  int max_queued_jobs = 64;
  // Durable jobs (docs/operations.md): how long a running horizontal job waits for a party to
  // (re)connect — after the leader restarted, or when a party's connection drops mid-job — before
  // it fails naming the party (leader.yaml `resume_timeout_seconds`).
  absl::Duration resume_timeout = absl::Seconds(120);
  // How long a new job waits for the parties of its ring to connect before it fails naming the
  // first one still away (leader.yaml `party_wait_seconds`; zero: it fails at once). Parties
  // reconnect on their own, e.g. within a second or two after a leader restart.
  absl::Duration party_wait = absl::Seconds(60);
  // Durable jobs: a running job resumed after more leader restarts than this fails by name
  // (kResumedTooOften) instead of running again (leader.yaml `max_resumes`): a party's reply that
  // stops the leader is recorded before use and replayed at every start.
  int max_resumes = 5;
  // Told about rounds, phases and job outcomes (not owned; null: nobody). Must outlive the leader.
  LeaderObserver* observer = nullptr;
  // The message limit of the transport (server/runtime/transport.h), announced to the parties in
  // every PrepareJob: per-record payloads travel in chunks under it (common/wire/payload_chunks.h);
  // 0 announces none and they travel whole. Tests lower it to make payloads span several chunks.
  uint64_t max_message_bytes = uint64_t{64} << 20;
  // Vertical ID matching in batches of at most this many ids (docs/crypto.md "ID matching"),
  // fewer if a batch would not fit half the message limit; 0: kDefaultIdBatchIds. Tests set it
  // tiny to run many batches.
  static constexpr uint32_t kDefaultIdBatchIds = 65536;
  uint32_t id_batch_ids = kDefaultIdBatchIds;
  // Sealing certificates of the parties, by name (from their bundles or announced on connect).
  // Parties present their own in PrepareResult too; see party/party_agent.h.
};

inline constexpr int kMaxConcurrentJobsLimit = 64;
inline constexpr int kMaxQueuedJobsLimit = 100'000;

}  // namespace fedanon::leader
