// party.yaml's PostgreSQL keys (server/runtime/config.h, docs/postgres.md): `tables:` naming
// sources by table or query, `sink:` naming a table; every mistake named with its file, line and
// key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "server/runtime/config.h"
#include "tests/support/status_matchers.h"

namespace fedanon::server {
namespace {

using ::fedanon::testing::StatusIs;

constexpr char kBase[] = R"(name: hospital-a
leader: 127.0.0.1:7443
data_dir: data
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
)";

absl::StatusOr<PartyConfig> Load(const std::string& extra) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("fedanon_pg_config_" + std::to_string(::getpid()) + "_" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "party.yaml").string();
  std::ofstream(path) << kBase << extra;
  auto config = LoadPartyConfig(path);
  std::filesystem::remove_all(dir);
  return config;
}

TEST(PostgresConfig, TablesAndSinkParse) {
  ASSERT_OK_AND_ASSIGN(const PartyConfig c, Load(R"(data: patients
tables:
  patients:
    postgres: {conninfo: "service=hospital", table: records.patients}
  cohort:
    postgres:
      conninfo: "host=db dbname=ehr sslmode=verify-full"
      query: SELECT age, sex FROM records.admissions
sink:
  postgres: {conninfo: "service=warehouse", table: "released.\"adult_{job_id}\""}
)"));
  EXPECT_EQ(c.data, "patients");
  ASSERT_EQ(c.postgres_tables.size(), 2u);
  const auto& p = c.postgres_tables.at("patients");
  EXPECT_EQ(p.name, "patients");
  EXPECT_EQ(p.conninfo, "service=hospital");
  EXPECT_EQ(p.table, "records.patients");
  EXPECT_EQ(p.query, "");
  EXPECT_EQ(c.postgres_tables.at("cohort").query, "SELECT age, sex FROM records.admissions");
  ASSERT_TRUE(c.postgres_sink.has_value());
  EXPECT_EQ(c.postgres_sink->conninfo, "service=warehouse");
  EXPECT_EQ(c.postgres_sink->table, "released.\"adult_{job_id}\"");
}

// `mode: push-down` is the party's own choice per table (docs/postgres.md, "Push-down").
TEST(PostgresConfig, PushDownModeParses) {
  ASSERT_OK_AND_ASSIGN(const PartyConfig c, Load(R"(tables:
  big:
    mode: push-down
    postgres: {conninfo: "service=hospital", table: records.big}
  small:
    mode: load
    postgres: {conninfo: "service=hospital", table: records.small}
  other:
    postgres: {conninfo: "service=hospital", table: records.other}
)"));
  EXPECT_TRUE(c.postgres_tables.at("big").push_down);
  EXPECT_FALSE(c.postgres_tables.at("small").push_down);
  EXPECT_FALSE(c.postgres_tables.at("other").push_down);
  EXPECT_THAT(Load("tables:\n  p:\n    mode: pushdown\n    postgres: {conninfo: x, table: t}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'tables.p.mode' is 'load' (the default) or 'push-down', not 'pushdown'"));
  EXPECT_THAT(Load("sink:\n  mode: push-down\n  postgres: {conninfo: x, table: t}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown key 'sink.mode'"));
}

TEST(PostgresConfig, WithoutThemCsvOnly) {
  ASSERT_OK_AND_ASSIGN(const PartyConfig c, Load(""));
  EXPECT_TRUE(c.postgres_tables.empty());
  EXPECT_FALSE(c.postgres_sink.has_value());
}

TEST(PostgresConfig, MistakesAreNamed) {
  EXPECT_THAT(Load("tables:\n  p:\n    postgres: {conninfo: x, table: t, query: SELECT 1}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'tables.p.postgres.' needs exactly one of 'table' and 'query'"));
  EXPECT_THAT(Load("tables:\n  p:\n    postgres: {table: t}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "missing required key 'tables.p.postgres.conninfo'"));
  EXPECT_THAT(
      Load("tables:\n  p:\n    postgres: {conninfo: x, table: t, password: y}\n"),
      StatusIs(absl::StatusCode::kInvalidArgument, "unknown key 'tables.p.postgres.password'"));
  EXPECT_THAT(Load("tables:\n  p:\n    mysql: {conninfo: x}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown key 'tables.p.mysql'"));
  EXPECT_THAT(Load("tables: [a, b]\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, "key 'tables' must be a mapping"));
  EXPECT_THAT(Load("sink:\n  postgres: {conninfo: x, query: SELECT 1}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'sink.postgres' names a 'table', not a 'query'"));
}

}  // namespace
}  // namespace fedanon::server
