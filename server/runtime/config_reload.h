// Re-reading a running daemon's settings without a restart (docs/operations.md "Rotating keys and
// certificates"): what a party and the leader pick up every `reload_seconds` and on SIGHUP. The
// config file is loaded again with the same checks as at start and the files it names are read
// and checked together (the sealing key pair belongs together and is this party's under the
// new CA bundle); anything that does not load or fit returns an error, and the daemon then keeps
// every setting it uses now (it never falls back to defaults such as "every admin"). Keys that
// changed but take effect only at a restart are listed so that the daemon can say so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "party/party_agent.h"
#include "server/runtime/config.h"

namespace fedanon::server {

struct PartyReload {
  party::PartyLiveSettings settings;        // admins, CA bundle, sealing key pair as they are now
  std::vector<std::string> restart_needed;  // keys that changed; they apply at the next restart
};

// `at_start`: party.yaml as it was loaded at start (before command-line overrides). Errors name
// the file (the config's line:column, or the PEM file and what is wrong with it).
absl::StatusOr<PartyReload> ReloadPartySettings(const PartyConfig& at_start);

// party.yaml `sign:` read and checked (this party's statement-signing certificate under
// `ca_pem`, and its key): both empty when the config has no `sign:`. Used at start and at reload.
absl::Status ReadStatementSigner(const PartyConfig& config, const std::string& ca_pem,
                                 std::string* cert_pem, std::string* key_pem);

struct LeaderReload {
  std::string ca_pem;                        // tls.ca as it is now
  std::vector<std::string> all_jobs_admins;  // leader.yaml `all_jobs_admins:` as it is now
  std::vector<std::string> restart_needed;
};

absl::StatusOr<LeaderReload> ReloadLeaderSettings(const LeaderConfig& at_start);

}  // namespace fedanon::server
