#include "common/wire/federation_wire.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/engine/sensitive_distribution.h"
#include "crypto/hash.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/unknown_field_set.h"

namespace fedanon::wire {

std::string EncodeWords(const std::vector<uint64_t>& words) {
  std::string out(words.size() * 8, '\0');
  for (size_t i = 0; i < words.size(); ++i) {
    uint64_t w = words[i];
    for (int b = 0; b < 8; ++b) {
      out[i * 8 + b] = static_cast<char>(w & 0xff);
      w >>= 8;
    }
  }
  return out;
}

absl::StatusOr<std::vector<uint64_t>> DecodeWords(std::string_view bytes) {
  if (bytes.size() % 8 != 0) {
    return absl::InvalidArgumentError("a count vector must be a whole number of 64-bit words");
  }
  std::vector<uint64_t> words(bytes.size() / 8);
  for (size_t i = 0; i < words.size(); ++i) {
    uint64_t w = 0;
    for (int b = 7; b >= 0; --b) w = w << 8 | static_cast<unsigned char>(bytes[i * 8 + b]);
    words[i] = w;
  }
  return words;
}

fedanon::v1::StatsRequest ToProto(const engine::StatsRequest& request) {
  fedanon::v1::StatsRequest p;
  for (const engine::RangeCountRequest& r : request.range_counts) {
    auto* rc = p.add_range_counts();
    rc->set_attribute(r.attr);
    for (int32_t b : r.bounds) rc->add_bounds(b);
    rc->set_labelled(r.labelled);
  }
  for (const auto& [a, n] : request.rank_histograms) {
    auto* r = p.add_rank_histograms();
    r->set_attribute(a);
    r->set_node(n);
  }
  for (const auto& [a, n] : request.node_class_counts) {
    auto* r = p.add_node_class_counts();
    r->set_attribute(a);
    r->set_node(n);
  }
  for (const auto& key : request.group_keys) {
    auto* g = p.add_groups();
    for (engine::NodeIndex n : key) g->add_nodes(n);
  }
  for (const auto& key : request.released_groups) {
    auto* g = p.add_released_groups();
    for (engine::NodeIndex n : key) g->add_nodes(n);
  }
  p.set_released_combinations(request.released_combinations);
  if (!request.histograms.empty()) {
    fedanon::v1::SensitiveHistogramRequest h;
    h.set_domain(request.histogram_domain);
    for (const engine::HistogramQuery& q : request.histograms) {
      auto* query = h.add_queries();
      for (engine::NodeIndex n : q.key) query->add_key(n);
      query->set_attribute(q.attr);
      query->set_candidate(q.candidate);
    }
    SetSensitiveHistograms(h, &p);
  }
  return p;
}

void SetSensitiveHistograms(const fedanon::v1::SensitiveHistogramRequest& histograms,
                            fedanon::v1::StatsRequest* proto) {
  google::protobuf::UnknownFieldSet* unknown = proto->GetReflection()->MutableUnknownFields(proto);
  for (int i = unknown->field_count(); i-- > 0;) {
    if (unknown->field(i).number() == kSensitiveHistogramsField) unknown->DeleteSubrange(i, 1);
  }
  std::string bytes;
  histograms.SerializeToString(&bytes);
  unknown->AddLengthDelimited(kSensitiveHistogramsField, bytes);
}

absl::StatusOr<std::optional<fedanon::v1::SensitiveHistogramRequest>> SensitiveHistograms(
    const fedanon::v1::StatsRequest& proto) {
  const google::protobuf::UnknownFieldSet& unknown = proto.GetReflection()->GetUnknownFields(proto);
  std::optional<fedanon::v1::SensitiveHistogramRequest> out;
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& field = unknown.field(i);
    if (field.number() != kSensitiveHistogramsField) continue;
    if (field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED || out.has_value()) {
      return absl::InvalidArgumentError("sensitive histogram queries are malformed");
    }
    out.emplace();
    if (!out->ParseFromString(field.length_delimited())) {
      return absl::InvalidArgumentError("sensitive histogram queries do not parse");
    }
  }
  return out;
}

