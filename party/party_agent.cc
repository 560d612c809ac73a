#include "party/party_agent.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/base/parallel_for.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/numeric_split.h"
#include "common/engine/released_rows.h"
#include "common/engine/tips.h"
#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "crypto/secret_bytes.h"
#include "crypto/secure_sum_masks.h"
#include "crypto/shuffle.h"
#include "party/id_matching.h"
#include "party/vertical_party.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

using common::CsvLine;
using common::DecodeWords;
using common::EncodeWords;
using common::FromProto;
using common::JoinReleasedColumns;
using common::OpenUnionList;
using common::OpenUnionRows;
using common::ParallelFor;
using common::SumPurpose;
using common::UnionListContext;
using common::UnionRowContext;

absl::Status ShuffleRows(google::protobuf::RepeatedPtrField<std::string>* rows) {
  ASSIGN_OR_RETURN(std::vector<size_t> perm, crypto::SecurePermutation(rows->size()));
  std::vector<std::string> shuffled(rows->size());
  for (size_t i = 0; i < perm.size(); ++i) shuffled[i] = std::move((*rows)[perm[i]]);
  rows->Clear();
  for (auto& r : shuffled) *rows->Add() = std::move(r);
  return absl::OkStatus();
}

std::string Resolve(const std::string& base, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base) / path).string();
}

}  // namespace

// Everything the party holds for the job it is taking part in.
struct PartyAgent::JobState {
  std::string job_id;
  fedanon::v1::JobSpec spec;
  std::unique_ptr<common::Dataset> data;  // stable address: hierarchies point into it
  std::vector<common::AttributeHierarchy> hier;
  std::unique_ptr<common::Tips> tips;
  std::map<std::string, std::unique_ptr<crypto::SealPublicKey>> seal_keys;  // by party name
  uint64_t applied_updates = 0;
  // The local counts of the secure sum in progress (kept across its chunks).
  uint64_t counts_collect = UINT64_MAX;
  std::vector<uint64_t> counts;
  // Vertical jobs: the data parties in ring order, this party's replica and its ID matcher.
  std::vector<std::string> ring;
  std::unique_ptr<VerticalParty> vertical;
  std::unique_ptr<IdMatcher> matcher;
};

absl::StatusOr<std::unique_ptr<PartyAgent>> PartyAgent::Create(PartyAgentOptions options) {
  RETURN_IF_ERROR(crypto::ValidateParticipantName(options.name));
  if (!options.misbehave.empty() && options.misbehave != "never-participate" &&
      options.misbehave != "under-declare") {
    return absl::InvalidArgumentError(absl::StrCat("unknown misbehaviour '", options.misbehave,
                                                   "' (never-participate or under-declare)"));
  }
  if (options.seal_key_pem.empty() || options.seal_cert_pem.empty() || options.ca_pem.empty()) {
    return absl::InvalidArgumentError("a party needs the CA certificate and its sealing key pair");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<crypto::SealKeyPair> keys,
                   crypto::SealKeyPairFromPem(options.seal_key_pem));
  return std::unique_ptr<PartyAgent>(new PartyAgent(std::move(options), std::move(keys)));
}

PartyAgent::PartyAgent(PartyAgentOptions options, std::unique_ptr<crypto::SealKeyPair> seal_keys)
    : options_(std::move(options)), seal_keys_(std::move(seal_keys)) {}
PartyAgent::~PartyAgent() = default;

PartyMessage PartyAgent::Handle(const LeaderMessage& request) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<PartyMessage> reply = Dispatch(request);
  if (!reply.ok()) {
    PartyMessage error;
    error.set_request_id(request.request_id());
    error.mutable_error()->set_code(static_cast<int>(reply.status().code()));
    error.mutable_error()->set_message(std::string(reply.status().message()));
    spdlog::warn("job={} round={} request failed: {}", request.job_id(), request.round(),
                 std::string(reply.status().message()));
    return error;
  }
  reply->set_request_id(request.request_id());
  return *std::move(reply);
}

