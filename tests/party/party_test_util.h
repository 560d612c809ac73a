// Unit-test fixture for party/ (tests only): a fresh CA, PartyAgents with their own data
// directories and sealing certificates, reachable through an InProcessPartyChannel, and builders
// for the requests the leader sends. There is no Leader: each test plays the leader's part, so it
// can send requests out of order or for an unknown job.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/spec/job_spec_loader.h"
#include "common/wire/id_digests.h"
#include "common/wire/job_authorization.h"
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "crypto/secure_sum_masks.h"
#include "fedanon/v1/federation.pb.h"
#include "party/party_agent.h"
#include "party/testing/in_process_channel.h"
#include "tests/support/job_authorization_util.h"

namespace fedanon::testing {

// An empty directory under the test's temporary directory.
inline std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/fedanon_party_", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Parties "hospital-a", "hospital-b", ... with data dirs <dir>/<name>/ holding `files` (relative
// path -> content) each, and the leader's sealing key pair (for what is sealed for the leader).
// `agent`'s reply to `msg`, its error reply as a status (as a channel returns it).
inline absl::StatusOr<fedanon::v1::PartyMessage> HandledBy(party::PartyAgent& agent,
                                                           const fedanon::v1::LeaderMessage& msg) {
  fedanon::v1::PartyMessage reply = agent.Handle(msg);
  if (reply.has_error()) {
    return absl::Status(static_cast<absl::StatusCode>(reply.error().code()),
                        reply.error().message());
  }
  return reply;
}

struct PartyFixture {
  std::string dir;
  std::unique_ptr<crypto::CertificateAuthority> ca;
  crypto::IssuedCertificate leader_seal;
  wire::AdminSigner admin;  // signs every Prepare the fixture builds
  std::vector<std::unique_ptr<party::PartyAgent>> agents;
  std::vector<std::string> names;
  party_testing::InProcessPartyChannel channel;
  std::map<std::string, std::string> run_ids;  // job id -> the run its Prepare was signed for

  static absl::StatusOr<std::unique_ptr<PartyFixture>> Create(
      const std::string& name, const std::vector<std::map<std::string, std::string>>& party_files,
      const std::function<void(party::PartyAgentOptions&)>& customize = nullptr) {
    auto f = std::make_unique<PartyFixture>();
    f->dir = FreshDir(name);
    auto ca = crypto::CertificateAuthority::Create("test", absl::Hours(24));
    if (!ca.ok()) return ca.status();
    f->ca = std::move(*ca);
    auto leader_seal = f->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(24));
    if (!leader_seal.ok()) return leader_seal.status();
    f->leader_seal = *std::move(leader_seal);
    auto admin = IssueTestAdmin(*f->ca);
    if (!admin.ok()) return admin.status();
    f->admin = *std::move(admin);
    for (size_t i = 0; i < party_files.size(); ++i) {
      const std::string pname = std::string("hospital-") + static_cast<char>('a' + i);
      auto seal = f->ca->IssueSeal({crypto::Role::kParty, pname}, absl::Hours(24));
      if (!seal.ok()) return seal.status();
      auto sign = f->ca->IssueStatementSigner({crypto::Role::kParty, pname}, absl::Hours(24));
      if (!sign.ok()) return sign.status();
      party::PartyAgentOptions o;
      o.name = pname;
      o.data_dir = f->dir + "/" + pname;
      o.default_data_path = "table.csv";
      o.output_dir = f->dir + "/" + pname + "/output";
      o.ca_pem = f->ca->cert_pem();
      o.seal_cert_pem = seal->cert_pem;
      o.seal_key_pem = seal->key_pem;
      o.sign_cert_pem = sign->cert_pem;
      o.sign_key_pem = sign->key_pem;
      for (const auto& [file, text] : party_files[i]) WriteText(o.data_dir + "/" + file, text);
      if (customize) customize(o);
      auto agent = party::PartyAgent::Create(o);
      if (!agent.ok()) return agent.status();
      f->channel.Add(agent->get());
      f->agents.push_back(std::move(*agent));
      f->names.push_back(pname);
    }
    return f;
  }

