// The leader's state and steps of one vertical job (leader/vertical_job.h is the entry point):
// the calls to the parties (recorded by the caller's channel for durable jobs), the view log,
// the participation record, and one file per phase with its methods:
//   vertical_session.cc      calls to one or several parties, the view log, sealing keys
//   vertical_id_matching.cc  1. private ID matching (docs/crypto.md "ID matching")
//   vertical_rounds.cc       2. Algorithm 1's rounds (mohammed2011 §5), the winner, verdicts
//   vertical_local_waves.cc  2'. `recoding: local`: waves of per-group proposals and splits
//   vertical_release.cc      3. the release of the joined table and the report
// Internal to the leader library: no other library includes it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/wire/party_channel.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"
#include "leader/payload_relay.h"
#include "leader/vertical_job.h"
#include "leader/view_log.h"

namespace fedanon::leader {

// Seconds the leader's ID-matching threads spent in each kind of call, summed over the threads
// (for the log line that breaks down where ID matching's time goes).
struct IdMatchingClock {
  double encrypt = 0, reencrypt = 0, align = 0, fetch = 0, hand = 0;
};
class IdMatchingClocks {
 public:
  void Add(double IdMatchingClock::*field, double seconds) {
    absl::MutexLock lock(&mu_);
    sums_.*field += seconds;
  }
  IdMatchingClock Get() const {
    absl::MutexLock lock(&mu_);
    return sums_;
  }

 private:
  mutable absl::Mutex mu_;
  IdMatchingClock sums_ ABSL_GUARDED_BY(mu_);
};

class VerticalSession {
 public:
  using LeaderMessage = fedanon::v1::LeaderMessage;
  using PartyMessage = fedanon::v1::PartyMessage;
  using VerticalStepResult = fedanon::v1::VerticalStepResult;

  // Seconds since `t` (the phases' timings).
  static double Since(std::chrono::steady_clock::time_point t);

  VerticalSession(wire::PartyChannel* channel, const VerticalJobOptions& options);

  absl::StatusOr<VerticalStepResult> Call(const std::string& party, uint32_t round,
                                          fedanon::v1::VerticalStep step);

  // The same step to several parties at once (their replicas work in parallel).
  absl::StatusOr<std::vector<VerticalStepResult>> CallAll(
      const std::vector<std::string>& parties, uint32_t round,
      const std::function<fedanon::v1::VerticalStep(size_t)>& make);

  // 1. Private ID matching (docs/crypto.md, "ID matching"): every list in batches of
  //    options_.id_batch_ids ids round the ring (MatchIdBatches), the leader's intersection of the
  //    lists' digests handed to every party (IdCommon), and the alignment once every party's
  //    signed statement on that intersection agrees (IdAlign). Returns the number of records
  //    common to every party.
  absl::StatusOr<uint64_t> MatchIds();

