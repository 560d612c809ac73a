// The `fedanon randomize` subcommand's command line (common/randomize_command.h does the work):
// registers its options on the tool's CLI11 app and, once parsed, runs it and turns the outcome
// into an exit code (0 done, 1 failed, 2 usage error) and messages on stderr.
#pragma once

#include <string>
#include <vector>

#include "cli/randomize_command.h"

namespace CLI {
class App;
}  // namespace CLI

namespace fedanon::common {

class RandomizeSubcommand {
 public:
  // Adds `randomize` to `app` (not owned; must outlive this object).
  explicit RandomizeSubcommand(CLI::App& app);

  // Whether the command line selected this subcommand.
  bool parsed() const;
  // Runs it; returns the process exit code.
  int Run();

 private:
  CLI::App* command_;  // not owned
  RandomizeOptions options_;
  uint64_t seed_ = 0;
  std::string selection_;
  bool quiet_ = false;
};

}  // namespace fedanon::common
