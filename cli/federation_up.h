// `fedanon federation up`: a throwaway local federation on loopback, for demos and tests.
//
//   fedanon federation up --party-data a.csv,b.csv[,...] [--spec JOB.yaml] [--port P] [--wait]
//                         [--result OUT.csv] [--report REPORT.json]
//                         [--leader-view VIEW.jsonl] [--html PAGE.html] [--keep] [--dir DIR]
//
// 1. Provisions a federation (cli::ProvisionLocal) in a temporary directory (or --dir): a
//    leader on 127.0.0.1:P (P free unless --port), one party per table (named after the files
//    when those names are unique and valid, else hospital-1..N) and the admin "admin".
// 2. Copies each table to its party's data/table.csv and, with --spec, every taxonomy the spec
//    references into each party's data/ (same relative path as in the spec).
// 3. Starts fedanon-leader and one fedanon-party per table (found next to the running executable,
//    else in PATH) as child processes logging to <dir>/logs/<name>.log, and waits until every
//    party is connected (30 s; a child that exits early fails the command with its log's tail).
// 4. Without --spec: prints how to use fedanonctl and stays up until SIGINT / SIGTERM (exit 0).
//    With --spec: submits the job (all parties, the leader as recipient); with --wait follows it
//    (progress on stderr) and, when done, writes --result and --report (the JobInfo's report as
//    JSON) and --leader-view (the leader's view log of the job, JSON lines: every statistic it
//    decoded, leader/view_log.h) atomically and prints a summary (exit 0); with --html also the
//    job's page (app/job_assessment.h: the release's risk, loss and model checks, each party's
//    risk on its own table, a summary of the view log; the same figures go into --report); a
//    spec's `hierarchy` definitions must match the taxonomy files it ships (built from public
//    definitions only, common/hierarchies) or the job is not submitted; a failed or cancelled
//    job exits 1 and writes only --leader-view (what the leader decoded before the job ended).
//    Without --wait it prints the job id and stays up like (4).
// Children are always stopped before returning (SIGTERM, up to 5 s, then SIGKILL; they also get
// SIGTERM if this process dies), and the directory is removed unless --keep. A SIGINT / SIGTERM
// while waiting stops everything and exits 130 / 143. Exit 2 on usage errors.
#pragma once

#include "server/runtime/command_line.h"

namespace fedanon::cli {

// Declares fedanon's subcommand `federation` (created by the caller, hidden from fedanon's help)
// and its own subcommand `up`; the action runs `up` as above, or prints the usage (exit 2)
// when the command line does not say `up`.
server::CommandAction DeclareFederationCommand(CLI::App* federation);

}  // namespace fedanon::cli
