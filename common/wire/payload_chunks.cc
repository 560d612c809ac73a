#include "common/wire/payload_chunks.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "google/protobuf/io/coded_stream.h"

namespace fedanon::wire {

absl::StatusOr<uint64_t> NegotiatedMessageLimit(uint64_t leader_limit, uint64_t party_limit) {
  const uint64_t limit = std::min(leader_limit, party_limit);
  if (limit < kMinMessageLimitBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("message limit of ", limit, " bytes is below the smallest usable (",
                     kMinMessageLimitBytes, " bytes): no room for a payload chunk"));
  }
  return limit;
}

uint64_t ChunkHeadroom(uint64_t message_limit) {
  return std::max<uint64_t>(uint64_t{2} << 10, message_limit / 16);
}

uint64_t ChunkBytesForLimit(uint64_t message_limit) {
  const uint64_t headroom = ChunkHeadroom(message_limit);
  return message_limit > headroom ? message_limit - headroom : 1;
}

uint64_t MostPagesFor(uint64_t bytes) {
  const uint64_t smallest = std::max<uint64_t>(1, ChunkBytesForLimit(kMinMessageLimitBytes) / 2);
  return std::max<uint64_t>(1, (bytes + smallest - 1) / smallest);
}

std::string RequestDigest(uint64_t round, const google::protobuf::Message& request) {
  std::string bytes = absl::StrCat("fedanon request digest v1/round ", round, "/");
  request.AppendToString(&bytes);
  return crypto::Sha256(bytes);
}

std::string ChunkPurpose(const fedanon::v1::ChunkRef& ref, uint32_t index) {
  return absl::StrCat(ref.purpose(), "/chunk ", index, " of ", ref.chunks(), "/stream ",
                      ref.stream(), "/from ", ref.sender(), "/for ", ref.receiver(), "/bytes ",
                      ref.total_bytes(), "/request ", absl::BytesToHexString(ref.request_digest()));
}

std::vector<std::string_view> SplitPayload(std::string_view bytes, uint64_t chunk_bytes) {
  chunk_bytes = std::max<uint64_t>(chunk_bytes, 1);
  std::vector<std::string_view> out;
  for (size_t at = 0; at < bytes.size(); at += chunk_bytes)
    out.push_back(bytes.substr(at, chunk_bytes));
  if (out.empty()) out.emplace_back();
  return out;
}

uint64_t ChunkMessageBytes(const fedanon::v1::ChunkRef& ref, uint32_t index,
                           const fedanon::v1::SealedPayload& chunk) {
  // The message without the chunk's bytes (a chunk of megabytes is not copied to be measured):
  // an empty chunk is its tag and a one-byte length, the chunk its tag, its length and itself.
  fedanon::v1::PayloadChunk message;
  *message.mutable_ref() = ref;
  message.set_index(index);
  message.mutable_chunk();
  const uint64_t chunk_bytes = chunk.ByteSizeLong();
  return message.ByteSizeLong() - 1 +
         google::protobuf::io::CodedOutputStream::VarintSize64(chunk_bytes) + chunk_bytes;
}

absl::Status CheckChunkFits(const fedanon::v1::ChunkRef& ref, uint32_t index,
                            const fedanon::v1::SealedPayload& chunk, uint64_t message_limit) {
  const uint64_t size = ChunkMessageBytes(ref, index, chunk) + kChunkEnvelopeSlackBytes;
  if (size > message_limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat(DescribeStream(ref), ": chunk ", index, " needs ", size,
                     " bytes with its envelope, over the message limit of ", message_limit));
  }
  return absl::OkStatus();
}

bool SameChunkRef(const fedanon::v1::ChunkRef& a, const fedanon::v1::ChunkRef& b) {
  return a.stream() == b.stream() && a.sender() == b.sender() && a.receiver() == b.receiver() &&
         a.purpose() == b.purpose() && a.chunks() == b.chunks() &&
         a.total_bytes() == b.total_bytes() && a.request_digest() == b.request_digest();
}

