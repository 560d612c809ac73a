// Per-record payloads a party seals for another party and the leader relays: whole inside a
// step's reply, or — when the job negotiated chunks (common/wire/payload_chunks.h) — as a chunk
// stream this party keeps until the leader fetches it (ChunkGet), and chunks sealed for this
// party kept, checked as they arrive, until the step that names them (ChunkPut). The steps that
// produce payloads are answered once per step key (`step_answers`): the same request gets the
// same chunks (with whole payloads, only the request's fingerprint is kept: another request under
// the key is refused either way). No transport: the agent routes ChunkGet and ChunkPut here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/wire/payload_chunks.h"
#include "fedanon/v1/federation.pb.h"
#include "party/job_context.h"
#include "party/reply_cache.h"

namespace fedanon::party {

class PayloadTransfer {
 public:
  explicit PayloadTransfer(JobContext& ctx) : ctx_(ctx) {}

  // Seals `bytes` for `receiver`: whole into `whole` when the job does not chunk, else in chunks
  // kept for ChunkGet (described by `ref`, bound to the producing request's digest; the stream
  // is named by the producing step's key and the receiver).
  absl::Status SealPayload(const std::string& receiver, uint64_t round, const std::string& purpose,
                           const std::string& bytes, fedanon::v1::SealedPayload* whole,
                           fedanon::v1::ChunkRef* ref);
  // A winner's instruction sealed for `receiver` into `out` (whole or as a chunk stream).
  absl::Status SealInstruction(const std::string& receiver, uint64_t round,
                               const std::string& instruction,
                               fedanon::v1::VerticalInstructions* out);
  // The payload a step names: `ref` (its chunks put here, checked and opened in order) when it
  // names a stream, else `whole`. Sets `sender` to the party that sealed it.
  absl::StatusOr<std::string> OpenPayload(const fedanon::v1::SealedPayload& whole,
                                          const fedanon::v1::ChunkRef& ref, uint64_t round,
                                          const std::string& purpose, std::string* sender);
  // A secure comparison's message for `receiver` (protocol 5.0): whole into `whole` when it fits
  // one chunk (or the job does not chunk), so the leader relays it with the step instead of
  // fetching and handing its one chunk in two calls of their own; else as SealPayload.
  absl::Status SealMessage(const std::string& receiver, uint64_t round, const std::string& purpose,
                           const std::string& bytes, fedanon::v1::SealedPayload* whole,
                           fedanon::v1::ChunkRef* ref);
  // OpenPayload for a payload that must come from `sender` for this party (a secure comparison's
  // message from the other comparing party, SealMessage's: whole only up to one chunk).
  // PermissionDenied "<what> takes a message sealed by '<sender>' for '<self>'" when it names
  // anyone else (or nothing), "<what>: the input does not open as sealed by '<sender>' for
  // <binding>: <why>" when it does not open (also: whole but larger than one chunk).
  absl::StatusOr<std::string> OpenPayloadFrom(const std::string& sender,
                                              const fedanon::v1::SealedPayload& whole,
                                              const fedanon::v1::ChunkRef& ref, uint64_t round,
                                              const std::string& purpose, const std::string& what,
                                              const std::string& binding);

  // The streaming forms, for payloads larger than memory (the secure union's list). A payload of
  // `total_bytes` produced piece by piece: `produce` calls the append function it is given with
  // every piece, in order; the chunks go to a spill file (party/chunk_file.h), synced before this
  // returns, and are served from it. Only when the job's payloads travel in chunks.
  absl::Status SealPayloadStream(
      const std::string& receiver, uint64_t round, const std::string& purpose, uint64_t total_bytes,
      const std::function<absl::Status(const std::function<absl::Status(std::string_view)>&)>&
          produce,
      fedanon::v1::ChunkRef* ref);
  // After a restart: the spilled stream `ref` this party produced (named by a reply that left)
  // served again from its spill file, the same chunks. DataLoss when the file is not there or
  // describes another stream.
  absl::Status RestoreSpilledPayload(uint64_t round, const fedanon::v1::ChunkRef& ref);
  // A chunked payload sealed for this party opened chunk by chunk, each plaintext handed to
  // `sink` in order (checked as OpenPayload checks). The stream stays (spilled streams on disk
  // until the job ends), so that the step naming it can come again.
  absl::Status OpenPayloadTo(const fedanon::v1::ChunkRef& ref, uint64_t round,
                             const std::string& purpose,
                             const std::function<absl::Status(std::string_view)>& sink);
  // After a restart: the chunks of spilled streams received before it, back from their files.
  absl::Status ReloadSpilledInbox();
  // Where this job's spill files go: beside its state file, or (no durable state) a private
  // temporary directory removed with this object. Created on first use.
  absl::StatusOr<std::string> SpillDir();

