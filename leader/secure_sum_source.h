// The horizontal federation's CountSource (mohammed2010 §5.1): every Collect is a ring secure
// sum over the data parties. The ring's first party masks the whole count vector with a mask it
// draws itself (arithmetic mod 2^64, from a seed: crypto::MaskWordsFromSeed), the vector visits
// every party once in the ring order fixed at Prepare — each hop sealed (sender-authenticated)
// for the next party and relayed by the leader, the last one sealed for the leader — and the
// leader removes the first party's mask from what came back: its seed, sealed for the leader,
// comes with the first party's answer to the last chunk (protocol 2.1; a 2.0 party is asked for
// it with a SumUnmask once every chunk went round, a round trip more per collect). No choice of the
// leader's exposes one party's counts to another party. Every sealed hop binds a digest of the
// request and of all state updates so far (wire::SumHopPurpose), so parties handed different
// requests cannot combine their counts. Instructions and split decisions ride along with the next
// secure sum, numbered so that each party applies each exactly once. Vectors longer than one chunk
// are sent in several rings, so a million-record job never hits a message-size limit. Not
// thread-safe (one job at a time).
//
// Durable jobs (docs/operations.md): with set_journal() (callbacks of leader/call_recorder.h),
// every collect is recorded as a call, its request digest before its first hop leaves and its
// unmasked sum (the reply) once complete; a source created after a leader restart with the
// recorded calls replays them without the network (checking that each replayed request has the
// recorded digest, so a diverging replay fails instead of asking the parties something new) and
// re-sends the open one, byte-identical to the requests sent before the restart (the parties
// answer them as before, the first party with the same mask).
//
// numeric_split: binned (protocol 4.0): a collect whose answer holds class counts over bins
// (engine::GuardedRanges) comes back without the first party's mask; the leader then relays the
// six sealed messages of its bin check between the ring's last party (steps 1, 3, 5) and its
// first (2, 4, 6), and asks for the mask with a SumUnmask, which the first party answers only
// when every bin held at least the bin bound of records (party/secure_sum_party.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/engine/count_source.h"
#include "common/engine/numeric_split.h"
#include "common/wire/party_channel.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"
#include "leader/job_store.h"
#include "leader/leader_observer.h"
#include "leader/view_log.h"

namespace fedanon::leader {

struct SecureSumStats {
  uint64_t collects = 0;
  uint64_t hops = 0;
  uint64_t bytes_sent = 0;      // serialized requests to parties
  uint64_t bytes_received = 0;  // serialized replies
};

class SecureSumCountSource : public engine::CountSource {
 public:
  // `hier` (the leader's copy of the public hierarchies) and `channel` are not owned.
  // `round()` gives the round number to stamp on messages; `check()` is called before every
  // hop and may return an error (e.g. Cancelled) to abort.
  SecureSumCountSource(wire::PartyChannel* channel, std::string job_id,
                       std::vector<std::string> ring, absl::Duration timeout,
                       const std::vector<engine::AttributeHierarchy>* hier, int num_classes,
                       size_t num_tracked, std::function<uint32_t()> round,
                       std::function<absl::Status()> check, size_t chunk_words = 1 << 20);

  // The instruction carries no group sizes (mohammed2010 §5.2 sends them; a party that lied
  // about its counts could subtract its own from them and read the others').
  absl::Status Specialize(int attr, engine::NodeIndex node, int c,
                          const std::vector<uint64_t>& new_group_sizes) override;
  absl::Status Split(int attr, engine::NodeIndex node, int32_t split_rank) override;
  absl::StatusOr<std::vector<uint64_t>> Collect(const engine::StatsRequest& request) override;
  // Local recoding (leader/local_group_source.h): a state update of another kind (its sequence is
  // set here) to ride along with the next secure sum, and a secure sum of a request that
  // engine::StatsRequest cannot express, whose answer has `words` words. The caller appends the
  // decoded vector to the view log (a failed sum's decoded prefix is logged here). `bins`: the
  // answer holds class counts over (within-group) bins, whose mask the ring's first party keeps
  // until their bin check held (party/secure_sum_party.h).
  void AddUpdate(fedanon::v1::StateUpdate update);
  absl::StatusOr<std::vector<uint64_t>> CollectProto(const fedanon::v1::StatsRequest& request,
                                                     size_t words, bool bins = false);

