// fedanon: the local tool — centralized anonymization, synthetic data generation, and
// `fedanon federation up` (a throwaway local federation, see server/federation_up.h).
#include <string_view>

#include "cli/federation_up.h"
#include "cli/tool.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "federation") {
    return fedanon::server::RunFederationUp(argc, argv);
  }
  return fedanon::common::RunTool(argc, argv);
}