absl::StatusOr<PartyMessage> PartyAgent::Dispatch(const LeaderMessage& request) {
  PartyMessage reply;
  switch (request.body_case()) {
    case LeaderMessage::kPing:
      reply.mutable_pong()->set_echoed_unix_nanos(request.ping().sent_unix_nanos());
      return reply;
    case LeaderMessage::kPrepare: {
      job_.reset();
      auto job = std::make_unique<JobState>();
      job->job_id = request.job_id();
      job->spec = request.prepare().spec();
      // Sealing keys of the other participants: verified against the CA for the announced name,
      // so the relaying leader cannot substitute a key of its own.
      for (const auto& p : request.prepare().participants()) {
        // The leader announces itself (as a possible recipient) with index UINT32_MAX.
        const crypto::Identity id{
            p.index() == UINT32_MAX ? crypto::Role::kLeader : crypto::Role::kParty, p.name()};
        ASSIGN_OR_RETURN(auto key,
                         crypto::VerifiedSealKey(p.seal_certificate(), options_.ca_pem, id));
        job->seal_keys[p.name()] = std::move(key);
      }
      // Load the taxonomies named by the spec from our data directory, then our table.
      std::map<std::string, std::string> texts;
      for (auto& a : *job->spec.mutable_attributes()) {
        if (a.taxonomy().empty()) continue;
        const std::string path = Resolve(options_.data_dir, a.taxonomy());
        auto text = common::ReadFile(path);
        if (!text.ok()) {
          spdlog::error("job={} cannot read taxonomy {}: {}", job->job_id, path,
                        std::string(text.status().message()));
          return absl::FailedPreconditionError(
              absl::StrCat("party '", options_.name, "' cannot read the taxonomy of attribute '",
                           a.name(), "' (details in the party's log)"));
        }
        texts[a.name()] = *text;
      }
      auto schema = common::BuildPublicSchema(job->spec, texts);
      if (!schema.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat("party '", options_.name, "': ", schema.status().message()));
      }
      const std::string table = Resolve(options_.data_dir, request.prepare().data_path().empty()
                                                               ? options_.default_data_path
                                                               : request.prepare().data_path());
      for (const auto& p : request.prepare().participants()) {
        if (p.index() != UINT32_MAX) job->ring.push_back(p.name());
      }
      if (job->spec.partitioning() == fedanon::v1::PARTITIONING_VERTICAL) {
        VerticalPartyOptions vopts;
        vopts.name = options_.name;
        vopts.releases_class = !job->ring.empty() && job->ring.front() == options_.name;
        vopts.parties = job->ring;
        if (options_.misbehave == "never-participate") {
          vopts.misbehaviour = Misbehaviour::kNeverParticipate;
        } else if (options_.misbehave == "under-declare") {
          vopts.misbehaviour = Misbehaviour::kUnderDeclare;
        }
        auto vp = VerticalParty::Load(job->spec, *schema, table, vopts);
        if (!vp.ok()) {
          spdlog::error("job={} table {} does not match the job: {}", job->job_id, table,
                        std::string(vp.status().message()));
          return absl::FailedPreconditionError(absl::StrCat(
              "party '", options_.name,
              "': its table does not match the job's schema (details in the party's log)"));
        }
        job->vertical = *std::move(vp);
        reply.mutable_prepared()->set_digest(
            crypto::Sha256(common::CanonicalJobBytes(job->spec, texts)));
        spdlog::info("job={} prepared (vertical): {} records loaded", job->job_id,
                     job->vertical->ids().size());
        job_ = std::move(job);
        return reply;
      }
      auto data = common::LoadDataset(job->spec, table, &*schema);
      if (!data.ok()) {
        // The detailed message may quote raw values: it stays in the party's log.
        spdlog::error("job={} table {} does not match the job: {}", job->job_id, table,
                      std::string(data.status().message()));
        return absl::FailedPreconditionError(absl::StrCat(
            "party '", options_.name,
            "': its table does not match the job's schema (details in the party's log)"));
      }
      job->data = std::make_unique<common::Dataset>(*std::move(data));
      for (const auto& q : job->data->qids) job->hier.emplace_back(&q);
      job->tips = std::make_unique<common::Tips>(job->data.get(), &job->hier);
      reply.mutable_prepared()->set_digest(
          crypto::Sha256(common::CanonicalJobBytes(job->spec, texts)));
      spdlog::info("job={} prepared: {} records loaded", job->job_id, job->data->num_records);
      job_ = std::move(job);
      return reply;
    }
    case LeaderMessage::kSumStep:
      return HandleSumStep(request);
    case LeaderMessage::kUnionStep:
      return HandleUnionStep(request);
    case LeaderMessage::kVertical:
      return HandleVertical(request);
    case LeaderMessage::kEndJob:
      if (job_ && job_->job_id == request.job_id()) {
        spdlog::info("job={} ended: {}", job_->job_id, request.end_job().reason());
        job_.reset();
      }
      reply.mutable_pong();
      return reply;
    default:
      return absl::InvalidArgumentError("unknown request");
  }
}

