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
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"
#include "party/in_process_channel.h"
#include "party/party_agent.h"
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
struct PartyFixture {
  std::string dir;
  std::unique_ptr<crypto::CertificateAuthority> ca;
  crypto::IssuedCertificate leader_seal;
  common::AdminSigner admin;  // signs every Prepare the fixture builds
  std::vector<std::unique_ptr<party::PartyAgent>> agents;
  std::vector<std::string> names;
  party::InProcessPartyChannel channel;

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
      party::PartyAgentOptions o;
      o.name = pname;
      o.data_dir = f->dir + "/" + pname;
      o.default_data_path = "table.csv";
      o.output_dir = f->dir + "/" + pname + "/output";
      o.ca_pem = f->ca->cert_pem();
      o.seal_cert_pem = seal->cert_pem;
      o.seal_key_pem = seal->key_pem;
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
                                                     const std::string& recipient = "") const {
    auto spec = common::ParseJobSpecYaml(spec_yaml, "job.yaml");
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
    return crypto::OpenFrom(**keys, **sender,
                            {job_id, round, sealed.sender(), "leader", sealed.purpose()},
                            sealed.ciphertext());
  }

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& msg) {
    return channel.Call(party, msg, absl::Seconds(30));
  }
};

}  // namespace fedanon::testing
