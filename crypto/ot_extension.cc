#include "crypto/ot_extension.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "crypto/bit_matrix.h"
#include "crypto/hash.h"
#include "crypto/openssl_util.h"
#include "crypto/secret_bytes.h"

namespace fedanon::crypto::mpc {

using internal::BnCtxPtr;
using internal::EcPointPtr;
using internal::OpenSslInternal;
using internal::P256Group;
using internal::SecretBnPtr;

size_t ExtensionRows(size_t m) { return (m + kCheckRows + 63) / 64 * 64; }
size_t ExtensionMessageBytes(size_t m) {
  return kBaseOts * (ExtensionRows(m) / 8) + kBlockBytes + 2 * kBlockBytes;
}

namespace {

// Hashes j as 4 bytes, most significant first.
void UpdateIndex(Sha256Stream& h, uint32_t j) {
  const char jb[4] = {static_cast<char>(j >> 24), static_cast<char>(j >> 16),
                      static_cast<char>(j >> 8), static_cast<char>(j)};
  h.Update(std::string_view(jb, 4));
}

// The seed of base OT j: SHA-256 over the context, j, both messages and the shared point.
Block BaseOtSeed(std::string_view context, uint32_t j, std::string_view a, std::string_view b,
                 std::string_view point) {
  Sha256Stream h;
  h.Update("fedanon base OT (Chou-Orlandi) v1");
  h.Update(context);
  UpdateIndex(h, j);
  h.Update(a);
  h.Update(b);
  h.Update(point);
  const std::string d = h.Finish();
  return LoadBlock(d.data());
}

absl::StatusOr<std::string> Encode(const EC_POINT* p, BN_CTX* ctx) {
  std::string out(kPointBytes, '\0');
  if (EC_POINT_point2oct(P256Group(), p, POINT_CONVERSION_COMPRESSED,
                         reinterpret_cast<unsigned char*>(out.data()), out.size(),
                         ctx) != kPointBytes) {
    return OpenSslInternal("encoding a point");
  }
  return out;
}

// A received point: on the curve and not the point at infinity, or InvalidArgument.
absl::StatusOr<EcPointPtr> Decode(std::string_view bytes, BN_CTX* ctx, const std::string& what) {
  EcPointPtr p(EC_POINT_new(P256Group()));
  if (p == nullptr) return OpenSslInternal("EC_POINT_new");
  if (bytes.size() != kPointBytes ||
      EC_POINT_oct2point(P256Group(), p.get(), internal::U8(bytes), bytes.size(), ctx) != 1 ||
      EC_POINT_is_at_infinity(P256Group(), p.get()) == 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(what, " is not a point of P-256"));
  }
  return p;
}

// A uniform scalar in [1, order of P-256) from `random` (48 bytes reduced: bias below 2^-128).
absl::StatusOr<SecretBnPtr> RandomScalar(RandomStream& random, BN_CTX* ctx) {
  const BIGNUM* order = EC_GROUP_get0_order(P256Group());
  SecretBnPtr wide(BN_secure_new());
  SecretBnPtr k(BN_secure_new());
  if (wide == nullptr || k == nullptr) return OpenSslInternal("BN_secure_new");
  uint8_t bytes[48];
  for (int attempt = 0; attempt < 8; ++attempt) {
    if (absl::Status st = random.Fill(bytes, sizeof(bytes)); !st.ok()) return st;
    const bool ok = BN_bin2bn(bytes, sizeof(bytes), wide.get()) != nullptr &&
                    BN_nnmod(k.get(), wide.get(), order, ctx) == 1;
    OPENSSL_cleanse(bytes, sizeof(bytes));
    if (!ok) return OpenSslInternal("scalar from the random stream");
    if (!BN_is_zero(k.get())) return k;
  }
  return absl::InternalError("the random stream gave the zero scalar eight times");
}

// The 128 x rows matrix's columns from 128 seeds, XORed into `columns` (rows / 8 bytes each).
absl::Status ExpandColumns(const Block* seeds, size_t rows, uint8_t* columns) {
  std::vector<uint8_t> column(rows / 8);
  for (size_t j = 0; j < kBaseOts; ++j) {
    if (absl::Status s = PrgExpand(seeds[j], column.data(), column.size()); !s.ok()) return s;
    uint8_t* dst = columns + j * column.size();
    for (size_t k = 0; k < column.size(); ++k) dst[k] ^= column[k];
  }
  return absl::OkStatus();
}

// The check's coefficients, drawn from the context and the matrix u.
absl::StatusOr<std::vector<Block>> CheckCoefficients(std::string_view context, std::string_view u,
                                                     size_t rows) {
  Sha256Stream h;
  h.Update("fedanon OT extension check v1");
  h.Update(context);
  h.Update(u);
  const std::string d = h.Finish();
  std::vector<Block> chi(rows);
  if (absl::Status s =
          PrgExpand(LoadBlock(d.data()), reinterpret_cast<uint8_t*>(chi.data()), rows * 16);
      !s.ok()) {
    return s;
  }
  return chi;
}

// Base OT j's seed for an extension under `context` from kept base OTs: SHA-256 over the
// context, j and the kept seed (a PRF keyed by the kept seed, fresh for every context).
Block ReusedSeed(std::string_view context, uint32_t j, Block kept) {
  Sha256Stream h;
  h.Update("fedanon OT extension from kept base OTs v1");
  h.Update(context);
  UpdateIndex(h, j);
  h.Update(std::string_view(reinterpret_cast<const char*>(&kept), kBlockBytes));
  std::string d = h.Finish();
  const Block seed = LoadBlock(d.data());
  OPENSSL_cleanse(d.data(), d.size());
  return seed;
}

std::vector<Block> ReusedSeeds(std::string_view context, const std::vector<Block>& kept) {
  std::vector<Block> out(kept.size());
  for (size_t j = 0; j < kept.size(); ++j) {
    out[j] = ReusedSeed(context, static_cast<uint32_t>(j), kept[j]);
  }
  return out;
}

// The high word of the tweaks of an extension from kept base OTs: kOtReuseTweakTag and 56 bits
// of SHA-256 of its context, so that no two extensions of one base share their tweaks.
uint64_t ReuseTweakHigh(std::string_view context) {
  Sha256Stream h;
  h.Update("fedanon OT extension tweak v1");
  h.Update(context);
  const std::string d = h.Finish();
  uint64_t tag = 0;
  std::memcpy(&tag, d.data(), sizeof(tag));
  return kOtReuseTweakTag | (tag & 0x00ffffffffffffffULL);
}

void Cleanse(std::vector<Block>& blocks) {
  if (!blocks.empty()) OPENSSL_cleanse(blocks.data(), blocks.size() * sizeof(Block));
}

}  // namespace

