#include "app/provision.h"

#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/spec/yaml_document.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"

namespace fedanon::app {
namespace {

namespace fs = std::filesystem;
using crypto::CertificateAuthority;
using crypto::Identity;
using crypto::IssuedCertificate;
using crypto::Role;

constexpr int kMaxValidityDays = 3650;
constexpr int kLocalValidityDays = 30;
constexpr int kRoundTimeoutSeconds = 60;
constexpr mode_t kDirMode = 0700;
constexpr mode_t kSecretMode = 0600;
constexpr mode_t kPublicMode = 0644;

// ---- YAML input ---------------------------------------------------------------------------------

// Syntax errors of federation.yaml read "<source>:<line>:<col>: invalid YAML: ...".
constexpr spec::YamlOptions kYamlOptions = {.syntax_error_prefix = "invalid YAML: "};

// "<source>:<line>:<col>: " for a node.
std::string Where(const std::string& source, const YAML::Mark& mark) {
  return absl::StrCat(spec::YamlPosition(source, mark), ": ");
}

class SpecParser {
 public:
  explicit SpecParser(std::string source) : source_(std::move(source)) {}

  absl::StatusOr<FederationSpec> Parse(const YAML::Node& root) {
    if (!root.IsMap()) {
      return Error(root, "want a mapping with keys federation, leader, parties, admins");
    }
    RETURN_IF_ERROR(
        CheckKeys(root, "", {"federation", "leader", "parties", "admins", "validity_days"}));
    FederationSpec spec;
    ASSIGN_OR_RETURN(spec.federation, Scalar(root, "federation", ""));
    const YAML::Node leader = root["leader"];
    if (!leader.IsDefined()) return Missing(root, "leader");
    if (!leader.IsMap()) {
      return Error(leader, "leader: want a mapping {name: ..., address: host:port, hosts: [...]}");
    }
    RETURN_IF_ERROR(CheckKeys(leader, "leader.", {"name", "address", "hosts"}));
    ASSIGN_OR_RETURN(spec.leader.name, Scalar(leader, "name", "leader."));
    ASSIGN_OR_RETURN(spec.leader.address, Scalar(leader, "address", "leader."));
    if (leader["hosts"].IsDefined()) {
      ASSIGN_OR_RETURN(spec.leader.hosts, List(leader, "hosts", "leader."));
    }
    ASSIGN_OR_RETURN(spec.parties, List(root, "parties", ""));
    ASSIGN_OR_RETURN(spec.admins, List(root, "admins", ""));
    if (const YAML::Node days = root["validity_days"]; days.IsDefined()) {
      if (!days.IsScalar() || !absl::SimpleAtoi(days.Scalar(), &spec.validity_days)) {
        return Error(days, "validity_days: want an integer number of days");
      }
    }
    // Position-aware checks of the values (the rest is ValidateFederationSpec's job).
    const auto check_name = [&](const YAML::Node& node, const std::string& what,
                                const std::string& name) -> absl::Status {
      if (absl::Status st = crypto::ValidateParticipantName(name); !st.ok()) {
        return Error(node, absl::StrCat(what, ": ", std::string(st.message())));
      }
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(check_name(root["federation"], "federation", spec.federation));
    RETURN_IF_ERROR(check_name(leader["name"], "leader.name", spec.leader.name));
    for (size_t i = 0; i < spec.parties.size(); ++i) {
      RETURN_IF_ERROR(check_name(root["parties"][i], "parties", spec.parties[i]));
    }
    for (size_t i = 0; i < spec.admins.size(); ++i) {
      RETURN_IF_ERROR(check_name(root["admins"][i], "admins", spec.admins[i]));
    }
    if (absl::Status st = ValidateFederationSpec(spec); !st.ok()) {
      return absl::Status(st.code(), absl::StrCat(source_, ": ", std::string(st.message())));
    }
    return spec;
  }

 private:
  absl::Status Error(const YAML::Node& node, const std::string& message) const {
    return absl::InvalidArgumentError(absl::StrCat(Where(source_, node.Mark()), message));
  }
  absl::Status Missing(const YAML::Node& map, const std::string& key) const {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(source_, map.Mark()), "missing key '", key, "'"));
  }

