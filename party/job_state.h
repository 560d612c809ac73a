// Everything a party holds for one job it takes part in: the facts and services of the job
// (job_context.h), the per-record payloads in transit (payload_transfer.h), the protocols of a
// horizontal or a vertical job with their state, and the job's durable state. Owned by the agent's
// job slot (party_agent.h), under the slot's lock.
#pragma once

#include <memory>

#include "party/audit_log.h"
#include "party/horizontal_job_party.h"
#include "party/job_context.h"
#include "party/job_journal.h"
#include "party/party_agent_options.h"
#include "party/payload_transfer.h"
#include "party/vertical_job_party.h"

namespace fedanon::party {

struct JobState : JobContext {
  JobState(const PartyAgentOptions& options, const AuditLog& audit)
      : JobContext(options, audit), transfer(*this) {}

  PayloadTransfer transfer;
  std::unique_ptr<HorizontalJobParty> horizontal;  // a horizontal job (else null)
  std::unique_ptr<VerticalJobParty> vertical;      // a vertical job (else null)
  // The leader has asked for an answer computed from this party's data (recorded in the run
  // ledger: the run counts as a release whatever the leader says later).
  bool released = false;
  // Durable state (party/job_journal.h; null without a state directory).
  std::unique_ptr<JobJournal> journal;
};

}  // namespace fedanon::party
