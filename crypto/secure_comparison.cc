#include "crypto/secure_comparison.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "crypto/boolean_circuit.h"
#include "crypto/fixed_key_hash.h"
#include "crypto/half_gates.h"
#include "crypto/hash.h"
#include "crypto/ot_extension.h"
#include "crypto/random_stream.h"
#include "crypto/secret_bytes.h"

namespace fedanon::crypto {

using mpc::Block;
using mpc::Circuit;
using mpc::CircuitBuilder;
using mpc::kBlockBytes;
using mpc::Word;

namespace {

constexpr std::string_view kMagic = "FSC1";
constexpr size_t kDigestBytes = 32;
constexpr size_t kHeaderBytes = 4 + 1 + kDigestBytes;
// Instances garbled together (one AES call per gate for all of them).
constexpr uint64_t kBatch = 1024;

uint64_t Mask(uint32_t bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }
// The mask of a value's most significant word.
uint64_t TopMask(uint32_t bits) { return Mask(bits - 64 * (ComparisonWords(bits) - 1)); }

// A value of ComparisonWords(bits) little-endian words.
using Wide = std::vector<uint64_t>;

Wide ValueAt(const std::vector<uint64_t>& values, uint64_t i, uint32_t bits) {
  const uint32_t w = ComparisonWords(bits);
  return Wide(values.begin() + static_cast<std::ptrdiff_t>(i * w),
              values.begin() + static_cast<std::ptrdiff_t>((i + 1) * w));
}

// a + b mod 2^bits.
Wide AddMod(const Wide& a, const Wide& b, uint32_t bits) {
  Wide s(a.size());
  uint64_t carry = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const uint64_t t = a[k] + carry;
    const uint64_t c1 = t < carry ? 1 : 0;
    s[k] = t + b[k];
    carry = c1 + (s[k] < t ? 1 : 0);
  }
  s.back() &= TopMask(bits);
  return s;
}

// [a > b] for values of one width.
bool Greater(const Wide& a, const Wide& b) {
  for (size_t k = a.size(); k-- > 0;) {
    if (a[k] != b[k]) return a[k] > b[k];
  }
  return false;
}

Wide FromUint64(uint64_t v, uint32_t bits) {
  Wide out(ComparisonWords(bits), 0);
  out[0] = v;
  return out;
}

bool IsZero(const Wide& a) {
  for (uint64_t w : a) {
    if (w != 0) return false;
  }
  return true;
}

uint32_t WinnerBits(uint64_t keys) {
  return std::max<uint32_t>(1, static_cast<uint32_t>(std::bit_width(keys - 1)));
}

// What is garbled for a spec: one instance's circuit, and how many instances.
struct Plan {
  Circuit circuit;
  uint64_t instances = 0;
  bool fold_all = false;
  uint64_t garbler_bits() const { return instances * circuit.garbler_inputs; }
  uint64_t evaluator_bits() const { return instances * circuit.evaluator_inputs; }
  uint64_t outputs() const { return fold_all ? 1 : instances * circuit.outputs.size(); }
  uint64_t and_gates() const {
    return instances * circuit.and_count + (fold_all ? instances - 1 : 0);
  }
};

Plan MakePlan(const ComparisonSpec& spec) {
  Plan plan;
  const uint32_t n = spec.bits;
  if (spec.kind == ComparisonKind::kSharedArgmax) {
    const auto keys = static_cast<uint32_t>(spec.count);
    const uint32_t w = WinnerBits(spec.count);
    CircuitBuilder b(keys * n, keys * n);
    Word best = b.Add(b.GarblerWord(0, n), b.EvaluatorWord(0, n));
    Word index = CircuitBuilder::ConstWord(0, w);
    for (uint32_t j = 1; j < keys; ++j) {
      Word key = b.Add(b.GarblerWord(j * n, n), b.EvaluatorWord(j * n, n));
      const mpc::Bit greater = b.GreaterThan(key, best);
      best = b.Mux(greater, key, best);
      index = b.Mux(greater, CircuitBuilder::ConstWord(j, w), index);
    }
    for (const mpc::Bit& bit : index) b.Output(bit);
    plan.circuit = std::move(b).Finish();
    plan.instances = 1;
    return plan;
  }
  CircuitBuilder b(n, n);
  const Word g = b.GarblerWord(0, n);
  const Word e = b.EvaluatorWord(0, n);
  switch (spec.kind) {
    case ComparisonKind::kGreaterThan:
      b.Output(b.GreaterThan(g, e));
      break;
    case ComparisonKind::kSumZeroOrAtLeast:
      // The evaluator's input is e - 1 (ToCircuitInputs): s - 1 >= K - 1 unsigned holds exactly
      // when s = 0 (it wraps to 2^n - 1) or s >= K.
      b.Output(b.AtLeast(b.Add(g, e), spec.threshold - 1));
      break;
    case ComparisonKind::kSumNonNegative:
      b.Output(b.Not(b.Add(g, e)[n - 1]));
      break;
    case ComparisonKind::kSharedArgmax:
      break;
  }
  plan.circuit = std::move(b).Finish();
  plan.instances = spec.count;
  plan.fold_all = spec.output == ComparisonOutput::kAll;
  return plan;
}

// The circuit's input bits for `values` (ComparisonWords(bits) words each), value-major, least
// significant bit first.
std::vector<uint8_t> InputBits(const std::vector<uint64_t>& values, uint32_t bits) {
  const uint32_t w = ComparisonWords(bits);
  const size_t count = values.size() / w;
  std::vector<uint8_t> out(count * bits);
  for (size_t v = 0; v < count; ++v) {
    for (uint32_t k = 0; k < bits; ++k) {
      out[v * bits + k] = (values[v * w + k / 64] >> (k % 64)) & 1;
    }
  }
  return out;
}

std::vector<uint64_t> EvaluatorCircuitValues(const ComparisonSpec& spec,
                                             std::vector<uint64_t> values) {
  if (spec.kind == ComparisonKind::kSumZeroOrAtLeast) {
    const uint32_t w = ComparisonWords(spec.bits);
    for (size_t v = 0; v < values.size() / w; ++v) {
      // minus one mod 2^bits, the borrow running up the words
      for (uint32_t k = 0; k < w; ++k) {
        uint64_t& word = values[v * w + k];
        const bool borrow = word == 0;
        --word;
        if (!borrow) break;
      }
      values[v * w + w - 1] &= TopMask(spec.bits);
    }
  }
  return values;
}

absl::Status CheckInputs(const ComparisonSpec& spec, const std::vector<uint64_t>& inputs,
                         const char* who) {
  const uint32_t w = ComparisonWords(spec.bits);
  if (inputs.size() != spec.count * w) {
    return absl::InvalidArgumentError(absl::StrCat("secure comparison: the ", who, " gave ",
                                                   inputs.size(), " words for ", spec.count,
                                                   " inputs of ", w, " words"));
  }
  for (size_t i = 0; i < spec.count; ++i) {
    if ((inputs[i * w + w - 1] & ~TopMask(spec.bits)) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("secure comparison: the ", who, "'s input ", i,
                                                     " does not fit in ", spec.bits, " bits"));
    }
  }
  return absl::OkStatus();
}

