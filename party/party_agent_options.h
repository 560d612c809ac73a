// The party's configuration as the agent takes it (server/party/party_main.cc builds it from
// party.yaml): identity, directories, limits, keys, policy, and the seams where a party deviates
// or is observed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/table_postgres/postgres_sink.h"
#include "common/table_postgres/postgres_source.h"
#include "party/party_deviation.h"
#include "party/party_observer.h"
#include "party/party_policy.h"
#include "party/seal_key_ring.h"

namespace fedanon::party {

struct PartyAgentOptions {
  std::string name;               // this party's identity (as in its certificate)
  std::string data_dir;           // tables and taxonomies; relative paths resolve here
  std::string default_data_path;  // the table used when a job names none (relative to data_dir)
  std::string output_dir;         // where integrated tables land when this party is recipient
  uint64_t max_input_bytes = uint64_t{64} << 30;  // the largest table it reads (common/base)
  // This party's message limit (its transport's, server/runtime/transport.h): per-record payloads
  // go in chunks under min(this, the leader's limit in PrepareJob) (common/wire/payload_chunks.h).
  uint64_t max_message_bytes = uint64_t{64} << 20;
  // Tables read from PostgreSQL (party.yaml `tables:`), by the name jobs use: a job's table name
  // found here is read from the database, any other from data_dir (docs/postgres.md).
  std::map<std::string, table_postgres::PostgresSource> postgres_tables;
  // Where the released table goes when this party is the recipient (party.yaml `sink:`);
  // nullopt: the file <output_dir>/<job_id>.csv.
  std::optional<table_postgres::PostgresSink> postgres_sink;
  std::string ca_pem;         // the federation CA (verifies other parties' seal certs)
  std::string seal_cert_pem;  // this party's sealing certificate and key (at start; UpdateSettings)
  std::string seal_key_pem;
  // This party's statement-signing certificate and key (party.yaml `sign:`): what its statements
  // to the other parties of a vertical job are signed with. Empty: no vertical jobs.
  std::string sign_cert_pem;
  std::string sign_key_pem;
  // How long a replaced sealing key still serves a Prepare that names its certificate (the
  // leader learns the new one from the party's announcement; party/seal_key_ring.h).
  absl::Duration retired_seal_grace = SealKeyRing::kDefaultRetiredGrace;
  // The party's certificate revocation check (party.yaml `crl:`, server/runtime/revocation.h):
  // called with every participant's sealing certificate at Prepare; unset: no revocation check.
  std::function<absl::Status(const std::string& cert_pem)> revocation_check;
  // Job authorization (party/job_authorization.h): the admins whose signed jobs this party runs;
  // nullopt: every admin the CA certified (party.yaml without `admins:`).
  std::optional<std::vector<std::string>> admins;
  // What this party will ever take part in (party.yaml `policy:`).
  PartyPolicy policy;
  // The run ledger (party/run_ledger.h): run ids used and releases per table. Empty: the file
  // `runs.ledger` in output_dir, or in memory only when output_dir is empty too.
  std::string ledger_path;
  // Where the per-job audit files `<job_id>.audit.jsonl` go (party/audit_log.h). Empty: the
  // directory of ledger_path (the party's state directory), or none when that is empty too.
  std::string audit_dir;
  // Where a horizontal job's durable state `<job_id>.state` lives (party/job_journal.h), so that
  // the job goes on after this party restarts. Empty: the directory of ledger_path, or no durable
  // state when that is empty too (a restarted party then cannot continue a job).
  std::string state_dir;
  // How this party deviates from the protocol (party/party_deviation.h); null: it does not. The
  // daemon's `--misbehave` (mohammed2011 §6's malicious vertical parties) and tests of what the
  // other roles refuse set one.
  std::shared_ptr<const PartyDeviation> deviation;
  // Who is told what this party opens from the others (party/party_observer.h); null: nobody.
  // Tests of what every role sees set one.
  std::shared_ptr<const PartyObserver> observer;

  // The deviation in force: `deviation`, or the honest party's when it is null.
  const PartyDeviation& Deviation() const;
  // The observer: `observer`, or one that observes nothing when it is null.
  const PartyObserver& Observer() const;
};

// What a party re-reads without a restart (server/party/party_main.cc: every reload_seconds and on
// SIGHUP; docs/operations.md "Rotating keys and certificates").
struct PartyLiveSettings {
  std::string ca_pem;  // the CA bundle: participants' sealing certificates, admin signatures
  std::optional<std::vector<std::string>> admins;  // party.yaml `admins:` (nullopt: every admin)
  std::string seal_cert_pem;                       // seal.crt / seal.key as they are now
  std::string seal_key_pem;
  std::string sign_cert_pem;  // sign.crt / sign.key as they are now ("" when not configured)
  std::string sign_key_pem;
};

}  // namespace fedanon::party
