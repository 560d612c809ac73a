// `fedanon hierarchy`: builds generalization hierarchies in ARX's CSV format (common/hierarchies,
// docs/hierarchies.md).
//
//   fedanon hierarchy interval --min 0 --max 100 --width 5 [--fanout 2,2] [--step 1]
//   fedanon hierarchy masking --length 5 [--masked 1,2,3,4,5] [--mask '*'] [--alphabet 0123456789]
//   fedanon hierarchy date --levels month,year,decade [--format %Y-%m-%d] [--from D --to D]
//   fedanon hierarchy ordered --order a,b,c | --order-file F  --fanout 2,2
//       each with [--values FILE | --input TABLE.csv --column NAME] --out FILE [--force]
//   fedanon hierarchy spec --spec JOB.yaml [--attribute A ...] [--input TABLE.csv] [--force]
//                          [--check]
//
// `spec` writes every hierarchy the spec's `hierarchy` section defines to its attribute's
// taxonomy path (unchanged files are left alone; a differing one is replaced only with --force;
// --check only compares). Leaves come from the definitions (or their values files), which is the
// only form a federated job accepts; `--input` takes them from a table's column instead, a
// centralized convenience that is refused for a spec with `partitioning` (a party's values must
// not shape the hierarchy every party uses). The kind subcommands take --input too and say on
// stderr that the result is for centralized jobs.
#pragma once

#include "server/runtime/command_line.h"

namespace fedanon::cli {

// Declares `hierarchy` and its subcommands on `command`; the action runs the one selected.
server::CommandAction DeclareHierarchyCommand(CLI::App* command);

}  // namespace fedanon::cli
