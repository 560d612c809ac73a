// `fedanon party audit JOB_ID [--config party.yaml | --state-dir DIR] [--json]`: prints a
// party's own record of what it sent in a job (party/audit_log.h), for the party's privacy
// officer: one readable line per message (round, kind, form, recipients, sizes), or the raw JSON
// lines with --json. Reads the file locally; no daemon or leader is contacted.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "server/runtime/command_line.h"

namespace fedanon::cli {

// The readable form of an audit file's text: one line per entry. InvalidArgument naming the line
// when a line is not an audit entry.
absl::StatusOr<std::string> FormatAuditText(const std::string& jsonl);

// Declares the subcommands `audit` and `status` (cli/party_status.h) on `party`.
server::CommandAction DeclarePartyCommand(CLI::App* party);

}  // namespace fedanon::cli