  absl::Status CheckKeys(const YAML::Node& map, const std::string& prefix,
                         const std::set<std::string>& allowed) const {
    for (const auto& kv : map) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (allowed.count(key) == 0) {
        return Error(kv.first, absl::StrCat("unknown key '", prefix, key,
                                            "' (allowed: ", absl::StrJoin(allowed, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Scalar(const YAML::Node& map, const std::string& key,
                                     const std::string& prefix) const {
    const YAML::Node node = map[key];
    if (!node.IsDefined()) return Missing(map, prefix + key);
    if (!node.IsScalar() || node.Scalar().empty()) {
      return Error(node, absl::StrCat(prefix, key, ": want a non-empty string"));
    }
    return node.Scalar();
  }

  absl::StatusOr<std::vector<std::string>> List(const YAML::Node& map, const std::string& key,
                                                const std::string& prefix) const {
    const YAML::Node node = map[key];
    if (!node.IsDefined()) return Missing(map, prefix + key);
    if (!node.IsSequence()) {
      return Error(node, absl::StrCat(prefix, key, ": want a list, e.g. [a, b]"));
    }
    std::vector<std::string> out;
    for (const YAML::Node& item : node) {
      if (!item.IsScalar() || item.Scalar().empty()) {
        return Error(item, absl::StrCat(prefix, key, ": want a list of names"));
      }
      out.push_back(item.Scalar());
    }
    return out;
  }

  std::string source_;
};

// "host:port" or "[v6]:port" -> (host without brackets, port).
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "leader.address \"", address, "\": want host:port (e.g. leader.example.org:7443)"));
  };
  std::string host;
  std::string port;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return bad();
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) return bad();
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string::npos) return bad();  // bare IPv6 needs brackets
  }
  int port_number = 0;
  if (host.empty() || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      !absl::SimpleAtoi(port, &port_number) || port_number < 1 || port_number > 65535) {
    return bad();
  }
  return std::make_pair(host, port_number);
}

// ---- files --------------------------------------------------------------------------------------

absl::Status ErrnoError(const std::string& what, const fs::path& path) {
  return base::ErrnoStatus(errno, absl::StrCat(what, " ", path.string()));
}

absl::Status MakeDir(const fs::path& path) {
  if (::mkdir(path.c_str(), kDirMode) != 0) return ErrnoError("cannot create directory", path);
  if (::chmod(path.c_str(), kDirMode) != 0) return ErrnoError("cannot chmod", path);
  return absl::OkStatus();
}

// Creates `path` (which must not exist) with exactly `mode` and `content`, synced.
absl::Status WriteNewFile(const fs::path& path, std::string_view content, mode_t mode) {
  return base::WriteFileAtomically(path.string(), content,
                                   {.mode = mode, .replace_existing = false});
}

// Removes a half-built staging directory when provisioning fails.
class StagingDir {
 public:
  explicit StagingDir(fs::path path) : path_(std::move(path)) {}
  ~StagingDir() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const fs::path& path() const { return path_; }
  void Release() { path_.clear(); }

 private:
  fs::path path_;
};

// The output directory without a trailing separator; FailedPrecondition unless it is absent or
// an empty directory.
absl::StatusOr<fs::path> CheckOutDir(const std::string& out_dir) {
  if (out_dir.empty()) return absl::InvalidArgumentError("empty output directory");
  fs::path out = fs::path(out_dir).lexically_normal();
  if (!out.has_filename()) out = out.parent_path();
  if (out.empty() || out.filename() == "." || out.filename() == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("output directory \"", out_dir, "\": name a new directory"));
  }
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot inspect ", out.string(), ": ", ec.message()));
  }
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) {
      return absl::FailedPreconditionError(
          absl::StrCat("output path ", out.string(), " exists and is not a directory"));
    }
    if (!fs::is_empty(out, ec) || ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("output directory ", out.string(),
                       " exists and is not empty; refusing to overwrite (choose another --out)"));
    }
  }
  return out;
}

// ---- generated files ----------------------------------------------------------------------------

