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
#include "leader/vertical_session.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using fedanon::v1::VerticalStepResult;

// 1. Private ID matching (docs/crypto.md, "ID matching"): every list in batches of
//    options_.id_batch_ids ids round the ring (MatchIdBatches), the leader's intersection of the
//    lists' digests handed to every party (IdCommon), and the alignment once every party's
//    signed statement on that intersection agrees (IdAlign). Returns the number of records
//    common to every party.
absl::StatusOr<uint64_t> VerticalSession::MatchIds() {
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
    e.counts = {lists[o].size() / wire::kIdDigestBytes};
    RETURN_IF_ERROR(Log(e));
  }
  ASSIGN_OR_RETURN(const std::string common, wire::CommonDigests(lists));
  lists.clear();
  // Every party gets the common digests in batches and answers the last with its signed
  // statement; every party then aligns on every party's statement.
  const uint32_t size = options_.id_batch_ids;
  const size_t count = common.size() / wire::kIdDigestBytes;
  const auto common_start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(const std::vector<fedanon::v1::SignedIdCommon> statements,
                   HandCommonDigests(common));
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
    RETURN_IF_ERROR(Log(e));
    if (replies[r].ids().common_records() != count) {
      return absl::InternalError(absl::StrCat("party '", ring[r], "' aligned ",
                                              replies[r].ids().common_records(),
                                              " common records, not the ", count, " handed out"));
    }
  }
  return count;
}