std::string DescribeStream(const fedanon::v1::ChunkRef& ref) {
  return absl::StrCat("chunked payload '", ref.stream(), "' from '", ref.sender(), "'");
}

namespace {

// Chunks in memory.
class MemoryChunkStore final : public ChunkStore {
 public:
  absl::Status Append(const fedanon::v1::SealedPayload& chunk) override {
    chunks_.push_back(chunk);
    return absl::OkStatus();
  }
  absl::StatusOr<fedanon::v1::SealedPayload> Get(uint32_t index) const override {
    if (index >= chunks_.size()) return absl::OutOfRangeError("no such chunk");
    return chunks_[index];
  }
  uint32_t size() const override { return static_cast<uint32_t>(chunks_.size()); }
  std::vector<fedanon::v1::SealedPayload> Take() && { return std::move(chunks_); }

 private:
  std::vector<fedanon::v1::SealedPayload> chunks_;
};

}  // namespace

absl::StatusOr<ChunkReceiver> ChunkReceiver::Start(const fedanon::v1::ChunkRef& ref,
                                                   uint64_t max_total_bytes,
                                                   std::unique_ptr<ChunkStore> store) {
  if (ref.stream().empty()) return absl::InvalidArgumentError("a chunked payload without a name");
  if (ref.chunks() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeStream(ref), " declares no chunks"));
  }
  if (ref.total_bytes() > max_total_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(DescribeStream(ref), " declares ", ref.total_bytes(),
                     " bytes, over the limit of ", max_total_bytes));
  }
  // An honest sender cuts chunks of at least ChunkBytesForLimit(kMinMessageLimitBytes) bytes (all
  // but the last full): a count above that is the sender's word alone, and it sizes the work.
  const uint64_t smallest = ChunkBytesForLimit(kMinMessageLimitBytes);
  if (ref.chunks() > std::max<uint64_t>((ref.total_bytes() + smallest - 1) / smallest, 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeStream(ref), " declares ", ref.chunks(), " chunks for ", ref.total_bytes(),
        " bytes (chunks hold at least ", smallest, " bytes each but the last)"));
  }
  if (store == nullptr) store = std::make_unique<MemoryChunkStore>();
  return ChunkReceiver(ref, std::move(store));
}

absl::StatusOr<ChunkReceiver> ChunkReceiver::Resume(const fedanon::v1::ChunkRef& ref,
                                                    uint64_t max_total_bytes,
                                                    std::unique_ptr<ChunkStore> store) {
  if (store == nullptr) return absl::InternalError("resuming a chunk stream without its store");
  ASSIGN_OR_RETURN(ChunkReceiver receiver, Start(ref, max_total_bytes, std::move(store)));
  // Each held chunk checked again as on arrival (the count of bytes rebuilt).
  for (uint32_t i = 0; i < receiver.received(); ++i) {
    ASSIGN_OR_RETURN(const fedanon::v1::SealedPayload chunk, receiver.store_->Get(i));
    RETURN_IF_ERROR(receiver.CheckPlace(i, chunk));
    RETURN_IF_ERROR(receiver.Accept(i, chunk));
  }
  return receiver;
}

absl::Status ChunkReceiver::CheckPlace(uint32_t index,
                                       const fedanon::v1::SealedPayload& chunk) const {
  const std::string what = DescribeStream(ref_);
  if (index >= ref_.chunks()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": chunk ", index, " is beyond the declared count of ", ref_.chunks()));
  }
  if (chunk.sender() != ref_.sender() || chunk.receiver() != ref_.receiver()) {
    return absl::PermissionDeniedError(absl::StrCat(what, ": chunk ", index, " names '",
                                                    chunk.sender(), "' -> '", chunk.receiver(),
                                                    "', not the stream's sender and receiver"));
  }
  return absl::OkStatus();
}

