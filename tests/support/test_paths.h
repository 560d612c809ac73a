// Where a test finds the build's programs, its checked-in test data and ../shared. The paths are
// compiled into one small file (test_paths.cc) instead of into every test, so that a test's object
// does not depend on where the checkout lives and a compiler cache can share it between checkouts.
#pragma once

#include <string>

namespace fedanon::testing {

// The CMake build directory (programs are in BinaryDir() + "/bin").
std::string BinaryDir();
// tests/testdata of the checkout.
std::string TestDataDir();
// The read-only shared materials (-DFEDANON_SHARED_DIR, default ../shared beside the checkout).
std::string SharedDir();

}  // namespace fedanon::testing
