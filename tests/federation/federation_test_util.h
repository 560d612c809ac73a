// An in-process federation for protocol tests (tests only): a fresh CA, N PartyAgents with their
// own data directories and sealing certificates, an InProcessPartyChannel and a Leader — the same
// logic classes the daemons run, without sockets.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "crypto/certificates.h"
#include "leader/leader.h"
#include "party/party_agent.h"
#include "party/testing/in_process_channel.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/job_authorization_util.h"

namespace fedanon::testing {

// The certificates and keys of a federation (its CA, each party's sealing and statement-signing
// pair, the admin, the leader's sealing pair), issued once and given to several federations
// (InProcessFederation::Create's `identities`): the mutating leader runs a job kind hundreds of
// times, and with the same identities every run's signatures and boxes are the same bytes when
// the parties' randomness is deterministic too (tests/support/deterministic_random.h).
struct FederationIdentities {
  std::string ca_cert_pem, ca_key_pem;
  std::map<std::string, crypto::IssuedCertificate> seal, sign;  // by party name
  crypto::IssuedCertificate leader_seal;
  wire::AdminSigner admin;

  static absl::StatusOr<FederationIdentities> Issue(size_t parties) {
    auto ca = crypto::CertificateAuthority::Create("test", absl::Hours(24));
    if (!ca.ok()) return ca.status();
    FederationIdentities ids;
    ids.ca_cert_pem = (*ca)->cert_pem();
    auto key = (*ca)->key_pem();
    if (!key.ok()) return key.status();
    ids.ca_key_pem = *std::move(key);
    for (size_t i = 0; i < parties; ++i) {
      const std::string pname = std::string("hospital-") + static_cast<char>('a' + i);
      auto seal = (*ca)->IssueSeal({crypto::Role::kParty, pname}, absl::Hours(24));
      if (!seal.ok()) return seal.status();
      auto sign = (*ca)->IssueStatementSigner({crypto::Role::kParty, pname}, absl::Hours(24));
      if (!sign.ok()) return sign.status();
      ids.seal[pname] = *std::move(seal);
      ids.sign[pname] = *std::move(sign);
    }
    auto leader_seal = (*ca)->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(24));
    if (!leader_seal.ok()) return leader_seal.status();
    ids.leader_seal = *std::move(leader_seal);
    auto admin = IssueTestAdmin(**ca);
    if (!admin.ok()) return admin.status();
    ids.admin = *std::move(admin);
    return ids;
  }
};

struct InProcessFederation {
  std::string dir;
  std::unique_ptr<crypto::CertificateAuthority> ca;
  std::vector<std::unique_ptr<party::PartyAgent>> agents;
  std::vector<std::string> names;
  party_testing::InProcessPartyChannel channel;
  std::unique_ptr<leader::Leader> leader;
  std::string leader_seal_key_pem;  // to open, in tests, what the parties seal for the leader
  wire::AdminSigner admin;          // the admin who authorizes the jobs the tests submit

