#include "leader/vertical_job.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/base/process_usage.h"
#include "common/base/status_macros.h"
#include "common/engine/tds_engine.h"
#include "common/spec/proto_json.h"
#include "common/wire/federation_wire.h"
#include "common/wire/id_digests.h"
#include "common/wire/payload_chunks.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "leader/payload_relay.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using fedanon::v1::VerticalStepResult;

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The calls of one vertical job, recorded and (after a leader restart) replayed: each call is
// the n-th to its party (the driver calls a party in a fixed order; calls to different parties
// may interleave), keyed by "party#n" with the digest of its request.
class RecordingChannel : public common::PartyChannel {
 public:
  RecordingChannel(common::PartyChannel* inner, const VerticalJobOptions& options)
      : inner_(inner), options_(options), next_index_(options.recorded.size()) {
    for (const auto& [key, reply] : options.recorded) recorded_.emplace(SplitKey(key));
    for (size_t i = 0; i < options.recorded.size(); ++i) {
      replies_[SplitKey(options.recorded[i].first).first] = i;
    }
  }

  absl::StatusOr<PartyMessage> Call(const std::string& party, const LeaderMessage& request,
                                    absl::Duration timeout) override {
    uint64_t n = 0;
    {
      absl::MutexLock lock(&mu_);
      n = calls_[party]++;
    }
    const std::string key = absl::StrCat(party, "#", n);
    LeaderMessage bare = request;
    bare.clear_request_id();
    const std::string digest = common::RequestDigest(request.round(), bare);
    if (auto it = recorded_.find(key); it != recorded_.end()) {
      if (it->second != digest) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the replayed call ", n, " to party '", party, "' (round ", request.round(),
            ") differs from the request recorded before the leader restarted"));
      }
      PartyMessage reply;
      if (!reply.ParseFromString(options_.recorded[replies_.at(key)].second)) {
        return absl::DataLossError(absl::StrCat("the recorded reply of call ", n, " to party '",
                                                party, "' does not parse"));
      }
      absl::MutexLock lock(&mu_);
      ++replayed_;
      return reply;
    }
    ASSIGN_OR_RETURN(PartyMessage reply, inner_->Call(party, request, timeout));
    if (options_.record_reply && !reply.has_error()) {
      absl::MutexLock lock(&mu_);  // records numbered in the order they are written
      RETURN_IF_ERROR(options_.record_reply(next_index_, absl::StrCat(key, "\n", digest),
                                            reply.SerializeAsString()));
      ++next_index_;
    }
    return reply;
  }
  std::vector<common::ConnectedParty> Parties() const override { return inner_->Parties(); }

  // True while recorded replies remain to be replayed.
  uint64_t replayed() const {
    absl::MutexLock lock(&mu_);
    return replayed_;
  }

 private:
  static std::pair<std::string, std::string> SplitKey(const std::string& key) {
    const size_t nl = key.find('\n');
    if (nl == std::string::npos) return {key, ""};
    return {key.substr(0, nl), key.substr(nl + 1)};
  }

  common::PartyChannel* inner_;
  const VerticalJobOptions& options_;
  std::map<std::string, std::string> recorded_;  // "party#n" -> request digest
  std::map<std::string, size_t> replies_;        // "party#n" -> index in options_.recorded
  mutable absl::Mutex mu_;
  std::map<std::string, uint64_t> calls_ ABSL_GUARDED_BY(mu_);
  uint64_t next_index_ ABSL_GUARDED_BY(mu_);
  uint64_t replayed_ ABSL_GUARDED_BY(mu_) = 0;
};

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

class Driver {
 public:
  Driver(common::PartyChannel* channel, const VerticalJobOptions& options)
      : channel_(channel),
        options_(options),
        relay_(channel, options.job_id, options.check_cancelled) {
    for (const auto& p : options_.ring) participation_[p].set_party(p);
  }

  absl::StatusOr<VerticalStepResult> Call(const std::string& party, uint32_t round,
                                          fedanon::v1::VerticalStep step) {
    // Round 0 is the ID matching.
    const absl::Duration timeout = round == 0 ? options_.id_matching_timeout : options_.timeout;
    if (options_.check_cancelled) RETURN_IF_ERROR(options_.check_cancelled());
    LeaderMessage msg;
    msg.set_job_id(options_.job_id);
    msg.set_round(round);
    *msg.mutable_vertical() = std::move(step);
    ASSIGN_OR_RETURN(PartyMessage reply, channel_->Call(party, msg, timeout));
    if (!reply.has_vertical()) {
      return absl::InternalError(absl::StrCat("party '", party, "' sent no vertical reply"));
    }
    return reply.vertical();
  }

