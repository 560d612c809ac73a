#include "common/wire/payload_chunks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace fedanon::wire {
namespace {

// ChunkMessageBytes measures a chunk's message without copying the chunk into it: the size must
// be the serialized message's, byte for byte, whatever the lengths of its varints.
TEST(ChunkMessageBytesTest, EqualsTheSerializedMessagesSize) {
  fedanon::v1::ChunkRef ref;
  ref.set_stream("release/job-0123456789ab/recipient");
  ref.set_sender("party1");
  ref.set_receiver("recipient");
  ref.set_purpose("released columns");
  ref.set_chunks(9);
  ref.set_total_bytes(123456789);
  ref.set_request_digest(std::string(32, '\x7f'));
  for (const uint32_t index : {0u, 1u, 127u, 128u, 70000u}) {
    for (const size_t bytes : {0, 1, 100, 127, 128, 16383, 16384, 2097151, 2097152}) {
      fedanon::v1::SealedPayload chunk;
      chunk.set_sender("party1");
      chunk.set_receiver("recipient");
      chunk.set_purpose("released columns");
      chunk.set_ciphertext(std::string(bytes, 'c'));
      fedanon::v1::PayloadChunk message;
      *message.mutable_ref() = ref;
      message.set_index(index);
      *message.mutable_chunk() = chunk;
      EXPECT_EQ(ChunkMessageBytes(ref, index, chunk), message.SerializeAsString().size())
          << "index " << index << ", " << bytes << " bytes of ciphertext";
    }
  }
  // An empty chunk and an empty ref (both present, as in every chunk's message).
  fedanon::v1::PayloadChunk empty;
  empty.mutable_ref();
  empty.mutable_chunk();
  EXPECT_EQ(ChunkMessageBytes({}, 0, {}), empty.SerializeAsString().size());
}

}  // namespace
}  // namespace fedanon::wire
