#include "tests/support/config_dir.h"

#include <fstream>

namespace fedanon::testing {
namespace {

constexpr char kParty[] = R"(name: hospital-a
leader: 10.0.0.1:7443
data_dir: data
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
)";
constexpr char kLeader[] = R"(name: leader
listen: 0.0.0.0:7443
data_dir: data
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
)";

}  // namespace

std::string ConfigDir::Write(const std::string& name, const std::string& text) const {
  const std::string path = File(name);
  std::ofstream(path) << text;
  return path;
}

std::string ConfigDir::Party(const std::string& name, const std::string& extra) const {
  return Write(name, kParty + extra);
}

std::string ConfigDir::Leader(const std::string& name, const std::string& extra) const {
  return Write(name, kLeader + extra);
}

}  // namespace fedanon::testing
