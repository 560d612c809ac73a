#include "party/payload_transfer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "party/chunk_file.h"
#include "party/job_journal.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

namespace {

constexpr char kSpillSuffix[] = ".chunks";

}  // namespace

PayloadTransfer::~PayloadTransfer() {
  outbox_.clear();
  inbox_.clear();
  if (spill_dir_private_) {
    std::error_code ec;
    std::filesystem::remove_all(spill_dir_, ec);
  }
}

bool PayloadTransfer::Spills(const std::string& purpose) { return purpose == "union-list"; }

absl::StatusOr<std::string> PayloadTransfer::SpillDir() {
  if (!spill_dir_.empty()) return spill_dir_;
  std::string dir;
  if (!ctx_.options().state_dir.empty()) {
    ASSIGN_OR_RETURN(dir, JobJournal::SpillDirFor(ctx_.options().state_dir, ctx_.job_id));
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return base::ErrnoStatus(errno, "cannot create the job's spill directory", dir);
    }
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/fedanon-spill-XXXXXX");
    if (::mkdtemp(templ.data()) == nullptr) {
      return base::ErrnoStatus(errno, "cannot create a spill directory", templ);
    }
    dir = templ;
    spill_dir_private_ = true;
  }
  spill_dir_ = dir;
  return spill_dir_;
}

absl::StatusOr<std::string> PayloadTransfer::SpillPath(bool incoming,
                                                       const fedanon::v1::ChunkRef& ref) {
  ASSIGN_OR_RETURN(const std::string dir, SpillDir());
  // Names from the stream's identity (never its text: names come from other participants).
  const std::string id = crypto::ToHex(
      crypto::Sha256(absl::StrCat(ref.sender(), "\n", ref.receiver(), "\n", ref.stream())));
  return absl::StrCat(dir, "/", incoming ? "in-" : "out-", id.substr(0, 32), kSpillSuffix);
}

absl::Status PayloadTransfer::SealPayloadStream(
    const std::string& receiver, uint64_t round, const std::string& purpose, uint64_t total_bytes,
    const std::function<absl::Status(const std::function<absl::Status(std::string_view)>&)>&
        produce,
    fedanon::v1::ChunkRef* ref) {
  if (ctx_.chunk_bytes == 0) {
    return absl::InternalError("a streamed payload in a job whose payloads travel whole");
  }
  if (producing_.first.empty()) return absl::InternalError("a chunked payload without a step");
  const std::string stream = absl::StrCat(producing_.first, "/", receiver);
  if (outbox_.count(stream)) {
    return absl::FailedPreconditionError(
        absl::StrCat("chunked payload '", stream, "' was already produced in this job"));
  }
  fedanon::v1::ChunkRef out;
  out.set_stream(stream);
  out.set_sender(ctx_.self());
  out.set_receiver(receiver);
  out.set_purpose(purpose);
  out.set_request_digest(producing_.second);
  ASSIGN_OR_RETURN(const std::string path, SpillPath(/*incoming=*/false, out));
  // The file's header holds the stream as announced (count and total are known in advance).
  fedanon::v1::ChunkRef announced = out;
  wire::AnnounceChunks(total_bytes, ctx_.chunk_bytes, &announced);
  ASSIGN_OR_RETURN(std::shared_ptr<ChunkFile> file,
                   ChunkFile::Create(path, announced, /*sync_each=*/false));
  wire::ChunkSealer sealer(
      &out, total_bytes, ctx_.chunk_bytes,
      [&](std::string_view piece,
          const std::string& chunk_purpose) -> absl::StatusOr<fedanon::v1::SealedPayload> {
        ASSIGN_OR_RETURN(fedanon::v1::SealedPayload chunk,
                         ctx_.SealFor(receiver, round, chunk_purpose, piece));
        chunk.set_purpose(purpose);
        return chunk;
      },
      [&](uint32_t index, const fedanon::v1::SealedPayload& chunk) -> absl::Status {
        RETURN_IF_ERROR(wire::CheckChunkFits(announced, index, chunk, ctx_.message_limit));
        return file->Append(chunk);
      });
  RETURN_IF_ERROR(produce([&](std::string_view bytes) { return sealer.Append(bytes); }));
  RETURN_IF_ERROR(sealer.Finish());
  RETURN_IF_ERROR(file->Sync());  // before the reply that names the stream leaves
  *ref = out;
  outbox_[stream] = Outgoing{round, std::move(out), {}, std::move(file)};
  return absl::OkStatus();
}