absl::Status PartyAgent::ApplyUpdates(
    const google::protobuf::RepeatedPtrField<fedanon::v1::StateUpdate>& updates) {
  JobState& job = *job_;
  for (const auto& u : updates) {
    if (u.sequence() < job.applied_updates) continue;
    if (u.sequence() != job.applied_updates) {
      return absl::FailedPreconditionError(
          absl::StrCat("state update ", u.sequence(), " arrived before ", job.applied_updates));
    }
    if (u.has_instruction()) {
      const auto& in = u.instruction();
      if (in.attribute() >= job.hier.size() || in.node() < 0 ||
          static_cast<size_t>(in.node()) >= job.hier[in.attribute()].size() || in.candidate() < 0 ||
          in.candidate() >= job.hier[in.attribute()].CandidateCount(in.node())) {
        return absl::InvalidArgumentError("instruction names no candidate of the current cut");
      }
      job.hier[in.attribute()].Specialize(in.node(), in.candidate());
      job.tips->Specialize(static_cast<int>(in.attribute()), in.node(), in.candidate());
    } else if (u.has_split()) {
      const auto& sp = u.split();
      if (sp.attribute() >= job.hier.size() ||
          job.hier[sp.attribute()].kind() != common::QidKind::kContinuous || sp.node() < 0 ||
          static_cast<size_t>(sp.node()) >= job.hier[sp.attribute()].size()) {
        return absl::InvalidArgumentError("split names no interval of the current cut");
      }
      const auto& node = job.hier[sp.attribute()].node(sp.node());
      if (sp.split() != -1 && (sp.split() <= node.rank_lo || sp.split() >= node.rank_hi)) {
        return absl::InvalidArgumentError("split threshold lies outside its interval");
      }
      job.hier[sp.attribute()].SetSplit(sp.node(), sp.split());
    }
    ++job.applied_updates;
  }
  return absl::OkStatus();
}

absl::StatusOr<PartyMessage> PartyAgent::HandleSumStep(const LeaderMessage& request) {
  if (!job_ || job_->job_id != request.job_id()) {
    return absl::FailedPreconditionError("no prepared job with this id");
  }
  JobState& job = *job_;
  const auto& step = request.sum_step();
  RETURN_IF_ERROR(ApplyUpdates(step.updates()));
  if (job.counts_collect != step.collect()) {
    // The request travels with the first chunk only; later chunks reuse the counts.
    ASSIGN_OR_RETURN(common::StatsRequest stats_request, FromProto(step.request(), job.hier));
    RETURN_IF_ERROR(common::CheckNumericRequest(stats_request, job.hier,
                                                common::NumericSplitFromSpec(job.spec)));
    if (!stats_request.released_groups.empty() &&
        (!job.data->all_values_declared ||
         stats_request.released_combinations != job.data->ValueCombinations())) {
      return absl::InvalidArgumentError("released counts requested over an undeclared domain");
    }
    job.counts.clear();
    common::AppendLocalStats(*job.tips, stats_request, &job.counts);
    job.counts_collect = step.collect();
  }
  if (job.counts.size() != step.total_words()) {
    return absl::InvalidArgumentError(absl::StrCat("the secure sum has ", step.total_words(),
                                                   " words but this request needs ",
                                                   job.counts.size()));
  }
  std::string input;
  if (step.has_sealed()) {
    const crypto::SealContext context{job.job_id, request.round(), step.sealed().sender(),
                                      options_.name, SumPurpose(step)};
    ASSIGN_OR_RETURN(input, crypto::Open(*seal_keys_, context, step.sealed().ciphertext()));
    if (options_.observe_opened) options_.observe_opened(step.sealed().sender(), input);
  } else {
    input = step.masked();
  }
  ASSIGN_OR_RETURN(std::vector<uint64_t> acc, DecodeWords(input));
  if (step.chunk_offset() > job.counts.size() ||
      acc.size() > job.counts.size() - step.chunk_offset()) {
    return absl::InvalidArgumentError("secure-sum chunk lies outside the vector");
  }
  RETURN_IF_ERROR(
      crypto::AddInPlace(absl::MakeSpan(acc),
                         absl::MakeConstSpan(job.counts.data() + step.chunk_offset(), acc.size())));
  PartyMessage reply;
  const std::string output = EncodeWords(acc);
  if (step.next().empty()) {
    reply.mutable_sum_step()->set_masked(output);
    return reply;
  }
  auto it = job.seal_keys.find(step.next());
  if (it == job.seal_keys.end()) {
    return absl::InvalidArgumentError(absl::StrCat("'", step.next(), "' is not a participant"));
  }
  const crypto::SealContext context{job.job_id, request.round(), options_.name, step.next(),
                                    SumPurpose(step)};
  ASSIGN_OR_RETURN(std::string sealed, crypto::Seal(*it->second, context, output));
  auto* out = reply.mutable_sum_step()->mutable_sealed();
  out->set_sender(options_.name);
  out->set_receiver(step.next());
  out->set_purpose(SumPurpose(step));
  out->set_ciphertext(std::move(sealed));
  return reply;
}

