// Fuzz target: the sealed box (crypto/sealed_box.h) with a fixed key pair and context. The first
// byte picks what the rest of the input is:
//   0: a sealed box to Open. Open either returns a plaintext exactly kSealOverhead bytes shorter or
//      fails with InvalidArgument or PermissionDenied, the only codes of its error contract.
//   1: a plaintext to Seal; it must Open back to itself, and Open must fail (with one of those two
//      codes) once any byte of the box is changed (which byte: the next two input bytes) or the
//      context differs.
//   2: a SEC1 point for SealPublicKey::FromUncompressedPoint; 3: a DER SubjectPublicKeyInfo for
//      FromSpkiDer. A key that loads must survive the round trip through the other encoding.
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "tests/fuzz/fuzz_support.h"

namespace fedanon::fuzz {
namespace {

using crypto::SealContext;
using crypto::SealKeyPair;
using crypto::SealPublicKey;

// A P-256 key made for this fuzz target only (it protects nothing).
constexpr char kFuzzKeyPem[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgCrHfr8Oq2yP5SxPQ\n"
    "Obf8qQzgzy6S+Jq3EFEnHfzNFO+hRANCAATC3jOA8xbFSRQmd0pLmOwZIex89m/D\n"
    "X7/3HR9GHtAv2xNv9+8Xd/QxqReXhaQEufnBZtvLf8QPczEy5pK4gzv9\n"
    "-----END PRIVATE KEY-----\n";

const SealKeyPair& Keys() {
  static const SealKeyPair* keys = [] {
    absl::StatusOr<std::unique_ptr<SealKeyPair>> k = crypto::SealKeyPairFromPem(kFuzzKeyPem);
    if (!k.ok()) FuzzFail("the fixed key does not load");
    return k->release();
  }();
  return *keys;
}

const SealContext& Context() {
  static const SealContext context{"job-0123456789ab", "run",        7,
                                   "hospital-a",       "hospital-b", "secure-sum/3/0"};
  return context;
}

void CheckFailure(const absl::Status& status) {
  if (status.ok()) FuzzFail("Open accepted what it must reject");
  if (status.code() != absl::StatusCode::kInvalidArgument &&
      status.code() != absl::StatusCode::kPermissionDenied) {
    FuzzFail("Open failed with a code outside its error contract");
  }
}

void CheckOpen(std::string_view sealed) {
  absl::StatusOr<std::string> plain = crypto::Open(Keys(), Context(), sealed);
  if (!plain.ok()) {
    CheckFailure(plain.status());
    return;
  }
  if (plain->size() + crypto::kSealOverhead != sealed.size()) FuzzFail("plaintext size");
}

void CheckRoundTrip(FuzzInput& in) {
  const size_t flip = in.Byte() | static_cast<size_t>(in.Byte()) << 8;
  const std::string_view plaintext = in.Rest();
  absl::StatusOr<std::string> sealed = crypto::Seal(Keys().public_key(), Context(), plaintext);
  if (!sealed.ok()) FuzzFail("Seal failed");
  if (sealed->size() != plaintext.size() + crypto::kSealOverhead) FuzzFail("box size");
  absl::StatusOr<std::string> opened = crypto::Open(Keys(), Context(), *sealed);
  if (!opened.ok() || *opened != plaintext) FuzzFail("a box does not open to its plaintext");
  SealContext other = Context();
  other.round += 1;
  absl::StatusOr<std::string> replayed = crypto::Open(Keys(), other, *sealed);
  CheckFailure(replayed.status());
  if (replayed.status().code() != absl::StatusCode::kPermissionDenied) {
    FuzzFail("a box opened in another round is not PermissionDenied");
  }
  std::string modified = *sealed;
  modified[flip % modified.size()] ^= static_cast<char>(1 + flip / modified.size() % 255);
  CheckFailure(crypto::Open(Keys(), Context(), modified).status());
}

void CheckPointKey(std::string_view point) {
  absl::StatusOr<std::unique_ptr<SealPublicKey>> key = SealPublicKey::FromUncompressedPoint(point);
  if (!key.ok()) return;
  if ((*key)->UncompressedPoint() != point) FuzzFail("the cached point differs from the input");
  absl::StatusOr<std::string> der = (*key)->SpkiDer();
  if (!der.ok()) FuzzFail("a loaded key has no SPKI");
  absl::StatusOr<std::unique_ptr<SealPublicKey>> again = SealPublicKey::FromSpkiDer(*der);
  if (!again.ok() || (*again)->UncompressedPoint() != point) FuzzFail("SPKI round trip");
}

void CheckSpkiKey(std::string_view der) {
  absl::StatusOr<std::unique_ptr<SealPublicKey>> key = SealPublicKey::FromSpkiDer(der);
  if (!key.ok()) return;
  const std::string& point = (*key)->UncompressedPoint();
  if (point.size() != crypto::kSealPointSize || point[0] != 0x04) FuzzFail("cached point");
  absl::StatusOr<std::unique_ptr<SealPublicKey>> again =
      SealPublicKey::FromUncompressedPoint(point);
  if (!again.ok() || (*again)->UncompressedPoint() != point) FuzzFail("point round trip");
}

void FuzzSealedBox(FuzzInput in) {
  switch (in.Byte() % 4) {
    case 0:
      CheckOpen(in.Rest());
      break;
    case 1:
      CheckRoundTrip(in);
      break;
    case 2:
      CheckPointKey(in.Rest());
      break;
    default:
      CheckSpkiKey(in.Rest());
      break;
  }
}

std::string Sealed(std::string_view plaintext) {
  absl::StatusOr<std::string> sealed = crypto::Seal(Keys().public_key(), Context(), plaintext);
  if (!sealed.ok()) FuzzFail("Seal failed");
  return *sealed;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FuzzSeeds() {
  const std::string point = Keys().public_key().UncompressedPoint();
  absl::StatusOr<std::string> der = Keys().public_key().SpkiDer();
  if (!der.ok()) FuzzFail("no SPKI");
  std::string bad_version = Sealed("x");
  bad_version[0] = 0x02;
  return {
      {"open-valid", std::string(1, '\0') + Sealed("word0...word1...")},
      {"open-empty-plaintext", std::string(1, '\0') + Sealed("")},
      {"open-bad-version", std::string(1, '\0') + bad_version},
      {"open-too-short", std::string(1, '\0') + std::string(crypto::kSealOverhead - 1, '\x01')},
      {"round-trip", std::string("\x01\x05\x00", 3) + "a count vector of 8-byte words"},
      {"point", std::string(1, '\x02') + point},
      {"spki", std::string(1, '\x03') + *der},
  };
}

}  // namespace fedanon::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fedanon::fuzz::FuzzSealedBox(fedanon::fuzz::FuzzInput(data, size));
  return 0;
}