std::string Column(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

// Plain YAML scalars that a YAML 1.1 reader would not take for a string get double quotes.
bool NeedsQuotes(const std::string& s) {
  static const std::set<std::string> kSpecial = {"y",   "n",    "yes",   "no",   "on",
                                                 "off", "true", "false", "null", "~"};
  return s.empty() || kSpecial.count(absl::AsciiStrToLower(s)) > 0 ||
         absl::ascii_isdigit(static_cast<unsigned char>(s.front())) || s.front() == '.' ||
         s.front() == '-' || s.front() == '[' || s.front() == '{';
}

void EmitValue(YAML::Emitter& e, const std::string& value) {
  if (NeedsQuotes(value)) e << YAML::DoubleQuoted;
  e << value;
}

void EmitKey(YAML::Emitter& e, const std::string& key, const std::string& value) {
  e << YAML::Key << key << YAML::Value;
  EmitValue(e, value);
}

void EmitTls(YAML::Emitter& e) {
  e << YAML::Key << "tls" << YAML::Value << YAML::Flow << YAML::BeginMap;
  EmitKey(e, "ca", "ca.crt");
  EmitKey(e, "cert", "tls.crt");
  EmitKey(e, "key", "tls.key");
  e << YAML::EndMap;
}

void EmitSeal(YAML::Emitter& e) {
  e << YAML::Key << "seal" << YAML::Value << YAML::Flow << YAML::BeginMap;
  EmitKey(e, "cert", "seal.crt");
  EmitKey(e, "key", "seal.key");
  e << YAML::EndMap;
}

void EmitSign(YAML::Emitter& e) {
  e << YAML::Key << "sign" << YAML::Value << YAML::Flow << YAML::BeginMap;
  EmitKey(e, "cert", "sign.crt");
  EmitKey(e, "key", "sign.key");
  e << YAML::EndMap;
}

std::string Header(const std::string& what, const FederationSpec& spec) {
  return absl::StrCat("# fedanon ", what, " configuration for federation \"", spec.federation,
                      "\" (generated by fedanonctl provision).\n",
                      "# Paths are relative to the directory holding this file.\n");
}

std::string ListenAddress(const FederationSpec& spec, int port) {
  const std::string& host = spec.leader.listen_host;
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

std::string LeaderYaml(const FederationSpec& spec, int port) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  EmitKey(e, "name", spec.leader.name);
  EmitKey(e, "listen", ListenAddress(spec, port));
  EmitKey(e, "data_dir", "data");
  e << YAML::Comment("job store and results live here");
  EmitTls(e);
  EmitSeal(e);
  e << YAML::Key << "round_timeout_seconds" << YAML::Value << kRoundTimeoutSeconds;
  e << YAML::EndMap;
  return absl::StrCat(Header("leader", spec), e.c_str(), "\n");
}

std::string PartyYaml(const FederationSpec& spec, const std::string& name) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  EmitKey(e, "name", name);
  EmitKey(e, "leader", spec.leader.address);
  EmitKey(e, "data_dir", "data");
  e << YAML::Comment("the party's tables and taxonomies (never leave this host)");
  EmitKey(e, "data", "table.csv");
  e << YAML::Comment("default table, relative to data_dir");
  EmitKey(e, "output_dir", "output");
  e << YAML::Comment("integrated tables are written here when this party is the recipient");
  EmitTls(e);
  EmitSeal(e);
  EmitSign(e);
  e << YAML::Comment("signs this party's statements to the other parties (vertical jobs)");
  e << YAML::EndMap;
  return absl::StrCat(Header("party", spec), e.c_str(), "\n");
}

std::string AdminYaml(const FederationSpec& spec, const std::string& name) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  EmitKey(e, "name", name);
  EmitKey(e, "leader", spec.leader.address);
  EmitTls(e);
  e << YAML::EndMap;
  return absl::StrCat(Header("admin", spec), e.c_str(), "\n");
}

