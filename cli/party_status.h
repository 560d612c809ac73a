// `fedanon party status [--config party.yaml | --state-dir DIR] [--max-age S] [--allow-unlinked]`:
// whether this host's party daemon runs and is linked to the leader, from the status file it
// keeps in its state directory (server/party/party_status.h); no network, no leader. For operators
// and container healthchecks. Exit codes (docs/operations.md, "Metrics and health"):
//   0  the daemon runs and its link to the leader is up (with --allow-unlinked: it runs at all)
//   3  the daemon runs but is not linked (starting, or reconnecting: the leader is down or
//      unreachable, or refuses it; the line says why)
//   1  the daemon does not run: no status file, its process is gone, it stopped, or the file is
//      older than --max-age (default 30 s: the daemon rewrites it every 10 s)
//   2  usage error
#pragma once

#include <cstdint>
#include <string>

#include "server/party/party_status.h"
#include "server/runtime/command_line.h"

namespace CLI {
class App;
}  // namespace CLI

namespace fedanon::cli {

inline constexpr int kExitPartyUnlinked = 3;

// The verdict on a status read at `now_unix`: the exit code above and the line to print.
// `process_alive` says whether status.pid is a running fedanon-party.
struct PartyStatusVerdict {
  int exit_code = server::kExitFailure;
  std::string line;
};
PartyStatusVerdict JudgePartyStatus(const party_daemon::PartyStatus& status, int64_t now_unix,
                                    int64_t max_age_seconds, bool process_alive,
                                    bool allow_unlinked);

// Declares `status` on `party` (the `fedanon party` command); returns its action.
server::CommandAction DeclarePartyStatusCommand(CLI::App* party);

}  // namespace fedanon::cli
