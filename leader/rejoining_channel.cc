#include "leader/rejoining_channel.h"

#include <algorithm>
#include <set>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {
namespace {

constexpr absl::Duration kPoll = absl::Milliseconds(100);

}  // namespace

RejoiningChannel::RejoiningChannel(
    wire::PartyChannel* inner, absl::Duration rejoin_timeout, std::function<absl::Status()> check,
    std::function<void(const std::string&, absl::Duration)> on_rejoin)
    : inner_(inner),
      rejoin_timeout_(rejoin_timeout),
      check_(check ? std::move(check) : [] { return absl::OkStatus(); }),
      on_rejoin_(std::move(on_rejoin)) {}

bool RejoiningChannel::Connected(const std::string& party) const {
  const std::vector<wire::ConnectedParty> parties = inner_->Parties();
  return std::any_of(parties.begin(), parties.end(),
                     [&](const wire::ConnectedParty& p) { return p.name == party; });
}

absl::StatusOr<fedanon::v1::PartyMessage> RejoiningChannel::Call(
    const std::string& party, const fedanon::v1::LeaderMessage& request, absl::Duration timeout) {
  absl::StatusOr<fedanon::v1::PartyMessage> reply = inner_->Call(party, request, timeout);
  if (reply.ok() || !absl::IsUnavailable(reply.status())) return reply;
  const absl::Time left = absl::Now();
  const absl::Time deadline = left + rejoin_timeout_;
  const std::string why(reply.status().message());
  if (waiting_) waiting_(party, true);
  const absl::Cleanup waited = [this, &party] {
    if (waiting_) waiting_(party, false);
  };
  spdlog::warn("job={} round={} {}; waiting up to {} for it to come back", request.job_id(),
               request.round(), why, absl::FormatDuration(rejoin_timeout_));
  while (true) {
    RETURN_IF_ERROR(check_());
    if (absl::Now() >= deadline) {
      return absl::UnavailableError(absl::StrCat("party '", party, "' did not come back within ",
                                                 absl::ToInt64Seconds(rejoin_timeout_),
                                                 " s (rejoin deadline): ", why));
    }
    if (!Connected(party)) {
      absl::SleepFor(kPoll);
      continue;
    }
    // The same request again: the party answers it with its stored reply, or for the first time.
    reply = inner_->Call(party, request, timeout);
    if (reply.ok() || !absl::IsUnavailable(reply.status())) {
      if (reply.ok()) {
        spdlog::info("job={} round={} party '{}' is back after {}; its request was repeated",
                     request.job_id(), request.round(), party,
                     absl::FormatDuration(absl::Now() - left));
        if (on_rejoin_) on_rejoin_(party, absl::Now() - left);
      }
      return reply;
    }
    absl::SleepFor(kPoll);
  }
}

absl::Status RejoiningChannel::WaitForParties(const std::vector<std::string>& parties,
                                              std::string_view deadline_name) const {
  const absl::Time deadline = absl::Now() + rejoin_timeout_;
  std::set<std::string> told;  // the parties the observer was told are waited for
  const absl::Cleanup untell = [this, &told] {
    for (const std::string& party : told) waiting_(party, false);
  };
  while (true) {
    std::vector<std::string> away;
    for (const std::string& party : parties) {
      if (!Connected(party)) away.push_back(party);
    }
    if (waiting_) {
      for (auto it = told.begin(); it != told.end();) {
        if (std::find(away.begin(), away.end(), *it) == away.end()) {
          waiting_(*it, false);
          it = told.erase(it);
        } else {
          ++it;
        }
      }
      for (const std::string& party : away) {
        if (told.insert(party).second) waiting_(party, true);
      }
    }
    if (away.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(check_());
    if (absl::Now() >= deadline) {
      return absl::UnavailableError(absl::StrCat(
          "party '", away.front(), "' did not connect within ",
          absl::ToInt64Seconds(rejoin_timeout_), " s (", std::string(deadline_name), ")",
          away.size() > 1 ? absl::StrCat("; nor did '",
                                         absl::StrJoin(away.begin() + 1, away.end(), "', '"), "'")
                          : ""));
    }
    absl::SleepFor(kPoll);
  }
}

}  // namespace fedanon::leader