absl::Status ChunkReceiver::Accept(uint32_t index, const fedanon::v1::SealedPayload& chunk) {
  const std::string what = DescribeStream(ref_);
  if (chunk.ciphertext().size() < crypto::kSealOverhead) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": chunk ", index, " is malformed"));
  }
  const uint64_t holds = chunk.ciphertext().size() - crypto::kSealOverhead;
  if (holds == 0 && ref_.total_bytes() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": chunk ", index, " is empty"));
  }
  if (holds > ref_.total_bytes() - sealed_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": oversize: chunk ", index,
                                                   " takes the payload over its declared ",
                                                   ref_.total_bytes(), " bytes"));
  }
  sealed_bytes_ += holds;
  return absl::OkStatus();
}

absl::Status ChunkReceiver::Add(const fedanon::v1::ChunkRef& ref, uint32_t index,
                                const fedanon::v1::SealedPayload& chunk) {
  const std::string what = DescribeStream(ref_);
  if (!SameChunkRef(ref, ref_)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": chunk ", index, " declares another payload shape"));
  }
  RETURN_IF_ERROR(CheckPlace(index, chunk));
  if (index < received()) {
    ASSIGN_OR_RETURN(const fedanon::v1::SealedPayload held, store_->Get(index));
    if (held.SerializeAsString() == chunk.SerializeAsString()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": duplicate chunk ", index, " with other content"));
  }
  if (index > received()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": gap: chunk ", index, " arrived before chunk ", received()));
  }
  RETURN_IF_ERROR(Accept(index, chunk));
  return store_->Append(chunk);
}

absl::Status ChunkReceiver::CheckWhole() const {
  if (!complete()) {
    return absl::FailedPreconditionError(absl::StrCat(DescribeStream(ref_),
                                                      " is incomplete: ", received(), " of ",
                                                      ref_.chunks(), " chunks received"));
  }
  if (sealed_bytes_ != ref_.total_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeStream(ref_), " holds ", sealed_bytes_,
                                                   " bytes, not the declared ",
                                                   ref_.total_bytes()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<fedanon::v1::SealedPayload>> ChunkReceiver::Take() && {
  RETURN_IF_ERROR(CheckWhole());
  if (auto* memory = dynamic_cast<MemoryChunkStore*>(store_.get())) {
    return std::move(*memory).Take();
  }
  std::vector<fedanon::v1::SealedPayload> out;
  for (uint32_t i = 0; i < received(); ++i) {
    ASSIGN_OR_RETURN(out.emplace_back(), store_->Get(i));
  }
  return out;
}

absl::Status ChunkReceiver::OpenTo(
    const std::function<absl::StatusOr<std::string>(const fedanon::v1::SealedPayload&,
                                                    const std::string& purpose)>& open,
    const std::function<absl::Status(std::string_view)>& sink) const {
  RETURN_IF_ERROR(CheckWhole());
  uint64_t opened = 0;
  for (uint32_t i = 0; i < received(); ++i) {
    ASSIGN_OR_RETURN(const fedanon::v1::SealedPayload chunk, store_->Get(i));
    ASSIGN_OR_RETURN(const std::string piece, open(chunk, ChunkPurpose(ref_, i)));
    if (piece.size() > ref_.total_bytes() - opened) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeStream(ref_), ": oversize: more bytes than the declared ", ref_.total_bytes()));
    }
    opened += piece.size();
    RETURN_IF_ERROR(sink(piece));
  }
  if (opened != ref_.total_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeStream(ref_), ": ", opened, " bytes, declared ", ref_.total_bytes()));
  }
  return absl::OkStatus();
}

void AnnounceChunks(uint64_t total_bytes, uint64_t chunk_bytes, fedanon::v1::ChunkRef* ref) {
  chunk_bytes = std::max<uint64_t>(chunk_bytes, 1);
  ref->set_chunks(
      static_cast<uint32_t>(std::max<uint64_t>((total_bytes + chunk_bytes - 1) / chunk_bytes, 1)));
  ref->set_total_bytes(total_bytes);
}

