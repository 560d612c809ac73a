#include "tests/support/view_log_parts.h"

#include <sstream>
#include <utility>

#include "common/base/status_macros.h"
#include "crypto/sealed_box.h"

namespace fedanon::testing {

std::vector<ViewLogLine> ReadViewLogLines(const std::string& text) {
  std::vector<ViewLogLine> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << line;
    if (!j.is_object()) continue;
    ViewLogLine l;
    l.round = j.value("round", 0u);
    l.kind = j.value("kind", "");
    l.attribute = j.value("attribute", "");
    l.labelled = j.value("labelled", false);
    for (const auto& c : j.value("counts", nlohmann::json::array())) {
      EXPECT_TRUE(c.is_number_unsigned()) << line;
      l.counts.push_back(c.get<uint64_t>());
    }
    l.json = std::move(j);
    l.text = std::move(line);
    lines.push_back(std::move(l));
  }
  return lines;
}

std::optional<std::vector<uint64_t>> DecodedWords::Take(size_t words) {
  EXPECT_LE(pos_ + words, total_.size());
  if (pos_ + words > total_.size()) return std::nullopt;
  std::vector<uint64_t> out(total_.begin() + static_cast<ptrdiff_t>(pos_),
                            total_.begin() + static_cast<ptrdiff_t>(pos_ + words));
  pos_ += words;
  return out;
}

fedanon::v1::SubmitJobRequest ViewLogRequest(const fedanon::v1::JobSpec& spec,
                                             const std::vector<std::string>& parties,
                                             std::map<std::string, std::string>* texts) {
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& n : parties) req.add_parties(n);
  for (const auto& a : spec.attributes()) {
    if (a.taxonomy().empty()) continue;
    (*req.mutable_taxonomies())[a.name()] = ViewLogTaxonomies().at(a.taxonomy());
    if (texts != nullptr) (*texts)[a.name()] = ViewLogTaxonomies().at(a.taxonomy());
  }
  return req;
}

absl::StatusOr<std::unique_ptr<leader::Leader>> CapturedLeader(InProcessFederation& fed,
                                                               wire::PartyChannel* channel,
                                                               crypto::IssuedCertificate* seal) {
  ASSIGN_OR_RETURN(*seal, fed.ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(24)));
  leader::LeaderOptions lo;
  lo.name = "leader";
  lo.data_dir = fed.dir + "/captured-leader";
  lo.round_timeout = absl::Seconds(60);
  lo.ca_pem = fed.ca->cert_pem();
  lo.seal_cert_pem = seal->cert_pem;
  lo.seal_key_pem = seal->key_pem;
  return leader::Leader::Create(lo, channel);
}

absl::Status OpenSumsAsTheLeader(const InProcessFederation& fed,
                                 const crypto::IssuedCertificate& seal,
                                 RecordingChannel* recorder) {
  ASSIGN_OR_RETURN(std::unique_ptr<crypto::SealKeyPair> keys,
                   crypto::SealKeyPairFromPem(seal.key_pem));
  recorder->set_leader_keys(std::move(keys), fed.ca->cert_pem());
  std::map<std::string, std::string> party_certs;
  for (size_t i = 0; i < fed.names.size(); ++i) {
    party_certs[fed.names[i]] = fed.agents[i]->seal_cert_pem();
  }
  recorder->set_party_certificates(std::move(party_certs));
  return absl::OkStatus();
}

uint64_t NextRandom(uint64_t* state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

const std::map<std::string, std::string>& ViewLogTaxonomies() {
  static const auto* t = new std::map<std::string, std::string>{
      {"sex.csv", "Male;ANY_Sex\nFemale;ANY_Sex\n"},
      {"job.csv",
       "Janitor;Non-Technical;Blue-collar;ANY_Job\nMover;Non-Technical;Blue-collar;ANY_Job\n"
       "Carpenter;Technical;Blue-collar;ANY_Job\nTechnician;Technical;Blue-collar;ANY_Job\n"
       "Manager;White-collar;ANY_Job\nAccountant;Professional;White-collar;ANY_Job\n"
       "Lawyer;Professional;White-collar;ANY_Job\n"}};
  return *t;
}

std::vector<std::map<std::string, std::string>> DealRows(const Table& table, int parties) {
  std::vector<std::map<std::string, std::string>> files(parties, ViewLogTaxonomies());
  std::vector<Table> parts(parties);
  for (auto& p : parts) p.header = table.header;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    parts[r % static_cast<size_t>(parties)].rows.push_back(table.rows[r]);
  }
  for (int p = 0; p < parties; ++p) files[p]["table.csv"] = ToCsv(parts[p]);
  return files;
}

}  // namespace fedanon::testing
