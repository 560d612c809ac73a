// The body of every program's main(): errors travel as statuses, but an exception that would
// still reach std::terminate (std::bad_alloc, a library's) ends the program with its message on
// stderr and exit code 1.
#pragma once

#include <string_view>

namespace fedanon::base {

// Returns run(argc, argv), or 1 after printing "<program>: <what>" when it throws.
int RunProgram(std::string_view program, int (*run)(int, char**), int argc, char** argv) noexcept;

}  // namespace fedanon::base