ChunkSealer::ChunkSealer(fedanon::v1::ChunkRef* ref, uint64_t total_bytes, uint64_t chunk_bytes,
                         Seal seal, Out out)
    : ref_(ref),
      chunk_bytes_(std::max<uint64_t>(chunk_bytes, 1)),
      seal_(std::move(seal)),
      out_(std::move(out)) {
  AnnounceChunks(total_bytes, chunk_bytes_, ref_);
}

absl::Status ChunkSealer::SealPiece() {
  if (next_ >= ref_->chunks()) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeStream(*ref_), ": more bytes than the announced ", ref_->total_bytes()));
  }
  ASSIGN_OR_RETURN(fedanon::v1::SealedPayload chunk, seal_(piece_, ChunkPurpose(*ref_, next_)));
  piece_.clear();
  RETURN_IF_ERROR(out_(next_, std::move(chunk)));
  ++next_;
  return absl::OkStatus();
}

absl::Status ChunkSealer::Append(std::string_view bytes) {
  appended_ += bytes.size();
  if (appended_ > ref_->total_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeStream(*ref_), ": more bytes than the announced ", ref_->total_bytes()));
  }
  while (!bytes.empty()) {
    const size_t take = std::min<size_t>(bytes.size(), chunk_bytes_ - piece_.size());
    piece_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (piece_.size() == chunk_bytes_) RETURN_IF_ERROR(SealPiece());
  }
  return absl::OkStatus();
}

absl::Status ChunkSealer::Finish() {
  if (appended_ != ref_->total_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeStream(*ref_), ": ", appended_,
                                                   " bytes, announced ", ref_->total_bytes()));
  }
  if (!piece_.empty() || next_ == 0) RETURN_IF_ERROR(SealPiece());
  if (next_ != ref_->chunks()) {
    return absl::InternalError(absl::StrCat(DescribeStream(*ref_), ": ", next_,
                                            " chunks sealed, announced ", ref_->chunks()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> OpenChunks(
    const fedanon::v1::ChunkRef& ref, const std::vector<fedanon::v1::SealedPayload>& chunks,
    const std::function<absl::StatusOr<std::string>(const fedanon::v1::SealedPayload&,
                                                    const std::string& purpose)>& open) {
  if (chunks.size() != ref.chunks()) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeStream(ref), ": ", chunks.size(), " chunks, declared ", ref.chunks()));
  }
  std::string out;
  out.reserve(ref.total_bytes());
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    ASSIGN_OR_RETURN(std::string piece, open(chunks[i], ChunkPurpose(ref, i)));
    if (piece.size() > ref.total_bytes() - out.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeStream(ref), ": oversize: more bytes than the declared ", ref.total_bytes()));
    }
    out += piece;
  }
  if (out.size() != ref.total_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeStream(ref), ": ", out.size(),
                                                   " bytes, declared ", ref.total_bytes()));
  }
  return out;
}

absl::StatusOr<std::vector<fedanon::v1::SealedPayload>> SealChunks(
    std::string_view bytes, uint64_t chunk_bytes, fedanon::v1::ChunkRef* ref,
    const std::function<absl::StatusOr<fedanon::v1::SealedPayload>(
        std::string_view piece, const std::string& purpose)>& seal) {
  const std::vector<std::string_view> pieces = SplitPayload(bytes, chunk_bytes);
  ref->set_chunks(static_cast<uint32_t>(pieces.size()));
  ref->set_total_bytes(bytes.size());
  std::vector<fedanon::v1::SealedPayload> out;
  out.reserve(pieces.size());
  for (uint32_t i = 0; i < pieces.size(); ++i) {
    ASSIGN_OR_RETURN(out.emplace_back(), seal(pieces[i], ChunkPurpose(*ref, i)));
  }
  return out;
}

}  // namespace fedanon::wire
