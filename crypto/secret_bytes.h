// SecretBytes: an owning buffer for key material (private keys, cipher scalars, shared secrets),
// plus CSPRNG helpers.
//
// Purpose: keep secrets out of logs and out of freed memory. The buffer is wiped with
// OPENSSL_cleanse when destroyed, overwritten by assignment, or moved from; equality is a
// constant-time comparison (CRYPTO_memcmp) so comparing keys does not leak a prefix length;
// stringification (operator<<, AbslStringify for newer Abseil, GoogleTest's PrintTo)
// prints only "SecretBytes(<redacted>, N bytes)", never the contents.
//
// Thread-safety: a SecretBytes is a plain value: const access from several threads is safe,
// mutation needs external synchronisation. RandomBytes/RandomUint64Vector are thread-safe
// (OpenSSL's DRBG is).
//
// Security assumptions: the process memory is trusted (no protection against a debugger, core
// dumps or swap: the buffer is not mlock'ed); wiping is best effort (copies made by callers via
// data()/AsStringView() are the callers' responsibility).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace fedanon::crypto {

// Initialises OpenSSL's secure heap (CRYPTO_secure_malloc_init: a separate, mlock'ed,
// guard-paged arena that BN_secure_new draws from, so the ID-matching cipher's secret scalars
// stay out of swap and out of the ordinary heap). Daemons call it once at startup, before any
// thread uses OpenSSL. Returns FailedPrecondition when the arena cannot be created; OK with a
// warning text in `*warning` when it exists but could not be locked in memory (RLIMIT_MEMLOCK).
// Idempotent.
absl::Status InitSecureHeap(std::string* warning, size_t bytes = size_t{1} << 20);

class SecretBytes {
 public:
  // An empty buffer.
  SecretBytes() = default;
  // `size` zero bytes.
  explicit SecretBytes(size_t size);
  // Copies `bytes` (the caller remains responsible for wiping its own copy).
  static SecretBytes CopyFrom(absl::Span<const uint8_t> bytes);
  static SecretBytes CopyFrom(std::string_view bytes);

  ~SecretBytes();
  SecretBytes(SecretBytes&& other) noexcept;
  SecretBytes& operator=(SecretBytes&& other) noexcept;
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;

  // An explicit deep copy (copying key material should be visible in the code).
  SecretBytes Clone() const;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint8_t* data() const { return data_.get(); }
  uint8_t* data() { return data_.get(); }
  absl::Span<const uint8_t> span() const { return {data_.get(), size_}; }
  absl::Span<uint8_t> mutable_span() { return {data_.get(), size_}; }
  std::string_view AsStringView() const {
    return {reinterpret_cast<const char*>(data_.get()), size_};
  }

  // Constant time in the contents for equal sizes (sizes are not secret).
  friend bool operator==(const SecretBytes& a, const SecretBytes& b);
  friend bool operator!=(const SecretBytes& a, const SecretBytes& b) { return !(a == b); }

  // Never prints the contents.
  template <typename Sink>
  friend void AbslStringify(Sink& sink, const SecretBytes& s) {
    sink.Append(s.RedactedString());
  }
  friend std::ostream& operator<<(std::ostream& os, const SecretBytes& s) {
    return os << s.RedactedString();
  }
  // GoogleTest printer (otherwise gtest would hex-dump the object representation).
  friend void PrintTo(const SecretBytes& s, std::ostream* os) { *os << s.RedactedString(); }

 private:
  void Wipe();
  std::string RedactedString() const;

  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
};

// Fills `out` from the OpenSSL CSPRNG (RAND_bytes). kInternal if the DRBG fails.
absl::Status FillRandom(absl::Span<uint8_t> out);
// `n` bytes from the OpenSSL CSPRNG, in a SecretBytes.
absl::StatusOr<SecretBytes> RandomBytes(size_t n);
// `n` uniformly random 64-bit words from the OpenSSL CSPRNG.
absl::StatusOr<std::vector<uint64_t>> RandomUint64Vector(size_t n);

}  // namespace fedanon::crypto