std::string ReadmeText(const FederationSpec& spec, int port) {
  std::string out = absl::StrCat(
      "fedanon startup kit for federation \"", spec.federation, "\"\n",
      "Generated by fedanonctl provision. Certificates are valid for ", spec.validity_days,
      " days.\n\n",
      "Every directory below is one participant's bundle: copy it, as a whole and over a secure\n",
      "channel, to that participant's host and keep its mode 0700 (the *.key files are private\n",
      "keys, mode 0600). Paths inside the config files are relative to the bundle directory.\n\n",
      "  ca/                   THE FEDERATION CA. Do not copy it anywhere: move ca/ca.key to "
      "offline\n",
      "                        storage (it is only needed to issue new certificates). ca.crt is\n",
      "                        already in every bundle.\n");
  const std::string indent(24, ' ');
  absl::StrAppend(&out, "  ", Column(spec.leader.name + "/", 22),
                  "LEADER: copy to the leader host (", spec.leader.address, ").\n", indent,
                  "Start the leader daemon with leader.yaml (listens on ",
                  ListenAddress(spec, port), ";\n", indent, "job store and results in data/).\n");
  for (const std::string& p : spec.parties) {
    absl::StrAppend(&out, "  ", Column(p + "/", 22), "PARTY: copy to ", p,
                    "'s host. Put its tables and\n", indent,
                    "taxonomies into data/ (default table data/table.csv; they never\n", indent,
                    "leave the host) and start the party daemon with party.yaml.\n");
  }
  for (const std::string& a : spec.admins) {
    absl::StrAppend(&out, "  ", Column(a + "/", 22), "ADMIN: give to ", a,
                    "; use it with fedanonctl (admin.yaml).\n");
  }
  absl::StrAppend(
      &out, "\nEach bundle: ca.crt (federation CA), tls.crt + tls.key (mutual-TLS identity),\n",
      "seal.crt + seal.key (key that other parties seal payloads to; the leader cannot read or\n",
      "replace them), for a party sign.crt + sign.key (key that signs its statements to the\n",
      "other parties), and the config file. Never send a *.key file over an insecure channel.\n");
  return out;
}

struct Participant {
  Identity identity;
  std::vector<std::string> hosts;  // for the TLS certificate
  std::string config_name;
  std::string config;
};

