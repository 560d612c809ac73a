#include "common/spec/yaml_document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/base/file_io.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::spec {
namespace {

using ::fedanon::testing::StatusIs;
using ::fedanon::testing::TempDir;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

TEST(YamlDocumentTest, ParsesText) {
  ASSERT_OK_AND_ASSIGN(const YAML::Node root, ParseYaml("a: 1\nb: [x, y]\n", "t.yaml"));
  EXPECT_EQ(root["a"].as<int>(), 1);
  EXPECT_EQ(root["b"].size(), 2u);
  ASSERT_OK_AND_ASSIGN(const YAML::Node empty, ParseYaml("", "t.yaml"));
  EXPECT_TRUE(empty.IsNull());
}

TEST(YamlDocumentTest, SyntaxErrorsCarryLineAndColumnAndTheCallersWording) {
  const std::string broken = "a: 1\nb: [x, y\n";
  const absl::StatusOr<YAML::Node> plain = ParseYaml(broken, "spec.yaml");
  EXPECT_THAT(plain, StatusIs(kInvalid, "spec.yaml:3:1: "));
  EXPECT_THAT(ParseYaml(broken, "leader.yaml", {.syntax_error_prefix = "YAML syntax error: "}),
              StatusIs(kInvalid, "leader.yaml:3:1: YAML syntax error: "));
}

TEST(YamlDocumentTest, SizeLimit) {
  EXPECT_THAT(ParseYaml("a: 12345\n", "t.yaml", {.max_bytes = 4}),
              StatusIs(kInvalid, "t.yaml: 9 bytes is too large for a YAML document"));
  ASSERT_OK(ParseYaml("a: 1\n", "t.yaml", {.max_bytes = 5}));
}

TEST(YamlDocumentTest, LoadsFiles) {
  const TempDir temp;
  const std::string& dir = temp.path();
  const std::string path = dir + "/c.yaml";
  ASSERT_OK(base::WriteFileAtomically(path, "name: x\n", {}));
  ASSERT_OK_AND_ASSIGN(const YAML::Node root, LoadYamlFile(path));
  EXPECT_EQ(root["name"].as<std::string>(), "x");
  EXPECT_THAT(LoadYamlFile(path, {.max_bytes = 3}), StatusIs(kInvalid, path + ": 8 bytes"));
  EXPECT_THAT(LoadYamlFile(dir + "/missing.yaml"),
              StatusIs(absl::StatusCode::kNotFound, "cannot open '" + dir + "/missing.yaml'"));
}

TEST(YamlDocumentTest, Positions) {
  ASSERT_OK_AND_ASSIGN(const YAML::Node root, ParseYaml("a:\n  b: 1\n", "p.yaml"));
  EXPECT_EQ(YamlPosition("p.yaml", root["a"]["b"].Mark()), "p.yaml:2:6");
  EXPECT_EQ(YamlPosition("p.yaml", YAML::Mark::null_mark()), "p.yaml");
  EXPECT_THAT(YamlError("p.yaml", root["a"].Mark(), "bad"), StatusIs(kInvalid, "p.yaml:2:3: bad"));
}

}  // namespace
}  // namespace fedanon::spec
