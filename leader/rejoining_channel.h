// A PartyChannel in front of the leader's own for one durable (horizontal) job: a call that
// fails because the party is not connected or its connection dropped (Unavailable: a party that
// was killed, restarted, or whose link was cut) waits for the party to connect again, at most the
// job's rejoin deadline, and sends the same request again unchanged. The party answers a
// repeated request with the reply it stored (one request, one answer; a restarted party reloads
// it from its durable state), so a hop lost with a connection costs one round trip, never a
// second, different answer. A party that stays away past the deadline fails the call:
// Unavailable "party 'x' did not come back within N s: <why it left>". The party's own errors
// and missed deadlines pass through unchanged. Thread-safe like the channel it wraps.
// WaitForParties serves a job that starts (or resumes): it waits until every party of its ring is
// connected. An observer, when set, is told which parties a wait is for while it lasts (shown to
// admins as "waiting for party x").
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/wire/party_channel.h"

namespace fedanon::leader {

class RejoiningChannel : public wire::PartyChannel {
 public:
  // `inner` is not owned. `check` is called while waiting (e.g. the job's cancellation) and ends
  // the wait with its error. `on_rejoin(party, waited)` is told each time a party came back.
  RejoiningChannel(wire::PartyChannel* inner, absl::Duration rejoin_timeout,
                   std::function<absl::Status()> check,
                   std::function<void(const std::string&, absl::Duration)> on_rejoin = nullptr);

  // Told `(party, true)` when a wait for `party` begins and `(party, false)` when it ends,
  // however it ends. Called from the waiting thread (several at once when calls run in parallel).
  using WaitingObserver = std::function<void(const std::string& party, bool waiting)>;
  void set_waiting_observer(WaitingObserver observer) { waiting_ = std::move(observer); }

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override;
  std::vector<wire::ConnectedParty> Parties() const override { return inner_->Parties(); }

  // Waits until every one of `parties` is connected (OK), the deadline passes (Unavailable
  // naming the first party still away: "party 'x' did not connect within N s (<deadline_name>)")
  // or `check` fails.
  absl::Status WaitForParties(const std::vector<std::string>& parties,
                              std::string_view deadline_name = "rejoin deadline") const;

 private:
  bool Connected(const std::string& party) const;

  wire::PartyChannel* inner_;
  absl::Duration rejoin_timeout_;
  std::function<absl::Status()> check_;
  std::function<void(const std::string&, absl::Duration)> on_rejoin_;
  WaitingObserver waiting_;
};

}  // namespace fedanon::leader
