// `fedanonctl report JOB --html PAGE.html`: a finished job's page (common/html_report) made at
// the admin's desk from what the leader serves over the admin API — the job's report (GetJob)
// and the leader's view log (GetViewLog) — plus what the admin holds: the spec (the privacy
// model, the taxonomies the cut is drawn on), the release (--result: its risk, per-attribute
// loss and the model measured again, computed here by the release's holder) and the parties'
// own risk summaries (--party-risk NAME=FILE, the JSON of `fedanon party risk --json` each party
// ran on its own table). --report writes the report with those figures as JSON, so that the page
// and the file say the same.
#pragma once

#include "cli/admin_commands.h"
#include "server/runtime/command_line.h"

namespace fedanon::cli {

server::CommandAction DeclareReportCommand(const AdminGlobals* globals, CLI::App* command);

}  // namespace fedanon::cli
