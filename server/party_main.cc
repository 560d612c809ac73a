// fedanon-party: the party daemon (one per institution; dials out to the leader).
// The federation runtime (gRPC stream, mTLS, job store) is tracked by issue 4; until it lands this
// binary only reports its version and says plainly that it cannot run a federation yet.
#include <cstring>
#include <iostream>

#include "common/version.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0) {
      std::cout << fedanon::common::VersionLine("fedanon-party") << "\n";
      return 0;
    }
  }
  std::cerr << "fedanon-party: the federation runtime is not implemented in this build yet; "
               "only --version is available. Use 'fedanon anonymize' for centralized jobs.\n";
  return 2;
}