  // What the per-party threads of the list walks share: each list's batch count (from its
  // owner's first reply), the sealed batches between hops, the digests sealed for an owner by
  // the other of two parties, the leader's own digests of every list (opened), and the first
  // failure (which stops every thread).
  struct IdBoard {
    std::mutex mu;
    std::condition_variable changed;
    absl::Status failed;
    std::vector<uint32_t> batches;  // per origin; 0 until known
    size_t known = 0;
    std::map<std::tuple<size_t, uint32_t, size_t>, fedanon::v1::SealedPayload> hops;
    std::map<std::pair<size_t, uint32_t>, fedanon::v1::SealedPayload> owner_digests;
    std::vector<std::map<uint32_t, std::string>> lists;  // [origin][batch] packed digests
    void Fail(const absl::Status& st) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (failed.ok()) failed = st;
      }
      changed.notify_all();
    }
  };

  // Waits until `ready` holds (under board.mu) or the job fails or is cancelled.
  absl::Status AwaitBoard(IdBoard& board, std::unique_lock<std::mutex>& lock,
                          const std::function<bool()>& ready);

  // Opens a last hop's digests of batch `b` of list `o`, sealed for the leader by `sender`.
  absl::StatusOr<std::string> OpenDigestsAtLeader(const fedanon::v1::SealedPayload& sealed,
                                                  const std::string& sender, size_t o, uint32_t b,
                                                  uint32_t batches) const;

  // Party k's thread: item (origin o, batch b, hop h) is party (o + h) % n's work on batch b of
  // o's list (wire::IdLastHop): h = 0 its owner's IdEncrypt, then IdReEncrypt hops; with two
  // parties, h = n stands for the delivery of the owner's digests (IdDigests). Each party runs
  // its items in one fixed order, by (b + h, h, o): an item only needs (o, b, h - 1), whose key is
  // one less, so every party progresses, each works on a batch while the leader relays the
  // others, and the n-th call to a party is the same in every run (RecordingChannel's replay).
  // Hands every party the common digests (packed) in batches (IdCommon); each answers the last
  // batch with its signed statement on them, returned in ring order.
  absl::StatusOr<std::vector<fedanon::v1::SignedIdCommon>> HandCommonDigests(
      const std::string& common);
  absl::Status RunIdWorker(size_t k, IdBoard& board);
  // One item of party k's ID-matching work: hop `hop` of batch `batch` of `origin`'s list, run in
  // the order of `key` (RunIdWorker).
  struct IdWorkItem {
    uint64_t key;
    size_t hop;
    size_t origin;
    uint32_t batch;
  };
  // Party k's IdEncrypt of batch `b` of its own list, left on the board for the next hop; the
  // list's batch count, checked against the signed record limit.
  absl::StatusOr<uint32_t> EncryptOwnBatch(size_t k, uint32_t b, IdBoard& board);
  // Party k's work items after its first batch, in the fixed order RunIdWorker runs them.
  std::vector<IdWorkItem> IdWorkItems(size_t k, const std::vector<uint32_t>& batches) const;
  // The sealed payload under `key` in `from` (a map of `board`), once it is there.
  template <typename Map>
  absl::StatusOr<fedanon::v1::SealedPayload> TakeFromBoard(IdBoard& board, Map& from,
                                                           const typename Map::key_type& key);
  // Two parties: hands party k the digests of `item`'s batch of its own list that the other
  // party's last hop sealed for it (IdDigests).
  absl::Status HandOwnerDigests(size_t k, const IdWorkItem& item,
                                const std::vector<uint32_t>& batches, IdBoard& board);
  // Party k's IdReEncrypt hop of `item`: its list on the board for the next hop, or after the
  // last hop the digests opened by the leader and, with two parties, those sealed for the owner.
  absl::Status ReencryptHop(size_t k, const IdWorkItem& item, const std::vector<uint32_t>& batches,
                            IdBoard& board);

  // 2. Rounds until every party sends Not-participate; returns why they stopped and leaves in
  //    `result` the rounds (specializations applied) and vetoes.
  absl::StatusOr<std::string> RunRounds(VerticalJobResult* result);

  // 2'. `recoding: local`: waves until no party has a valid candidate in any live group. In each
  //     wave every party proposes per live group; the leader picks one proposal per group (best
  //     score, then lower attribute index, then lower candidate: the centralized order); every
  //     owner seals the splits of the groups it won for every other party; every replica checks
  //     and applies the whole wave. `result->rounds` counts the waves.
  absl::StatusOr<std::string> RunLocalWaves(VerticalJobResult* result);

  // One party's signed proposal list of a wave as fetched page by page.
  struct ProposalPages {
    fedanon::v1::LocalProposals head;  // the description every page repeats (no page bytes)
    std::vector<std::string> pages;
    std::string Whole() const { return absl::StrJoin(pages, ""); }
  };

  // Asks `party` for every page of its proposals of `wave`, in order; checks every page repeats
  // the first's description and the whole matches its digest (a party that does not is named).
  absl::Status FetchProposals(const std::string& party, uint32_t wave, ProposalPages* out);

  // A release report in pages: asks `party` for pages 1.. of its report's steps, checks each is
  // the page asked for and that all of them are the declared count and digest, and leaves the
  // whole report in `released` (as a report that fit one message).
  absl::Status FetchReportPages(const std::string& party, uint32_t round,
                                fedanon::v1::VerticalReleased* released);

  // One judge's signed verdict list of a wave as fetched page by page.
  struct VerdictPages {
    fedanon::v1::LocalVerdicts head;  // the description every page repeats (no page bytes)
    std::vector<std::string> pages;
    std::string Whole() const { return absl::StrJoin(pages, ""); }
  };

  // From page 0 (`first`, the judge's LocalJudge answer), asks `judge` for every further page of
  // its verdicts of `wave` (LocalVerdictsPage), in order; checks as FetchProposals does.
  absl::Status FetchVerdicts(const std::string& judge, uint32_t wave,
                             fedanon::v1::LocalVerdicts first, VerdictPages* out);

  // The steps of one wave of RunLocalWaves, in order.
  // Per group: the winning party's index in the ring and its proposal.
  using WaveWinners = std::map<uint32_t, std::pair<size_t, fedanon::v1::LocalGroupProposal>>;
  // Sealed splits on their way, by receiver.
  using WaveInbox = std::map<std::string, std::vector<CarriedPayload>>;
  // Every party's signed proposal list of the wave, fetched page by page and parsed.
  absl::Status FetchWaveProposals(uint32_t wave, std::vector<ProposalPages>* pages,
                                  std::vector<VerticalStepResult>* proposals);
  // The best proposal per group (the centralized order), every proposal and decline logged.
  absl::StatusOr<WaveWinners> PickWaveWinners(uint32_t wave,
                                              const std::vector<VerticalStepResult>& proposals);
  // Every party's list to every other party, unchanged, page by page.
  absl::Status DeliverProposals(uint32_t wave, const std::vector<ProposalPages>& pages);
  // The winners' sealed splits, by receiver; with judges, the judges' verdicts first (a vetoed
  // group leaves `best`, counted in `result->vetoes`) and the accepted splits published after.
  absl::StatusOr<WaveInbox> SealWaveSplits(uint32_t wave, WaveWinners* best,
                                           VerticalJobResult* result);
  // Each owner's sealed splits into `inbox`: from an owner that judges, sealed for
  // `expected_of_owner_judge` parties, from the others for `expected_of_owner_other`.
  absl::Status CollectSplits(uint32_t wave, const std::vector<std::string>& owners,
                             std::vector<VerticalStepResult>& replies,
                             size_t expected_of_owner_judge, size_t expected_of_owner_other,
                             WaveInbox* inbox);
  // The judges' verdicts on the splits in `inbox` (which it empties), then DeliverVerdicts.
  absl::Status JudgeWave(uint32_t wave, WaveInbox* inbox, WaveWinners* best,
                         VerticalJobResult* result);
  // Every judge's verdict list to every other party, unchanged, page by page.
  absl::Status DeliverVerdicts(uint32_t wave, const std::vector<VerdictPages>& vpages);
  // Every party's commit with the splits sealed for it (`inbox`, which it empties).
  absl::Status CommitWave(uint32_t wave, WaveInbox* inbox);
  bool IsLocalJudge(const std::string& party) const;

  // `run(i)` for every party of `parties` at once, one thread each (each party's calls keep
  // their order, which a restarted leader replays); the first error.
  absl::Status PerParty(const std::vector<std::string>& parties,
                        const std::function<absl::Status(size_t)>& run);

  // 3. Release: every party's columns sealed for the recipient, joined there; the report.
  absl::Status Release(uint32_t round, const std::string& stop_reason, VerticalJobResult* result);

 private:
  // Appends to the view log, if any.
  absl::Status Log(const ViewEntry& e);

  std::string AttributeName(uint32_t attr) const;

  // A replica's report: its group counts and the records of every step it applied, with the
  // whole report as JSON in `detail`.
  absl::Status LogReport(uint32_t round, const std::string& party,
                         const fedanon::v1::Report& report);

  // Every proposal as the leader reads it: participation, or Not-participate and why (no
  // candidate and no score: they go into the secure comparison).
  absl::Status LogProposals(uint32_t round, const std::vector<VerticalStepResult>& proposals);
  // The winner's candidate and score, as its owner reveals them.
  absl::Status LogWinner(uint32_t round, const std::string& owner,
                         const fedanon::v1::VerticalProposal& won);

  enum class RoundOutcome { kApplied, kVetoed, kEveryoneDeclined };

  // Runs `fn(0)`, ..., `fn(n - 1)` on a thread each and waits for all; the error of the lowest
  // index wins.
  static absl::Status ForEachList(size_t n, const std::function<absl::Status(size_t)>& fn);

  // Hands `carried` to its receiver as the next element of a step's repeated field: whole, or
  // its chunks ahead and the ref in the step.
  absl::Status HandInto(const CarriedPayload& carried, uint32_t round, absl::Duration timeout,
                        google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>* wholes,
                        google::protobuf::RepeatedPtrField<fedanon::v1::ChunkRef>* refs);

  // One round: proposals, the winner's instruction relayed to the others, their verdicts, and
  // the commit (or veto) at every replica.
  absl::StatusOr<RoundOutcome> RunRound(uint32_t round);
  // A round's winner as the commit carries it: the owner's index in the ring, the candidate, every
  // party's signed proposal and every judge's signed verdict.
  struct RoundWinner {
    int owner = -1;
    fedanon::v1::VerticalCandidate candidate;
    std::vector<fedanon::v1::SignedProposal> proposals;
    std::vector<fedanon::v1::SignedVerdict> verdicts;
    std::vector<fedanon::v1::SignedWinnerChoice> choices;  // both computing parties'
  };
  // The round's secure comparison: relays its six steps (four from kept base OTs, protocol 4.1)
  // between the computing parties (the ring's first two), with the signed proposals and the key
  // shares sealed for them, and returns the winner's ring index, which both name in their signed
  // choices (kept in `w->choices`).
  absl::StatusOr<int> CompareForWinner(uint32_t round,
                                       const std::vector<VerticalStepResult>& proposals,
                                       RoundWinner* w);
  // The winner to its owner, its children sealed for the judges relayed to them, their signed
  // verdicts into `w` (and `verdicts`, as answered); whether every judge accepted. `judges`
  // collects who the owner sealed for.
  absl::StatusOr<bool> JudgeWinner(uint32_t round, RoundWinner* w, std::set<std::string>* judges,
                                   std::vector<VerticalStepResult>* verdicts);
  // Accepted: the owner, shown every judge's sealed acceptance, seals the children for the
  // remaining parties (each data party but the owner and the judges, once); by receiver.
  absl::StatusOr<std::map<std::string, CarriedPayload>> PublishWinner(
      uint32_t round, const RoundWinner& w, const std::vector<VerticalStepResult>& verdicts,
      const std::set<std::string>& judges);
  // The commit (or veto) at every replica, each with the children sealed for it, if any.
  absl::Status CommitRound(uint32_t round, const RoundWinner& w, bool accept,
                           std::map<std::string, CarriedPayload>* with_commit);

  // The owner's sealed instructions by receiver (whole, or fetched chunk by chunk): each a data
  // party other than the owner, named once (over `seen` too, which collects them). Returns the
  // receivers and their payloads.
  absl::StatusOr<std::pair<std::vector<std::string>, std::vector<CarriedPayload>>> ByReceiver(
      const fedanon::v1::VerticalInstructions& instructions, int owner, uint32_t round,
      std::set<std::string>* seen) const;

  // OK unless the winner's node was specialized, or its candidate vetoed, in an earlier round
  // (FailedPrecondition, kProposalDecidedAlready, naming the party and the round).
  absl::Status CheckUndecided(const RoundWinner& w) const;
  // Whether any party participates (false: stop_reason_ lists their reasons). Counts declines
  // in participation_.
  bool AnyParticipant(const std::vector<VerticalStepResult>& proposals);

  // The report: the replica of a party that holds sensitive values knows the confidences too;
  // any replica knows the steps, the cut and the group sizes, which must agree at every replica
  // (DataLoss, kReportsDisagree). Take the most informative one, and add every party's
  // participation with its contribution (mu): the scores of the applied specializations, summed
  // per owner.
  absl::Status FillReport(const std::vector<VerticalStepResult>& released,
                          const std::string& stop_reason, fedanon::v1::Report* report);
  // Every replica's partition, groups and release-order seed digests must be present and equal
  // (DataLoss, kReleasesDisagree, naming the parties and which digest differs).
  absl::Status CheckReleaseDigests(const std::vector<VerticalStepResult>& released) const;

  // A data party's sealing key, verified against the CA (released columns are sealed by it): the
  // certificate it held when this run started (the parties bind theirs to the Prepare's), so
  // that a payload sealed by a party that is away for a moment (killed, restarted) still opens.
  absl::StatusOr<std::unique_ptr<crypto::SealPublicKey>> SenderKey(const std::string& party) const;

  // The leader is the recipient: opens every party's columns (freeing each sealed copy once
  // open, reading the columns in place) and joins them into options_.store_result, or into *csv
  // without one. Returns the number of rows.
  // The joined rows are checked first against the agreed cut and groups digest
  // (wire::CheckJoinedRelease): nothing is stored when they are not the agreed generalization.
  absl::StatusOr<uint64_t> JoinAtLeader(std::vector<CarriedPayload>& columns, uint32_t round,
                                        const fedanon::v1::Report& agreed,
                                        const std::string& groups_digest, std::string* csv) const;

  wire::PartyChannel* channel_;
  const VerticalJobOptions& options_;
  PayloadRelay relay_;  // per-record payloads, whole or in chunks
  // Each ring party's sealing certificate, as first seen connected in this run (SenderKey).
  mutable absl::Mutex seal_certs_mu_;
  mutable std::map<std::string, std::string> seal_certs_ ABSL_GUARDED_BY(seal_certs_mu_);
  IdMatchingClocks id_clock_;
  // Per party: rounds won and declined (with why), misbehaviour, contribution.
  std::map<std::string, fedanon::v1::PartyParticipation> participation_;
  // Rounds decided so far: a node specialized (attribute, node) and a candidate vetoed
  // (attribute, node, candidate), with the round. A winner among them is refused
  // (kProposalDecidedAlready), so every round decides something new and the rounds end.
  // Steps committed so far (global: accepted winners; local: applied splits): a release report
  // must hold exactly these many (kReportStepsNotCommitted).
  uint64_t committed_steps_ = 0;
  std::map<std::pair<uint32_t, int32_t>, uint32_t> specialized_;
  std::map<std::tuple<uint32_t, int32_t, int32_t>, uint32_t> vetoed_;
  std::string stop_reason_;  // of the last round in which every party declined
  size_t logged_ = 0;        // lines of options_.logged_before matched so far
  // Both computing parties said, with their choices of the last winner, that they keep the base
  // OTs of the run's comparisons (protocol 4.1): the next comparison starts at step 3.
  bool winner_base_kept_ = false;
  // The parties' answers to the last commit, ring order: the next round's proposals of those that
  // sent one with it (protocol 4.1).
  std::vector<fedanon::v1::VerticalStepResult> next_proposals_;
};

}  // namespace fedanon::leader