absl::StatusOr<engine::StatsRequest> FromProto(
    const fedanon::v1::StatsRequest& proto, const std::vector<engine::AttributeHierarchy>& hier) {
  engine::StatsRequest request;
  auto node_ok = [&](uint32_t a, int32_t n) {
    return a < hier.size() && n >= 0 && static_cast<size_t>(n) < hier[a].size();
  };
  for (const auto& r : proto.range_counts()) {
    if (r.attribute() >= hier.size() || hier[r.attribute()].kind() != table::QidKind::kContinuous) {
      return absl::InvalidArgumentError("range counts of an attribute that is not continuous");
    }
    const int32_t ranks = hier[r.attribute()].node(0).rank_hi;
    std::vector<int32_t> bounds(r.bounds().begin(), r.bounds().end());
    if (bounds.size() < 2 || bounds.front() < 0 || bounds.back() > ranks ||
        std::adjacent_find(bounds.begin(), bounds.end(), std::greater_equal<int32_t>()) !=
            bounds.end()) {
      return absl::InvalidArgumentError(
          "range counts need increasing rank bounds within the attribute's range");
    }
    request.range_counts.push_back(
        {static_cast<int>(r.attribute()), std::move(bounds), r.labelled()});
  }
  for (const auto& r : proto.rank_histograms()) {
    if (!node_ok(r.attribute(), r.node()) ||
        hier[r.attribute()].kind() != table::QidKind::kContinuous) {
      return absl::InvalidArgumentError("rank histogram of an unknown interval");
    }
    request.rank_histograms.emplace_back(r.attribute(), r.node());
  }
  for (const auto& r : proto.node_class_counts()) {
    if (!node_ok(r.attribute(), r.node())) {
      return absl::InvalidArgumentError("class counts of an unknown node");
    }
    request.node_class_counts.emplace_back(r.attribute(), r.node());
  }
  auto read_keys = [&](const auto& groups,
                       std::vector<std::vector<engine::NodeIndex>>* keys) -> absl::Status {
    for (const auto& g : groups) {
      if (static_cast<size_t>(g.nodes_size()) != hier.size()) {
        return absl::InvalidArgumentError("group key of the wrong width");
      }
      std::vector<engine::NodeIndex> key(g.nodes().begin(), g.nodes().end());
      for (size_t a = 0; a < key.size(); ++a) {
        if (!node_ok(static_cast<uint32_t>(a), key[a])) {
          return absl::InvalidArgumentError("group key names an unknown node");
        }
      }
      keys->push_back(std::move(key));
    }
    return absl::OkStatus();
  };
  if (auto s = read_keys(proto.groups(), &request.group_keys); !s.ok()) return s;
  if (auto s = read_keys(proto.released_groups(), &request.released_groups); !s.ok()) return s;
  request.released_combinations = proto.released_combinations();
  auto histograms = SensitiveHistograms(proto);
  if (!histograms.ok()) return histograms.status();
  if (histograms->has_value()) {
    const fedanon::v1::SensitiveHistogramRequest& h = **histograms;
    if (h.domain() == 0 || h.domain() > table::kMaxSensitiveDomain) {
      return absl::InvalidArgumentError("sensitive histograms over an impossible domain");
    }
    request.histogram_domain = h.domain();
    size_t words = 0;
    for (const auto& q : h.queries()) {
      engine::HistogramQuery query;
      if (static_cast<size_t>(q.key_size()) != hier.size()) {
        return absl::InvalidArgumentError("sensitive histogram of a group key of the wrong width");
      }
      query.key.assign(q.key().begin(), q.key().end());
      for (size_t a = 0; a < query.key.size(); ++a) {
        if (!node_ok(static_cast<uint32_t>(a), query.key[a])) {
          return absl::InvalidArgumentError("sensitive histogram of a group with an unknown node");
        }
      }
      if (q.attribute() >= 0) {
        // A candidate of a node of the current cut, as the engine evaluates them.
        const auto a = static_cast<uint32_t>(q.attribute());
        if (a >= hier.size()) {
          return absl::InvalidArgumentError("sensitive histogram split by an unknown attribute");
        }
        const engine::NodeIndex n = query.key[a];
        if (!hier[a].node(n).children.empty() || q.candidate() < 0 ||
            q.candidate() >= hier[a].CandidateCount(n)) {
          return absl::InvalidArgumentError(
              "sensitive histogram split by no candidate of the current cut");
        }
        query.attr = static_cast<int>(a);
        query.candidate = q.candidate();
      } else if (q.attribute() != -1 || q.candidate() != 0) {
        return absl::InvalidArgumentError("sensitive histogram of a whole group names a candidate");
      }
      words += engine::HistogramWords(hier, query, request.histogram_domain);
      if (words > engine::kMaxHistogramWords) {
        return absl::InvalidArgumentError(absl::StrCat("sensitive histograms of more than ",
                                                       engine::kMaxHistogramWords,
                                                       " words in one request"));
      }
      request.histograms.push_back(std::move(query));
    }
  }
  return request;
}