absl::Status WriteBundle(const fs::path& dir, const CertificateAuthority& ca, const Participant& p,
                         absl::Duration validity) {
  RETURN_IF_ERROR(MakeDir(dir));
  ASSIGN_OR_RETURN(const IssuedCertificate tls, ca.IssueTls(p.identity, p.hosts, validity));
  ASSIGN_OR_RETURN(const IssuedCertificate seal, ca.IssueSeal(p.identity, validity));
  RETURN_IF_ERROR(WriteNewFile(dir / "ca.crt", ca.cert_pem(), kPublicMode));
  RETURN_IF_ERROR(WriteNewFile(dir / "tls.crt", tls.cert_pem, kPublicMode));
  RETURN_IF_ERROR(WriteNewFile(dir / "tls.key", tls.key_pem, kSecretMode));
  RETURN_IF_ERROR(WriteNewFile(dir / "seal.crt", seal.cert_pem, kPublicMode));
  RETURN_IF_ERROR(WriteNewFile(dir / "seal.key", seal.key_pem, kSecretMode));
  if (p.identity.role == Role::kParty) {
    ASSIGN_OR_RETURN(const IssuedCertificate sign, ca.IssueStatementSigner(p.identity, validity));
    RETURN_IF_ERROR(WriteNewFile(dir / "sign.crt", sign.cert_pem, kPublicMode));
    RETURN_IF_ERROR(WriteNewFile(dir / "sign.key", sign.key_pem, kSecretMode));
  }
  RETURN_IF_ERROR(WriteNewFile(dir / p.config_name, p.config, kPublicMode));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FederationSpec> ParseFederationSpec(const std::string& yaml_text,
                                                   const std::string& source_name) {
  ASSIGN_OR_RETURN(const YAML::Node root, spec::ParseYaml(yaml_text, source_name, kYamlOptions));
  return SpecParser(source_name).Parse(root);
}

absl::StatusOr<FederationSpec> LoadFederationSpec(const std::string& federation_yaml_path) {
  ASSIGN_OR_RETURN(const YAML::Node root, spec::LoadYamlFile(federation_yaml_path, kYamlOptions));
  return SpecParser(federation_yaml_path).Parse(root);
}

absl::Status ValidateFederationSpec(const FederationSpec& spec) {
  if (absl::Status st = crypto::ValidateParticipantName(spec.federation); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("federation: ", std::string(st.message())));
  }
  if (spec.parties.empty()) return absl::InvalidArgumentError("parties: name at least one party");
  if (spec.admins.empty()) return absl::InvalidArgumentError("admins: name at least one admin");
  if (spec.validity_days < 1 || spec.validity_days > kMaxValidityDays) {
    return absl::InvalidArgumentError(absl::StrCat("validity_days: ", spec.validity_days,
                                                   " is out of range [1, ", kMaxValidityDays, "]"));
  }
  RETURN_IF_ERROR(SplitHostPort(spec.leader.address).status());
  // Names become directory names and identities: unique across roles, also ignoring case (so
  // that bundles cannot collide on case-insensitive file systems); "ca" holds the CA.
  std::set<std::string> seen = {"ca"};
  const auto add = [&](const std::string& role, const std::string& name) -> absl::Status {
    if (absl::Status st = crypto::ValidateParticipantName(name); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(role, ": ", std::string(st.message())));
    }
    const std::string key = absl::AsciiStrToLower(name);
    if (key == "ca") {
      return absl::InvalidArgumentError(
          absl::StrCat(role, ": the name \"", name, "\" is reserved for the CA directory"));
    }
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          role, ": duplicate name \"", name,
          "\" (names must be unique across the leader, parties and admins, ignoring case)"));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(add("leader.name", spec.leader.name));
  for (const std::string& p : spec.parties) RETURN_IF_ERROR(add("parties", p));
  for (const std::string& a : spec.admins) RETURN_IF_ERROR(add("admins", a));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ProvisionFederation(const FederationSpec& spec,
                                                const std::string& out_dir) {
  RETURN_IF_ERROR(ValidateFederationSpec(spec));
  ASSIGN_OR_RETURN(const auto host_port, SplitHostPort(spec.leader.address));
  ASSIGN_OR_RETURN(const fs::path out, CheckOutDir(out_dir));

  // Build everything in a private sibling directory, then rename it into place.
  if (out.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(out.parent_path(), ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create ", out.parent_path().string(), ": ", ec.message()));
    }
  }
  std::string pattern = absl::StrCat(out.string(), ".partial-XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) return ErrnoError("cannot create", pattern);
  StagingDir staging{fs::path(pattern)};
  const fs::path& root = staging.path();
  if (::chmod(root.c_str(), kDirMode) != 0) return ErrnoError("cannot chmod", root);

  const absl::Duration validity = absl::Hours(24) * spec.validity_days;
  ASSIGN_OR_RETURN(const std::unique_ptr<CertificateAuthority> ca,
                   CertificateAuthority::Create(spec.federation, validity));
  ASSIGN_OR_RETURN(const std::string ca_key, ca->key_pem());
  RETURN_IF_ERROR(MakeDir(root / "ca"));
  RETURN_IF_ERROR(WriteNewFile(root / "ca" / "ca.crt", ca->cert_pem(), kPublicMode));
  RETURN_IF_ERROR(WriteNewFile(root / "ca" / "ca.key", ca_key, kSecretMode));

  std::vector<Participant> participants;
  // The leader's certificate names every address it is dialled at.
  std::vector<std::string> leader_hosts = {host_port.first};
  leader_hosts.insert(leader_hosts.end(), spec.leader.hosts.begin(), spec.leader.hosts.end());
  participants.push_back({{Role::kLeader, spec.leader.name},
                          leader_hosts,
                          "leader.yaml",
                          LeaderYaml(spec, host_port.second)});
  for (const std::string& p : spec.parties) {
    participants.push_back({{Role::kParty, p}, {}, "party.yaml", PartyYaml(spec, p)});
  }
  for (const std::string& a : spec.admins) {
    participants.push_back({{Role::kAdmin, a}, {}, "admin.yaml", AdminYaml(spec, a)});
  }
  for (const Participant& p : participants) {
    absl::Status st = WriteBundle(root / p.identity.name, *ca, p, validity);
    if (!st.ok()) {
      return absl::Status(st.code(),
                          absl::StrCat(std::string(crypto::RoleName(p.identity.role)), " ",
                                       p.identity.name, ": ", std::string(st.message())));
    }
  }
  RETURN_IF_ERROR(
      WriteNewFile(root / "README.txt", ReadmeText(spec, host_port.second), kPublicMode));

  // rename(2) replaces an empty directory atomically and fails if it gained entries meanwhile.
  if (::rename(root.c_str(), out.c_str()) != 0) {
    return ErrnoError(absl::StrCat("cannot move the kit from ", root.string(), " to"), out);
  }
  staging.Release();

  std::string summary =
      absl::StrCat("Provisioned federation \"", spec.federation, "\" in ", out.string(),
                   " (certificates valid ", spec.validity_days, " days):\n");
  absl::StrAppend(&summary, "  ", Column("ca/", 24),
                  "CA certificate and key: move ca/ca.key offline\n");
  absl::StrAppend(&summary, "  ", Column(spec.leader.name + "/", 24), "leader  (",
                  spec.leader.address, ")\n");
  for (const std::string& p : spec.parties) {
    absl::StrAppend(&summary, "  ", Column(p + "/", 24), "party\n");
  }
  for (const std::string& a : spec.admins) {
    absl::StrAppend(&summary, "  ", Column(a + "/", 24), "admin\n");
  }
  absl::StrAppend(&summary, "See ", (out / "README.txt").string(), " for what to copy where.\n");
  return summary;
}

absl::StatusOr<std::string> Provision(const std::string& federation_yaml_path,
                                      const std::string& out_dir) {
  ASSIGN_OR_RETURN(const FederationSpec spec, LoadFederationSpec(federation_yaml_path));
  return ProvisionFederation(spec, out_dir);
}

absl::Status ProvisionLocal(const std::string& out_dir, const std::vector<std::string>& parties,
                            int leader_port) {
  if (leader_port < 1 || leader_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("leader port ", leader_port, " is out of range [1, 65535]"));
  }
  FederationSpec spec;
  spec.federation = "local";
  spec.leader.name = "leader";
  spec.leader.address = absl::StrCat("127.0.0.1:", leader_port);
  spec.leader.hosts = {"localhost"};
  spec.leader.listen_host = "127.0.0.1";  // a throwaway federation never listens beyond loopback
  spec.parties = parties;
  spec.admins = {"admin"};
  spec.validity_days = kLocalValidityDays;
  return ProvisionFederation(spec, out_dir).status();
}

