// Tests only: the mechanics the leader's view-log completeness tests share
// (tests/federation/view_log_test.cc for global recoding, local_view_log_test.cc for local
// recoding): the view log read line by line into the fields every line has, the multiset
// comparison of the logged parts with the parts the capture implies (a decoded vector cut into
// parts), a leader behind a capturing channel (tests/federation/leader_capture.h) and the small
// horizontal fixture both run (two taxonomies, a seeded generator, a table dealt over the
// parties, the job request). Each test keeps its own Part —
// the fields it compares — and its own expectations.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "crypto/certificates.h"
#include "fedanon/v1/federation.pb.h"
#include "leader/leader.h"
#include "tests/federation/federation_test_util.h"
#include "tests/federation/leader_capture.h"

namespace fedanon::testing {

// One line of a view log: its text, its JSON object, and the fields every kind has.
struct ViewLogLine {
  std::string text;
  nlohmann::json json;
  uint32_t round = 0;
  std::string kind;
  std::string attribute;
  bool labelled = false;
  std::vector<uint64_t> counts;
};

// The log's lines in order. A line that is not a JSON object, or a count that is not an unsigned
// integer, is a test failure (the line is skipped; the count kept as read).
std::vector<ViewLogLine> ReadViewLogLines(const std::string& text);

// Every expected part is logged and every logged part is expected, as multisets (`Part` with
// operator< and operator==); a difference is a test failure naming how many parts differ and one
// of them (`describe`).
template <typename Part, typename Describe>
void ExpectSameParts(std::vector<Part> logged, std::vector<Part> expected, Describe describe) {
  std::sort(logged.begin(), logged.end());
  std::sort(expected.begin(), expected.end());
  std::vector<Part> missing, extra;
  std::set_difference(expected.begin(), expected.end(), logged.begin(), logged.end(),
                      std::back_inserter(missing));
  std::set_difference(logged.begin(), logged.end(), expected.begin(), expected.end(),
                      std::back_inserter(extra));
  EXPECT_TRUE(missing.empty()) << missing.size() << " decoded part(s) not in the view log, e.g. "
                               << describe(missing.front());
  EXPECT_TRUE(extra.empty()) << extra.size() << " view-log line(s) the leader did not decode, e.g. "
                             << describe(extra.front());
  EXPECT_EQ(logged.size(), expected.size());
}

// A decoded vector cut into its consecutive parts, in the order the layout walks it.
class DecodedWords {
 public:
  explicit DecodedWords(const std::vector<uint64_t>& total) : total_(total) {}
  // The next `words` words; past the end a test failure and nothing (nothing is taken).
  std::optional<std::vector<uint64_t>> Take(size_t words);
  // Words taken so far (the whole vector once every part is cut).
  size_t taken() const { return pos_; }

 private:
  const std::vector<uint64_t>& total_;
  size_t pos_ = 0;
};

// The job over `parties` with the fixture's taxonomy text of each attribute of `spec` that names
// one (ViewLogTaxonomies); `texts` (if given) gets the same texts by attribute, as the public
// schema is built from.
fedanon::v1::SubmitJobRequest ViewLogRequest(const fedanon::v1::JobSpec& spec,
                                             const std::vector<std::string>& parties,
                                             std::map<std::string, std::string>* texts = nullptr);

// A leader named "leader" with the data directory <fed.dir>/captured-leader, calling the parties
// through `channel`; `seal` gets its sealing certificate and key.
absl::StatusOr<std::unique_ptr<leader::Leader>> CapturedLeader(InProcessFederation& fed,
                                                               wire::PartyChannel* channel,
                                                               crypto::IssuedCertificate* seal);

// Lets `recorder` open the sums sealed for the leader (its key `seal`) and check who sealed them
// (the federation's parties' certificates).
absl::Status OpenSumsAsTheLeader(const InProcessFederation& fed,
                                 const crypto::IssuedCertificate& seal, RecordingChannel* recorder);

// The xorshift step the fixtures' tables are drawn with.
uint64_t NextRandom(uint64_t* state);

// sex.csv (Male, Female) and job.csv (seven jobs under four levels), by file name.
const std::map<std::string, std::string>& ViewLogTaxonomies();

// `table`'s rows dealt round-robin over `parties` parties, each with the taxonomies.
std::vector<std::map<std::string, std::string>> DealRows(const Table& table, int parties);

}  // namespace fedanon::testing
