#include "crypto/secret_bytes.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fedanon::crypto {

absl::Status InitSecureHeap(std::string* warning, size_t bytes) {
  warning->clear();
  if (CRYPTO_secure_malloc_initialized()) return absl::OkStatus();
  // Smallest allocation 32 bytes: a P-256 scalar's BIGNUM words fit in one.
  switch (CRYPTO_secure_malloc_init(bytes, 32)) {
    case 1:
      return absl::OkStatus();
    case 2:
      *warning =
          "OpenSSL's secure heap could not be locked in memory (RLIMIT_MEMLOCK): secret scalars "
          "may be swapped out";
      return absl::OkStatus();
    default:
      return absl::FailedPreconditionError("cannot initialise OpenSSL's secure heap");
  }
}

SecretBytes::SecretBytes(size_t size)
    : data_(size == 0 ? nullptr : new uint8_t[size]()), size_(size) {}

SecretBytes SecretBytes::CopyFrom(absl::Span<const uint8_t> bytes) {
  SecretBytes out(bytes.size());
  if (!bytes.empty()) std::memcpy(out.data_.get(), bytes.data(), bytes.size());
  return out;
}

SecretBytes SecretBytes::CopyFrom(std::string_view bytes) {
  return CopyFrom(
      absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

SecretBytes::~SecretBytes() { Wipe(); }

SecretBytes::SecretBytes(SecretBytes&& other) noexcept
    : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
  if (this != &other) {
    Wipe();
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SecretBytes SecretBytes::Clone() const { return CopyFrom(span()); }

void SecretBytes::Wipe() {
  if (data_ != nullptr && size_ > 0) OPENSSL_cleanse(data_.get(), size_);
  data_.reset();
  size_ = 0;
}

std::string SecretBytes::RedactedString() const {
  return absl::StrCat("SecretBytes(<redacted>, ", size_, " bytes)");
}

bool operator==(const SecretBytes& a, const SecretBytes& b) {
  if (a.size_ != b.size_) return false;
  if (a.size_ == 0) return true;
  return CRYPTO_memcmp(a.data_.get(), b.data_.get(), a.size_) == 0;
}

absl::Status FillRandom(absl::Span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const size_t chunk = std::min<size_t>(out.size() - done, INT_MAX / 2);
    if (RAND_bytes(out.data() + done, static_cast<int>(chunk)) != 1) {
      const unsigned long err = ERR_get_error();  // NOLINT(runtime/int): OpenSSL's type
      ERR_clear_error();
      return absl::InternalError(absl::StrCat("RAND_bytes failed: ", err));
    }
    done += chunk;
  }
  return absl::OkStatus();
}

absl::StatusOr<SecretBytes> RandomBytes(size_t n) {
  SecretBytes out(n);
  if (absl::Status st = FillRandom(out.mutable_span()); !st.ok()) return st;
  return out;
}

absl::StatusOr<std::vector<uint64_t>> RandomUint64Vector(size_t n) {
  std::vector<uint64_t> out(n);
  if (absl::Status st = FillRandom(
          absl::Span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), n * sizeof(uint64_t)));
      !st.ok()) {
    return st;
  }
  return out;
}

}  // namespace fedanon::crypto
