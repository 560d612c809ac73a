#include "server/party/party_status.h"

#include <errno.h>
#include <sys/stat.h>

#include <filesystem>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/printable.h"
#include "common/base/status_macros.h"

namespace fedanon::party_daemon {

std::string_view PartyLinkStateName(PartyLinkState state) {
  switch (state) {
    case PartyLinkState::kStarting:
      return "starting";
    case PartyLinkState::kUp:
      return "up";
    case PartyLinkState::kDown:
      return "down";
    case PartyLinkState::kStopped:
      return "stopped";
  }
  return "?";
}

std::string PartyStatusPath(const std::string& output_dir) {
  return (std::filesystem::path(output_dir) / "party.status").string();
}

std::string FormatPartyStatus(const PartyStatus& status) {
  return absl::StrCat("pid=", status.pid, "\nname=", base::Printable(status.name, 128),
                      "\nlink=", std::string(PartyLinkStateName(status.link)),
                      "\nleader=", base::Printable(status.leader, 256),
                      "\nsince=", status.since_unix, "\nupdated=", status.updated_unix,
                      "\ndetail=", base::Printable(status.detail, 512), "\n");
}

absl::StatusOr<PartyStatus> ParsePartyStatus(std::string_view text) {
  PartyStatus status;
  bool has_pid = false, has_link = false, has_updated = false;
  int n = 0;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(text.data(), text.size()), '\n', absl::SkipEmpty())) {
    ++n;
    const std::vector<std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    const auto bad = [&] {
      return absl::InvalidArgumentError(absl::StrCat("party status line ", n, " is malformed"));
    };
    if (kv.size() != 2) return bad();
    const std::string& key = kv[0];
    const std::string& value = kv[1];
    if (key == "pid") {
      if (!absl::SimpleAtoi(value, &status.pid) || status.pid <= 0) return bad();
      has_pid = true;
    } else if (key == "name") {
      status.name = value;
    } else if (key == "link") {
      bool known = false;
      for (const PartyLinkState s : {PartyLinkState::kStarting, PartyLinkState::kUp,
                                     PartyLinkState::kDown, PartyLinkState::kStopped}) {
        if (value == PartyLinkStateName(s)) {
          status.link = s;
          known = true;
        }
      }
      if (!known) return bad();
      has_link = true;
    } else if (key == "leader") {
      status.leader = value;
    } else if (key == "since") {
      if (!absl::SimpleAtoi(value, &status.since_unix)) return bad();
    } else if (key == "updated") {
      if (!absl::SimpleAtoi(value, &status.updated_unix)) return bad();
      has_updated = true;
    } else if (key == "detail") {
      status.detail = value;
    }  // unknown keys: a newer daemon's; ignored
  }
  if (!has_pid || !has_link || !has_updated) {
    return absl::InvalidArgumentError("party status file lacks pid, link or updated");
  }
  return status;
}

absl::Status WritePartyStatus(const std::string& output_dir, const PartyStatus& status) {
  return base::WriteFileAtomically(PartyStatusPath(output_dir), FormatPartyStatus(status),
                                   {.mode = base::kPrivateFileMode});
}

absl::StatusOr<PartyStatus> ReadPartyStatus(const std::string& output_dir) {
  const std::string path = PartyStatusPath(output_dir);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no party status file ", path));
    }
    return base::ErrnoStatus(errno, "cannot read", path);
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file (a symbolic link?); refusing it"));
  }
  ASSIGN_OR_RETURN(const std::string text, base::ReadFile(path, {.follow_symlinks = false,
                                                                 .max_bytes = 4096,
                                                                 .what = "party status file"}));
  return ParsePartyStatus(text);
}

}  // namespace fedanon::party_daemon