  ~PayloadTransfer();
  PayloadTransfer(const PayloadTransfer&) = delete;
  PayloadTransfer& operator=(const PayloadTransfer&) = delete;

  // A chunk of one of this party's payloads for the leader to relay.
  absl::StatusOr<fedanon::v1::PartyMessage> ChunkGet(const fedanon::v1::LeaderMessage& request);
  // A chunk of a payload sealed for this party. `durable`: the chunk is recorded with the job's
  // state (a vertical job: a restarted party still has it when the step naming it comes).
  absl::StatusOr<fedanon::v1::PartyMessage> ChunkPut(const fedanon::v1::LeaderMessage& request,
                                                     bool durable);
  // Chunked payloads of rounds before `round` were relayed: dropped (bounded memory).
  void DropBefore(uint64_t round);
  // The chunks received for `ref` (after a restart, replayed from the state file) are not
  // needed again: the step that named them was answered before the restart.
  void DiscardReceived(const fedanon::v1::ChunkRef& ref) {
    inbox_.erase({ref.sender(), ref.stream()});
  }

  // The producing step being handled: its key (names its streams) and request digest.
  void StartProducing(std::string key, std::string digest) {
    producing_ = {std::move(key), std::move(digest)};
  }
  void StopProducing() { producing_ = {}; }
  // One request, one answer for the steps that produce chunked payloads: step key -> (digest of
  // the request, the reply given).
  ReplyCache<std::string>& step_answers() { return step_answers_; }
  // Records the answer of a producing step under `key`: the reply itself when payloads travel in
  // chunks (it names the chunks), only the request's fingerprint when they travel whole (the
  // reply holds the payload; the same request is answered again).
  void RecordStepAnswer(const std::string& key, std::string fingerprint,
                        const fedanon::v1::PartyMessage& reply) {
    step_answers_.Put(key, std::move(fingerprint),
                      ctx_.chunk_bytes > 0 ? reply : fedanon::v1::PartyMessage());
  }

 private:
  // A comparison message that came whole in a chunked job: opened if it fits one chunk.
  absl::StatusOr<std::string> OpenWholeMessage(const fedanon::v1::SealedPayload& whole,
                                               uint64_t round, const std::string& purpose);
  struct Outgoing {
    uint64_t round = 0;
    fedanon::v1::ChunkRef ref;
    std::vector<fedanon::v1::SealedPayload> chunks;
    std::shared_ptr<wire::ChunkStore> spilled;  // instead of `chunks` for a spilled stream
  };
  using Inbox = std::map<std::pair<std::string, std::string>, wire::ChunkReceiver>;
  // The received stream a step names as `ref`: PermissionDenied unless it is a `purpose` payload
  // for this party, FailedPrecondition when no chunk of it came, InvalidArgument when the step
  // declares another shape than its chunks.
  absl::StatusOr<Inbox::iterator> FindReceived(const fedanon::v1::ChunkRef& ref,
                                               const std::string& purpose);
  // Whether payloads of `purpose` go through spill files (the secure union's list).
  static bool Spills(const std::string& purpose);
  // The spill file of an incoming or outgoing stream.
  absl::StatusOr<std::string> SpillPath(bool incoming, const fedanon::v1::ChunkRef& ref);
  std::string spill_dir_;
  bool spill_dir_private_ = false;  // a temporary directory of this object
  JobContext& ctx_;
  // This party's chunked payloads, by stream, until a later round (ChunkGet serves them).
  std::map<std::string, Outgoing> outbox_;
  // Chunks of payloads sealed for this party, by (sender, stream), until a step names them.
  Inbox inbox_;
  ReplyCache<std::string> step_answers_;
  std::pair<std::string, std::string> producing_;
};

}  // namespace fedanon::party
