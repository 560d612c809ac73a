// Correlated oblivious transfer for the garbled circuits' evaluator inputs: 128 base OTs (Chou
// and Orlandi's "simplest OT", LATINCRYPT 2015, on P-256) extended to any number of transfers
// (Ishai, Kilian, Nissim and Petrank, CRYPTO 2003) with the consistency check of Keller, Orsini
// and Scholl (CRYPTO 2015), its coefficients drawn by Fiat-Shamir from the receiver's matrix.
// Internal to crypto/; crypto/secure_comparison.h runs it.
//
// Roles. The OT-extension receiver (the circuit's evaluator) holds choice bits r_0 .. r_{m-1} and
// plays the base OTs' sender; the OT-extension sender (the garbler) holds the garbling delta and
// plays the base OTs' receiver with a random 128-bit choice s. At the end the sender knows a
// random label L_i per transfer and the receiver knows L_i XOR r_i * delta, nothing else.
//
// Messages (sizes fixed by m, checked exactly; `context` binds every hash to one comparison):
//   1. receiver -> sender  A = a*G                                    33 bytes (compressed)
//   2. sender -> receiver  B_j = b_j*G + s_j*A, j < 128               128 * 33 bytes
//   3. receiver -> sender  u_j = t_j ^ PRG(k1_j) ^ r, j < 128 (m' bits each, m' = m + 192 rounded
//                          up to 64: the last rows random), then the check's x (16 bytes) and t
//                          (32 bytes)                                 128 * m'/8 + 48 bytes
//   4. sender -> receiver  y_i = H(q_i, i) ^ H(q_i ^ s, i) ^ delta     16 * m bytes
// The sender refuses message 3 when the check fails (a receiver that used different choice bits
// in different columns, which would let it learn bits of s and then both labels of its inputs).
//
// Extending again. The base OTs' outcome (BaseOtReceiverKeys, BaseOtSenderKeys: the seeds and
// the sender's s) can start later extensions between the same two parties without messages 1
// and 2: each later extension's column seeds are SHA-256 of its own context and the base seed
// (a PRF of the base seed, fresh for every context), its check coefficients come from its
// context and its hash tweaks carry a tag of its context (kOtReuseTweakTag), while s stays the
// base OTs' (as in one long IKNP extension; docs/crypto.md "Base OTs kept for a run").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "crypto/block.h"
#include "crypto/fixed_key_hash.h"
#include "crypto/random_stream.h"

namespace fedanon::crypto::mpc {

inline constexpr size_t kBaseOts = 128;
inline constexpr size_t kPointBytes = 33;
inline constexpr size_t kCheckRows = 192;
// The high word of the OT extension's hash tweaks.
inline constexpr uint64_t kOtTweakDomain = 0x6f74657831000000ULL;  // "otex1"
// The high word of an extension's tweaks when it reuses kept base OTs: this top byte ("r") and
// 56 bits of SHA-256 of its context.
inline constexpr uint64_t kOtReuseTweakTag = 0x7200000000000000ULL;

// What the base OTs leave each side, to extend again. Secret; cleansed when destroyed.
struct BaseOtReceiverKeys {  // the OT-extension receiver's: both seeds of each base OT
  std::vector<Block> k0;
  std::vector<Block> k1;
  ~BaseOtReceiverKeys();
};
struct BaseOtSenderKeys {  // the sender's: its choice s and the seed it chose of each base OT
  Block s;
  std::vector<Block> seeds;
  ~BaseOtSenderKeys();
};

// Rows of the extension matrix for m transfers.
size_t ExtensionRows(size_t m);
size_t ExtensionMessageBytes(size_t m);

class OtExtensionReceiver {
 public:
  // `context`: 32 bytes naming the comparison instance (hashed into every key). `random`: where
  // its scalar and padding rows come from (fresh, or a kept seed's stream).
  static absl::StatusOr<std::unique_ptr<OtExtensionReceiver>> Create(std::string_view context,
                                                                     RandomStream random);
  static absl::StatusOr<std::unique_ptr<OtExtensionReceiver>> Create(std::string_view context);
  // An extension from kept base OTs (another context than theirs): no message 1, and Extend takes
  // no message 2 ("").
  static absl::StatusOr<std::unique_ptr<OtExtensionReceiver>> Extending(
      std::string_view context, RandomStream random, const BaseOtReceiverKeys& base);
  ~OtExtensionReceiver();

  // Message 1.
  const std::string& first_message() const { return first_message_; }
  // Takes message 2 ("" when extending kept base OTs) and the choice bits (one byte, 0 or 1,
  // each); returns message 3.
  absl::StatusOr<std::string> Extend(std::string_view base_answer,
                                     absl::Span<const uint8_t> choices);
  // After Extend ran the base OTs (not when extending kept ones): their outcome, to extend again.
  const std::optional<BaseOtReceiverKeys>& base_keys() const { return base_keys_; }
  // Takes message 4's y_i; returns the chosen labels L_i ^ r_i * delta.
  absl::StatusOr<std::vector<Block>> ChosenLabels(FixedKeyHash& hash, const Block* y, size_t m);

 private:
  OtExtensionReceiver() = default;
  // The base OTs (message 2 taken): both seeds of each.
  absl::StatusOr<BaseOtReceiverKeys> RunBase(std::string_view base_answer);
  // The extension proper from the base OTs' seeds: message 3.
  absl::StatusOr<std::string> ExtendWith(const std::vector<Block>& k0, const std::vector<Block>& k1,
                                         absl::Span<const uint8_t> choices);
  struct Secrets;
  std::unique_ptr<Secrets> secrets_;
  std::string context_;
  std::string first_message_;
  std::vector<uint8_t> choices_;
  std::vector<Block> t_rows_;
  std::optional<RandomStream> random_;
  std::optional<BaseOtReceiverKeys> extending_;  // the seeds this extension derives from kept OTs
  std::optional<BaseOtReceiverKeys> base_keys_;  // the base OTs this one ran
  uint64_t tweak_high_ = kOtTweakDomain;
};

class OtExtensionSender {
 public:
  static absl::StatusOr<std::unique_ptr<OtExtensionSender>> Create(std::string_view context,
                                                                   RandomStream random);
  static absl::StatusOr<std::unique_ptr<OtExtensionSender>> Create(std::string_view context);
  // An extension from kept base OTs: no AnswerBase; Transfer straight away.
  static absl::StatusOr<std::unique_ptr<OtExtensionSender>> Extending(std::string_view context,
                                                                      RandomStream random,
                                                                      const BaseOtSenderKeys& base);
  ~OtExtensionSender();

  // Takes message 1; returns message 2.
  absl::StatusOr<std::string> AnswerBase(std::string_view first_message);
  // Takes message 3 for m transfers; checks it; returns the zero labels L_i and appends message
  // 4's y_i (m Blocks) to `*y`.
  absl::StatusOr<std::vector<Block>> Transfer(FixedKeyHash& hash, std::string_view extension,
                                              size_t m, Block delta, std::vector<Block>* y);
  // After AnswerBase (not when extending kept base OTs): their outcome, to extend again.
  const std::optional<BaseOtSenderKeys>& base_keys() const { return base_keys_; }

 private:
  OtExtensionSender() = default;
  std::string context_;
  std::string first_message_;
  std::string answer_;
  Block s_;
  std::vector<Block> seeds_;  // k_j^{s_j}
  std::optional<RandomStream> random_;
  std::optional<BaseOtSenderKeys> base_keys_;
  uint64_t tweak_high_ = kOtTweakDomain;
};

}  // namespace fedanon::crypto::mpc