  // The same step to several parties at once (their replicas work in parallel).
  absl::StatusOr<std::vector<VerticalStepResult>> CallAll(
      const std::vector<std::string>& parties, uint32_t round,
      const std::function<fedanon::v1::VerticalStep(size_t)>& make) {
    std::vector<absl::StatusOr<VerticalStepResult>> replies(parties.size(),
                                                            absl::UnknownError("not called"));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < parties.size(); ++i) {
      threads.emplace_back([&, i] { replies[i] = Call(parties[i], round, make(i)); });
    }
    for (auto& t : threads) t.join();
    std::vector<VerticalStepResult> out;
    for (auto& r : replies) {
      RETURN_IF_ERROR(r.status());
      out.push_back(*std::move(r));
    }
    return out;
  }

  // 1. Private ID matching (docs/crypto.md, "ID matching"): every list in batches of
  //    options_.id_batch_ids ids round the ring (MatchIdBatches), the leader's intersection of the
  //    lists' digests handed to every party (IdCommon), and the alignment once every party's
  //    signed statement on that intersection agrees (IdAlign). Returns the number of records
  //    common to every party.
  absl::StatusOr<uint64_t> MatchIds() {
    const auto& ring = options_.ring;
    const size_t n = ring.size();
    const auto start = std::chrono::steady_clock::now();
    IdBoard board;
    board.batches.assign(n, 0);
    board.lists.assign(n, {});
    const absl::Status walked = ForEachList(n, [&](size_t k) -> absl::Status {
      absl::Status st = RunIdWorker(k, board);
      if (!st.ok()) board.Fail(st);
      return st;
    });
    if (!walked.ok()) {
      // The first failure, not a thread that stopped because of it.
      std::lock_guard<std::mutex> lock(board.mu);
      return board.failed.ok() ? walked : board.failed;
    }
    const double walk_s = Since(start);
    // The intersection of every list, sorted: what the leader learns of the lists is their
    // digests (pseudorandom values; the sizes of the intersections of any of them).
    std::vector<std::string> lists(n);
    for (size_t o = 0; o < n; ++o) {
      for (auto& [b, packed] : board.lists[o]) lists[o] += packed;
      board.lists[o].clear();
      ViewEntry e;
      e.kind = kViewIdDigests;
      e.party = ring[o];
      e.counts = {lists[o].size() / common::kIdDigestBytes};
      RETURN_IF_ERROR(Log(std::move(e)));
    }
    ASSIGN_OR_RETURN(const std::string common, common::CommonDigests(lists));
    lists.clear();
    // Every party gets the common digests in batches and answers the last with its signed
    // statement; every party then aligns on every party's statement.
    std::vector<fedanon::v1::SignedIdCommon> statements(n);
    const uint32_t size = options_.id_batch_ids;
    const size_t count = common.size() / common::kIdDigestBytes;
    const auto batches = static_cast<uint32_t>(std::max<size_t>(1, (count + size - 1) / size));
    const auto common_start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(ForEachList(n, [&](size_t k) -> absl::Status {
      for (uint32_t b = 0; b < batches; ++b) {
        fedanon::v1::VerticalStep step;
        auto* c = step.mutable_id_common();
        c->set_batch(b);
        c->set_batches(batches);
        c->set_batch_ids(size);
        const size_t first = size_t{b} * size;
        c->set_digests(
            common.substr(first * common::kIdDigestBytes,
                          std::min<size_t>(size, count - first) * common::kIdDigestBytes));
        ASSIGN_OR_RETURN(VerticalStepResult reply, Call(ring[k], 0, std::move(step)));
        if (b + 1 == batches) {
          if (!reply.ids().has_common()) {
            return absl::InternalError(
                absl::StrCat("party '", ring[k], "' sent no statement on the common ids"));
          }
          statements[k].set_party(ring[k]);
          *statements[k].mutable_statement() = reply.ids().common();
        }
      }
      return absl::OkStatus();
    }));
    std::vector<VerticalStepResult> replies(n);
    const auto align_start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(ForEachList(n, [&](size_t k) -> absl::Status {
      fedanon::v1::VerticalStep step;
      for (const auto& s : statements) *step.mutable_id_align()->add_statements() = s;
      ASSIGN_OR_RETURN(replies[k], Call(ring[k], 0, std::move(step)));
      return absl::OkStatus();
    }));
    const IdMatchingClock sums = id_clock_.Get();
    uint64_t list_batches = 0;
    for (uint32_t b : board.batches) list_batches += b;
    spdlog::info(
        "job={} round=0 ID matching in {} batches of up to {} ids: lists round the ring {:.2f} s, "
        "common ids {:.2f} s, alignment {:.2f} s (wall); summed over the per-party threads: "
        "IdEncrypt {:.2f} s, IdReEncrypt {:.2f} s, IdDigests {:.2f} s, waiting for input {:.2f} s",
        options_.job_id, list_batches, size, walk_s,
        std::chrono::duration<double>(align_start - common_start).count(), Since(align_start),
        sums.encrypt, sums.reencrypt, sums.hand, sums.fetch);
    for (size_t r = 0; r < n; ++r) {
      ViewEntry e;
      e.kind = kViewIdIntersection;
      e.party = ring[r];
      e.counts = {replies[r].ids().common_records()};
      RETURN_IF_ERROR(Log(std::move(e)));
      if (replies[r].ids().common_records() != count) {
        return absl::InternalError(absl::StrCat("party '", ring[r], "' aligned ",
                                                replies[r].ids().common_records(),
                                                " common records, not the ", count, " handed out"));
      }
    }
    return count;
  }

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
                          const std::function<bool()>& ready) {
    while (!ready()) {
      if (!board.failed.ok()) return absl::AbortedError("another ID-matching thread failed");
      board.changed.wait_for(lock, std::chrono::milliseconds(500));
      if (options_.check_cancelled) {
        lock.unlock();
        const absl::Status cancelled = options_.check_cancelled();
        lock.lock();
        RETURN_IF_ERROR(cancelled);
      }
    }
    return absl::OkStatus();
  }

  // Opens a last hop's digests of batch `b` of list `o`, sealed for the leader by `sender`.
  absl::StatusOr<std::string> OpenDigestsAtLeader(const fedanon::v1::SealedPayload& sealed,
                                                  const std::string& sender, size_t o, uint32_t b,
                                                  uint32_t batches) const {
    if (sealed.sender() != sender || sealed.receiver() != options_.leader_name) {
      return absl::InternalError(absl::StrCat("party '", sender,
                                              "' did not seal the digests of a batch of '",
                                              options_.ring[o], "''s list for the leader"));
    }
    ASSIGN_OR_RETURN(auto keys, crypto::SealKeyPairFromPem(options_.leader_seal_key_pem));
    ASSIGN_OR_RETURN(std::unique_ptr<crypto::SealPublicKey> sender_key, SenderKey(sender));
    const crypto::SealContext context{
        options_.job_id,
        options_.run_id,
        0,
        sender,
        options_.leader_name,
        common::IdDigestsPurpose(options_.run_id, options_.ring[o], b, batches)};
    absl::StatusOr<std::string> bytes =
        crypto::OpenFrom(*keys, *sender_key, context, sealed.ciphertext());
    if (!bytes.ok()) {
      return absl::Status(
          bytes.status().code(),
          absl::StrCat("party '", sender,
                       "' sent ID digests the leader cannot open: ", bytes.status().message()));
    }
    fedanon::v1::IdList list;
    if (!list.ParseFromString(*bytes) || list.digests().size() % common::kIdDigestBytes != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("party '", sender, "' sent ID digests that do not parse"));
    }
    return std::move(*list.mutable_digests());
  }

  // Party k's thread: item (origin o, batch b, hop h) is party (o + h) % n's work on batch b of
  // o's list (common::IdLastHop): h = 0 its owner's IdEncrypt, then IdReEncrypt hops; with two
  // parties, h = n stands for the delivery of the owner's digests (IdDigests). Each party runs
  // its items in one fixed order, by (b + h, h, o): an item only needs (o, b, h - 1), whose key is
  // one less, so every party progresses, each works on a batch while the leader relays the
  // others, and the n-th call to a party is the same in every run (RecordingChannel's replay).
  absl::Status RunIdWorker(size_t k, IdBoard& board) {
    const auto& ring = options_.ring;
    const size_t n = ring.size();
    const size_t last = common::IdLastHop(n);
    const uint32_t size = options_.id_batch_ids;
    const std::string& party = ring[k];
    // Batch `b` of this party's own list; its reply names the list's batch count.
    auto encrypt = [&](uint32_t b) -> absl::StatusOr<uint32_t> {
      fedanon::v1::VerticalStep step;
      auto* e = step.mutable_id_encrypt();
      e->set_next(ring[(k + 1) % n]);
      e->set_batch(b);
      e->set_batch_ids(size);
      const auto t = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(VerticalStepResult reply, Call(party, 0, std::move(step)));
      id_clock_.Add(&IdMatchingClock::encrypt, Since(t));
      const auto& ids = reply.ids();
      if (ids.batches() == 0 || b >= ids.batches() || ids.list().sender() != party ||
          ids.list().receiver() != ring[(k + 1) % n]) {
        return absl::InternalError(
            absl::StrCat("party '", party, "' sent no batch ", b, " of its ID list"));
      }
      std::lock_guard<std::mutex> lock(board.mu);
      board.hops[{k, b, 0}] = ids.list();
      board.changed.notify_all();
      return ids.batches();
    };
    ASSIGN_OR_RETURN(const uint32_t own_batches, encrypt(0));
    std::vector<uint32_t> batches;
    {
      std::unique_lock<std::mutex> lock(board.mu);
      board.batches[k] = own_batches;
      ++board.known;
      board.changed.notify_all();
      RETURN_IF_ERROR(AwaitBoard(board, lock, [&] { return board.known == n; }));
      batches = board.batches;
    }
    struct Item {
      uint64_t key;
      size_t hop;
      size_t origin;
      uint32_t batch;
    };
    std::vector<Item> items;
    for (size_t h = 0; h <= last; ++h) {
      const size_t o = (k + n - h % n) % n;
      for (uint32_t b = (h == 0 ? 1 : 0); b < batches[o]; ++b) items.push_back({b + h, h, o, b});
    }
    if (!common::IdListsBlinded(n)) {
      // The other party's last hop sealed this party's digests for it too.
      for (uint32_t b = 0; b < batches[k]; ++b) items.push_back({b + n, n, k, b});
    }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return std::tie(a.key, a.hop, a.origin) < std::tie(b.key, b.hop, b.origin);
    });
    // Takes the sealed payload under `key` from `from` once it is there.
    auto take = [&](auto& from, auto key) -> absl::StatusOr<fedanon::v1::SealedPayload> {
      const auto w = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(board.mu);
      RETURN_IF_ERROR(AwaitBoard(board, lock, [&] { return from.count(key) > 0; }));
      auto node = from.extract(key);
      lock.unlock();
      id_clock_.Add(&IdMatchingClock::fetch, Since(w));
      return std::move(node.mapped());
    };
    for (const Item& item : items) {
      const std::string& origin = ring[item.origin];
      if (item.hop == 0) {
        ASSIGN_OR_RETURN(const uint32_t count, encrypt(item.batch));
        if (count != batches[k]) {
          return absl::InternalError(absl::StrCat("party '", party, "' changed its batch count"));
        }
        continue;
      }
      if (item.hop == n && !common::IdListsBlinded(n)) {
        ASSIGN_OR_RETURN(fedanon::v1::SealedPayload sealed,
                         take(board.owner_digests, std::pair{item.origin, item.batch}));
        fedanon::v1::VerticalStep step;
        auto* d = step.mutable_id_digests();
        d->set_origin(origin);
        d->set_batch(item.batch);
        d->set_batches(batches[item.origin]);
        d->set_batch_ids(size);
        *d->mutable_digests() = std::move(sealed);
        const auto t = std::chrono::steady_clock::now();
        RETURN_IF_ERROR(Call(party, 0, std::move(step)).status());
        id_clock_.Add(&IdMatchingClock::hand, Since(t));
        continue;
      }
      ASSIGN_OR_RETURN(fedanon::v1::SealedPayload input,
                       take(board.hops, std::tuple{item.origin, item.batch, item.hop - 1}));
      fedanon::v1::VerticalStep step;
      auto* re = step.mutable_id_reencrypt();
      *re->mutable_list() = std::move(input);
      re->set_origin(origin);
      const bool is_last = item.hop == last;
      if (!is_last) re->set_next(ring[(item.origin + item.hop + 1) % n]);
      re->set_batch(item.batch);
      re->set_batches(batches[item.origin]);
      re->set_batch_ids(size);
      const auto t = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(VerticalStepResult reply, Call(party, 0, std::move(step)));
      id_clock_.Add(&IdMatchingClock::reencrypt, Since(t));
      auto* ids = reply.mutable_ids();
      if (!is_last) {
        std::lock_guard<std::mutex> lock(board.mu);
        board.hops[{item.origin, item.batch, item.hop}] = std::move(*ids->mutable_list());
        board.changed.notify_all();
        continue;
      }
      // The last hop: the digests for the leader, and for the owner when it is another party.
      const size_t expected = common::IdListsBlinded(n) ? 1 : 2;
      if (static_cast<size_t>(ids->for_parties_size()) != expected) {
        return absl::InternalError(
            absl::StrCat("party '", party, "' sealed the digests of a batch of '", origin,
                         "''s list for ", ids->for_parties_size(), " receivers, not ", expected));
      }
      ASSIGN_OR_RETURN(std::string digests,
                       OpenDigestsAtLeader(ids->for_parties(0), party, item.origin, item.batch,
                                           batches[item.origin]));
      std::lock_guard<std::mutex> lock(board.mu);
      board.lists[item.origin][item.batch] = std::move(digests);
      if (expected == 2) {
        auto& sealed = *ids->mutable_for_parties(1);
        if (sealed.receiver() != origin) {
          return absl::InternalError(absl::StrCat("party '", party, "' sealed '", origin,
                                                  "''s digests for '", sealed.receiver(), "'"));
        }
        board.owner_digests[{item.origin, item.batch}] = std::move(sealed);
      }
      board.changed.notify_all();
    }
    return absl::OkStatus();
  }

  // 2. Rounds until every party sends Not-participate; returns why they stopped and leaves in
  //    `result` the rounds (specializations applied) and vetoes.
  absl::StatusOr<std::string> RunRounds(VerticalJobResult* result) {
    if (options_.local_recoding) return RunLocalWaves(result);
    uint32_t round = 1;
    while (true) {
      const auto round_start = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(const RoundOutcome outcome, RunRound(round));
      if (options_.observer != nullptr) {
        options_.observer->PhaseDone(Phase::kInstruction, absl::Seconds(Since(round_start)));
      }
      if (outcome == RoundOutcome::kEveryoneDeclined) break;
      if (outcome == RoundOutcome::kVetoed) {
        ++result->vetoes;
        continue;
      }
      ++round;
    }
    result->rounds = round - 1;
    return stop_reason_;
  }

  // 2'. `recoding: local`: waves until no party has a valid candidate in any live group. In each
  //     wave every party proposes per live group; the leader picks one proposal per group (best
  //     score, then lower attribute index, then lower candidate: the centralized order); every
  //     owner seals the splits of the groups it won for every other party; every replica checks
  //     and applies the whole wave. `result->rounds` counts the waves.
  absl::StatusOr<std::string> RunLocalWaves(VerticalJobResult* result) {
    const auto& ring = options_.ring;
    const size_t n = ring.size();
    uint32_t wave = 1;
    while (true) {
      const auto wave_start = std::chrono::steady_clock::now();
      // Every party's signed list of the wave, page by page (protocol 1.4: no message grows
      // with the number of groups), reassembled here to pick the winners.
      std::vector<ProposalPages> pages(n);
      RETURN_IF_ERROR(
          PerParty(ring, [&](size_t i) { return FetchProposals(ring[i], wave, &pages[i]); }));
      std::vector<VerticalStepResult> proposals(n);
      for (size_t i = 0; i < n; ++i) {
        auto* list = proposals[i].mutable_local_proposals();
        if (!list->ParseFromString(pages[i].Whole())) {
          return absl::InternalError(
              absl::StrCat("the proposals of party '", ring[i], "' do not parse"));
        }
        list->set_live_groups(pages[i].head.live_groups());
      }
      // Per group: the winning party and its proposal.
      std::map<uint32_t, std::pair<size_t, fedanon::v1::LocalGroupProposal>> best;
      for (size_t i = 0; i < n; ++i) {
        const auto& list = proposals[i].local_proposals();
        if (list.proposals().empty()) {
          ViewEntry e;
          e.round = wave;
          e.kind = kViewVerticalDecline;
          e.party = ring[i];
          e.counts = {list.live_groups()};
          e.detail = "no valid candidate in any live group";
          RETURN_IF_ERROR(Log(std::move(e)));
        }
        for (const auto& p : list.proposals()) {
          ViewEntry e;
          e.round = wave;
          e.kind = kViewVerticalScore;
          e.party = ring[i];
          e.attribute = AttributeName(p.attribute());
          e.node = absl::StrCat("group ", p.group());
          e.counts = {p.group(), static_cast<uint64_t>(p.candidate())};
          e.score = p.score();
          RETURN_IF_ERROR(Log(std::move(e)));
          auto it = best.find(p.group());
          if (it == best.end()) {
            best.emplace(p.group(), std::pair{i, p});
            continue;
          }
          const auto& q = it->second.second;
          const common::CandidateRank rp{p.score(), static_cast<int>(p.attribute()), 0,
                                         p.candidate()};
          const common::CandidateRank rq{q.score(), static_cast<int>(q.attribute()), 0,
                                         q.candidate()};
          if (common::RanksAbove(rp, rq)) it->second = {i, p};
        }
      }
      // Every party's signed list, delivered unchanged to every other party page by page before
      // any later step of the wave: each party recomputes the winners from them.
      RETURN_IF_ERROR(PerParty(ring, [&](size_t r) -> absl::Status {
        for (size_t i = 0; i < n; ++i) {
          if (i == r) continue;
          for (size_t p = 0; p < pages[i].pages.size(); ++p) {
            fedanon::v1::VerticalStep step;
            auto* put = step.mutable_local_proposals_put();
            put->set_party(ring[i]);
            put->set_page(static_cast<uint32_t>(p));
            put->set_pages(static_cast<uint32_t>(pages[i].pages.size()));
            put->set_page_bytes(pages[i].pages[p]);
            put->set_list_bytes(pages[i].head.list_bytes());
            put->set_list_digest(pages[i].head.list_digest());
            put->set_live_groups(pages[i].head.live_groups());
            put->set_state_digest(pages[i].head.state_digest());
            put->set_signature(pages[i].head.signature());
            RETURN_IF_ERROR(Call(ring[r], wave, std::move(step)).status());
          }
        }
        return absl::OkStatus();
      }));
      if (best.empty()) {
        // The closing wave: the parties compare their final state digests (and that no one
        // proposed) before any release.
        RETURN_IF_ERROR(CallAll(ring, wave, [&](size_t) {
                          fedanon::v1::VerticalStep step;
                          step.mutable_local_commit()->set_closing(true);
                          return step;
                        }).status());
        break;
      }
      std::vector<std::string> owners;
      std::map<std::string, fedanon::v1::LocalWinners> won;
      for (const auto& [group, w] : best) {
        auto [it, fresh] = won.try_emplace(ring[w.first]);
        if (fresh) owners.push_back(ring[w.first]);
        *it->second.add_won() = w.second;
      }
      ASSIGN_OR_RETURN(
          auto sealed, CallAll(owners, wave, [&](size_t i) {
            fedanon::v1::VerticalStep step;
            // Only the count and digest: the owner recomputes its groups.
            const fedanon::v1::LocalWinners& list = won[owners[i]];
            step.mutable_local_winners()->set_won_count(static_cast<uint64_t>(list.won_size()));
            step.mutable_local_winners()->set_won_digest(crypto::Sha256(list.SerializeAsString()));
            return step;
          }));
      // Every owner's instruction, for every other party; with judges, first for the other
      // judges only, and after their verdicts the accepted splits for the remaining parties.
      const auto& judges = options_.local_judges;
      auto is_judge = [&](const std::string& p) {
        return std::binary_search(judges.begin(), judges.end(), p);
      };
      std::map<std::string, std::vector<CarriedPayload>> inbox;
      auto collect = [&](std::vector<VerticalStepResult>& replies, size_t expected_of_owner_judge,
                         size_t expected_of_owner_other) -> absl::Status {
        for (size_t o = 0; o < owners.size(); ++o) {
          const int owner =
              static_cast<int>(std::find(ring.begin(), ring.end(), owners[o]) - ring.begin());
          std::set<std::string> seen;
          ASSIGN_OR_RETURN(auto to, ByReceiver(replies[o].instructions(), owner, wave, &seen));
          const size_t expected =
              is_judge(owners[o]) ? expected_of_owner_judge : expected_of_owner_other;
          if (seen.size() != expected) {
            return absl::InternalError(
                absl::StrCat("party '", owners[o], "' did not seal its splits for every party"));
          }
          for (size_t r = 0; r < to.first.size(); ++r) {
            inbox[to.first[r]].push_back(std::move(to.second[r]));
          }
        }
        return absl::OkStatus();
      };
      if (judges.empty()) {
        RETURN_IF_ERROR(collect(sealed, n - 1, n - 1));
      } else {
        RETURN_IF_ERROR(collect(sealed, judges.size() - 1, judges.size()));
        std::vector<fedanon::v1::VerticalStep> to_judge(judges.size());
        for (size_t j = 0; j < judges.size(); ++j) {
          auto* step = to_judge[j].mutable_local_judge();
          for (const auto& payload : inbox[judges[j]]) {
            RETURN_IF_ERROR(HandInto(payload, wave, options_.timeout, step->mutable_instructions(),
                                     step->mutable_instruction_refs()));
          }
        }
        inbox.clear();
        ASSIGN_OR_RETURN(auto judged,
                         CallAll(judges, wave, [&](size_t j) { return std::move(to_judge[j]); }));
        // Every judge's signed verdict list, page by page (page 0 answered LocalJudge; no message
        // grows with the number of groups), reassembled here for the vetoes and the view log.
        std::vector<VerdictPages> vpages(judges.size());
        RETURN_IF_ERROR(PerParty(judges, [&](size_t j) {
          return FetchVerdicts(judges[j], wave, std::move(*judged[j].mutable_local_verdicts()),
                               &vpages[j]);
        }));
        std::set<uint32_t> vetoed;
        for (size_t j = 0; j < judges.size(); ++j) {
          fedanon::v1::LocalVerdicts list;
          if (!list.ParseFromString(vpages[j].Whole())) {
            return absl::InternalError(
                absl::StrCat("the verdicts of judge '", judges[j], "' do not parse"));
          }
          uint64_t rejected = 0;
          for (const auto& one : list.verdicts()) {
            if (one.accept()) continue;
            ++rejected;
            vetoed.insert(one.group());
          }
          ViewEntry e;
          e.round = wave;
          e.kind = kViewVerticalVerdict;
          e.party = judges[j];
          e.counts = {static_cast<uint64_t>(list.verdicts_size()) - rejected, rejected};
          e.detail = "local: groups accepted, vetoed";
          RETURN_IF_ERROR(Log(std::move(e)));
        }
        result->vetoes += static_cast<uint32_t>(vetoed.size());
        for (uint32_t g : vetoed) best.erase(g);
        // Every judge's signed list, delivered unchanged to every other party page by page
        // before LocalPublish and LocalCommit, which carry no verdicts.
        RETURN_IF_ERROR(PerParty(ring, [&](size_t r) -> absl::Status {
          for (size_t j = 0; j < judges.size(); ++j) {
            if (judges[j] == ring[r]) continue;
            for (size_t p = 0; p < vpages[j].pages.size(); ++p) {
              fedanon::v1::VerticalStep step;
              auto* put = step.mutable_local_verdicts_put();
              put->set_judge(judges[j]);
              put->set_page(static_cast<uint32_t>(p));
              put->set_pages(static_cast<uint32_t>(vpages[j].pages.size()));
              put->set_page_bytes(vpages[j].pages[p]);
              put->set_list_bytes(vpages[j].head.list_bytes());
              put->set_list_digest(vpages[j].head.list_digest());
              put->set_signature(vpages[j].head.signature());
              RETURN_IF_ERROR(Call(ring[r], wave, std::move(step)).status());
            }
          }
          return absl::OkStatus();
        }));
        ASSIGN_OR_RETURN(auto published, CallAll(owners, wave, [&](size_t) {
                           fedanon::v1::VerticalStep step;
                           step.mutable_local_publish();
                           return step;
                         }));
        const size_t others = n - judges.size();
        RETURN_IF_ERROR(collect(published, others, others - 1));
      }
      std::vector<fedanon::v1::VerticalStep> commits(n);
      for (size_t i = 0; i < n; ++i) {
        auto* commit = commits[i].mutable_local_commit();
        for (const auto& payload : inbox[ring[i]]) {
          RETURN_IF_ERROR(HandInto(payload, wave, options_.timeout, commit->mutable_instructions(),
                                   commit->mutable_instruction_refs()));
        }
      }
      inbox.clear();
      RETURN_IF_ERROR(
          CallAll(ring, wave, [&](size_t i) { return std::move(commits[i]); }).status());
      for (const auto& [group, w] : best) {
        auto& p = participation_[ring[w.first]];
        p.set_rounds_won(p.rounds_won() + 1);
      }
      if (options_.observer != nullptr) {
        options_.observer->PhaseDone(Phase::kInstruction, absl::Seconds(Since(wave_start)));
      }
      spdlog::info("job={} wave={} local recoding: {} groups split, {} vetoes so far",
                   options_.job_id, wave, best.size(), result->vetoes);
      if (options_.on_wave) options_.on_wave(wave, best.size());
      ++wave;
    }
    result->rounds = wave - 1;
    return std::string("no party has a valid candidate in any live group");
  }

  // One party's signed proposal list of a wave as fetched page by page (protocol 1.4).
  struct ProposalPages {
    fedanon::v1::LocalProposals head;  // the description every page repeats (no page bytes)
    std::vector<std::string> pages;
    std::string Whole() const { return absl::StrJoin(pages, ""); }
  };

  // Asks `party` for every page of its proposals of `wave`, in order; checks every page repeats
  // the first's description and the whole matches its digest (a party that does not is named).
  absl::Status FetchProposals(const std::string& party, uint32_t wave, ProposalPages* out) {
    uint32_t pages = 1;
    uint64_t bytes = 0;
    for (uint32_t p = 0; p < pages; ++p) {
      fedanon::v1::VerticalStep step;
      step.mutable_local_propose()->set_page(p);
      ASSIGN_OR_RETURN(VerticalStepResult reply, Call(party, wave, std::move(step)));
      fedanon::v1::LocalProposals* got = reply.mutable_local_proposals();
      std::string page = std::move(*got->mutable_page_bytes());
      got->clear_page_bytes();
      if (got->page() != p || got->pages() == 0 || got->proposals_size() != 0 ||
          (p > 0 && got->pages() != pages)) {
        return absl::InternalError(absl::StrCat("party '", party, "' answered page ", got->page(),
                                                " of ", got->pages(), " for page ", p, " of ",
                                                pages, " of its proposals of wave ", wave));
      }
      got->clear_page();
      if (p == 0) {
        // At most one page per byte (one for an empty list), the whole bounded.
        if (got->list_bytes() > common::kMaxChunkedPayloadBytes ||
            got->pages() > std::max<uint64_t>(1, got->list_bytes())) {
          return absl::InternalError(absl::StrCat("party '", party, "' declares ", got->pages(),
                                                  " pages of ", got->list_bytes(),
                                                  " bytes for its proposals of wave ", wave));
        }
        pages = got->pages();
        out->head = *got;
      } else if (got->SerializeAsString() != out->head.SerializeAsString()) {
        return absl::InternalError(
            absl::StrCat("party '", party, "' changed the description of its proposals of wave ",
                         wave, " between pages"));
      }
      bytes += page.size();
      if (bytes > out->head.list_bytes()) {
        return absl::InternalError(
            absl::StrCat("the proposal pages of party '", party, "' exceed their declared size"));
      }
      out->pages.push_back(std::move(page));
    }
    if (bytes != out->head.list_bytes() ||
        crypto::Sha256(out->Whole()) != out->head.list_digest()) {
      return absl::InternalError(absl::StrCat("the proposal pages of party '", party,
                                              "' do not match their size and digest"));
    }
    return absl::OkStatus();
  }

  // A release report in pages (protocol 1.4): asks `party` for pages 1.. of its report's steps,
  // checks each is the page asked for and that all of them are the declared count and digest,
  // and leaves the whole report in `released` (as a report that fit one message).
  absl::Status FetchReportPages(const std::string& party, uint32_t round,
                                fedanon::v1::VerticalReleased* released) {
    const uint32_t pages = released->report_pages();
    if (pages == 0) return absl::OkStatus();  // the whole report (or a party before 1.4)
    const uint64_t total = released->report_steps();
    fedanon::v1::Report* report = released->mutable_report();
    if (pages < 2 || total > kMaxReportSteps || pages > total || report->steps_size() == 0 ||
        static_cast<uint64_t>(report->steps_size()) > total) {
      return absl::InternalError(absl::StrCat(kReportPagesAbsurd, ": party '", party, "' declares ",
                                              pages, " pages of ", total, " steps, page 0 holding ",
                                              report->steps_size()));
    }
    for (uint32_t p = 1; p < pages; ++p) {
      fedanon::v1::VerticalStep step;
      step.mutable_release_report_page()->set_page(p);
      ASSIGN_OR_RETURN(VerticalStepResult reply, Call(party, round, std::move(step)));
      fedanon::v1::ReleaseReportSteps* got = reply.mutable_report_page();
      if (!reply.has_report_page() || got->page() != p || got->pages() != pages ||
          got->steps_size() == 0) {
        return absl::InternalError(absl::StrCat(kReportPageWrong, ": party '", party,
                                                "' answered page ", got->page(), " of ",
                                                got->pages(), " for page ", p, " of ", pages));
      }
      if (static_cast<uint64_t>(report->steps_size() + got->steps_size()) > total) {
        return absl::InternalError(absl::StrCat(kReportPagesMismatch, ": party '", party,
                                                "' sent more than its ", total, " steps"));
      }
      for (auto& s : *got->mutable_steps()) *report->add_steps() = std::move(s);
    }
    fedanon::v1::Report steps;
    *steps.mutable_steps() = report->steps();
    if (static_cast<uint64_t>(report->steps_size()) != total ||
        crypto::Sha256(steps.SerializeAsString()) != released->report_digest()) {
      return absl::InternalError(absl::StrCat(kReportPagesMismatch, ": party '", party, "' sent ",
                                              report->steps_size(), " steps of ", total));
    }
    released->clear_report_pages();
    released->clear_report_steps();
    released->clear_report_digest();
    return absl::OkStatus();
  }

  // One judge's signed verdict list of a wave as fetched page by page.
  struct VerdictPages {
    fedanon::v1::LocalVerdicts head;  // the description every page repeats (no page bytes)
    std::vector<std::string> pages;
    std::string Whole() const { return absl::StrJoin(pages, ""); }
  };

  // From page 0 (`first`, the judge's LocalJudge answer), asks `judge` for every further page of
  // its verdicts of `wave` (LocalVerdictsPage), in order; checks as FetchProposals does.
  absl::Status FetchVerdicts(const std::string& judge, uint32_t wave,
                             fedanon::v1::LocalVerdicts first, VerdictPages* out) {
    uint32_t pages = 1;
    uint64_t bytes = 0;
    for (uint32_t p = 0; p < pages; ++p) {
      fedanon::v1::LocalVerdicts got;
      if (p == 0) {
        got = std::move(first);
      } else {
        fedanon::v1::VerticalStep step;
        step.mutable_local_verdicts_page()->set_page(p);
        ASSIGN_OR_RETURN(VerticalStepResult reply, Call(judge, wave, std::move(step)));
        got = std::move(*reply.mutable_local_verdicts());
      }
      std::string page = std::move(*got.mutable_page_bytes());
      got.clear_page_bytes();
      if (got.page() != p || got.pages() == 0 || got.verdicts_size() != 0 ||
          (p > 0 && got.pages() != pages)) {
        return absl::InternalError(absl::StrCat("judge '", judge, "' answered page ", got.page(),
                                                " of ", got.pages(), " for page ", p, " of ", pages,
                                                " of its verdicts of wave ", wave));
      }
      got.clear_page();
      if (p == 0) {
        // At most one page per byte (one for an empty list), the whole bounded.
        if (got.list_bytes() > common::kMaxChunkedPayloadBytes ||
            got.pages() > std::max<uint64_t>(1, got.list_bytes())) {
          return absl::InternalError(absl::StrCat("judge '", judge, "' declares ", got.pages(),
                                                  " pages of ", got.list_bytes(),
                                                  " bytes for its verdicts of wave ", wave));
        }
        pages = got.pages();
        out->head = got;
      } else if (got.SerializeAsString() != out->head.SerializeAsString()) {
        return absl::InternalError(
            absl::StrCat("judge '", judge, "' changed the description of its verdicts of wave ",
                         wave, " between pages"));
      }
      bytes += page.size();
      if (bytes > out->head.list_bytes()) {
        return absl::InternalError(
            absl::StrCat("the verdict pages of judge '", judge, "' exceed their declared size"));
      }
      out->pages.push_back(std::move(page));
    }
    if (bytes != out->head.list_bytes() ||
        crypto::Sha256(out->Whole()) != out->head.list_digest()) {
      return absl::InternalError(absl::StrCat("the verdict pages of judge '", judge,
                                              "' do not match their size and digest"));
    }
    return absl::OkStatus();
  }

  // `run(i)` for every party of `parties` at once, one thread each (each party's calls keep
  // their order, which a restarted leader replays); the first error.
  absl::Status PerParty(const std::vector<std::string>& parties,
                        const std::function<absl::Status(size_t)>& run) {
    std::vector<absl::Status> done(parties.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < parties.size(); ++i) {
      threads.emplace_back([&, i] { done[i] = run(i); });
    }
    for (auto& t : threads) t.join();
    for (const auto& st : done) RETURN_IF_ERROR(st);
    return absl::OkStatus();
  }

  // 3. Release: every party's columns sealed for the recipient, joined there; the report.
  absl::Status Release(uint32_t round, const std::string& stop_reason, VerticalJobResult* result) {
    const auto& ring = options_.ring;
    // The first party of the ring draws the secret release order and seals its seed for each
    // other data party; they release their columns in that order (the leader relays the seeds).
    fedanon::v1::VerticalStep first;
    first.mutable_release()->set_recipient(options_.recipient);
    std::vector<VerticalStepResult> released;
    ASSIGN_OR_RETURN(released.emplace_back(), Call(ring[0], round, first));
    std::map<std::string, fedanon::v1::SealedPayload> seeds;
    for (const auto& seed : released[0].released().order_seeds()) seeds[seed.receiver()] = seed;
    const std::vector<std::string> rest(ring.begin() + 1, ring.end());
    for (const auto& p : rest) {
      if (!seeds.count(p)) {
        return absl::InternalError(
            absl::StrCat("party '", ring[0], "' sent no release-order seed for '", p, "'"));
      }
    }
    ASSIGN_OR_RETURN(auto others, CallAll(rest, round, [&](size_t i) {
                       fedanon::v1::VerticalStep step;
                       step.mutable_release()->set_recipient(options_.recipient);
                       *step.mutable_release()->mutable_order_seed() = seeds.at(rest[i]);
                       return step;
                     }));
    for (auto& r : others) released.push_back(std::move(r));
    for (size_t i = 0; i < ring.size(); ++i) {
      RETURN_IF_ERROR(FetchReportPages(ring[i], round, released[i].mutable_released()));
    }
    for (size_t i = 0; i < ring.size(); ++i) {
      RETURN_IF_ERROR(LogReport(round, ring[i], released[i].released().report()));
    }
    FillReport(released, stop_reason, &result->report);
    // Every party's columns, sealed for the recipient (whole, or fetched chunk by chunk).
    std::vector<CarriedPayload> columns;
    for (size_t i = 0; i < ring.size(); ++i) {
      ASSIGN_OR_RETURN(columns.emplace_back(), relay_.Fetch(ring[i], round, options_.timeout,
                                                            released[i].released().columns(),
                                                            released[i].released().columns_ref()));
    }
    released.clear();
    if (options_.recipient == options_.leader_name) {
      // The joined table is the job's result; the view log records its size.
      ASSIGN_OR_RETURN(const uint64_t rows, JoinAtLeader(columns, round, &result->csv));
      ViewEntry e;
      e.round = round;
      e.kind = kViewReleasedRows;
      e.counts = {rows};
      return Log(std::move(e));
    }
    fedanon::v1::VerticalStep step;
    for (auto& c : columns) {
      RETURN_IF_ERROR(HandInto(c, round, options_.timeout,
                               step.mutable_assemble()->mutable_columns(),
                               step.mutable_assemble()->mutable_column_refs()));
      c = CarriedPayload();
    }
    for (const auto& h : options_.header) step.mutable_assemble()->add_header(h);
    ASSIGN_OR_RETURN(VerticalStepResult assembled, Call(options_.recipient, round, step));
    ViewEntry e;
    e.round = round;
    e.kind = kViewReleasedRows;
    e.party = options_.recipient;
    e.counts = {assembled.assembled().rows_written()};
    return Log(std::move(e));
  }

 private:
  // Appends to the view log, if any.
  absl::Status Log(ViewEntry e) {
    if (options_.view_log == nullptr) return absl::OkStatus();
    // A resumed job logs again what it replays: the lines written before the restart are a
    // prefix of it, and are not written twice.
    if (logged_ < options_.logged_before.size() &&
        options_.logged_before[logged_] == ViewEntryToJson(e)) {
      ++logged_;
      return absl::OkStatus();
    }
    logged_ = options_.logged_before.size();  // past the prefix: every line is new
    return options_.view_log->Append(e);
  }

  std::string AttributeName(uint32_t attr) const {
    return attr < options_.qid_names.size() ? options_.qid_names[attr] : absl::StrCat("#", attr);
  }

  // A replica's report: its group counts and the records of every step it applied, with the
  // whole report as JSON in `detail`.
  absl::Status LogReport(uint32_t round, const std::string& party,
                         const fedanon::v1::Report& report) {
    ViewEntry e;
    e.round = round;
    e.kind = kViewVerticalReport;
    e.party = party;
    e.counts = {report.groups(), report.smallest_group()};
    for (const auto& step : report.steps()) e.counts.push_back(step.records());
    ASSIGN_OR_RETURN(e.detail, common::ProtoToJson(report, /*pretty=*/false));
    return Log(std::move(e));
  }

  // Every proposal (score, or Not-participate and why) as the leader reads it.
  absl::Status LogProposals(uint32_t round, const std::vector<VerticalStepResult>& proposals) {
    for (size_t i = 0; i < proposals.size(); ++i) {
      const auto& p = proposals[i].proposal();
      ViewEntry e;
      e.round = round;
      e.party = options_.ring[i];
      if (p.participate()) {
        e.kind = kViewVerticalScore;
        e.attribute = AttributeName(p.candidate().attribute());
        e.counts = {static_cast<uint64_t>(p.candidate().node()),
                    static_cast<uint64_t>(p.candidate().candidate())};
        e.score = p.candidate().score();
        if (p.misbehaving()) e.detail = "misbehaving";
      } else {
        e.kind = kViewVerticalDecline;
        e.detail = p.misbehaving() ? absl::StrCat(p.reason(), " (misbehaving)") : p.reason();
      }
      RETURN_IF_ERROR(Log(std::move(e)));
    }
    return absl::OkStatus();
  }

  enum class RoundOutcome { kApplied, kVetoed, kEveryoneDeclined };

  // Runs `fn(0)`, ..., `fn(n - 1)` on a thread each and waits for all; the error of the lowest
  // index wins.
  static absl::Status ForEachList(size_t n, const std::function<absl::Status(size_t)>& fn) {
    std::vector<absl::Status> status(n);
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (size_t i = 0; i < n; ++i) threads.emplace_back([&, i] { status[i] = fn(i); });
    for (auto& t : threads) t.join();
    for (auto& st : status) RETURN_IF_ERROR(st);
    return absl::OkStatus();
  }

  // Hands `carried` to its receiver as the next element of a step's repeated field: whole, or
  // its chunks ahead and the ref in the step.
  absl::Status HandInto(const CarriedPayload& carried, uint32_t round, absl::Duration timeout,
                        google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>* wholes,
                        google::protobuf::RepeatedPtrField<fedanon::v1::ChunkRef>* refs) {
    fedanon::v1::SealedPayload whole;
    fedanon::v1::ChunkRef ref;
    RETURN_IF_ERROR(relay_.Hand(carried, round, timeout, &whole, &ref));
    if (carried.chunked()) {
      *refs->Add() = std::move(ref);
    } else {
      *wholes->Add() = std::move(whole);
    }
    return absl::OkStatus();
  }

  // One round: proposals, the winner's instruction relayed to the others, their verdicts, and
  // the commit (or veto) at every replica.
  absl::StatusOr<RoundOutcome> RunRound(uint32_t round) {
    const auto& ring = options_.ring;
    const size_t n = ring.size();
    ASSIGN_OR_RETURN(auto proposals, CallAll(ring, round, [](size_t) {
                       fedanon::v1::VerticalStep step;
                       step.mutable_propose();
                       return step;
                     }));
    RETURN_IF_ERROR(LogProposals(round, proposals));
    fedanon::v1::VerticalCandidate winner;
    const int owner = PickWinner(proposals, &winner);
    if (owner < 0) return RoundOutcome::kEveryoneDeclined;
    // The parties' signed proposals travel with the winner (the owner checks it won) and the
    // owner's with the commit; the judges' signed verdicts too (every party checks them).
    std::vector<fedanon::v1::SignedProposal> signed_proposals(n);
    for (size_t i = 0; i < n; ++i) {
      signed_proposals[i].set_party(ring[i]);
      *signed_proposals[i].mutable_proposal() = proposals[i].proposal();
    }
    fedanon::v1::VerticalStep win;
    *win.mutable_winner()->mutable_candidate() = winner;
    for (const auto& p : signed_proposals) *win.mutable_winner()->add_proposals() = p;
    // The owner seals the children for the judges only (the other holders of sensitive values).
    ASSIGN_OR_RETURN(VerticalStepResult to_judges, Call(ring[owner], round, win));
    std::set<std::string> judges;
    ASSIGN_OR_RETURN(const auto judged,
                     ByReceiver(to_judges.instructions(), owner, round, &judges));
    std::vector<fedanon::v1::VerticalStep> delivers(judged.first.size());
    for (size_t i = 0; i < delivers.size(); ++i) {
      auto* deliver = delivers[i].mutable_deliver();
      RETURN_IF_ERROR(relay_.Hand(judged.second[i], round, options_.timeout,
                                  deliver->mutable_instruction(),
                                  deliver->mutable_instruction_ref()));
    }
    ASSIGN_OR_RETURN(auto verdicts, CallAll(judged.first, round,
                                            [&](size_t i) { return std::move(delivers[i]); }));
    bool accept = true;
    std::vector<fedanon::v1::SignedVerdict> signed_verdicts(verdicts.size());
    for (size_t i = 0; i < verdicts.size(); ++i) {
      signed_verdicts[i].set_judge(judged.first[i]);
      *signed_verdicts[i].mutable_candidate() = winner;
      signed_verdicts[i].set_accept(verdicts[i].verdict().accept());
      signed_verdicts[i].set_signature(verdicts[i].verdict().signature());
      ViewEntry e;
      e.round = round;
      e.kind = kViewVerticalVerdict;
      e.party = judged.first[i];
      e.counts = {verdicts[i].verdict().accept() ? 1u : 0u};
      RETURN_IF_ERROR(Log(std::move(e)));
      accept = accept && verdicts[i].verdict().accept();
    }
    // Accepted: the owner, shown every judge's sealed acceptance, seals the children for the
    // remaining parties; they receive them with the commit. Rejected: they never do.
    std::map<std::string, CarriedPayload> with_commit;
    if (accept) {
      fedanon::v1::VerticalStep publish;
      *publish.mutable_publish()->mutable_candidate() = winner;
      for (const auto& v : verdicts)
        *publish.mutable_publish()->add_verdicts() = v.verdict().for_owner();
      ASSIGN_OR_RETURN(VerticalStepResult to_others, Call(ring[owner], round, publish));
      std::set<std::string> seen = judges;
      ASSIGN_OR_RETURN(auto others, ByReceiver(to_others.instructions(), owner, round, &seen));
      if (seen.size() + 1 != n) {
        return absl::InternalError(
            absl::StrCat("party '", ring[owner], "' sent instructions for the wrong parties"));
      }
      for (size_t i = 0; i < others.first.size(); ++i)
        with_commit[others.first[i]] = std::move(others.second[i]);
    }
    std::vector<fedanon::v1::VerticalStep> commits(n);
    for (size_t i = 0; i < n; ++i) {
      auto* commit = commits[i].mutable_commit();
      *commit->mutable_candidate() = winner;
      commit->set_accept(accept);
      *commit->mutable_winner() = signed_proposals[owner];
      for (const auto& v : signed_verdicts) *commit->add_verdicts() = v;
      auto it = with_commit.find(ring[i]);
      if (it != with_commit.end()) {
        RETURN_IF_ERROR(relay_.Hand(it->second, round, options_.timeout,
                                    commit->mutable_instruction(),
                                    commit->mutable_instruction_ref()));
      }
    }
    RETURN_IF_ERROR(CallAll(ring, round, [&](size_t i) { return std::move(commits[i]); }).status());
    if (!accept) {
      spdlog::info("job={} round={} the winner of '{}' was vetoed by a holder of sensitive values",
                   options_.job_id, round, ring[owner]);
      return RoundOutcome::kVetoed;
    }
    auto& won = participation_[ring[owner]];
    won.set_rounds_won(won.rounds_won() + 1);
    if (options_.on_step) options_.on_step(round, ring[owner], winner.attribute());
    return RoundOutcome::kApplied;
  }

  // The owner's sealed instructions by receiver (whole, or fetched chunk by chunk): each a data
  // party other than the owner, named once (over `seen` too, which collects them). Returns the
  // receivers and their payloads.
  absl::StatusOr<std::pair<std::vector<std::string>, std::vector<CarriedPayload>>> ByReceiver(
      const fedanon::v1::VerticalInstructions& instructions, int owner, uint32_t round,
      std::set<std::string>* seen) const {
    const auto& ring = options_.ring;
    std::vector<CarriedPayload> carried;
    for (const auto& payload : instructions.for_parties()) {
      ASSIGN_OR_RETURN(carried.emplace_back(),
                       relay_.Fetch(ring[owner], round, options_.timeout, payload, {}));
    }
    for (const auto& ref : instructions.refs()) {
      ASSIGN_OR_RETURN(carried.emplace_back(),
                       relay_.Fetch(ring[owner], round, options_.timeout, {}, ref));
    }
    std::pair<std::vector<std::string>, std::vector<CarriedPayload>> out;
    for (auto& payload : carried) {
      const std::string to = payload.receiver();
      if (std::find(ring.begin(), ring.end(), to) == ring.end() || to == ring[owner] ||
          !seen->insert(to).second) {
        return absl::InternalError(
            absl::StrCat("party '", ring[owner], "' sent an instruction for '", to, "'"));
      }
      out.first.push_back(to);
      out.second.push_back(std::move(payload));
    }
    return out;
  }

  // The best proposal (best score, public tie-break): its party's index, or -1 when every party
  // declined (then stop_reason_ lists their reasons). Counts declines in participation_.
  int PickWinner(const std::vector<VerticalStepResult>& proposals,
                 fedanon::v1::VerticalCandidate* winner) {
    const auto& ring = options_.ring;
    int owner = -1;
    common::TopDownSpecializer::Choice best;
    std::vector<std::string> reasons;
    for (size_t i = 0; i < ring.size(); ++i) {
      const auto& p = proposals[i].proposal();
      auto& record = participation_[ring[i]];
      if (p.misbehaving()) record.set_misbehaving(true);
      if (!p.participate()) {
        record.set_rounds_declined(record.rounds_declined() + 1);
        ++(*record.mutable_declined_because())[p.reason()];
        reasons.push_back(absl::StrCat(ring[i], ": ", p.reason()));
        continue;
      }
      common::TopDownSpecializer::Choice c{static_cast<int>(p.candidate().attribute()),
                                           p.candidate().node(), p.candidate().candidate(),
                                           p.candidate().score(), p.candidate().order_key()};
      if (owner < 0 || common::TopDownSpecializer::Beats(c, best)) {
        owner = static_cast<int>(i);
        best = c;
        *winner = p.candidate();
      }
    }
    if (owner < 0) {
      stop_reason_ =
          absl::StrCat("every party sent Not-participate (", absl::StrJoin(reasons, "; "), ")");
    }
    return owner;
  }

  // The report: the replica of a party that holds sensitive values knows the confidences too;
  // any replica knows the steps, the cut and the group sizes. Take the most informative one,
  // and add every party's participation with its contribution (mu): the scores of the applied
  // specializations, summed per owner.
  void FillReport(const std::vector<VerticalStepResult>& released, const std::string& stop_reason,
                  fedanon::v1::Report* report) {
    *report = released[0].released().report();
    for (const auto& r : released) {
      if (r.released().report().largest_confidence() > report->largest_confidence()) {
        *report = r.released().report();
      }
    }
    report->set_stop_reason(stop_reason);
    for (const auto& step : report->steps()) {
      auto it = options_.attribute_party.find(step.attribute());
      if (it == options_.attribute_party.end()) continue;
      auto& p = participation_[it->second];
      p.set_contribution(p.contribution() + step.score());
    }
    for (const auto& party : options_.ring) *report->add_participation() = participation_[party];
  }

  // A data party's sealing key, verified against the CA (released columns are sealed by it).
  absl::StatusOr<std::unique_ptr<crypto::SealPublicKey>> SenderKey(const std::string& party) const {
    if (std::find(options_.ring.begin(), options_.ring.end(), party) == options_.ring.end()) {
      return absl::PermissionDeniedError(
          absl::StrCat("released columns name '", party, "', not a data party, as sender"));
    }
    for (const auto& p : channel_->Parties()) {
      if (p.name == party) {
        return crypto::VerifiedSealKey(p.seal_cert_pem, options_.ca_pem,
                                       {crypto::Role::kParty, party});
      }
    }
    return absl::UnavailableError(absl::StrCat("party '", party, "' is not connected"));
  }

  // The leader is the recipient: opens every party's columns (freeing each sealed copy once
  // open, reading the columns in place) and joins them into options_.store_result, or into *csv
  // without one. Returns the number of rows.
  absl::StatusOr<uint64_t> JoinAtLeader(std::vector<CarriedPayload>& columns, uint32_t round,
                                        std::string* csv) const {
    ASSIGN_OR_RETURN(auto keys, crypto::SealKeyPairFromPem(options_.leader_seal_key_pem));
    std::vector<common::VerticalColumnsView> parts;
    for (auto& payload : columns) {
      ASSIGN_OR_RETURN(std::unique_ptr<crypto::SealPublicKey> sender_key,
                       SenderKey(payload.sender()));
      ASSIGN_OR_RETURN(
          std::string bytes,
          OpenCarriedAtLeader(payload, *keys, *sender_key, options_.job_id, options_.run_id, round,
                              options_.leader_name, common::ReleasePurpose(options_.leader_name)));
      payload = CarriedPayload();
      ASSIGN_OR_RETURN(parts.emplace_back(), common::VerticalColumnsView::Parse(std::move(bytes)));
    }
    uint64_t rows = 0;
    for (const auto& part : parts) {
      if (!part.names().empty()) rows = part.rows();
    }
    auto produce = [&](const common::CsvSink& sink) {
      return common::JoinReleasedColumnsTo(parts, options_.header, sink);
    };
    if (options_.store_result) {
      RETURN_IF_ERROR(options_.store_result(produce));
    } else {
      csv->clear();
      RETURN_IF_ERROR(produce([csv](std::string_view piece) {
        csv->append(piece);
        return absl::OkStatus();
      }));
    }
    return rows;
  }

  common::PartyChannel* channel_;
  const VerticalJobOptions& options_;
  PayloadRelay relay_;  // per-record payloads, whole or in chunks
  IdMatchingClocks id_clock_;
  // Per party: rounds won and declined (with why), misbehaviour, contribution.
  std::map<std::string, fedanon::v1::PartyParticipation> participation_;
  std::string stop_reason_;  // of the last round in which every party declined
  size_t logged_ = 0;        // lines of options_.logged_before matched so far
};

