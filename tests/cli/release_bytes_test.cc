// The released table is byte-identical to what fedanon released before the compact-memory work
// (issue 29): a generated 200,000-row Adult-like table (seed 7, large enough for the two-thread
// load and the block writer) anonymized with all 13 QIDs, and with gen-data's own job (fnlwgt
// copied verbatim), against SHA-256 digests of the earlier release's output. The same table read
// through a FIFO (the text kept in memory, one pass, one writer thread) releases the same bytes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "app/anonymize.h"
#include "common/base/file_io.h"
#include "common/datagen/datagen.h"
#include "crypto/hash.h"
#include "tests/support/temp_dir.h"

namespace fedanon {
namespace {

// Digests of the outputs of fedanon before the change (main at c041e09), same inputs.
constexpr char kDigest13Qids[] = "868d4736b0830b968f15580b7f9087d3025ae3b1d6c49d1f4cd706e8b6b40f04";
constexpr char kDigestGenDataJob[] =
    "efed5ddb396e39eda132e4eb143e803c3beb503723fcaf0173783719aa0122b5";

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ReleaseBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto summary = datagen::GenerateDataset({.rows = 200000, .seed = 7, .out_dir = dir_.path()});
    ASSERT_TRUE(summary.ok()) << summary.status();
    std::string job = Slurp(dir_.File("job.yaml"));
    const std::string other = "{name: fnlwgt, role: other, type: continuous}";
    const size_t at = job.find(other);
    ASSERT_NE(at, std::string::npos);
    std::string job13 = job;
    job13.replace(at, other.size(), "{name: fnlwgt, role: qid, type: continuous}");
    std::ofstream(dir_.File("job13.yaml")) << job13;
  }

  std::string Release(const std::string& spec, const std::string& input) {
    app::AnonymizeOptions options;
    options.spec_path = dir_.File(spec);
    options.input_path = input;
    options.output_path = dir_.File("out.csv");
    auto report = app::Anonymize(options);
    EXPECT_TRUE(report.ok()) << report.status();
    return crypto::ToHex(crypto::Sha256(Slurp(options.output_path)));
  }

  testing::TempDir dir_;
};

TEST_F(ReleaseBytesTest, ThirteenQidsReleaseTheBytesOfTheEarlierVersion) {
  EXPECT_EQ(Release("job13.yaml", dir_.File("table.csv")), kDigest13Qids);
}

TEST_F(ReleaseBytesTest, GenDataJobReleasesTheBytesOfTheEarlierVersion) {
  EXPECT_EQ(Release("job.yaml", dir_.File("table.csv")), kDigestGenDataJob);
}

TEST_F(ReleaseBytesTest, TableReadThroughAFifoReleasesTheSameBytes) {
  const std::string fifo = dir_.File("table.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread feed([&] {
    const std::string text = Slurp(dir_.File("table.csv"));
    std::ofstream(fifo, std::ios::binary) << text;
  });
  const std::string digest = Release("job13.yaml", fifo);
  feed.join();
  EXPECT_EQ(digest, kDigest13Qids);
}

}  // namespace
}  // namespace fedanon