BaseOtReceiverKeys::~BaseOtReceiverKeys() {
  Cleanse(k0);
  Cleanse(k1);
}

BaseOtSenderKeys::~BaseOtSenderKeys() {
  Cleanse(seeds);
  OPENSSL_cleanse(&s, sizeof(s));
}

struct OtExtensionReceiver::Secrets {
  SecretBnPtr a;
};

OtExtensionReceiver::~OtExtensionReceiver() = default;
OtExtensionSender::~OtExtensionSender() = default;

absl::StatusOr<std::unique_ptr<OtExtensionReceiver>> OtExtensionReceiver::Create(
    std::string_view context) {
  absl::StatusOr<RandomStream> random = RandomStream::Fresh("ot-receiver");
  if (!random.ok()) return random.status();
  return Create(context, *std::move(random));
}

absl::StatusOr<std::unique_ptr<OtExtensionReceiver>> OtExtensionReceiver::Create(
    std::string_view context, RandomStream random) {
  std::unique_ptr<OtExtensionReceiver> r(new OtExtensionReceiver());
  r->context_ = std::string(context);
  r->random_.emplace(std::move(random));
  r->secrets_ = std::make_unique<Secrets>();
  BnCtxPtr ctx(BN_CTX_secure_new());
  if (ctx == nullptr) return OpenSslInternal("BN_CTX");
  absl::StatusOr<SecretBnPtr> a = RandomScalar(*r->random_, ctx.get());
  if (!a.ok()) return a.status();
  r->secrets_->a = *std::move(a);
  EcPointPtr big_a(EC_POINT_new(P256Group()));
  if (big_a == nullptr || EC_POINT_mul(P256Group(), big_a.get(), r->secrets_->a.get(), nullptr,
                                       nullptr, ctx.get()) != 1) {
    return OpenSslInternal("A = a*G");
  }
  absl::StatusOr<std::string> encoded = Encode(big_a.get(), ctx.get());
  if (!encoded.ok()) return encoded.status();
  r->first_message_ = *std::move(encoded);
  return r;
}