// The leader's memory at a phase boundary (bench/vertical_daemons.sh prints these lines).
void LogUsage(const std::string& job_id, std::string_view phase) {
  const common::ProcessUsage usage = common::CurrentProcessUsage();
  spdlog::info("job={} leader memory at {}: RSS {:.0f} MB, peak RSS {:.0f} MB", job_id, phase,
               usage.rss_mb, usage.peak_rss_mb);
}

}  // namespace

absl::StatusOr<VerticalJobResult> RunVerticalJob(common::PartyChannel* channel,
                                                 const VerticalJobOptions& options) {
  RecordingChannel recording(channel, options);
  Driver driver(&recording, options);
  if (options.ring.size() < 2) {
    return absl::InvalidArgumentError("a vertical job needs at least 2 data parties");
  }
  VerticalJobResult result;

  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(result.common_records, driver.MatchIds());
  result.id_matching_seconds = Since(start);
  if (options.observer != nullptr) {
    options.observer->PhaseDone(Phase::kIdMatching, absl::Seconds(result.id_matching_seconds));
    options.observer->IdsMatched(result.common_records, absl::Seconds(result.id_matching_seconds));
  }
  spdlog::info("job={} round=0 ID matching done: {} common records ({:.2f} s)", options.job_id,
               result.common_records, result.id_matching_seconds);
  LogUsage(options.job_id, "ID matching done");

  start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(const std::string stop_reason, driver.RunRounds(&result));
  result.rounds_seconds = Since(start);
  LogUsage(options.job_id, "rounds done");

  start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(driver.Release(result.rounds + 1, stop_reason, &result));
  result.release_seconds = Since(start);
  LogUsage(options.job_id, "release done");
  result.replayed_calls = recording.replayed();
  return result;
}

}  // namespace fedanon::leader