  // Required before Collect: the leader's name, the job's run id and the leader's sealing key
  // pair (to open the last hop and the mask), and the certified sealing keys of the ring's first
  // party (the mask's sender) and last party (the last hop's sender). Not owned.
  void set_sealing(std::string leader_name, std::string run_id,
                   const crypto::SealKeyPair* leader_keys,
                   const crypto::SealPublicKey* first_party_key,
                   const crypto::SealPublicKey* last_party_key) {
    leader_name_ = std::move(leader_name);
    run_id_ = std::move(run_id);
    leader_keys_ = leader_keys;
    first_party_key_ = first_party_key;
    last_party_key_ = last_party_key;
  }

  // The job's numeric_split (which collects hold bins to check); exact search by default.
  void set_numeric_split(engine::NumericSplitConfig numeric) { numeric_ = numeric; }

  const SecureSumStats& stats() const { return stats_; }

  // Where collects are recorded (CallRecorder::RequestRecorder and ReplyRecorder; both called
  // before Collect goes on, an error fails it), and the calls recorded before a restart
  // (CallRecorder::Load, one per collect, the reply the sum), replayed first.
  struct Journal {
    std::function<absl::Status(uint64_t collect, const std::string& digest)> record_request;
    std::function<absl::Status(uint64_t collect, const std::string& sum)> record_sum;
    std::vector<RecordedCall> recorded;
  };
  void set_journal(Journal journal) { journal_ = std::move(journal); }
  // Collects answered from the journal without the network so far, and whether the source has
  // gone past them (the first collect sent to the parties after a restart).
  uint64_t replayed() const { return replayed_; }

  // The state updates not yet delivered to the parties (they ride along with the final check,
  // leader/final_check_ring.h); none are pending afterwards.
  std::vector<fedanon::v1::StateUpdate> TakePendingUpdates() { return std::exchange(pending_, {}); }

  // Every decoded vector is appended to `log` (not owned; null: none), split into its parts.
  void set_view_log(ViewLog* log) { view_log_ = log; }
  // Told each secure sum's length and latency (not owned; null: nobody).
  void set_observer(LeaderObserver* observer) { observer_ = observer; }

 private:
  // One collect of `request_proto` (`words` long), up to the decoded vector.
  // `bins`: the answer holds class counts over bins, checked before the mask is asked for.
  absl::StatusOr<std::vector<uint64_t>> CollectVector(
      const fedanon::v1::StatsRequest& request_proto, size_t words, bool bins = false);
  // The bin check of `collect`: its six steps relayed between the ring's last and first parties;
  // the first party's mask seed that came with its last step (empty if none came).
  absl::StatusOr<fedanon::v1::SealedPayload> CheckBins(uint64_t collect);
  // The rings of one Collect: leaves in `sum` the totals the last hops carried, still masked.
  absl::Status CollectChunks(const fedanon::v1::StatsRequest& request_proto,
                             const std::string& request_digest, uint64_t collect, size_t words,
                             size_t chunks, std::vector<uint64_t>* sum,
                             fedanon::v1::SealedPayload* mask_seed);
  // The ring's first party's mask of `collect` (its seed, sealed for the leader), removed from
  // `sum`: the seed that came with its answer to the last chunk (`with_last_hop`, protocol 2.1),
  // or, when none came (a 2.0 party), the one it answers to a SumUnmask.
  absl::Status Unmask(const std::string& request_digest, uint64_t collect,
                      const fedanon::v1::SealedPayload& with_last_hop, std::vector<uint64_t>* sum);

  wire::PartyChannel* channel_;
  std::string job_id_;
  std::string run_id_;
  std::vector<std::string> ring_;
  absl::Duration timeout_;
  const std::vector<engine::AttributeHierarchy>* hier_;
  int num_classes_;
  size_t num_tracked_;
  std::function<uint32_t()> round_;
  std::function<absl::Status()> check_;
  size_t chunk_words_;
  engine::NumericSplitConfig numeric_{.mode = fedanon::v1::NUMERIC_SPLIT_EXACT};
  std::vector<fedanon::v1::StateUpdate> pending_;
  uint64_t next_sequence_ = 0;
  std::string update_chain_;  // wire::ChainStateUpdate over every update made so far
  std::string leader_name_;
  const crypto::SealKeyPair* leader_keys_ = nullptr;
  const crypto::SealPublicKey* first_party_key_ = nullptr;
  const crypto::SealPublicKey* last_party_key_ = nullptr;
  ViewLog* view_log_ = nullptr;
  LeaderObserver* observer_ = nullptr;
  uint64_t collects_ = 0;
  SecureSumStats stats_;
  Journal journal_;
  uint64_t replayed_ = 0;
};

}  // namespace fedanon::leader
