// server/runtime/command_line.h, the command-line plumbing every program shares: parsing and its
// exit codes (0 after --help / --version, 2 for a usage error with CLI11's message), a command's
// status as exit code and message ("<prefix>: <why>", 1; 2 for UsageError; nothing printed for
// AlreadyReported), and a CommandTree running the action of the selected subcommand.
#include "server/runtime/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fedanon::server {
namespace {

using ::testing::HasSubstr;
using ::testing::internal::CaptureStderr;
using ::testing::internal::CaptureStdout;
using ::testing::internal::GetCapturedStderr;
using ::testing::internal::GetCapturedStdout;

// Parses `args` (without the program name) into `app`.
std::optional<int> Parse(CLI::App& app, std::vector<std::string> args) {
  std::vector<const char*> argv = {"prog"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseCommandLine(app, static_cast<int>(argv.size()), argv.data());
}

TEST(ParseCommandLineTest, GoesOnWhenTheCommandLineIsValid) {
  CLI::App app{"test program"};
  std::string name;
  app.add_option("--name", name, "A name")->required();
  EXPECT_EQ(Parse(app, {"--name", "alice"}), std::nullopt);
  EXPECT_EQ(name, "alice");
}

TEST(ParseCommandLineTest, HelpAndVersionPrintOnStdoutAndExitZero) {
  {
    CLI::App app{"test program"};
    std::string name;
    app.add_option("--name", name, "A name")->required();
    CaptureStdout();
    EXPECT_EQ(Parse(app, {"--help"}), kExitOk);
    EXPECT_THAT(GetCapturedStdout(), HasSubstr("--name"));
  }
  {
    CLI::App app{"test program"};
    app.set_version_flag("--version", "prog 1.2.3");
    CaptureStdout();
    EXPECT_EQ(Parse(app, {"--version"}), kExitOk);
    EXPECT_THAT(GetCapturedStdout(), HasSubstr("prog 1.2.3"));
  }
}

TEST(ParseCommandLineTest, UsageErrorsExitTwoWithCli11sMessage) {
  CLI::App app{"test program"};
  std::string name;
  int count = 0;
  app.add_option("--name", name, "A name")->required();
  app.add_option("--count", count, "A number");
  CaptureStderr();
  EXPECT_EQ(Parse(app, {}), kExitUsage);
  EXPECT_THAT(GetCapturedStderr(), HasSubstr("--name is required"));

  CLI::App unknown{"test program"};
  CaptureStderr();
  EXPECT_EQ(Parse(unknown, {"--colour"}), kExitUsage);
  EXPECT_THAT(GetCapturedStderr(), HasSubstr("--colour"));

  CLI::App bad_value{"test program"};
  bad_value.add_option("--count", count, "A number");
  CaptureStderr();
  EXPECT_EQ(Parse(bad_value, {"--count", "many"}), kExitUsage);
  EXPECT_THAT(GetCapturedStderr(), HasSubstr("--count"));
}

TEST(ExitCodeTest, OkIsZeroAndSilent) {
  CaptureStderr();
  EXPECT_EQ(ExitCode(absl::OkStatus(), "prog"), kExitOk);
  EXPECT_EQ(GetCapturedStderr(), "");
}

TEST(ExitCodeTest, AFailurePrintsPrefixAndMessageAndExitsOne) {
  CaptureStderr();
  EXPECT_EQ(ExitCode(absl::NotFoundError("cannot open 'x.csv'"), "fedanon anonymize"),
            kExitFailure);
  EXPECT_EQ(GetCapturedStderr(), "fedanon anonymize: cannot open 'x.csv'\n");
}

TEST(ExitCodeTest, AUsageErrorExitsTwo) {
  CaptureStderr();
  EXPECT_EQ(ExitCode(UsageError("--data expects PARTY=PATH, got 'x'"), "fedanonctl"), kExitUsage);
  EXPECT_EQ(GetCapturedStderr(), "fedanonctl: --data expects PARTY=PATH, got 'x'\n");
}

TEST(ExitCodeTest, AnAlreadyReportedFailureExitsOneSilently) {
  CaptureStderr();
  EXPECT_EQ(ExitCode(AlreadyReported(absl::UnavailableError("not serving")), "fedanonctl"),
            kExitFailure);
  EXPECT_EQ(ExitCode(AlreadyReported(absl::OkStatus()), "fedanonctl"), kExitOk);
  EXPECT_EQ(GetCapturedStderr(), "");
}

// A subcommand `greet --name N` whose action records the name and returns `code`.
CommandDeclaration Greet(std::string* greeted, int code) {
  return [greeted, code](CLI::App* command) -> CommandAction {
    auto name = std::make_shared<std::string>();
    command->add_option("--name", *name, "Who")->required();
    return [greeted, code, name] {
      *greeted = *name;
      return code;
    };
  };
}

TEST(CommandTreeTest, RunsTheActionOfTheSelectedSubcommand) {
  CLI::App app{"test program"};
  app.require_subcommand(0, 1);
  std::string hello, bye;
  CommandTree tree(app);
  tree.Add("hello", "Say hello", Greet(&hello, 0));
  tree.Add("bye", "Say goodbye", Greet(&bye, 3));
  ASSERT_EQ(Parse(app, {"bye", "--name", "bob"}), std::nullopt);
  EXPECT_EQ(tree.RunSelected([] { return 42; }), 3);
  EXPECT_EQ(hello, "");
  EXPECT_EQ(bye, "bob");
}

TEST(CommandTreeTest, RunsTheFallbackWithoutASubcommand) {
  CLI::App app{"test program"};
  app.require_subcommand(0, 1);
  std::string hello;
  CommandTree tree(app);
  tree.Add("hello", "Say hello", Greet(&hello, 0));
  ASSERT_EQ(Parse(app, {}), std::nullopt);
  EXPECT_EQ(tree.RunSelected([] { return 42; }), 42);
  EXPECT_EQ(hello, "");
}

TEST(CommandTreeTest, SubcommandsAreListedInHelpAndParsedWithTheirOptions) {
  std::string hello;
  {
    CLI::App app{"test program"};
    CommandTree tree(app);
    tree.Add("hello", "Say hello", Greet(&hello, 0));
    CaptureStdout();
    EXPECT_EQ(Parse(app, {"--help"}), kExitOk);
    EXPECT_THAT(GetCapturedStdout(), HasSubstr("Say hello"));
  }
  {
    CLI::App app{"test program"};
    CommandTree tree(app);
    tree.Add("hello", "Say hello", Greet(&hello, 0));
    CaptureStderr();
    EXPECT_EQ(Parse(app, {"hello"}), kExitUsage);
    EXPECT_THAT(GetCapturedStderr(), HasSubstr("--name is required"));
  }
}

}  // namespace
}  // namespace fedanon::server
