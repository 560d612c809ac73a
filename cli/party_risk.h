// `fedanon party risk`: a party's re-identification risk on its own table, where the table is
// (docs/risk.md, "In a federation"). It reads the party's config (party.yaml: data_dir and the
// default table `data`, or --table relative to data_dir) and the job spec, and prints the same
// summary as `fedanon risk` (in a vertical job, over the QIDs the spec gives this party); nothing
// leaves the party unless its admin shares the output. A
// federation never pools the parties' class sizes: each party assesses its own table, the
// recipient the release.
#pragma once

#include "server/runtime/command_line.h"

namespace fedanon::cli {

// Adds the subcommand `risk` to `party`; the returned action runs it when it was selected.
CLI::App* DeclarePartyRiskCommand(CLI::App* party, server::CommandAction* action);

}  // namespace fedanon::cli