absl::Status PayloadTransfer::RestoreSpilledPayload(uint64_t round,
                                                    const fedanon::v1::ChunkRef& ref) {
  ASSIGN_OR_RETURN(const std::string path, SpillPath(/*incoming=*/false, ref));
  absl::StatusOr<std::unique_ptr<ChunkFile>> file = ChunkFile::Open(path, /*sync_each=*/false);
  if (!file.ok()) {
    return absl::DataLossError(absl::StrCat("the spilled ", wire::DescribeStream(ref),
                                            " cannot be served again: ", file.status().message()));
  }
  if (!wire::SameChunkRef((*file)->ref(), ref) || (*file)->size() != ref.chunks()) {
    return absl::DataLossError(absl::StrCat("the spill file of ", wire::DescribeStream(ref),
                                            " holds another stream or lacks chunks"));
  }
  outbox_[ref.stream()] = Outgoing{round, ref, {}, std::shared_ptr<ChunkFile>(*std::move(file))};
  return absl::OkStatus();
}

absl::Status PayloadTransfer::ReloadSpilledInbox() {
  if (ctx_.options().state_dir.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string dir,
                   JobJournal::SpillDirFor(ctx_.options().state_dir, ctx_.job_id));
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return absl::OkStatus();
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, "in-") || !absl::EndsWith(name, kSpillSuffix)) continue;
    ASSIGN_OR_RETURN(std::unique_ptr<ChunkFile> file,
                     ChunkFile::Open(entry.path().string(), /*sync_each=*/true));
    const fedanon::v1::ChunkRef ref = file->ref();
    ASSIGN_OR_RETURN(
        wire::ChunkReceiver receiver,
        wire::ChunkReceiver::Resume(ref, wire::kMaxChunkedPayloadBytes, std::move(file)));
    spdlog::info("job={} {}: {} of {} chunks received before the restart", ctx_.job_id,
                 wire::DescribeStream(ref), receiver.received(), ref.chunks());
    inbox_.insert_or_assign({ref.sender(), ref.stream()}, std::move(receiver));
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot list '", dir, "': ", ec.message()));
  spill_dir_ = dir;
  return absl::OkStatus();
}

absl::StatusOr<PayloadTransfer::Inbox::iterator> PayloadTransfer::FindReceived(
    const fedanon::v1::ChunkRef& ref, const std::string& purpose) {
  if (ref.receiver() != ctx_.self() || ref.purpose() != purpose) {
    return absl::PermissionDeniedError(
        absl::StrCat(wire::DescribeStream(ref), " is a '", ref.purpose(), "' payload for '",
                     ref.receiver(), "', not a '", purpose, "' payload for this party"));
  }
  auto it = inbox_.find({ref.sender(), ref.stream()});
  if (it == inbox_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat(wire::DescribeStream(ref), ": no chunk of it was received"));
  }
  if (!wire::SameChunkRef(it->second.ref(), ref)) {
    return absl::InvalidArgumentError(absl::StrCat(
        wire::DescribeStream(ref), ": the step names another shape than its chunks declared"));
  }
  return it;
}

absl::Status PayloadTransfer::OpenPayloadTo(
    const fedanon::v1::ChunkRef& ref, uint64_t round, const std::string& purpose,
    const std::function<absl::Status(std::string_view)>& sink) {
  ASSIGN_OR_RETURN(const auto it, FindReceived(ref, purpose));
  return it->second.OpenTo(
      [&](const fedanon::v1::SealedPayload& chunk, const std::string& chunk_purpose) {
        return ctx_.OpenSealed(chunk, round, chunk_purpose, /*observe=*/false);
      },
      [&](std::string_view piece) {
        ctx_.options().Observer().Opened(ref.sender(), purpose, std::string(piece));
        return sink(piece);
      });
}

absl::Status PayloadTransfer::SealPayload(const std::string& receiver, uint64_t round,
                                          const std::string& purpose, const std::string& bytes,
                                          fedanon::v1::SealedPayload* whole,
                                          fedanon::v1::ChunkRef* ref) {
  if (ctx_.chunk_bytes == 0) {
    ASSIGN_OR_RETURN(*whole, ctx_.SealFor(receiver, round, purpose, bytes));
    return absl::OkStatus();
  }
  if (producing_.first.empty()) return absl::InternalError("a chunked payload without a step");
  const std::string stream = absl::StrCat(producing_.first, "/", receiver);
  const std::string& request_digest = producing_.second;
  if (outbox_.count(stream)) {
    return absl::FailedPreconditionError(
        absl::StrCat("chunked payload '", stream, "' was already produced in this job"));
  }
  fedanon::v1::ChunkRef out;
  out.set_stream(stream);
  out.set_sender(ctx_.self());
  out.set_receiver(receiver);
  out.set_purpose(purpose);
  out.set_request_digest(request_digest);
  ASSIGN_OR_RETURN(std::vector<fedanon::v1::SealedPayload> chunks,
                   wire::SealChunks(bytes, ctx_.chunk_bytes, &out,
                                    [&](std::string_view piece, const std::string& chunk_purpose) {
                                      return ctx_.SealFor(receiver, round, chunk_purpose, piece);
                                    }));
  // The SealedPayload names the payload's purpose; the chunk's purpose is bound in the box.
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    chunks[i].set_purpose(purpose);
    RETURN_IF_ERROR(wire::CheckChunkFits(out, i, chunks[i], ctx_.message_limit));
  }
  *ref = out;
  outbox_[stream] = Outgoing{round, std::move(out), std::move(chunks), nullptr};
  return absl::OkStatus();
}