std::string Header(int step, const std::string& digest) {
  std::string out(kMagic);
  out.push_back(static_cast<char>(step));
  out += digest;
  return out;
}

// The body of a message of `step` for this instance, or the named reason it is refused.
absl::StatusOr<std::string_view> Body(std::string_view message, int step, const std::string& digest,
                                      size_t body_bytes) {
  if (message.size() < kHeaderBytes || message.substr(0, 4) != kMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat("secure comparison: step ", step, " message is not a comparison message"));
  }
  const int got = static_cast<unsigned char>(message[4]);
  if (message.substr(5, kDigestBytes) != digest) {
    return absl::PermissionDeniedError(absl::StrCat(
        "secure comparison: step ", step, " message belongs to another comparison instance"));
  }
  if (got != step) {
    return absl::FailedPreconditionError(absl::StrCat("secure comparison: a step ", got,
                                                      " message where step ", step,
                                                      " was expected (replayed or reordered)"));
  }
  if (message.size() - kHeaderBytes != body_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("secure comparison: step ", step, " message body is ",
                     message.size() - kHeaderBytes, " bytes, expected ", body_bytes));
  }
  return message.substr(kHeaderBytes);
}

absl::Status OutOfOrder(const char* what, int step) {
  return absl::FailedPreconditionError(
      absl::StrCat("secure comparison: ", what, " called out of order (at step ", step, ")"));
}

uint64_t Message4Bytes(const Plan& plan) {
  return (plan.evaluator_bits() + plan.garbler_bits() + 1 + 2 * plan.and_gates()) * kBlockBytes +
         (plan.outputs() + 7) / 8;
}

