#include "party/vertical_winner_comparison.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "crypto/hash.h"
#include "crypto/secret_bytes.h"

namespace fedanon::party {

namespace {

constexpr uint64_t kLow32 = 0xffffffffULL;
constexpr size_t kShareBytes = size_t{kWinnerKeyWords} * 8;

// A double's bits as an unsigned integer in the same order (x < y exactly when the images are);
// -0 and +0 map alike, as they compare equal.
uint64_t Ordered(double d) {
  if (d == 0) d = 0;  // -0 -> +0
  const uint64_t u = absl::bit_cast<uint64_t>(d);
  return (u >> 63) != 0 ? ~u : u | (uint64_t{1} << 63);
}

// The words of 2^kWinnerKeyBits - 1 (the top word holds one bit).
constexpr uint64_t TopMask() { return (uint64_t{1} << (kWinnerKeyBits - 192)) - 1; }

}  // namespace

absl::StatusOr<std::vector<uint64_t>> WinnerKey(
    const std::optional<engine::TopDownSpecializer::Choice>& choice) {
  std::vector<uint64_t> key(kWinnerKeyWords, 0);
  if (!choice) return key;
  if (std::isnan(choice->score) || std::isnan(choice->order_key) || choice->attr < 0 ||
      choice->c < 0) {
    return absl::InvalidArgumentError(absl::StrCat("a proposal without a tie-break key: attribute ",
                                                   choice->attr, " candidate ", choice->c,
                                                   " score ", choice->score));
  }
  // RanksAbove: a higher score, then a lower attribute, a lower order key, a lower candidate.
  const uint64_t candidate = kLow32 - static_cast<uint64_t>(static_cast<uint32_t>(choice->c));
  const uint64_t attribute = kLow32 - static_cast<uint64_t>(static_cast<uint32_t>(choice->attr));
  const uint64_t order = ~Ordered(choice->order_key);
  key[0] = candidate | (order << 32);
  key[1] = (order >> 32) | (attribute << 32);
  key[2] = Ordered(choice->score);
  key[3] = 1;  // participates
  return key;
}

absl::StatusOr<std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> SplitWinnerKey(
    const std::vector<uint64_t>& key) {
  if (key.size() != kWinnerKeyWords) return absl::InvalidArgumentError("a key of the wrong size");
  absl::StatusOr<std::vector<uint64_t>> first = crypto::RandomUint64Vector(kWinnerKeyWords);
  if (!first.ok()) return first.status();
  (*first)[kWinnerKeyWords - 1] &= TopMask();
  // second = key - first mod 2^kWinnerKeyBits, word by word with a borrow.
  std::vector<uint64_t> second(kWinnerKeyWords);
  uint64_t borrow = 0;
  for (size_t w = 0; w < kWinnerKeyWords; ++w) {
    const uint64_t a = key[w];
    const uint64_t b = (*first)[w];
    const uint64_t d = a - b - borrow;
    borrow = (a < b || (a == b && borrow != 0)) ? 1 : 0;
    second[w] = d;
  }
  second[kWinnerKeyWords - 1] &= TopMask();
  return std::make_pair(*std::move(first), std::move(second));
}

std::string EncodeWinnerShare(const std::vector<uint64_t>& share) {
  std::string out;
  out.reserve(kShareBytes);
  for (size_t w = 0; w < kWinnerKeyWords; ++w) {
    const uint64_t v = w < share.size() ? share[w] : 0;
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
  }
  return out;
}

absl::StatusOr<std::vector<uint64_t>> DecodeWinnerShare(std::string_view bytes) {
  if (bytes.size() != kShareBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a key share of ", bytes.size(), " bytes; one is ", kShareBytes));
  }
  std::vector<uint64_t> share(kWinnerKeyWords, 0);
  for (size_t w = 0; w < kWinnerKeyWords; ++w) {
    for (int b = 0; b < 8; ++b) {
      share[w] |= uint64_t{static_cast<uint8_t>(bytes[w * 8 + static_cast<size_t>(b)])} << (8 * b);
    }
  }
  if ((share[kWinnerKeyWords - 1] & ~TopMask()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a key share of ", kWinnerKeyBits, " bits or more"));
  }
  return share;
}

std::string WinnerComparisonInstance(uint64_t round, uint64_t decisions) {
  return absl::StrCat("vertical-winner/", round, "/", decisions);
}

absl::StatusOr<std::unique_ptr<VerticalWinnerComparison>> VerticalWinnerComparison::Create(
    bool garbler, std::string instance, size_t parties, std::vector<uint64_t> shares,
    std::string_view seed, const crypto::ComparisonBase* base) {
  if (parties < 2 || parties > crypto::kMaxArgmaxKeys) {
    return absl::InvalidArgumentError(absl::StrCat("a winner among ", parties, " parties"));
  }
  const crypto::ComparisonSpec spec{.instance = std::move(instance),
                                    .kind = crypto::ComparisonKind::kSharedArgmax,
                                    .bits = kWinnerKeyBits,
                                    .threshold = 0,
                                    .count = parties,
                                    .output = crypto::ComparisonOutput::kEach};
  absl::StatusOr<std::unique_ptr<crypto::ComparisonSide>> side = crypto::ComparisonSide::Create(
      garbler ? crypto::ComparisonRole::kGarbler : crypto::ComparisonRole::kEvaluator, spec,
      std::move(shares), seed, base);
  if (!side.ok()) return side.status();
  return std::unique_ptr<VerticalWinnerComparison>(new VerticalWinnerComparison(*std::move(side)));
}

}  // namespace fedanon::party