std::string ReleasePurpose(const std::string& recipient) {
  return absl::StrCat("columns for ", recipient);
}

std::string SumPurpose(const fedanon::v1::SumStep& step) {
  return absl::StrCat("secure-sum/", step.collect(), "/", step.chunk());
}

namespace {
std::string DeterministicBytes(const google::protobuf::MessageLite& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!message.SerializeToCodedStream(&coded)) return std::string();  // > 2 GiB only
  }
  return out;
}
void AppendU64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}
}  // namespace

std::string ChainStateUpdate(const std::string& chain, const fedanon::v1::StateUpdate& update) {
  return crypto::Sha256(absl::StrCat("fedanon-update-chain-v1", chain, DeterministicBytes(update)));
}

std::string SumRequestDigest(const fedanon::v1::StatsRequest& request,
                             const std::string& update_chain) {
  const std::string bytes = DeterministicBytes(request);
  std::string in = "fedanon-sum-request-v1";
  AppendU64(&in, bytes.size());
  in += bytes;
  in += update_chain;
  return crypto::Sha256(in);
}

std::string SumHopPurpose(const fedanon::v1::SumStep& step, uint64_t round,
                          const std::string& request_digest) {
  std::string in = "fedanon-sum-hop-v2";
  for (uint64_t v : {round, step.collect(), uint64_t{step.chunk()}, uint64_t{step.chunks()},
                     step.chunk_offset(), step.total_words(), step.chunk_words()}) {
    AppendU64(&in, v);
  }
  in += request_digest;
  return absl::StrCat(SumPurpose(step), "/", crypto::ToHex(crypto::Sha256(in)));
}

std::string SumMaskPurpose(uint64_t collect, uint64_t round, const std::string& request_digest) {
  std::string in = "fedanon-sum-mask-v1";
  AppendU64(&in, round);
  AppendU64(&in, collect);
  in += request_digest;
  return absl::StrCat("secure-sum-mask/", collect, "/", crypto::ToHex(crypto::Sha256(in)));
}

std::string SumBinCheckPurpose(uint64_t collect, uint32_t step, uint64_t round,
                               const std::string& request_digest) {
  std::string in = "fedanon-sum-bins-v1";
  AppendU64(&in, round);
  AppendU64(&in, collect);
  AppendU64(&in, step);
  in += request_digest;
  return absl::StrCat("secure-sum-bins/", collect, "/", step, "/",
                      crypto::ToHex(crypto::Sha256(in)));
}

absl::StatusOr<uint64_t> SumChunkLength(const fedanon::v1::SumStep& step) {
  const uint64_t cw = step.chunk_words();
  if (cw == 0 || step.total_words() == 0 || step.chunks() == 0 ||
      step.chunks() != (step.total_words() + cw - 1) / cw || step.chunk() >= step.chunks() ||
      step.chunk_offset() != uint64_t{step.chunk()} * cw) {
    return absl::InvalidArgumentError(absl::StrCat(
        "secure sum: chunk ", step.chunk(), " of ", step.chunks(), " at word ", step.chunk_offset(),
        " (", cw, " words each, ", step.total_words(), " in all) does not exist"));
  }
  return std::min(cw, step.total_words() - step.chunk_offset());
}

std::string FinalCheckPurpose(const std::string& kind, const fedanon::v1::FinalCheckStep& step,
                              uint64_t round, const std::string& update_chain) {
  std::string in = "fedanon-final-check-v1";
  in += kind;
  for (uint64_t v : {round, uint64_t{step.chunk()}, uint64_t{step.chunks()}, step.chunk_words(),
                     step.total_words()}) {
    AppendU64(&in, v);
  }
  in += crypto::Sha256(update_chain);
  return absl::StrCat("final-check/", kind, "/", step.chunk(), "/",
                      crypto::ToHex(crypto::Sha256(in)));
}

std::string CsvLine(const google::protobuf::RepeatedPtrField<std::string>& fields) {
  std::vector<std::string_view> views(fields.begin(), fields.end());
  return table::CsvLine(views);
}

}  // namespace fedanon::wire