absl::StatusOr<std::unique_ptr<OtExtensionReceiver>> OtExtensionReceiver::Extending(
    std::string_view context, RandomStream random, const BaseOtReceiverKeys& base) {
  if (base.k0.size() != kBaseOts || base.k1.size() != kBaseOts) {
    return absl::InvalidArgumentError("kept base OTs: not 128 pairs of seeds");
  }
  std::unique_ptr<OtExtensionReceiver> r(new OtExtensionReceiver());
  r->context_ = std::string(context);
  r->random_.emplace(std::move(random));
  r->secrets_ = std::make_unique<Secrets>();
  r->extending_.emplace();
  r->extending_->k0 = ReusedSeeds(context, base.k0);
  r->extending_->k1 = ReusedSeeds(context, base.k1);
  r->tweak_high_ = ReuseTweakHigh(context);
  return r;
}

absl::StatusOr<std::string> OtExtensionReceiver::Extend(std::string_view base_answer,
                                                        absl::Span<const uint8_t> choices) {
  if (extending_) {
    if (!base_answer.empty()) {
      return absl::InvalidArgumentError(
          "an extension of kept base OTs takes no base OT answer (message 2)");
    }
    BaseOtReceiverKeys keys;  // cleansed when this extension is made
    keys.k0 = std::move(extending_->k0);
    keys.k1 = std::move(extending_->k1);
    extending_.reset();
    return ExtendWith(keys.k0, keys.k1, choices);
  }
  absl::StatusOr<BaseOtReceiverKeys> ran = RunBase(base_answer);
  if (!ran.ok()) return ran.status();
  base_keys_.emplace();
  base_keys_->k0 = std::move(ran->k0);
  base_keys_->k1 = std::move(ran->k1);
  return ExtendWith(base_keys_->k0, base_keys_->k1, choices);
}

absl::StatusOr<BaseOtReceiverKeys> OtExtensionReceiver::RunBase(std::string_view base_answer) {
  if (secrets_->a == nullptr) {
    return absl::FailedPreconditionError("the OT extension was already run");
  }
  if (base_answer.size() != kBaseOts * kPointBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the base OT answer is ", base_answer.size(),
                                                   " bytes, expected ", kBaseOts * kPointBytes));
  }
  BnCtxPtr ctx(BN_CTX_secure_new());
  if (ctx == nullptr) return OpenSslInternal("BN_CTX");
  const EC_GROUP* group = P256Group();
  absl::StatusOr<EcPointPtr> big_a = Decode(first_message_, ctx.get(), "A");
  if (!big_a.ok()) return big_a.status();
  EcPointPtr a_a(EC_POINT_new(group));
  EcPointPtr p(EC_POINT_new(group));
  if (a_a == nullptr || p == nullptr ||
      EC_POINT_mul(group, a_a.get(), nullptr, big_a->get(), secrets_->a.get(), ctx.get()) != 1 ||
      EC_POINT_invert(group, a_a.get(), ctx.get()) != 1) {
    return OpenSslInternal("a*A");
  }
  std::vector<Block> k0(kBaseOts);
  std::vector<Block> k1(kBaseOts);
  for (uint32_t j = 0; j < kBaseOts; ++j) {
    const std::string_view b = base_answer.substr(j * kPointBytes, kPointBytes);
    absl::StatusOr<EcPointPtr> big_b = Decode(b, ctx.get(), absl::StrCat("B_", j));
    if (!big_b.ok()) return big_b.status();
    if (EC_POINT_mul(group, p.get(), nullptr, big_b->get(), secrets_->a.get(), ctx.get()) != 1) {
      return OpenSslInternal("a*B");
    }
    absl::StatusOr<std::string> s0 = Encode(p.get(), ctx.get());
    if (!s0.ok()) return s0.status();
    k0[j] = BaseOtSeed(context_, j, first_message_, b, *s0);
    if (EC_POINT_add(group, p.get(), p.get(), a_a.get(), ctx.get()) != 1) {
      return OpenSslInternal("a*(B - A)");
    }
    // a*(B - A) is the point at infinity only when B = A, which a receiver with s_j = 1 and
    // b_j = 0 would send; it then gets the seed of the encoding of nothing, harmlessly.
    std::string s1(kPointBytes, '\0');
    if (EC_POINT_is_at_infinity(group, p.get()) != 1) {
      absl::StatusOr<std::string> e = Encode(p.get(), ctx.get());
      if (!e.ok()) return e.status();
      s1 = *std::move(e);
    }
    k1[j] = BaseOtSeed(context_, j, first_message_, b, s1);
  }
  secrets_->a.reset();
  BaseOtReceiverKeys keys;
  keys.k0 = std::move(k0);
  keys.k1 = std::move(k1);
  return keys;
}