// The two-input AND circuit the kAll fold garbles level by level.
Circuit AndOfTwo() {
  CircuitBuilder b(2, 0);
  b.Output(b.And(b.GarblerInput(0), b.GarblerInput(1)));
  return std::move(b).Finish();
}

// Garbles (garbler: delta set) or evaluates the AND of all `values` labels as a tree, using
// tables from `*tables` (advanced); returns the root's label.
absl::StatusOr<Block> FoldAnd(mpc::FixedKeyHash& hash, const Block* delta, Block zero,
                              std::vector<Block> values, uint64_t* and_index,
                              std::vector<Block>* garbled, const Block** tables) {
  const Circuit circuit = AndOfTwo();
  while (values.size() > 1) {
    const size_t pairs = values.size() / 2;
    std::vector<Block> labels(size_t{circuit.wire_count} * pairs);
    for (size_t i = 0; i < pairs; ++i) {
      labels[i] = values[2 * i];
      labels[pairs + i] = values[2 * i + 1];
      labels[2 * pairs + i] = zero;
    }
    if (delta != nullptr) {
      const size_t at = garbled->size();
      garbled->resize(at + 2 * pairs);
      if (absl::Status s = mpc::GarbleBatch(hash, circuit, *delta, pairs, and_index, labels,
                                            garbled->data() + at);
          !s.ok()) {
        return s;
      }
    } else {
      if (absl::Status s = mpc::EvaluateBatch(hash, circuit, pairs, and_index, labels, *tables);
          !s.ok()) {
        return s;
      }
      *tables += 2 * pairs;
    }
    std::vector<Block> next(pairs + values.size() % 2);
    for (size_t i = 0; i < pairs; ++i) next[i] = labels[size_t{circuit.outputs[0]} * pairs + i];
    if (values.size() % 2 == 1) next[pairs] = values.back();
    values = std::move(next);
  }
  return values[0];
}

absl::StatusOr<Block> RandomBlock(mpc::RandomStream& random) {
  Block b;
  if (absl::Status s = random.Fill(reinterpret_cast<uint8_t*>(&b), kBlockBytes); !s.ok()) return s;
  return b;
}

absl::StatusOr<std::vector<Block>> RandomBlocks(mpc::RandomStream& random, size_t n) {
  std::vector<Block> out(n);
  if (absl::Status s = random.Fill(reinterpret_cast<uint8_t*>(out.data()), n * kBlockBytes);
      !s.ok()) {
    return s;
  }
  return out;
}

// The stream `label` of the caller's seed, or of a fresh one.
absl::StatusOr<mpc::RandomStream> StreamOf(std::string_view seed, std::string_view label) {
  if (seed.empty()) return mpc::RandomStream::Fresh(label);
  return mpc::RandomStream::FromSeed(seed, label);
}

ComparisonResult Decode(const ComparisonSpec& spec, const Plan& plan,
                        const std::vector<uint8_t>& bits) {
  ComparisonResult r;
  if (spec.kind == ComparisonKind::kSharedArgmax) {
    for (size_t k = 0; k < bits.size(); ++k) r.winner |= uint64_t{bits[k]} << k;
  } else if (plan.fold_all) {
    r.all = bits[0] != 0;
  } else {
    r.each = bits;
  }
  return r;
}

}  // namespace

