// `fedanon gen-data`: the command line of the synthetic data generator (common/datagen/datagen.h
// does the work: a table with Adult's schema, its taxonomies, job specs, party splits).
#pragma once

#include "server/runtime/command_line.h"

namespace fedanon::cli {

// Declares the options on `command`; the action writes the files and a summary line on stderr.
server::CommandAction DeclareGenDataCommand(CLI::App* command);

}  // namespace fedanon::cli