absl::StatusOr<std::string> OtExtensionReceiver::ExtendWith(const std::vector<Block>& k0,
                                                            const std::vector<Block>& k1,
                                                            absl::Span<const uint8_t> choices) {
  const size_t m = choices.size();
  const size_t rows = ExtensionRows(m);
  const size_t column_bytes = rows / 8;
  std::vector<uint8_t> r_bits(column_bytes, 0);
  choices_.assign(rows, 0);
  for (size_t i = 0; i < m; ++i) choices_[i] = choices[i] & 1;
  {
    std::vector<uint8_t> pad(rows - m);
    if (absl::Status s = random_->Fill(pad.data(), pad.size()); !s.ok()) return s;
    for (size_t i = m; i < rows; ++i) choices_[i] = pad[i - m] & 1;
  }
  for (size_t i = 0; i < rows; ++i) r_bits[i / 8] |= static_cast<uint8_t>(choices_[i] << (i % 8));

  std::vector<uint8_t> t_columns(kBaseOts * column_bytes, 0);
  if (absl::Status s = ExpandColumns(k0.data(), rows, t_columns.data()); !s.ok()) return s;
  std::string message(ExtensionMessageBytes(m), '\0');
  auto* u = reinterpret_cast<uint8_t*>(message.data());
  std::memcpy(u, t_columns.data(), t_columns.size());
  if (absl::Status s = ExpandColumns(k1.data(), rows, u); !s.ok()) return s;
  for (size_t j = 0; j < kBaseOts; ++j) {
    for (size_t k = 0; k < column_bytes; ++k) u[j * column_bytes + k] ^= r_bits[k];
  }
  t_rows_.resize(rows);
  TransposeColumns(t_columns.data(), rows, t_rows_.data());

  const std::string_view u_bytes(message.data(), kBaseOts * column_bytes);
  absl::StatusOr<std::vector<Block>> chi = CheckCoefficients(context_, u_bytes, rows);
  if (!chi.ok()) return chi.status();
  Block x;
  Block256 t;
  for (size_t i = 0; i < rows; ++i) {
    x ^= SelectIf(choices_[i] != 0, (*chi)[i]);
    t = t ^ CarrylessMultiply((*chi)[i], t_rows_[i]);
  }
  char* tail = message.data() + u_bytes.size();
  std::memcpy(tail, &x, kBlockBytes);
  std::memcpy(tail + kBlockBytes, &t, 2 * kBlockBytes);
  t_rows_.resize(m);
  choices_.resize(m);
  return message;
}

