// `fedanon party status`'s verdict (cli/party_status.h): the exit code and line for a party
// daemon's status file, linked, running unlinked, stale or stopped.
#include "cli/party_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/party/party_status.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;

TEST(PartyStatusVerdict, ExitCodesSayLinkedRunningOrNotRunning) {
  party_daemon::PartyStatus s;
  s.pid = 7;
  s.name = "hospital-a";
  s.since_unix = 1000;
  s.updated_unix = 1000;
  s.link = party_daemon::PartyLinkState::kUp;
  s.detail = "connected to leader 'leader' at leader:7443";
  EXPECT_EQ(cli::JudgePartyStatus(s, 1005, 30, true, false).exit_code, 0);
  EXPECT_THAT(cli::JudgePartyStatus(s, 1005, 30, true, false).line, HasSubstr("linked:"));
  s.link = party_daemon::PartyLinkState::kDown;
  s.detail = "reconnecting to the leader at leader:7443 in 2s: connection refused";
  EXPECT_EQ(cli::JudgePartyStatus(s, 1005, 30, true, false).exit_code, cli::kExitPartyUnlinked);
  EXPECT_THAT(cli::JudgePartyStatus(s, 1005, 30, true, false).line,
              HasSubstr("running, not linked: party 'hospital-a' (pid 7) reconnecting"));
  EXPECT_EQ(cli::JudgePartyStatus(s, 1005, 30, true, /*allow_unlinked=*/true).exit_code, 0);
  s.link = party_daemon::PartyLinkState::kStarting;
  EXPECT_EQ(cli::JudgePartyStatus(s, 1005, 30, true, false).exit_code, cli::kExitPartyUnlinked);
  // Stale, gone or stopped: not running, whatever the link said.
  s.link = party_daemon::PartyLinkState::kUp;
  EXPECT_EQ(cli::JudgePartyStatus(s, 1031, 30, true, true).exit_code, 1);
  EXPECT_THAT(cli::JudgePartyStatus(s, 1031, 30, true, true).line, HasSubstr("not responding"));
  EXPECT_EQ(cli::JudgePartyStatus(s, 1005, 30, false, true).exit_code, 1);
  EXPECT_THAT(cli::JudgePartyStatus(s, 1005, 30, false, true).line, HasSubstr("is gone"));
  s.link = party_daemon::PartyLinkState::kStopped;
  EXPECT_EQ(cli::JudgePartyStatus(s, 1005, 30, true, true).exit_code, 1);
}

}  // namespace
}  // namespace fedanon::testing
