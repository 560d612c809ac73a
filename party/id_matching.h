// Private ID matching for vertical jobs (interim version; see docs/crypto.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crypto/ec_commutative_cipher.h"

namespace fedanon::party {

struct IdAlignment {
  std::vector<int64_t> canonical;  // per own record: canonical position or -1
  uint64_t common = 0;
};

class IdMatcher {
 public:
  static absl::StatusOr<std::unique_ptr<IdMatcher>> Create(const std::vector<std::string>& ids);
  absl::StatusOr<std::vector<std::string>> EncryptOwn() const;
  absl::StatusOr<std::vector<std::string>> ReEncrypt(const std::vector<std::string>& points) const;
  absl::StatusOr<IdAlignment> Align(size_t own_index,
                                    const std::vector<std::vector<std::string>>& full) const;

 private:
  std::vector<std::string> ids_;
  std::unique_ptr<crypto::EcCommutativeCipher> cipher_;
};

}  // namespace fedanon::party