  // Parties get data dirs <dir>/<name>/ holding `files` (relative path -> content) each;
  // `customize` may adjust each party's options (e.g. a misbehaviour mode, an observer), and
  // `customize_leader` the leader's (e.g. its job limits).
  // `identities`: the certificates and keys to use (FederationIdentities::Issue for at least as
  // many parties); null: a fresh set for this federation.
  static absl::StatusOr<std::unique_ptr<InProcessFederation>> Create(
      const std::string& name, const std::vector<std::map<std::string, std::string>>& party_files,
      const std::function<void(party::PartyAgentOptions&)>& customize = nullptr,
      const std::function<void(leader::LeaderOptions&)>& customize_leader = nullptr,
      const FederationIdentities* identities = nullptr) {
    auto f = std::make_unique<InProcessFederation>();
    f->dir = FreshDir(name);
    FederationIdentities fresh;
    if (identities == nullptr) {
      auto issued = FederationIdentities::Issue(party_files.size());
      if (!issued.ok()) return issued.status();
      fresh = *std::move(issued);
      identities = &fresh;
    }
    auto ca = crypto::CertificateAuthority::Load(identities->ca_cert_pem, identities->ca_key_pem);
    if (!ca.ok()) return ca.status();
    f->ca = std::move(*ca);
    for (size_t i = 0; i < party_files.size(); ++i) {
      const std::string pname = std::string("hospital-") + static_cast<char>('a' + i);
      const crypto::IssuedCertificate* seal = &identities->seal.at(pname);
      const crypto::IssuedCertificate* sign = &identities->sign.at(pname);
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
    f->admin = identities->admin;
    const crypto::IssuedCertificate* seal = &identities->leader_seal;
    leader::LeaderOptions lo;
    lo.name = "leader";
    lo.data_dir = f->dir + "/leader";
    lo.round_timeout = absl::Seconds(20);
    lo.ca_pem = f->ca->cert_pem();
    lo.seal_cert_pem = seal->cert_pem;
    lo.seal_key_pem = seal->key_pem;
    f->leader_seal_key_pem = seal->key_pem;
    if (customize_leader) customize_leader(lo);
    auto leader = leader::Leader::Create(lo, &f->channel);
    if (!leader.ok()) return leader.status();
    f->leader = std::move(*leader);
    return f;
  }

  // Submits `request` as fedanonctl does: signed by the federation's admin, then to the leader.
  absl::StatusOr<fedanon::v1::JobInfo> Submit(fedanon::v1::SubmitJobRequest request) {
    std::map<std::string, std::string> texts(request.taxonomies().begin(),
                                             request.taxonomies().end());
    auto auth =
        wire::AuthorizeSubmission(request, spec::CanonicalJobBytes(request.spec(), texts), admin);
    if (!auth.ok()) return auth.status();
    *request.mutable_authorization() = *std::move(auth);
    return leader->Submit(request, "admin");
  }

  // Waits until the job reaches a final state (or 600 s pass: Adult jobs with ID matching take
  // minutes on a loaded 2-core machine, and more under a sanitizer).
  fedanon::v1::JobInfo Wait(const std::string& job_id) {
    fedanon::v1::JobInfo info;
    for (int i = 0; i < 6000; ++i) {
      auto got = leader->WaitForChange(job_id, info, absl::Milliseconds(100));
      if (got.ok()) info = *got;
      if (info.state() == fedanon::v1::JOB_STATE_DONE ||
          info.state() == fedanon::v1::JOB_STATE_FAILED ||
          info.state() == fedanon::v1::JOB_STATE_CANCELLED) {
        break;
      }
    }
    return info;
  }
};

// Rows of a CSV text as a sorted multiset, with columns put in `columns` order.
inline std::vector<std::string> RowsByColumns(const Table& t,
                                              const std::vector<std::string>& columns) {
  std::vector<int> idx;
  for (const auto& c : columns) {
    idx.push_back(
        static_cast<int>(std::find(t.header.begin(), t.header.end(), c) - t.header.begin()));
  }
  std::vector<std::string> rows;
  for (const auto& r : t.rows) {
    std::string line;
    for (int i : idx) line += (i < static_cast<int>(r.size()) ? r[i] : "<missing>") + "|";
    rows.push_back(line);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// ldiversity / tcloseness: the independent checker's count of a federated release on its own (the
// sensitive column is released as it is, so the released table carries each group's distribution
// and, over all its rows, the whole table's). `sensitive_taxonomy` is the sensitive attribute's
// ARX file for the hierarchical distance, or empty. Taxonomy QIDs count as released labels. Does
// nothing for the other models.
inline void ExpectReleaseMeetsDistributionModel(const fedanon::v1::JobSpec& spec,
                                                const Table& released,
                                                const std::string& sensitive_taxonomy) {
  if (spec.privacy().model() != fedanon::v1::PRIVACY_MODEL_LDIVERSITY &&
      spec.privacy().model() != fedanon::v1::PRIVACY_MODEL_TCLOSENESS) {
    return;
  }
  CheckerInput in;
  in.spec = spec;
  in.header = released.header;
  in.raw = released.rows;
  in.anonymized = released.rows;
  if (!sensitive_taxonomy.empty()) {
    auto tax = table::Taxonomy::ParseArx(sensitive_taxonomy, "sensitive", "sensitive");
    ASSERT_TRUE(tax.ok()) << tax.status();
    for (size_t n = 0; n < tax->size(); ++n) {
      const auto id = static_cast<table::Taxonomy::NodeId>(n);
      if (!tax->is_leaf(id)) continue;
      for (auto x = id; x != table::Taxonomy::kNoNode; x = tax->parent(x)) {
        in.sensitive_taxonomy[tax->label(id)].push_back(tax->label(x));
      }
    }
  }
  for (auto& a : *in.spec.mutable_attributes()) {
    if (a.role() == fedanon::v1::ROLE_QID) a.clear_taxonomy();
  }
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
}

inline absl::StatusOr<Table> ParseCsvText(const std::string& text, const std::string& dir) {
  const std::string path = dir + "/parsed.csv";
  WriteText(path, text);
  return ReadCsvTable(path);
}

}  // namespace fedanon::testing
