// The party daemon's status file, `<output_dir>/party.status`: what `fedanon party status`
// (and a container healthcheck) reads to know, without a network listener, whether the daemon
// runs and whether its link to the leader is up. Written atomically (base::AtomicFileWriter:
// a temporary file renamed into place, which replaces a symbolic link rather than following it),
// mode 0600, at every link change and every heartbeat. Text, one `key=value` per line:
//
//   pid=4242                the daemon's process id
//   name=hospital-a         the party
//   link=up                 starting | up | down | stopped
//   leader=leader:7443      the configured leader address
//   since=1764151200        unix seconds of the last link change
//   updated=1764151210      unix seconds of this write (the heartbeat: at most 10 s old)
//   detail=...              one printable line: whom it is linked to, or why it is not
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fedanon::party_daemon {

enum class PartyLinkState { kStarting, kUp, kDown, kStopped };
std::string_view PartyLinkStateName(PartyLinkState state);

struct PartyStatus {
  int64_t pid = 0;
  std::string name;
  PartyLinkState link = PartyLinkState::kStarting;
  std::string leader;
  int64_t since_unix = 0;
  int64_t updated_unix = 0;
  std::string detail;
};

// <output_dir>/party.status
std::string PartyStatusPath(const std::string& output_dir);

std::string FormatPartyStatus(const PartyStatus& status);
// InvalidArgument naming the first bad line; pid, link and updated are required.
absl::StatusOr<PartyStatus> ParsePartyStatus(std::string_view text);

// Writes the file in `output_dir` (which must exist) atomically, mode 0600.
absl::Status WritePartyStatus(const std::string& output_dir, const PartyStatus& status);
// NotFound when there is no file; refuses a symbolic link (FailedPrecondition).
absl::StatusOr<PartyStatus> ReadPartyStatus(const std::string& output_dir);

}  // namespace fedanon::party_daemon
