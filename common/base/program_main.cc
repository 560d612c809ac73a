#include "common/base/program_main.h"

#include <cstdio>
#include <exception>

namespace fedanon::base {
namespace {

void Report(std::string_view program, const char* what) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(), what);
}

}  // namespace

int RunProgram(std::string_view program, int (*run)(int, char**), int argc, char** argv) noexcept {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    Report(program, e.what());
  } catch (...) {
    Report(program, "unknown exception");
  }
  return 1;
}

}  // namespace fedanon::base