absl::StatusOr<PartyMessage> PartyAgent::HandleUnionStep(const LeaderMessage& request) {
  if (!job_ || job_->job_id != request.job_id()) {
    return absl::FailedPreconditionError("no prepared job with this id");
  }
  JobState& job = *job_;
  const auto& step = request.union_step();
  ASSIGN_OR_RETURN(
      fedanon::v1::UnionList list,
      OpenUnionList(*seal_keys_, job.job_id, request.round(), options_.name, step.list()));
  PartyMessage reply;
  auto* out = reply.mutable_union_step();
  if (step.deliver()) {
    // This party is the recipient: open every row, shuffle, write the integrated table.
    if (step.recipient() != options_.name) {
      return absl::InvalidArgumentError("asked to deliver a union meant for another party");
    }
    ASSIGN_OR_RETURN(
        std::vector<std::string> rows,
        OpenUnionRows(*seal_keys_, job.job_id, request.round(), options_.name, list.rows()));
    ASSIGN_OR_RETURN(std::vector<size_t> perm, crypto::SecurePermutation(rows.size()));
    std::string csv = CsvLine(step.header());
    for (size_t i : perm) csv += rows[i];
    const std::string path =
        (std::filesystem::path(options_.output_dir) / absl::StrCat(job.job_id, ".csv")).string();
    std::error_code ec;
    std::filesystem::create_directories(options_.output_dir, ec);
    RETURN_IF_ERROR(common::WriteFileAtomically(path, csv));
    spdlog::info("job={} integrated table ({} rows) written to {}", job.job_id, rows.size(), path);
    out->set_rows_written(rows.size());
    return reply;
  }
  auto recipient = job.seal_keys.find(step.recipient());
  auto next = job.seal_keys.find(step.next());
  if (recipient == job.seal_keys.end() || next == job.seal_keys.end()) {
    return absl::InvalidArgumentError("the union names someone who is not a participant");
  }
  // Our released rows, each sealed on its own for the recipient (no two rows share a key, so the
  // recipient cannot tell which rows came from the same party), added to the set and shuffled.
  std::vector<std::string> lines;
  const std::vector<int> columns =
      common::ReleasedColumns(job.spec, *job.data, /*spec_order=*/true);
  RETURN_IF_ERROR(common::ForEachReleasedRow(
      job.spec, *job.data, *job.tips, job.hier, columns,
      [&](const std::vector<std::string_view>& row) { lines.push_back(CsvLine(row)); }));
  const size_t before = list.rows_size();
  for (size_t i = 0; i < lines.size(); ++i) list.add_rows();
  const crypto::SealContext row_context =
      UnionRowContext(job.job_id, request.round(), step.recipient());
  RETURN_IF_ERROR(ParallelFor(lines.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(*list.mutable_rows(static_cast<int>(before + i)),
                     crypto::Seal(*recipient->second, row_context, lines[i]));
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(ShuffleRows(list.mutable_rows()));
  ASSIGN_OR_RETURN(std::string sealed, crypto::Seal(*next->second,
                                                    UnionListContext(job.job_id, request.round(),
                                                                     options_.name, step.next()),
                                                    list.SerializeAsString()));
  auto* payload = out->mutable_list();
  payload->set_sender(options_.name);
  payload->set_receiver(step.next());
  payload->set_purpose("union-list");
  payload->set_ciphertext(std::move(sealed));
  return reply;
}

absl::StatusOr<fedanon::v1::SealedPayload> PartyAgent::SealFor(const std::string& receiver,
                                                               uint64_t round,
                                                               const std::string& purpose,
                                                               const std::string& bytes) const {
  auto it = job_->seal_keys.find(receiver);
  if (it == job_->seal_keys.end()) {
    return absl::InvalidArgumentError(absl::StrCat("'", receiver, "' is not a participant"));
  }
  const crypto::SealContext context{job_->job_id, round, options_.name, receiver, purpose};
  ASSIGN_OR_RETURN(std::string sealed, crypto::Seal(*it->second, context, bytes));
  fedanon::v1::SealedPayload out;
  out.set_sender(options_.name);
  out.set_receiver(receiver);
  out.set_purpose(purpose);
  out.set_ciphertext(std::move(sealed));
  return out;
}

absl::StatusOr<std::string> PartyAgent::OpenSealed(const fedanon::v1::SealedPayload& payload,
                                                   uint64_t round,
                                                   const std::string& purpose) const {
  const crypto::SealContext context{job_->job_id, round, payload.sender(), options_.name, purpose};
  ASSIGN_OR_RETURN(std::string plain, crypto::Open(*seal_keys_, context, payload.ciphertext()));
  if (options_.observe_opened) options_.observe_opened(payload.sender(), plain);
  return plain;
}

absl::StatusOr<PartyMessage> PartyAgent::HandleVertical(const LeaderMessage& request) {
  if (!job_ || job_->job_id != request.job_id() || !job_->vertical) {
    return absl::FailedPreconditionError("no prepared vertical job with this id");
  }
  JobState& job = *job_;
  VerticalParty& vp = *job.vertical;
  const auto& step = request.vertical();
  const uint64_t round = request.round();
  PartyMessage reply;
  auto* out = reply.mutable_vertical();
  auto parse_list = [](const std::string& bytes) -> absl::StatusOr<std::vector<std::string>> {
    fedanon::v1::IdList list;
    if (!list.ParseFromString(bytes))
      return absl::InvalidArgumentError("an ID list does not parse");
    return std::vector<std::string>(list.points().begin(), list.points().end());
  };
  auto serialize_list = [](const std::vector<std::string>& points) {
    fedanon::v1::IdList list;
    for (const auto& p : points) list.add_points(p);
    return list.SerializeAsString();
  };
  switch (step.step_case()) {
    case fedanon::v1::VerticalStep::kIdEncrypt: {
      ASSIGN_OR_RETURN(job.matcher, IdMatcher::Create(vp.ids()));
      ASSIGN_OR_RETURN(std::vector<std::string> points, job.matcher->EncryptOwn());
      ASSIGN_OR_RETURN(*out->mutable_ids()->mutable_list(),
                       SealFor(step.id_encrypt().next(), round, "id-list", serialize_list(points)));
      return reply;
    }
    case fedanon::v1::VerticalStep::kIdReencrypt: {
      if (!job.matcher) return absl::FailedPreconditionError("ID matching has not started");
      const auto& re = step.id_reencrypt();
      ASSIGN_OR_RETURN(std::string bytes, OpenSealed(re.list(), round, "id-list"));
      ASSIGN_OR_RETURN(std::vector<std::string> points, parse_list(bytes));
      ASSIGN_OR_RETURN(std::vector<std::string> again, job.matcher->ReEncrypt(points));
      if (!re.next().empty()) {
        ASSIGN_OR_RETURN(*out->mutable_ids()->mutable_list(),
                         SealFor(re.next(), round, "id-list", serialize_list(again)));
      } else {
        fedanon::v1::IdList digests;
        digests.set_digests(IdMatcher::FinalDigests(again));
        const std::string serialized = digests.SerializeAsString();
        for (const auto& party : job.ring) {
          ASSIGN_OR_RETURN(
              *out->mutable_ids()->add_for_parties(),
              SealFor(party, round, absl::StrCat("id-full:", re.origin()), serialized));
        }
      }
      return reply;
    }
    case fedanon::v1::VerticalStep::kIdAlign: {
      if (!job.matcher) return absl::FailedPreconditionError("ID matching has not started");
      const auto& lists = step.id_align().lists();
      if (static_cast<size_t>(lists.size()) != job.ring.size()) {
        return absl::InvalidArgumentError("ID alignment needs one list per party");
      }
      std::vector<std::vector<std::string>> full(job.ring.size());
      size_t own_index = job.ring.size();
      for (size_t i = 0; i < job.ring.size(); ++i) {
        if (job.ring[i] == options_.name) own_index = i;
        ASSIGN_OR_RETURN(std::string bytes, OpenSealed(lists[static_cast<int>(i)], round,
                                                       absl::StrCat("id-full:", job.ring[i])));
        fedanon::v1::IdList list;
        if (!list.ParseFromString(bytes)) {
          return absl::InvalidArgumentError("an ID digest list does not parse");
        }
        ASSIGN_OR_RETURN(full[i], IdMatcher::SplitDigests(list.digests()));
      }
      if (own_index == job.ring.size()) {
        return absl::InvalidArgumentError("this party is not in the job's ring");
      }
      ASSIGN_OR_RETURN(IdAlignment alignment, job.matcher->Align(own_index, full));
      job.matcher.reset();
      RETURN_IF_ERROR(vp.Start(alignment.canonical, alignment.common));
      spdlog::info("job={} ID matching: {} of {} records are common to every party", job.job_id,
                   alignment.common, vp.ids().size());
      out->mutable_ids()->set_common_records(alignment.common);
      return reply;
    }
    case fedanon::v1::VerticalStep::kPropose: {
      const VerticalProposalView view = vp.Propose();
      const auto& choice = view.choice;
      auto* proposal = out->mutable_proposal();
      proposal->set_participate(choice.has_value());
      proposal->set_reason(view.reason);
      proposal->set_misbehaving(!options_.misbehave.empty());
      if (choice) {
        auto* c = proposal->mutable_candidate();
        c->set_attribute(static_cast<uint32_t>(choice->attr));
        c->set_node(choice->node);
        c->set_candidate(choice->c);
        c->set_score(choice->score);
        c->set_order_key(choice->order_key);
      }
      return reply;
    }
    case fedanon::v1::VerticalStep::kWinner: {
      ASSIGN_OR_RETURN(std::string instruction, vp.MakeInstruction(step.winner().candidate()));
      for (const auto& party : job.ring) {
        if (party == options_.name) continue;
        ASSIGN_OR_RETURN(*out->mutable_instructions()->add_for_parties(),
                         SealFor(party, round, "instruction", instruction));
      }
      return reply;
    }
    case fedanon::v1::VerticalStep::kDeliver: {
      ASSIGN_OR_RETURN(std::string bytes,
                       OpenSealed(step.deliver().instruction(), round, "instruction"));
      ASSIGN_OR_RETURN(bool accept, vp.Deliver(bytes));
      if (!accept) {
        spdlog::info("job={} round={} vetoed the winner: it would break a confidence bound",
                     job.job_id, round);
      }
      out->mutable_verdict()->set_accept(accept);
      return reply;
    }
    case fedanon::v1::VerticalStep::kCommit:
      RETURN_IF_ERROR(vp.Commit(step.commit().candidate(), step.commit().accept()));
      out->set_committed(true);
      return reply;
    case fedanon::v1::VerticalStep::kRelease: {
      const fedanon::v1::VerticalColumns columns = vp.ReleasedColumns();
      ASSIGN_OR_RETURN(
          *out->mutable_released()->mutable_columns(),
          SealFor(step.release().recipient(), round, "columns", columns.SerializeAsString()));
      vp.FillReport("", out->mutable_released()->mutable_report());
      return reply;
    }
    case fedanon::v1::VerticalStep::kAssemble: {
      std::vector<fedanon::v1::VerticalColumns> parts;
      for (const auto& sealed : step.assemble().columns()) {
        ASSIGN_OR_RETURN(std::string bytes, OpenSealed(sealed, round, "columns"));
        if (!parts.emplace_back().ParseFromString(bytes)) {
          return absl::InvalidArgumentError("released columns do not parse");
        }
      }
      std::vector<std::string> header(step.assemble().header().begin(),
                                      step.assemble().header().end());
      ASSIGN_OR_RETURN(std::string csv, JoinReleasedColumns(parts, header));
      const std::string path =
          (std::filesystem::path(options_.output_dir) / absl::StrCat(job.job_id, ".csv")).string();
      std::error_code ec;
      std::filesystem::create_directories(options_.output_dir, ec);
      RETURN_IF_ERROR(common::WriteFileAtomically(path, csv));
      spdlog::info("job={} joined table ({} rows) written to {}", job.job_id, vp.records(), path);
      out->mutable_assembled()->set_rows_written(vp.records());
      return reply;
    }
    default:
      return absl::InvalidArgumentError("unknown vertical step");
  }
}

}  // namespace fedanon::party