absl::StatusOr<std::vector<Block>> OtExtensionReceiver::ChosenLabels(FixedKeyHash& hash,
                                                                     const Block* y, size_t m) {
  if (m != t_rows_.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("labels for ", m, " transfers asked, ", t_rows_.size(), " extended"));
  }
  std::vector<Block> tweaks(m);
  for (size_t i = 0; i < m; ++i) tweaks[i] = Block{i, tweak_high_};
  std::vector<Block> labels(m);
  if (absl::Status s = hash.Hash(t_rows_.data(), tweaks.data(), labels.data(), m); !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < m; ++i) labels[i] ^= SelectIf(choices_[i] != 0, y[i]);
  return labels;
}

absl::StatusOr<std::unique_ptr<OtExtensionSender>> OtExtensionSender::Create(
    std::string_view context) {
  absl::StatusOr<RandomStream> random = RandomStream::Fresh("ot-sender");
  if (!random.ok()) return random.status();
  return Create(context, *std::move(random));
}

absl::StatusOr<std::unique_ptr<OtExtensionSender>> OtExtensionSender::Create(
    std::string_view context, RandomStream random) {
  std::unique_ptr<OtExtensionSender> s(new OtExtensionSender());
  s->context_ = std::string(context);
  s->random_.emplace(std::move(random));
  return s;
}

absl::StatusOr<std::unique_ptr<OtExtensionSender>> OtExtensionSender::Extending(
    std::string_view context, RandomStream random, const BaseOtSenderKeys& base) {
  if (base.seeds.size() != kBaseOts) {
    return absl::InvalidArgumentError("kept base OTs: not 128 seeds");
  }
  std::unique_ptr<OtExtensionSender> s(new OtExtensionSender());
  s->context_ = std::string(context);
  s->random_.emplace(std::move(random));
  s->s_ = base.s;
  s->seeds_ = ReusedSeeds(context, base.seeds);
  s->tweak_high_ = ReuseTweakHigh(context);
  return s;
}

absl::StatusOr<std::string> OtExtensionSender::AnswerBase(std::string_view first_message) {
  if (!first_message_.empty() || !seeds_.empty()) {  // answered, or extending kept base OTs
    return absl::FailedPreconditionError("the base OTs were already answered");
  }
  BnCtxPtr ctx(BN_CTX_secure_new());
  if (ctx == nullptr) return OpenSslInternal("BN_CTX");
  const EC_GROUP* group = P256Group();
  absl::StatusOr<EcPointPtr> big_a = Decode(first_message, ctx.get(), "A");
  if (!big_a.ok()) return big_a.status();
  uint8_t s_bytes[kBlockBytes];
  if (absl::Status st = random_->Fill(s_bytes, sizeof(s_bytes)); !st.ok()) return st;
  std::memcpy(&s_, s_bytes, kBlockBytes);
  OPENSSL_cleanse(s_bytes, sizeof(s_bytes));
  std::string answer;
  answer.reserve(kBaseOts * kPointBytes);
  seeds_.resize(kBaseOts);
  EcPointPtr p0(EC_POINT_new(group));
  EcPointPtr p1(EC_POINT_new(group));
  EcPointPtr shared(EC_POINT_new(group));
  if (p0 == nullptr || p1 == nullptr || shared == nullptr) return OpenSslInternal("EC_POINT_new");
  for (uint32_t j = 0; j < kBaseOts; ++j) {
    absl::StatusOr<SecretBnPtr> b = RandomScalar(*random_, ctx.get());
    if (!b.ok()) return b.status();
    if (EC_POINT_mul(group, p0.get(), b->get(), nullptr, nullptr, ctx.get()) != 1 ||
        EC_POINT_add(group, p1.get(), p0.get(), big_a->get(), ctx.get()) != 1 ||
        EC_POINT_mul(group, shared.get(), nullptr, big_a->get(), b->get(), ctx.get()) != 1) {
      return OpenSslInternal("B = b*G + s*A");
    }
    absl::StatusOr<std::string> e0 = Encode(p0.get(), ctx.get());
    absl::StatusOr<std::string> e1 = Encode(p1.get(), ctx.get());
    absl::StatusOr<std::string> es = Encode(shared.get(), ctx.get());
    if (!e0.ok() || !e1.ok() || !es.ok()) return OpenSslInternal("encoding B");
    // Selected without a branch on s_j.
    const bool bit = ((j < 64 ? s_.lo >> j : s_.hi >> (j - 64)) & 1) != 0;
    const auto mask = static_cast<char>(0 - static_cast<unsigned char>(bit));
    std::string b_bytes(kPointBytes, '\0');
    for (size_t k = 0; k < kPointBytes; ++k) {
      b_bytes[k] = static_cast<char>(((*e0)[k] & ~mask) | ((*e1)[k] & mask));
    }
    seeds_[j] = BaseOtSeed(context_, j, first_message, b_bytes, *es);
    answer += b_bytes;
  }
  first_message_ = std::string(first_message);
  answer_ = answer;
  base_keys_.emplace();
  base_keys_->s = s_;
  base_keys_->seeds = seeds_;
  return answer;
}

