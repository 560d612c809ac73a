// `fedanon anonymize`: the command line of centralized anonymization (app/anonymize.h): its
// options, progress messages and a summary on stderr.
#pragma once

#include "server/runtime/command_line.h"

namespace fedanon::cli {

// Declares the options on `command`; the action runs app::Anonymize with progress messages and a
// summary on stderr (unless --quiet).
server::CommandAction DeclareAnonymizeCommand(CLI::App* command);

}  // namespace fedanon::cli
