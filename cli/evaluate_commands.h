// The `fedanon evaluate` and `fedanon sweep` subcommands: the utility of an anonymized release
// (or, without one, the raw baselines BE, UE, SE) and a grid of LKC parameters with an HTML
// report. Kept apart from tool.cc, which only registers and dispatches them.
#pragma once

#include <optional>
#include <string>

#include "cli/sweep.h"

namespace CLI {
class App;
}

namespace fedanon::common {

class EvaluateCommands {
 public:
  // Adds both subcommands (and their options) to `app`.
  explicit EvaluateCommands(CLI::App& app);

  // After parsing: the exit code of the subcommand that was given (0 ok, 1 failed), or nullopt
  // if neither was.
  std::optional<int> RunIfParsed();

 private:
  int RunEvaluate();
  int RunSweepCommand();

  CLI::App* evaluate_ = nullptr;
  CLI::App* sweep_ = nullptr;

  std::string spec_path_;
  std::string raw_path_;
  std::string anonymized_path_;
  bool json_ = false;
  uint64_t seed_ = 1;

  SweepOptions sweep_options_;
  std::string html_path_ = "sweep.html";
  std::string csv_path_ = "sweep.csv";
  bool quiet_ = false;
};

}  // namespace fedanon::common