absl::StatusOr<std::vector<Block>> OtExtensionSender::Transfer(FixedKeyHash& hash,
                                                               std::string_view extension, size_t m,
                                                               Block delta, std::vector<Block>* y) {
  if (seeds_.empty()) return absl::FailedPreconditionError("the base OTs were not answered");
  if (extension.size() != ExtensionMessageBytes(m)) {
    return absl::InvalidArgumentError(absl::StrCat("the OT extension message is ", extension.size(),
                                                   " bytes, expected ", ExtensionMessageBytes(m)));
  }
  const size_t rows = ExtensionRows(m);
  const size_t column_bytes = rows / 8;
  const std::string_view u_bytes = extension.substr(0, kBaseOts * column_bytes);
  const auto* u = reinterpret_cast<const uint8_t*>(u_bytes.data());
  std::vector<uint8_t> q_columns(kBaseOts * column_bytes, 0);
  if (absl::Status st = ExpandColumns(seeds_.data(), rows, q_columns.data()); !st.ok()) return st;
  seeds_.clear();
  for (size_t j = 0; j < kBaseOts; ++j) {
    const bool bit = ((j < 64 ? s_.lo >> j : s_.hi >> (j - 64)) & 1) != 0;
    const auto mask = static_cast<uint8_t>(0 - static_cast<uint8_t>(bit));
    for (size_t k = 0; k < column_bytes; ++k) {
      q_columns[j * column_bytes + k] ^= u[j * column_bytes + k] & mask;
    }
  }
  std::vector<Block> q_rows(rows);
  TransposeColumns(q_columns.data(), rows, q_rows.data());

  absl::StatusOr<std::vector<Block>> chi = CheckCoefficients(context_, u_bytes, rows);
  if (!chi.ok()) return chi.status();
  Block256 q;
  for (size_t i = 0; i < rows; ++i) q = q ^ CarrylessMultiply((*chi)[i], q_rows[i]);
  const Block x = LoadBlock(extension.data() + u_bytes.size());
  Block256 t;
  std::memcpy(&t, extension.data() + u_bytes.size() + kBlockBytes, 2 * kBlockBytes);
  if (!(q == (t ^ CarrylessMultiply(x, s_)))) {
    return absl::PermissionDeniedError(
        "the OT extension's consistency check failed: the evaluator's choice bits differ between "
        "columns");
  }

  std::vector<Block> tweaks(m);
  for (size_t i = 0; i < m; ++i) tweaks[i] = Block{i, tweak_high_};
  std::vector<Block> zero(m);
  std::vector<Block> one_in(m);
  for (size_t i = 0; i < m; ++i) one_in[i] = q_rows[i] ^ s_;
  std::vector<Block> one(m);
  if (absl::Status st = hash.Hash(q_rows.data(), tweaks.data(), zero.data(), m); !st.ok()) {
    return st;
  }
  if (absl::Status st = hash.Hash(one_in.data(), tweaks.data(), one.data(), m); !st.ok()) {
    return st;
  }
  y->reserve(y->size() + m);
  for (size_t i = 0; i < m; ++i) y->push_back(zero[i] ^ one[i] ^ delta);
  return zero;
}

}  // namespace fedanon::crypto::mpc