absl::Status ValidateComparisonSpec(const ComparisonSpec& spec) {
  if (spec.instance.empty()) {
    return absl::InvalidArgumentError("secure comparison: the instance has no name");
  }
  if (spec.bits < 1 || spec.bits > kMaxComparisonBits) {
    return absl::InvalidArgumentError(absl::StrCat("secure comparison: ", spec.bits, " bits (1 to ",
                                                   kMaxComparisonBits, " allowed)"));
  }
  if (spec.output != ComparisonOutput::kEach && spec.output != ComparisonOutput::kAll) {
    return absl::InvalidArgumentError("secure comparison: unknown output mode");
  }
  const uint64_t max_count =
      spec.kind == ComparisonKind::kSharedArgmax ? kMaxArgmaxKeys : kMaxComparisonCount;
  if (spec.count < 1 || spec.count > max_count) {
    return absl::InvalidArgumentError(absl::StrCat("secure comparison: ", spec.count,
                                                   " instances (1 to ", max_count, " allowed)"));
  }
  switch (spec.kind) {
    case ComparisonKind::kGreaterThan:
    case ComparisonKind::kSumNonNegative:
      if (spec.threshold != 0) {
        return absl::InvalidArgumentError("secure comparison: a threshold for a kind without one");
      }
      return absl::OkStatus();
    case ComparisonKind::kSumZeroOrAtLeast:
      if (spec.threshold < 1 || spec.threshold > Mask(spec.bits)) {
        return absl::InvalidArgumentError(absl::StrCat("secure comparison: threshold ",
                                                       spec.threshold, " outside 1 .. 2^",
                                                       spec.bits, " - 1"));
      }
      return absl::OkStatus();
    case ComparisonKind::kSharedArgmax:
      if (spec.threshold != 0 || spec.output != ComparisonOutput::kEach) {
        return absl::InvalidArgumentError(
            "secure comparison: an argmax has no threshold and one result");
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("secure comparison: unknown kind");
}

std::string ComparisonSpecDigest(const ComparisonSpec& spec) {
  std::string e = "fedanon secure comparison v1";
  auto put = [&e](uint64_t v, int bytes) {
    for (int k = bytes - 1; k >= 0; --k) e.push_back(static_cast<char>(v >> (8 * k)));
  };
  put(spec.instance.size(), 4);
  e += spec.instance;
  put(static_cast<uint8_t>(spec.kind), 1);
  put(spec.bits, 4);
  put(spec.threshold, 8);
  put(spec.count, 8);
  put(static_cast<uint8_t>(spec.output), 1);
  return Sha256(e);
}

absl::StatusOr<ComparisonCost> CostOfComparison(const ComparisonSpec& spec) {
  if (absl::Status s = ValidateComparisonSpec(spec); !s.ok()) return s;
  const Plan plan = MakePlan(spec);
  ComparisonCost cost;
  cost.and_gates = plan.and_gates();
  cost.evaluator_bytes = 3 * kHeaderBytes + mpc::kPointBytes +
                         mpc::ExtensionMessageBytes(plan.evaluator_bits()) +
                         plan.outputs() * kBlockBytes;
  cost.garbler_bytes = 2 * kHeaderBytes + mpc::kBaseOts * mpc::kPointBytes + Message4Bytes(plan);
  return cost;
}

absl::StatusOr<ComparisonResult> ComparePlain(const ComparisonSpec& spec,
                                              const std::vector<uint64_t>& garbler_inputs,
                                              const std::vector<uint64_t>& evaluator_inputs) {
  if (absl::Status s = ValidateComparisonSpec(spec); !s.ok()) return s;
  if (absl::Status s = CheckInputs(spec, garbler_inputs, "garbler"); !s.ok()) return s;
  if (absl::Status s = CheckInputs(spec, evaluator_inputs, "evaluator"); !s.ok()) return s;
  ComparisonResult r;
  const uint32_t n = spec.bits;
  if (spec.kind == ComparisonKind::kSharedArgmax) {
    Wide best;
    for (uint64_t j = 0; j < spec.count; ++j) {
      const Wide key = AddMod(ValueAt(garbler_inputs, j, n), ValueAt(evaluator_inputs, j, n), n);
      if (j == 0 || Greater(key, best)) {
        best = key;
        r.winner = j;
      }
    }
    return r;
  }
  r.all = true;
  for (uint64_t i = 0; i < spec.count; ++i) {
    const Wide g = ValueAt(garbler_inputs, i, n);
    const Wide e = ValueAt(evaluator_inputs, i, n);
    const Wide s = AddMod(g, e, n);
    bool bit = false;
    switch (spec.kind) {
      case ComparisonKind::kGreaterThan:
        bit = Greater(g, e);
        break;
      case ComparisonKind::kSumZeroOrAtLeast:
        bit = IsZero(s) || !Greater(FromUint64(spec.threshold, n), s);
        break;
      case ComparisonKind::kSumNonNegative:
        bit = ((s.back() >> ((n - 1) % 64)) & 1) == 0;
        break;
      case ComparisonKind::kSharedArgmax:
        break;
    }
    r.all = r.all && bit;
    if (spec.output == ComparisonOutput::kEach) r.each.push_back(bit ? 1 : 0);
  }
  if (spec.output == ComparisonOutput::kEach) r.all = false;
  return r;
}

// --- evaluator ---

ComparisonEvaluator::~ComparisonEvaluator() = default;

absl::StatusOr<std::unique_ptr<ComparisonEvaluator>> ComparisonEvaluator::Create(
    const ComparisonSpec& spec, std::vector<uint64_t> inputs, std::string_view seed,
    const ComparisonBase* base) {
  if (absl::Status s = ValidateComparisonSpec(spec); !s.ok()) return s;
  if (absl::Status s = CheckInputs(spec, inputs, "evaluator"); !s.ok()) return s;
  if (base != nullptr && (base->role() != ComparisonRole::kEvaluator || !base->evaluator_)) {
    return absl::InvalidArgumentError(
        "secure comparison: kept base OTs of a garbler given to an evaluator");
  }
  std::unique_ptr<ComparisonEvaluator> e(new ComparisonEvaluator());
  absl::StatusOr<mpc::RandomStream> random = StreamOf(seed, "evaluator-ot");
  if (!random.ok()) return random.status();
  e->random_ = std::make_unique<mpc::RandomStream>(*std::move(random));
  e->spec_ = spec;
  e->digest_ = ComparisonSpecDigest(spec);
  e->inputs_ = EvaluatorCircuitValues(spec, std::move(inputs));
  absl::StatusOr<std::unique_ptr<mpc::FixedKeyHash>> hash = mpc::FixedKeyHash::Create();
  if (!hash.ok()) return hash.status();
  e->hash_ = *std::move(hash);
  if (base != nullptr) {
    absl::StatusOr<std::unique_ptr<mpc::OtExtensionReceiver>> ot =
        mpc::OtExtensionReceiver::Extending(e->digest_, std::move(*e->random_), *base->evaluator_);
    e->random_.reset();
    if (!ot.ok()) return ot.status();
    e->ot_ = *std::move(ot);
    e->step_ = 1;  // as after Start: Extend comes next
    e->kept_base_ = true;
  }
  return e;
}

std::optional<ComparisonBase> ComparisonEvaluator::base() const {
  if (ot_ == nullptr || !ot_->base_keys().has_value()) return std::nullopt;
  ComparisonBase b;
  b.role_ = ComparisonRole::kEvaluator;
  auto keys = std::make_shared<mpc::BaseOtReceiverKeys>();
  keys->k0 = ot_->base_keys()->k0;
  keys->k1 = ot_->base_keys()->k1;
  b.evaluator_ = std::move(keys);
  return b;
}

absl::StatusOr<std::string> ComparisonEvaluator::Start() {
  if (step_ != 0) return OutOfOrder("Start", step_);
  absl::StatusOr<std::unique_ptr<mpc::OtExtensionReceiver>> ot =
      mpc::OtExtensionReceiver::Create(digest_, std::move(*random_));
  random_.reset();
  if (!ot.ok()) return ot.status();
  ot_ = *std::move(ot);
  step_ = 1;
  return Header(1, digest_) + ot_->first_message();
}

absl::StatusOr<std::string> ComparisonEvaluator::Extend(std::string_view message2) {
  if (step_ != 1) return OutOfOrder("Extend", step_);
  std::string_view base_answer;
  if (kept_base_) {
    if (!message2.empty()) {
      return absl::InvalidArgumentError(
          "secure comparison: an instance from kept base OTs takes no message 2");
    }
  } else {
    absl::StatusOr<std::string_view> body =
        Body(message2, 2, digest_, mpc::kBaseOts * mpc::kPointBytes);
    if (!body.ok()) return body.status();
    base_answer = *body;
  }
  absl::StatusOr<std::string> extension = ot_->Extend(base_answer, InputBits(inputs_, spec_.bits));
  if (!extension.ok()) return extension.status();
  step_ = 3;
  return Header(3, digest_) + *extension;
}

absl::StatusOr<std::string> ComparisonEvaluator::Evaluate(std::string_view message4) {
  if (step_ != 3) return OutOfOrder("Evaluate", step_);
  const Plan plan = MakePlan(spec_);
  absl::StatusOr<std::string_view> body = Body(message4, 4, digest_, Message4Bytes(plan));
  if (!body.ok()) return body.status();
  step_ = 5;  // whatever happens next, this instance is spent
  const char* p = body->data();
  const uint64_t e_bits = plan.evaluator_bits();
  const uint64_t g_bits = plan.garbler_bits();
  std::vector<Block> y(e_bits);
  if (e_bits > 0) std::memcpy(y.data(), p, e_bits * kBlockBytes);
  p += e_bits * kBlockBytes;
  absl::StatusOr<std::vector<Block>> e_labels = ot_->ChosenLabels(*hash_, y.data(), e_bits);
  if (!e_labels.ok()) return e_labels.status();
  const char* g_labels = p;
  p += g_bits * kBlockBytes;
  const Block zero = mpc::LoadBlock(p);
  p += kBlockBytes;
  std::vector<Block> tables(2 * plan.and_gates());
  if (!tables.empty()) std::memcpy(tables.data(), p, tables.size() * kBlockBytes);
  p += tables.size() * kBlockBytes;
  const char* decode = p;

  const Circuit& c = plan.circuit;
  std::vector<Block> outputs;
  outputs.reserve(plan.instances * c.outputs.size());
  uint64_t and_index = 0;
  const Block* table = tables.data();
  for (uint64_t start = 0; start < plan.instances; start += kBatch) {
    const size_t b = std::min(kBatch, plan.instances - start);
    std::vector<Block> labels(size_t{c.wire_count} * b);
    for (size_t i = 0; i < b; ++i) {
      for (uint32_t w = 0; w < c.garbler_inputs; ++w) {
        labels[w * b + i] =
            mpc::LoadBlock(g_labels + ((start + i) * c.garbler_inputs + w) * kBlockBytes);
      }
      for (uint32_t w = 0; w < c.evaluator_inputs; ++w) {
        labels[(c.garbler_inputs + w) * b + i] = (*e_labels)[(start + i) * c.evaluator_inputs + w];
      }
      labels[c.zero_wire() * b + i] = zero;
    }
    if (absl::Status s = mpc::EvaluateBatch(*hash_, c, b, &and_index, labels, table); !s.ok()) {
      return s;
    }
    table += 2 * size_t{c.and_count} * b;
    for (size_t i = 0; i < b; ++i) {
      for (mpc::Wire o : c.outputs) outputs.push_back(labels[size_t{o} * b + i]);
    }
  }
  if (plan.fold_all) {
    absl::StatusOr<Block> root =
        FoldAnd(*hash_, nullptr, zero, std::move(outputs), &and_index, nullptr, &table);
    if (!root.ok()) return root.status();
    outputs = {*root};
  }
  std::vector<uint8_t> bits(outputs.size());
  std::string message5 = Header(5, digest_);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const bool d = ((static_cast<unsigned char>(decode[k / 8]) >> (k % 8)) & 1) != 0;
    bits[k] = (outputs[k].Lsb() != d) ? 1 : 0;
    mpc::AppendBlock(outputs[k], &message5);
  }
  result_ = Decode(spec_, plan, bits);
  return message5;
}

// --- garbler ---

ComparisonGarbler::~ComparisonGarbler() = default;

absl::StatusOr<std::unique_ptr<ComparisonGarbler>> ComparisonGarbler::Create(
    const ComparisonSpec& spec, std::vector<uint64_t> inputs, std::string_view seed,
    const ComparisonBase* base) {
  if (absl::Status s = ValidateComparisonSpec(spec); !s.ok()) return s;
  if (absl::Status s = CheckInputs(spec, inputs, "garbler"); !s.ok()) return s;
  if (base != nullptr && (base->role() != ComparisonRole::kGarbler || !base->garbler_)) {
    return absl::InvalidArgumentError(
        "secure comparison: kept base OTs of an evaluator given to a garbler");
  }
  std::unique_ptr<ComparisonGarbler> g(new ComparisonGarbler());
  absl::StatusOr<mpc::RandomStream> ot_random = StreamOf(seed, "garbler-ot");
  if (!ot_random.ok()) return ot_random.status();
  absl::StatusOr<mpc::RandomStream> random = StreamOf(seed, "garbler-labels");
  if (!random.ok()) return random.status();
  g->random_ = std::make_unique<mpc::RandomStream>(*std::move(random));
  g->spec_ = spec;
  g->digest_ = ComparisonSpecDigest(spec);
  g->inputs_ = std::move(inputs);
  absl::StatusOr<std::unique_ptr<mpc::FixedKeyHash>> hash = mpc::FixedKeyHash::Create();
  if (!hash.ok()) return hash.status();
  g->hash_ = *std::move(hash);
  absl::StatusOr<std::unique_ptr<mpc::OtExtensionSender>> ot =
      base != nullptr
          ? mpc::OtExtensionSender::Extending(g->digest_, *std::move(ot_random), *base->garbler_)
          : mpc::OtExtensionSender::Create(g->digest_, *std::move(ot_random));
  if (!ot.ok()) return ot.status();
  g->ot_ = *std::move(ot);
  if (base != nullptr) g->step_ = 2;  // as after AnswerBase: Garble comes next
  return g;
}

std::optional<ComparisonBase> ComparisonGarbler::base() const {
  if (ot_ == nullptr || !ot_->base_keys().has_value()) return std::nullopt;
  ComparisonBase b;
  b.role_ = ComparisonRole::kGarbler;
  auto keys = std::make_shared<mpc::BaseOtSenderKeys>();
  keys->s = ot_->base_keys()->s;
  keys->seeds = ot_->base_keys()->seeds;
  b.garbler_ = std::move(keys);
  return b;
}

absl::StatusOr<std::string> ComparisonGarbler::AnswerBase(std::string_view message1) {
  if (step_ != 0) return OutOfOrder("AnswerBase", step_);
  absl::StatusOr<std::string_view> body = Body(message1, 1, digest_, mpc::kPointBytes);
  if (!body.ok()) return body.status();
  absl::StatusOr<std::string> answer = ot_->AnswerBase(*body);
  if (!answer.ok()) return answer.status();
  step_ = 2;
  return Header(2, digest_) + *answer;
}

absl::StatusOr<std::string> ComparisonGarbler::Garble(std::string_view message3) {
  if (step_ != 2) return OutOfOrder("Garble", step_);
  const Plan plan = MakePlan(spec_);
  const uint64_t e_bits = plan.evaluator_bits();
  absl::StatusOr<std::string_view> body =
      Body(message3, 3, digest_, mpc::ExtensionMessageBytes(e_bits));
  if (!body.ok()) return body.status();
  step_ = 4;  // spent, whatever happens next
  absl::StatusOr<Block> delta = RandomBlock(*random_);
  if (!delta.ok()) return delta.status();
  delta_ = *delta;
  delta_.lo |= 1;  // point and permute: the two labels of a wire differ in their lowest bit
  std::vector<Block> y;
  absl::StatusOr<std::vector<Block>> e_zero = ot_->Transfer(*hash_, *body, e_bits, delta_, &y);
  if (!e_zero.ok()) return e_zero.status();
  const std::vector<uint8_t> g_bits = InputBits(inputs_, spec_.bits);
  absl::StatusOr<std::vector<Block>> g_zero = RandomBlocks(*random_, g_bits.size());
  if (!g_zero.ok()) return g_zero.status();
  absl::StatusOr<Block> zero = RandomBlock(*random_);
  if (!zero.ok()) return zero.status();

  std::string message4 = Header(4, digest_);
  message4.reserve(kHeaderBytes + Message4Bytes(plan));
  for (const Block& b : y) mpc::AppendBlock(b, &message4);
  for (size_t k = 0; k < g_bits.size(); ++k) {
    mpc::AppendBlock((*g_zero)[k] ^ mpc::SelectIf(g_bits[k] != 0, delta_), &message4);
  }
  mpc::AppendBlock(*zero, &message4);

  const Circuit& c = plan.circuit;
  std::vector<Block> tables;
  tables.reserve(2 * plan.and_gates());
  std::vector<Block> outputs;
  outputs.reserve(plan.instances * c.outputs.size());
  uint64_t and_index = 0;
  for (uint64_t start = 0; start < plan.instances; start += kBatch) {
    const size_t b = std::min(kBatch, plan.instances - start);
    std::vector<Block> labels(size_t{c.wire_count} * b);
    for (size_t i = 0; i < b; ++i) {
      for (uint32_t w = 0; w < c.garbler_inputs; ++w) {
        labels[w * b + i] = (*g_zero)[(start + i) * c.garbler_inputs + w];
      }
      for (uint32_t w = 0; w < c.evaluator_inputs; ++w) {
        labels[(c.garbler_inputs + w) * b + i] = (*e_zero)[(start + i) * c.evaluator_inputs + w];
      }
      labels[c.zero_wire() * b + i] = *zero;
    }
    const size_t at = tables.size();
    tables.resize(at + 2 * size_t{c.and_count} * b);
    if (absl::Status s =
            mpc::GarbleBatch(*hash_, c, delta_, b, &and_index, labels, tables.data() + at);
        !s.ok()) {
      return s;
    }
    for (size_t i = 0; i < b; ++i) {
      for (mpc::Wire o : c.outputs) outputs.push_back(labels[size_t{o} * b + i]);
    }
  }
  if (plan.fold_all) {
    absl::StatusOr<Block> root =
        FoldAnd(*hash_, &delta_, *zero, std::move(outputs), &and_index, &tables, nullptr);
    if (!root.ok()) return root.status();
    outputs = {*root};
  }
  for (const Block& t : tables) mpc::AppendBlock(t, &message4);
  std::string decode((outputs.size() + 7) / 8, '\0');
  for (size_t k = 0; k < outputs.size(); ++k) {
    decode[k / 8] = static_cast<char>(decode[k / 8] | (outputs[k].Lsb() ? 1 << (k % 8) : 0));
  }
  message4 += decode;
  output_zero_ = std::move(outputs);
  return message4;
}

absl::StatusOr<ComparisonResult> ComparisonGarbler::Finish(std::string_view message5) {
  if (step_ != 4) return OutOfOrder("Finish", step_);
  absl::StatusOr<std::string_view> body =
      Body(message5, 5, digest_, output_zero_.size() * kBlockBytes);
  if (!body.ok()) return body.status();
  step_ = 6;
  std::vector<uint8_t> bits(output_zero_.size());
  for (size_t k = 0; k < output_zero_.size(); ++k) {
    const Block label = mpc::LoadBlock(body->data() + k * kBlockBytes);
    if (label == output_zero_[k]) {
      bits[k] = 0;
    } else if (label == (output_zero_[k] ^ delta_)) {
      bits[k] = 1;
    } else {
      return absl::PermissionDeniedError(absl::StrCat(
          "secure comparison: the evaluator's output label ", k, " is not one the circuit has"));
    }
  }
  return Decode(spec_, MakePlan(spec_), bits);
}

absl::StatusOr<std::string> KeptOrNewComparisonSeed(std::string kept) {
  if (!kept.empty()) return kept;
  std::string seed(kComparisonSeedBytes, '\0');
  const absl::Status filled =
      FillRandom(absl::MakeSpan(reinterpret_cast<uint8_t*>(seed.data()), seed.size()));
  if (!filled.ok()) return filled;
  return seed;
}

absl::StatusOr<std::unique_ptr<ComparisonSide>> ComparisonSide::Create(ComparisonRole role,
                                                                       const ComparisonSpec& spec,
                                                                       std::vector<uint64_t> inputs,
                                                                       std::string_view seed,
                                                                       const ComparisonBase* base) {
  std::unique_ptr<ComparisonSide> side(new ComparisonSide());
  side->role_ = role;
  if (role == ComparisonRole::kGarbler) {
    absl::StatusOr<std::unique_ptr<ComparisonGarbler>> g =
        ComparisonGarbler::Create(spec, std::move(inputs), seed, base);
    if (!g.ok()) return g.status();
    side->garbler_ = *std::move(g);
  } else {
    absl::StatusOr<std::unique_ptr<ComparisonEvaluator>> e =
        ComparisonEvaluator::Create(spec, std::move(inputs), seed, base);
    if (!e.ok()) return e.status();
    side->evaluator_ = *std::move(e);
  }
  side->next_ = FirstComparisonStep(role, base != nullptr);
  return side;
}

ComparisonSide::~ComparisonSide() = default;

absl::StatusOr<std::string> ComparisonSide::Step(int step, std::string_view message) {
  if (next_ == 0 || step != next_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secure comparison: step ", step, " out of order (this ",
        role_ == ComparisonRole::kGarbler ? "garbler" : "evaluator", "'s next is ",
        next_ == 0 ? std::string("none: its part has ended") : absl::StrCat(next_), ")"));
  }
  next_ = 0;  // spent unless this step succeeds
  absl::StatusOr<std::string> out;
  switch (step) {
    case 1:
      out = evaluator_->Start();
      break;
    case 2:
      out = garbler_->AnswerBase(message);
      break;
    case 3:
      out = evaluator_->Extend(message);
      break;
    case 4:
      out = garbler_->Garble(message);
      break;
    case 5:
      out = evaluator_->Evaluate(message);
      if (out.ok()) result_ = evaluator_->result();
      break;
    default: {
      absl::StatusOr<ComparisonResult> r = garbler_->Finish(message);
      if (!r.ok()) return r.status();
      result_ = *std::move(r);
      out = std::string();
      break;
    }
  }
  if (!out.ok()) return out.status();
  if (step == 2) base_ = garbler_->base();
  if (step == 3 && !base_) base_ = evaluator_->base();
  if (step + 2 <= kComparisonSteps) next_ = step + 2;
  if (result_.has_value()) {
    garbler_.reset();  // the instance's secrets are no longer needed
    evaluator_.reset();
  }
  return out;
}

}  // namespace fedanon::crypto