absl::Status PayloadTransfer::SealInstruction(const std::string& receiver, uint64_t round,
                                              const std::string& instruction,
                                              fedanon::v1::VerticalInstructions* out) {
  fedanon::v1::SealedPayload whole;
  fedanon::v1::ChunkRef ref;
  RETURN_IF_ERROR(SealPayload(receiver, round, "instruction", instruction, &whole, &ref));
  if (ref.stream().empty()) {
    *out->add_for_parties() = std::move(whole);
  } else {
    *out->add_refs() = std::move(ref);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> PayloadTransfer::OpenPayload(const fedanon::v1::SealedPayload& whole,
                                                         const fedanon::v1::ChunkRef& ref,
                                                         uint64_t round, const std::string& purpose,
                                                         std::string* sender) {
  if (ref.stream().empty()) {
    if (ctx_.chunk_bytes > 0 && !whole.ciphertext().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a whole '", purpose, "' payload in a job whose per-record payloads travel in chunks"));
    }
    if (sender != nullptr) *sender = whole.sender();
    return ctx_.OpenSealed(whole, round, purpose);
  }
  ASSIGN_OR_RETURN(const auto it, FindReceived(ref, purpose));
  wire::ChunkReceiver receiver = std::move(it->second);
  inbox_.erase(it);
  ASSIGN_OR_RETURN(std::vector<fedanon::v1::SealedPayload> chunks, std::move(receiver).Take());
  if (sender != nullptr) *sender = ref.sender();
  ASSIGN_OR_RETURN(
      std::string plain,
      wire::OpenChunks(
          ref, chunks,
          [&](const fedanon::v1::SealedPayload& chunk, const std::string& chunk_purpose) {
            return ctx_.OpenSealed(chunk, round, chunk_purpose, /*observe=*/false);
          }));
  ctx_.options().Observer().Opened(ref.sender(), purpose, plain);
  return plain;
}

absl::Status PayloadTransfer::SealMessage(const std::string& receiver, uint64_t round,
                                          const std::string& purpose, const std::string& bytes,
                                          fedanon::v1::SealedPayload* whole,
                                          fedanon::v1::ChunkRef* ref) {
  if (ctx_.chunk_bytes > 0 && bytes.size() > ctx_.chunk_bytes) {
    return SealPayload(receiver, round, purpose, bytes, whole, ref);
  }
  ASSIGN_OR_RETURN(*whole, ctx_.SealFor(receiver, round, purpose, bytes));
  return absl::OkStatus();
}

absl::StatusOr<std::string> PayloadTransfer::OpenWholeMessage(
    const fedanon::v1::SealedPayload& whole, uint64_t round, const std::string& purpose) {
  // A message of more than one chunk travels in chunks (SealMessage).
  if (whole.ciphertext().size() > ctx_.chunk_bytes + crypto::kSealOverhead) {
    return absl::InvalidArgumentError(absl::StrCat("a whole '", purpose, "' message of ",
                                                   whole.ciphertext().size(),
                                                   " bytes, more than one chunk of this job"));
  }
  return ctx_.OpenSealed(whole, round, purpose);
}

absl::StatusOr<std::string> PayloadTransfer::OpenPayloadFrom(
    const std::string& sender, const fedanon::v1::SealedPayload& whole,
    const fedanon::v1::ChunkRef& ref, uint64_t round, const std::string& purpose,
    const std::string& what, const std::string& binding) {
  const bool chunked = !ref.stream().empty();
  if ((chunked ? ref.sender() : whole.sender()) != sender ||
      (chunked ? ref.receiver() : whole.receiver()) != ctx_.self()) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " takes a message sealed by '", sender, "' for '", ctx_.self(), "'"));
  }
  absl::StatusOr<std::string> opened = !chunked && ctx_.chunk_bytes > 0
                                           ? OpenWholeMessage(whole, round, purpose)
                                           : OpenPayload(whole, ref, round, purpose, nullptr);
  if (!opened.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, ": the input does not open as sealed by '", sender, "' for ", binding,
                     ": ", opened.status().message()));
  }
  return opened;
}