absl::StatusOr<std::string> RevokeCertificates(const std::string& ca_dir,
                                               const std::vector<std::string>& cert_paths,
                                               int validity_days) {
  if (validity_days < 1 || validity_days > 3650) {
    return absl::InvalidArgumentError("--days must be in 1..3650");
  }
  if (cert_paths.empty()) return absl::InvalidArgumentError("name at least one certificate");
  const base::ReadFileOptions pem{.max_bytes = 1 << 20, .what = "PEM file"};
  const std::filesystem::path dir(ca_dir);
  ASSIGN_OR_RETURN(const std::string ca_cert, base::ReadFile((dir / "ca.crt").string(), pem));
  ASSIGN_OR_RETURN(const std::string ca_key, base::ReadFile((dir / "ca.key").string(), pem));
  ASSIGN_OR_RETURN(const std::unique_ptr<crypto::CertificateAuthority> ca,
                   crypto::CertificateAuthority::Load(ca_cert, ca_key));
  // Every certificate revoked so far, then the new ones (checked together before writing).
  std::vector<std::string> revoked;
  std::map<std::string, std::string> added;  // file name in revoked/ -> PEM
  const std::filesystem::path kept = dir / "revoked";
  std::error_code ec;
  if (std::filesystem::is_directory(kept, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(kept)) {
      ASSIGN_OR_RETURN(std::string text, base::ReadFile(entry.path().string(), pem));
      revoked.push_back(std::move(text));
    }
  }
  for (const std::string& path : cert_paths) {
    ASSIGN_OR_RETURN(std::string text, base::ReadFile(path, pem));
    added[crypto::ToHex(crypto::Sha256(text)).substr(0, 16) + ".crt"] = text;
    revoked.push_back(std::move(text));
  }
  ASSIGN_OR_RETURN(const std::string crl, ca->IssueCrl(revoked, absl::Hours(24) * validity_days));
  std::filesystem::create_directories(kept, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", kept.string(), ": ", ec.message()));
  }
  for (const auto& [name, text] : added) {
    RETURN_IF_ERROR(
        base::WriteFileAtomically((kept / name).string(), text, {.mode = base::kSharedFileMode}));
  }
  RETURN_IF_ERROR(
      base::WriteFileAtomically((dir / "crl.pem").string(), crl, {.mode = base::kSharedFileMode}));
  return absl::StrCat("revoked ", added.size(), " certificate(s); ", (dir / "crl.pem").string(),
                      " now lists ", revoked.size(), " and is valid for ", validity_days,
                      " days: copy it to the leader (leader.yaml crl:) and renew it before then\n");
}

}  // namespace fedanon::app
