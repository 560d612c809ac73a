// The `fedanon` local tool's command line: parses arguments, dispatches to the subcommands
// (anonymize, gen-data, evaluate, sweep, randomize) and turns their absl::Status into an exit code
// and a clear message.
#pragma once

namespace fedanon::common {

// Returns the process exit code: 0 on success, 1 on a failed command, 2 on a usage error.
int RunTool(int argc, char** argv);

}  // namespace fedanon::common
