#include "tests/support/test_paths.h"

namespace fedanon::testing {

std::string BinaryDir() { return FEDANON_BINARY_DIR; }
std::string TestDataDir() { return FEDANON_TESTDATA_DIR; }
std::string SharedDir() { return FEDANON_SHARED_DIR; }

}  // namespace fedanon::testing