  // PrepareJob for `spec_yaml` announcing every party (ring order) and the leader as a possible
  // recipient, as the leader sends it, signed by the fixture's admin.
  absl::StatusOr<fedanon::v1::LeaderMessage> Prepare(const std::string& job_id,
                                                     const std::string& spec_yaml,
                                                     const std::string& recipient = "") {
    auto spec = spec::ParseJobSpecYaml(spec_yaml, "job.yaml");
    if (!spec.ok()) return spec.status();
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job_id);
    auto* prepare = msg.mutable_prepare();
    *prepare->mutable_spec() = *std::move(spec);
    for (size_t i = 0; i < agents.size(); ++i) {
      auto* p = prepare->add_participants();
      p->set_name(names[i]);
      p->set_index(static_cast<uint32_t>(i));
      p->set_seal_certificate(agents[i]->seal_cert_pem());
      p->set_sign_certificate(agents[i]->sign_cert_pem());
      prepare->add_ring(names[i]);
    }
    auto* p = prepare->add_participants();
    p->set_name("leader");
    p->set_index(UINT32_MAX);
    p->set_seal_certificate(leader_seal.cert_pem);
    prepare->set_recipient(recipient);
    // Authorized by the fixture's admin, with each taxonomy as the first party holding it has it.
    std::map<std::string, std::string> texts;
    for (const auto& name : names) texts.merge(TaxonomyTexts(prepare->spec(), dir + "/" + name));
    absl::Status signed_job = AuthorizePrepare(&msg, admin, texts);
    if (!signed_job.ok()) return signed_job;
    auto run = wire::RunIdOf(msg.prepare().authorization());
    if (!run.ok()) return run.status();
    run_ids[job_id] = *run;
    return msg;
  }

  // Prepares the job at every party; returns the digests they reported.
  absl::StatusOr<std::vector<std::string>> PrepareAll(const std::string& job_id,
                                                      const std::string& spec_yaml,
                                                      const std::string& recipient = "") {
    auto msg = Prepare(job_id, spec_yaml, recipient);
    if (!msg.ok()) return msg.status();
    std::vector<std::string> digests;
    for (const auto& name : names) {
      auto reply = channel.Call(name, *msg, absl::Seconds(30));
      if (!reply.ok()) return reply.status();
      digests.push_back(reply->prepared().digest());
    }
    return digests;
  }

  // The certified sealing key of a party, as the leader would verify it.
  absl::StatusOr<std::unique_ptr<crypto::SealPublicKey>> PartyKey(const std::string& party) const {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == party) {
        return crypto::VerifiedSealKey(agents[i]->seal_cert_pem(), ca->cert_pem(),
                                       {crypto::Role::kParty, party});
      }
    }
    return absl::NotFoundError(party);
  }

  // What the leader reads from a secure-sum hop sealed for it (the ring's last hop).
  absl::StatusOr<std::string> OpenForLeader(uint32_t round, const std::string& job_id,
                                            const fedanon::v1::SealedPayload& sealed) const {
    auto keys = crypto::SealKeyPairFromPem(leader_seal.key_pem);
    if (!keys.ok()) return keys.status();
    auto sender = PartyKey(sealed.sender());
    if (!sender.ok()) return sender.status();
    const auto run = run_ids.find(job_id);
    return crypto::OpenFrom(**keys, **sender,
                            {job_id, run == run_ids.end() ? "" : run->second, round,
                             sealed.sender(), "leader", sealed.purpose()},
                            sealed.ciphertext());
  }

  // How a helper reaches a party: Call by default; a test that restarts parties passes its own
  // (HandledBy a restarted agent).
  using Caller = std::function<absl::StatusOr<fedanon::v1::PartyMessage>(
      const std::string& party, const fedanon::v1::LeaderMessage& msg)>;
  absl::StatusOr<fedanon::v1::PartyMessage> CallWith(const Caller& call, const std::string& party,
                                                     const fedanon::v1::LeaderMessage& msg) {
    return call ? call(party, msg) : Call(party, msg);
  }

  // The mask the ring's first party put on secure sum `collect` (over `words` words), as the
  // leader asks for it once the ring is done (SumUnmask).
  absl::StatusOr<std::vector<uint64_t>> FirstPartyMask(const std::string& job_id, uint32_t round,
                                                       uint64_t collect, size_t words,
                                                       const Caller& call = nullptr) {
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job_id);
    msg.set_round(round);
    msg.mutable_sum_unmask()->set_collect(collect);
    auto reply = CallWith(call, names.front(), msg);
    if (!reply.ok()) return reply.status();
    auto seed = OpenForLeader(round, job_id, reply->sum_mask().seed());
    if (!seed.ok()) return seed.status();
    return crypto::MaskWordsFromSeed(*seed, 0, words);
  }

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& msg) {
    return channel.Call(party, msg, absl::Seconds(30));
  }

  // The final check of a two-party horizontal job as an honest leader drives it
  // (leader::RunTwoPartyFinalCheck): every secure comparison's six steps, each party's sealed
  // message relayed to the other (names[0] garbles, names[1] evaluates), then both verdicts.
  // `words`: the final-check vector's length over the parties' current cut.
  absl::Status PassTwoPartyFinalCheck(const std::string& job_id, uint32_t round, uint64_t words,
                                      const Caller& call = nullptr) {
    auto message = [&](fedanon::v1::FinalCheckStep::Phase phase) {
      fedanon::v1::LeaderMessage msg;
      msg.set_job_id(job_id);
      msg.set_round(round);
      auto* step = msg.mutable_final_check();
      step->set_phase(phase);
      step->set_chunks(1);
      step->set_chunk_words(words);
      step->set_total_words(words);
      return msg;
    };
    uint32_t comparisons = 1;
    for (uint32_t c = 0; c < comparisons; ++c) {
      fedanon::v1::SealedPayload carried;
      for (uint32_t s = 1; s <= 6; ++s) {
        fedanon::v1::LeaderMessage msg = message(fedanon::v1::FinalCheckStep::PHASE_COMPARE);
        msg.mutable_final_check()->set_comparison(c);
        msg.mutable_final_check()->set_comparison_step(s);
        if (s > 1) *msg.mutable_final_check()->mutable_input() = carried;
        auto reply = CallWith(call, names[s % 2 == 1 ? 1 : 0], msg);
        if (!reply.ok()) return reply.status();
        if (c == 0 && s == 1) comparisons = reply->final_check().comparisons();
        carried = reply->final_check().sealed();
      }
    }
    for (const std::string& party : {names[0], names[1]}) {
      auto reply = CallWith(call, party, message(fedanon::v1::FinalCheckStep::PHASE_VERIFY));
      if (!reply.ok()) return reply.status();
      if (!reply->final_check().passed()) {
        return absl::InternalError(absl::StrCat("party '", party, "' did not confirm the check"));
      }
    }
    return absl::OkStatus();
  }

  // A vertical step of `job_id` in `round` to `party`, and its result.
  absl::StatusOr<fedanon::v1::VerticalStepResult> Vertical(const std::string& party,
                                                           const std::string& job_id,
                                                           uint32_t round,
                                                           fedanon::v1::VerticalStep step) {
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job_id);
    msg.set_round(round);
    *msg.mutable_vertical() = std::move(step);
    auto reply = Call(party, msg);
    if (!reply.ok()) return reply.status();
    return reply->vertical();
  }

  // The ID matching of a vertical job as an honest leader drives it, every party's list in one
  // batch of `batch_ids` ids (docs/crypto.md "ID matching"): each list round the ring (blinded
  // and brought back to its owner with three or more parties), the last hops' digests opened as
  // the leader opens them and intersected, the common digests handed to every party, and every
  // party's signed statement on them relayed for the alignment. Returns each party's common count.
  absl::StatusOr<std::vector<uint64_t>> MatchIds(const std::string& job_id,
                                                 uint32_t batch_ids = 1000) {
    const size_t n = names.size();
    const size_t last = wire::IdLastHop(n);
    const auto run = run_ids.find(job_id);
    if (run == run_ids.end()) return absl::FailedPreconditionError("job not prepared");
    auto leader_keys = crypto::SealKeyPairFromPem(leader_seal.key_pem);
    if (!leader_keys.ok()) return leader_keys.status();
    std::vector<std::string> lists(n);
    // Every party's own batch first (its first call starts its matcher), then each list's walk.
    std::vector<fedanon::v1::SealedPayload> first_hops(n);
    for (size_t o = 0; o < n; ++o) {
      fedanon::v1::VerticalStep encrypt;
      encrypt.mutable_id_encrypt()->set_next(names[(o + 1) % n]);
      encrypt.mutable_id_encrypt()->set_batch(0);
      encrypt.mutable_id_encrypt()->set_batch_ids(batch_ids);
      auto hop = Vertical(names[o], job_id, 0, encrypt);
      if (!hop.ok()) return hop.status();
      if (hop->ids().batches() != 1) return absl::InternalError("a list of more than one batch");
      first_hops[o] = hop->ids().list();
    }
    for (size_t o = 0; o < n; ++o) {
      fedanon::v1::SealedPayload carried = first_hops[o];
      for (size_t h = 1; h <= last; ++h) {
        fedanon::v1::VerticalStep re;
        *re.mutable_id_reencrypt()->mutable_list() = carried;
        re.mutable_id_reencrypt()->set_origin(names[o]);
        if (h < last) re.mutable_id_reencrypt()->set_next(names[(o + h + 1) % n]);
        re.mutable_id_reencrypt()->set_batch(0);
        re.mutable_id_reencrypt()->set_batches(1);
        re.mutable_id_reencrypt()->set_batch_ids(batch_ids);
        const std::string& worker = names[(o + h) % n];
        auto reply = Vertical(worker, job_id, 0, re);
        if (!reply.ok()) return reply.status();
        if (h < last) {
          carried = reply->ids().list();
          continue;
        }
        auto sender = PartyKey(worker);
        if (!sender.ok()) return sender.status();
        const auto& for_leader = reply->ids().for_parties(0);
        auto bytes = crypto::OpenFrom(**leader_keys, **sender,
                                      {job_id, run->second, 0, worker, "leader",
                                       wire::IdDigestsPurpose(run->second, names[o], 0, 1)},
                                      for_leader.ciphertext());
        if (!bytes.ok()) return bytes.status();
        fedanon::v1::IdList list;
        if (!list.ParseFromString(*bytes)) return absl::InternalError("digests do not parse");
        lists[o] = list.digests();
        if (!wire::IdListsBlinded(n)) {
          fedanon::v1::VerticalStep d;
          d.mutable_id_digests()->set_origin(names[o]);
          d.mutable_id_digests()->set_batch(0);
          d.mutable_id_digests()->set_batches(1);
          d.mutable_id_digests()->set_batch_ids(batch_ids);
          *d.mutable_id_digests()->mutable_digests() = reply->ids().for_parties(1);
          auto delivered = Vertical(names[o], job_id, 0, d);
          if (!delivered.ok()) return delivered.status();
        }
      }
    }
    auto common_digests = wire::CommonDigests(lists);
    if (!common_digests.ok()) return common_digests.status();
    fedanon::v1::VerticalStep align;
    for (size_t k = 0; k < n; ++k) {
      fedanon::v1::VerticalStep c;
      c.mutable_id_common()->set_batch(0);
      c.mutable_id_common()->set_batches(1);
      c.mutable_id_common()->set_batch_ids(batch_ids);
      c.mutable_id_common()->set_digests(*common_digests);
      auto reply = Vertical(names[k], job_id, 0, c);
      if (!reply.ok()) return reply.status();
      auto* s = align.mutable_id_align()->add_statements();
      s->set_party(names[k]);
      *s->mutable_statement() = reply->ids().common();
    }
    std::vector<uint64_t> common_records;
    for (size_t k = 0; k < n; ++k) {
      auto reply = Vertical(names[k], job_id, 0, align);
      if (!reply.ok()) return reply.status();
      common_records.push_back(reply->ids().common_records());
    }
    return common_records;
  }
};

}  // namespace fedanon::testing
