// Benchmark of the horizontal federation (prints figures; not a test): P parties holding a
// generated Adult-like table of N records in all, with the papers' scalability set-up (all 13 QIDs,
// fnlwgt a continuous QID on a public grid; L=4, K=20, C=0.2), run in one process through the
// in-process channel (the protocol logic and all cryptography, without sockets), next to the
// centralized run on the union. Reports the whole-job time, the time in rounds and in the
// secure union, secure sums, bytes and per-round latency.
// Usage: horizontal_bench [rows=1000000] [parties=3]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "app/anonymize.h"
#include "common/datagen/datagen.h"
#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "common/wire/job_authorization.h"
#include "crypto/certificates.h"
#include "leader/leader.h"
#include "party/party_agent.h"
#include "party/testing/in_process_channel.h"

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int Fail(const absl::Status& s) {
  std::cerr << "horizontal_bench: " << s << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fedanon;
  const uint64_t rows = argc > 1 ? std::stoull(argv[1]) : 1000000;
  const int parties = argc > 2 ? std::stoi(argv[2]) : 3;
  const std::string dir =
      std::filesystem::temp_directory_path() / ("fedanon-hbench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  datagen::DatagenOptions gen;
  gen.rows = rows;
  gen.seed = 1;
  gen.out_dir = dir + "/data";
  gen.parties = parties;
  if (auto s = datagen::GenerateDataset(gen); !s.ok()) return Fail(s.status());
  // gen-data's horizontal.yaml (public domains declared) with fnlwgt as a 13th QID, as in
  // bench/federation_daemons.sh (gen-data draws fnlwgt from [0, 1500000]).
  std::string spec_text = Slurp(dir + "/data/horizontal.yaml");
  const std::string anchor = "  - {name: education,";
  spec_text.insert(spec_text.find(anchor),
                   "  - {name: fnlwgt, role: qid, type: continuous, range: [0, 1500000], "
                   "precision: 1}\n");
  std::ofstream(dir + "/data/horizontal.yaml") << spec_text;

  // Centralized on the union.
  app::AnonymizeOptions central;
  central.spec_path = dir + "/data/horizontal.yaml";
  central.input_path = dir + "/data/table.csv";
  central.output_path = dir + "/central.csv";
  auto t0 = std::chrono::steady_clock::now();
  auto creport = app::Anonymize(central);
  if (!creport.ok()) return Fail(creport.status());
  const double central_s = Since(t0);

  // The federation, in process.
  auto ca = crypto::CertificateAuthority::Create("bench", absl::Hours(1));
  if (!ca.ok()) return Fail(ca.status());
  party_testing::InProcessPartyChannel channel;
  std::vector<std::unique_ptr<party::PartyAgent>> agents;
  fedanon::v1::SubmitJobRequest request;
  auto spec = spec::ParseJobSpecYaml(spec_text, "horizontal.yaml");
  if (!spec.ok()) return Fail(spec.status());
  *request.mutable_spec() = *spec;
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty()) {
      (*request.mutable_taxonomies())[a.name()] = Slurp(dir + "/data/" + a.taxonomy());
    }
  }
  for (int p = 1; p <= parties; ++p) {
    const std::string name = "hospital-" + std::to_string(p);
    auto seal = (*ca)->IssueSeal({crypto::Role::kParty, name}, absl::Hours(1));
    if (!seal.ok()) return Fail(seal.status());
    party::PartyAgentOptions o;
    o.name = name;
    o.data_dir = dir + "/data";
    o.default_data_path = "party" + std::to_string(p) + ".csv";
    o.output_dir = absl::StrCat(dir, "/out-", name);
    o.ca_pem = (*ca)->cert_pem();
    o.seal_cert_pem = seal->cert_pem;
    o.seal_key_pem = seal->key_pem;
    auto agent = party::PartyAgent::Create(o);
    if (!agent.ok()) return Fail(agent.status());
    channel.Add(agent->get());
    agents.push_back(std::move(*agent));
    request.add_parties(name);
  }
  auto lseal = (*ca)->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(1));
  if (!lseal.ok()) return Fail(lseal.status());
  leader::LeaderOptions lo;
  lo.data_dir = dir + "/leader";
  lo.ca_pem = (*ca)->cert_pem();
  lo.seal_cert_pem = lseal->cert_pem;
  lo.seal_key_pem = lseal->key_pem;
  lo.round_timeout = absl::Minutes(10);
  auto leader = leader::Leader::Create(lo, &channel);
  if (!leader.ok()) return Fail(leader.status());
  // Authorized by an admin of the bench's CA, as `fedanonctl submit` does.
  auto admin = (*ca)->IssueTls({crypto::Role::kAdmin, "bench"}, {}, absl::Hours(1));
  if (!admin.ok()) return Fail(admin.status());
  std::map<std::string, std::string> texts(request.taxonomies().begin(),
                                           request.taxonomies().end());
  auto authorization = wire::AuthorizeSubmission(
      request, spec::CanonicalJobBytes(request.spec(), texts), {admin->cert_pem, admin->key_pem});
  if (!authorization.ok()) return Fail(authorization.status());
  *request.mutable_authorization() = *std::move(authorization);
  t0 = std::chrono::steady_clock::now();
  auto info = (*leader)->Submit(request, "bench");
  if (!info.ok()) return Fail(info.status());
  fedanon::v1::JobInfo done;
  while (true) {
    auto got = (*leader)->WaitForChange(info->job_id(), done, absl::Seconds(1));
    if (got.ok()) done = *got;
    if (done.state() >= fedanon::v1::JOB_STATE_DONE) break;
  }
  const double fed_s = Since(t0);
  if (done.state() != fedanon::v1::JOB_STATE_DONE) {
    std::cerr << "job failed: " << done.failure_reason() << "\n";
    return 1;
  }
  const auto& r = done.report();
  const auto& t = r.timings_seconds();
  const double rounds = t.count("rounds") ? t.at("rounds") : 0;
  std::printf(
      "horizontal federation, %d parties, %llu records, 13 QIDs, L=4 K=20 C=0.2 (in-process "
      "channel)\n",
      parties, static_cast<unsigned long long>(rows));
  std::printf("  centralized on the union   %8.2f s  (%d specializations)\n", central_s,
              creport->steps_size());
  std::printf("  federated job              %8.2f s  (%d specializations, %.2fx centralized)\n",
              fed_s, r.steps_size(), fed_s / central_s);
  std::printf("    validate + load          %8.2f s\n", t.count("validate") ? t.at("validate") : 0);
  std::printf("    rounds                   %8.2f s  (%.1f ms per round)\n", rounds,
              r.steps_size() ? 1000 * rounds / r.steps_size() : 0);
  std::printf("    secure union             %8.2f s\n", t.count("union") ? t.at("union") : 0);
  std::printf(
      "  secure sums %llu, bytes to parties %.1f MB, from parties %.1f MB (%.1f KB per round)\n",
      static_cast<unsigned long long>(r.secure_sums()), r.bytes_to_parties() / 1e6,
      r.bytes_from_parties() / 1e6,
      r.steps_size() ? (r.bytes_to_parties() + r.bytes_from_parties()) / 1e3 / r.steps_size() : 0);
  std::filesystem::remove_all(dir);
  return 0;
}
