// Test-only reference implementation of RFC 9380 hash_to_curve for P256_XMD:SHA-256_SSWU_RO_ on
// OpenSSL BIGNUMs: the code crypto/ec_commutative_cipher.cc used before crypto/p256_field.*, kept
// for the differential tests (tests/crypto/hash_to_curve_test.cc). Same contracts and output bytes
// as the functions of the same names in crypto/ec_commutative_cipher.h.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fedanon::crypto::reference {

absl::StatusOr<std::string> MapToCurveSswuP256(std::string_view u);
absl::StatusOr<std::string> HashToCurve(std::string_view msg, std::string_view dst);

}  // namespace fedanon::crypto::reference
