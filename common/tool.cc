#include "common/tool.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/version.h"

namespace fedanon::common {

int RunTool(int argc, char** argv) {
  CLI::App app{"fedanon: anonymize tables for publication (LKC-privacy, templates, TDS)"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version, "Print the version and git revision");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (show_version) {
    std::cout << VersionLine("fedanon") << "\n";
    return 0;
  }
  std::cout << app.help();
  return 2;
}

}  // namespace fedanon::common