absl::StatusOr<PartyMessage> PayloadTransfer::ChunkGet(const LeaderMessage& request) {
  const auto& get = request.chunk_get();
  auto it = outbox_.find(get.stream());
  if (it == outbox_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no chunked payload '", get.stream(), "' is held by this party"));
  }
  const Outgoing& out = it->second;
  const size_t count = out.spilled != nullptr ? out.spilled->size() : out.chunks.size();
  if (get.index() >= count) {
    return absl::InvalidArgumentError(absl::StrCat("chunked payload '", get.stream(), "': chunk ",
                                                   get.index(), " is beyond its count of ", count));
  }
  PartyMessage reply;
  auto* chunk = reply.mutable_chunk();
  *chunk->mutable_ref() = out.ref;
  chunk->set_index(get.index());
  if (out.spilled != nullptr) {
    ASSIGN_OR_RETURN(*chunk->mutable_chunk(), out.spilled->Get(get.index()));
  } else {
    *chunk->mutable_chunk() = out.chunks[get.index()];
  }
  RETURN_IF_ERROR(ctx_.Audit(
      request.round(), {.kind = kAuditPayloadChunk,
                        .form = kAuditSealed,
                        .to = {out.ref.receiver()},
                        .numbers = {{"index", get.index()},
                                    {"chunks", out.ref.chunks()},
                                    {"payload_bytes", out.ref.total_bytes()}},
                        .texts = {{"stream", out.ref.stream()}, {"purpose", out.ref.purpose()}}}));
  return reply;
}

absl::StatusOr<PartyMessage> PayloadTransfer::ChunkPut(const LeaderMessage& request, bool durable) {
  if (ctx_.chunk_bytes == 0) {
    return absl::FailedPreconditionError("this job's payloads travel whole, not in chunks");
  }
  const auto& put = request.chunk_put();
  const fedanon::v1::ChunkRef& ref = put.ref();
  if (ref.receiver() != ctx_.self()) {
    return absl::PermissionDeniedError(
        absl::StrCat(wire::DescribeStream(ref), " is for '", ref.receiver(), "'"));
  }
  if (std::find(ctx_.ring.begin(), ctx_.ring.end(), ref.sender()) == ctx_.ring.end()) {
    return absl::PermissionDeniedError(absl::StrCat(wire::DescribeStream(ref), ": '", ref.sender(),
                                                    "' is not a data party of the job"));
  }
  auto key = std::make_pair(ref.sender(), ref.stream());
  auto it = inbox_.find(key);
  const bool spilled = Spills(ref.purpose());
  if (it == inbox_.end()) {
    // A spilled stream's chunks go to its file, each synced before its acknowledgement leaves.
    std::unique_ptr<wire::ChunkStore> store;
    if (spilled) {
      ASSIGN_OR_RETURN(const std::string path, SpillPath(/*incoming=*/true, ref));
      ASSIGN_OR_RETURN(store, ChunkFile::Create(path, ref, /*sync_each=*/true));
    }
    ASSIGN_OR_RETURN(
        wire::ChunkReceiver started,
        wire::ChunkReceiver::Start(ref, wire::kMaxChunkedPayloadBytes, std::move(store)));
    it = inbox_.emplace(key, std::move(started)).first;
  }
  RETURN_IF_ERROR(it->second.Add(ref, put.index(), put.chunk()));
  // The chunks this party received are durable (a restarted party still has them when the step
  // that names them comes): in the state file, or in their spill file.
  if (durable && !spilled && !ctx_.replaying) ctx_.fresh_answer = true;
  PartyMessage reply;
  reply.mutable_chunk_ack()->set_received(it->second.received());
  RETURN_IF_ERROR(ctx_.Audit(
      request.round(), {.kind = kAuditChunkReceipt,
                        .form = kAuditPlaintext,
                        .to = {ctx_.leader},
                        .numbers = {{"index", put.index()}, {"received", it->second.received()}},
                        .texts = {{"stream", ref.stream()}, {"from", ref.sender()}}}));
  return reply;
}

void PayloadTransfer::DropBefore(uint64_t round) {
  for (auto it = outbox_.begin(); it != outbox_.end();) {
    it = it->second.round < round ? outbox_.erase(it) : std::next(it);
  }
}

}  // namespace fedanon::party