// Hands every party the common digests (`common`, packed) in batches (IdCommon); each answers the
// last batch with its signed statement on them, returned in ring order.
absl::StatusOr<std::vector<fedanon::v1::SignedIdCommon>> VerticalSession::HandCommonDigests(
    const std::string& common) {
  const auto& ring = options_.ring;
  const size_t n = ring.size();
  std::vector<fedanon::v1::SignedIdCommon> statements(n);
  const uint32_t size = options_.id_batch_ids;
  const size_t count = common.size() / wire::kIdDigestBytes;
  const auto batches = static_cast<uint32_t>(std::max<size_t>(1, (count + size - 1) / size));
  RETURN_IF_ERROR(ForEachList(n, [&](size_t k) -> absl::Status {
    for (uint32_t b = 0; b < batches; ++b) {
      fedanon::v1::VerticalStep step;
      auto* c = step.mutable_id_common();
      c->set_batch(b);
      c->set_batches(batches);
      c->set_batch_ids(size);
      const size_t first = size_t{b} * size;
      c->set_digests(common.substr(first * wire::kIdDigestBytes,
                                   std::min<size_t>(size, count - first) * wire::kIdDigestBytes));
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
  return statements;
}

// Waits until `ready` holds (under board.mu) or the job fails or is cancelled.
absl::Status VerticalSession::AwaitBoard(IdBoard& board, std::unique_lock<std::mutex>& lock,
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
absl::StatusOr<std::string> VerticalSession::OpenDigestsAtLeader(
    const fedanon::v1::SealedPayload& sealed, const std::string& sender, size_t o, uint32_t b,
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
      wire::IdDigestsPurpose(options_.run_id, options_.ring[o], b, batches)};
  absl::StatusOr<std::string> bytes =
      crypto::OpenFrom(*keys, *sender_key, context, sealed.ciphertext());
  if (!bytes.ok()) {
    return absl::Status(
        bytes.status().code(),
        absl::StrCat("party '", sender,
                     "' sent ID digests the leader cannot open: ", bytes.status().message()));
  }
  fedanon::v1::IdList list;
  if (!list.ParseFromString(*bytes) || list.digests().size() % wire::kIdDigestBytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("party '", sender, "' sent ID digests that do not parse"));
  }
  return std::move(*list.mutable_digests());
}

// Party k's thread: item (origin o, batch b, hop h) is party (o + h) % n's work on batch b of
// o's list (wire::IdLastHop): h = 0 its owner's IdEncrypt, then IdReEncrypt hops; with two
// parties, h = n stands for the delivery of the owner's digests (IdDigests). Each party runs
// its items in one fixed order, by (b + h, h, o): an item only needs (o, b, h - 1), whose key is
// one less, so every party progresses, each works on a batch while the leader relays the
// others, and the n-th call to a party is the same in every run (RecordingChannel's replay).
absl::Status VerticalSession::RunIdWorker(size_t k, IdBoard& board) {
  const size_t n = options_.ring.size();
  ASSIGN_OR_RETURN(const uint32_t own_batches, EncryptOwnBatch(k, 0, board));
  std::vector<uint32_t> batches;
  {
    std::unique_lock<std::mutex> lock(board.mu);
    board.batches[k] = own_batches;
    ++board.known;
    board.changed.notify_all();
    RETURN_IF_ERROR(AwaitBoard(board, lock, [&] { return board.known == n; }));
    batches = board.batches;
  }
  for (const IdWorkItem& item : IdWorkItems(k, batches)) {
    if (item.hop == 0) {
      ASSIGN_OR_RETURN(const uint32_t count, EncryptOwnBatch(k, item.batch, board));
      if (count != batches[k]) {
        return absl::InternalError(
            absl::StrCat("party '", options_.ring[k], "' changed its batch count"));
      }
    } else if (item.hop == n && !wire::IdListsBlinded(n)) {
      RETURN_IF_ERROR(HandOwnerDigests(k, item, batches, board));
    } else {
      RETURN_IF_ERROR(ReencryptHop(k, item, batches, board));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> VerticalSession::EncryptOwnBatch(size_t k, uint32_t b, IdBoard& board) {
  const auto& ring = options_.ring;
  const size_t n = ring.size();
  const uint32_t size = options_.id_batch_ids;
  const std::string& party = ring[k];
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
  // The batch count sizes the leader's work lists: never beyond what the signed limit needs.
  if (const uint64_t most = (options_.max_records_per_party + size - 1) / size;
      ids.batches() > most) {
    return absl::DataLossError(absl::StrCat(
        kIdBatchesAboveLimit, ": party '", party, "' declares its ID list in ", ids.batches(),
        " batches of ", size, " ids; the job's max_records_per_party of ",
        options_.max_records_per_party, " needs at most ", most));
  }
  std::lock_guard<std::mutex> lock(board.mu);
  board.hops[{k, b, 0}] = ids.list();
  board.changed.notify_all();
  return ids.batches();
}

std::vector<VerticalSession::IdWorkItem> VerticalSession::IdWorkItems(
    size_t k, const std::vector<uint32_t>& batches) const {
  const size_t n = options_.ring.size();
  const size_t last = wire::IdLastHop(n);
  std::vector<IdWorkItem> items;
  for (size_t h = 0; h <= last; ++h) {
    const size_t o = (k + n - h % n) % n;
    for (uint32_t b = (h == 0 ? 1 : 0); b < batches[o]; ++b) items.push_back({b + h, h, o, b});
  }
  if (!wire::IdListsBlinded(n)) {
    // The other party's last hop sealed this party's digests for it too.
    for (uint32_t b = 0; b < batches[k]; ++b) items.push_back({b + n, n, k, b});
  }
  std::sort(items.begin(), items.end(), [](const IdWorkItem& a, const IdWorkItem& b) {
    return std::tie(a.key, a.hop, a.origin) < std::tie(b.key, b.hop, b.origin);
  });
  return items;
}

template <typename Map>
absl::StatusOr<fedanon::v1::SealedPayload> VerticalSession::TakeFromBoard(
    IdBoard& board, Map& from, const typename Map::key_type& key) {
  const auto w = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(board.mu);
  RETURN_IF_ERROR(AwaitBoard(board, lock, [&] { return from.count(key) > 0; }));
  auto node = from.extract(key);
  lock.unlock();
  id_clock_.Add(&IdMatchingClock::fetch, Since(w));
  return std::move(node.mapped());
}

absl::Status VerticalSession::HandOwnerDigests(size_t k, const IdWorkItem& item,
                                               const std::vector<uint32_t>& batches,
                                               IdBoard& board) {
  ASSIGN_OR_RETURN(fedanon::v1::SealedPayload sealed,
                   TakeFromBoard(board, board.owner_digests, std::pair{item.origin, item.batch}));
  fedanon::v1::VerticalStep step;
  auto* d = step.mutable_id_digests();
  d->set_origin(options_.ring[item.origin]);
  d->set_batch(item.batch);
  d->set_batches(batches[item.origin]);
  d->set_batch_ids(options_.id_batch_ids);
  *d->mutable_digests() = std::move(sealed);
  const auto t = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(Call(options_.ring[k], 0, std::move(step)).status());
  id_clock_.Add(&IdMatchingClock::hand, Since(t));
  return absl::OkStatus();
}

absl::Status VerticalSession::ReencryptHop(size_t k, const IdWorkItem& item,
                                           const std::vector<uint32_t>& batches, IdBoard& board) {
  const auto& ring = options_.ring;
  const size_t n = ring.size();
  const std::string& party = ring[k];
  const std::string& origin = ring[item.origin];
  ASSIGN_OR_RETURN(
      fedanon::v1::SealedPayload input,
      TakeFromBoard(board, board.hops, std::tuple{item.origin, item.batch, item.hop - 1}));
  fedanon::v1::VerticalStep step;
  auto* re = step.mutable_id_reencrypt();
  *re->mutable_list() = std::move(input);
  re->set_origin(origin);
  const bool is_last = item.hop == wire::IdLastHop(n);
  if (!is_last) re->set_next(ring[(item.origin + item.hop + 1) % n]);
  re->set_batch(item.batch);
  re->set_batches(batches[item.origin]);
  re->set_batch_ids(options_.id_batch_ids);
  const auto t = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(VerticalStepResult reply, Call(party, 0, std::move(step)));
  id_clock_.Add(&IdMatchingClock::reencrypt, Since(t));
  auto* ids = reply.mutable_ids();
  if (!is_last) {
    std::lock_guard<std::mutex> lock(board.mu);
    board.hops[{item.origin, item.batch, item.hop}] = std::move(*ids->mutable_list());
    board.changed.notify_all();
    return absl::OkStatus();
  }
  // The last hop: the digests for the leader, and for the owner when it is another party.
  const size_t expected = wire::IdListsBlinded(n) ? 1 : 2;
  if (static_cast<size_t>(ids->for_parties_size()) != expected) {
    return absl::InternalError(
        absl::StrCat("party '", party, "' sealed the digests of a batch of '", origin,
                     "''s list for ", ids->for_parties_size(), " receivers, not ", expected));
  }
  ASSIGN_OR_RETURN(std::string digests, OpenDigestsAtLeader(ids->for_parties(0), party, item.origin,
                                                            item.batch, batches[item.origin]));
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
  return absl::OkStatus();
}

}  // namespace fedanon::leader
