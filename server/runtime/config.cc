#include "server/runtime/config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/spec/yaml_document.h"
#include "common/wire/payload_chunks.h"
#include "crypto/certificates.h"
#include "leader/leader.h"
#include "server/runtime/metrics.h"
#include "server/runtime/transport.h"

namespace fedanon::server {
namespace {

namespace fs = std::filesystem;

// Reads one YAML config file and reports errors as "<file>:<line>:<col>: <message>".
class ConfigReader {
 public:
  static absl::StatusOr<ConfigReader> Open(const std::string& path) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(path, ec).lexically_normal();
    // Bounded: /dev/zero or a huge file named as the config fails fast with a clear error.
    const absl::StatusOr<std::string> text = base::ReadFile(
        absolute.string(), {.max_bytes = base::kMaxConfigBytes, .what = "config file"});
    if (!ec && text.status().code() == absl::StatusCode::kInvalidArgument) return text.status();
    if (ec || !text.ok()) {
      return absl::NotFoundError(absl::StrCat("cannot read config file '", path, "'"));
    }
    ConfigReader reader(absolute.string());
    ASSIGN_OR_RETURN(reader.root_, spec::ParseYaml(*text, reader.path_,
                                                   {.syntax_error_prefix = "YAML syntax error: "}));
    if (!reader.root_.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(
          reader.path_,
          ": expected a mapping of settings (key: value), see docs/federation-runtime.md"));
    }
    return reader;
  }

  const std::string& path() const { return path_; }
  std::string dir() const { return fs::path(path_).parent_path().string(); }
  const YAML::Node& root() const { return root_; }

  std::string Where(const YAML::Mark& mark) const { return spec::YamlPosition(path_, mark); }

  // Every key of `map` must be in `allowed`; `prefix` is "" or "tls." for nested maps.
  absl::Status CheckKeys(const YAML::Node& map, std::initializer_list<const char*> allowed,
                         std::string_view prefix) const {
    const std::set<std::string_view> keys(allowed.begin(), allowed.end());
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
      if (keys.count(key) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(it->first.Mark()), ": unknown key '", std::string(prefix), key,
                         "' (expected one of: ", absl::StrJoin(allowed, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

  // The scalar under `key` of `map`; empty (and OK) when absent and not `required`.
  absl::StatusOr<std::string> String(const YAML::Node& map, const std::string& key,
                                     std::string_view prefix, bool required) const {
    const YAML::Node node = map[key];
    if (!node.IsDefined() || node.IsNull()) {
      if (!required) return std::string();
      return absl::InvalidArgumentError(absl::StrCat(Where(map.Mark()), ": missing required key '",
                                                     std::string(prefix), key, "'"));
    }
    if (!node.IsScalar() || node.Scalar().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(node.Mark()), ": key '", std::string(prefix), key, "' must be a non-empty string"));
    }
    return node.Scalar();
  }

  absl::StatusOr<std::string> Path(const YAML::Node& map, const std::string& key,
                                   std::string_view prefix, bool required) const {
    ASSIGN_OR_RETURN(std::string value, String(map, key, prefix, required));
    if (value.empty()) return value;
    return ResolvePath(dir(), value);
  }

  absl::StatusOr<YAML::Node> Map(const std::string& key) const {
    const YAML::Node node = root_[key];
    if (!node.IsDefined() || node.IsNull()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(root_.Mark()), ": missing required key '", key, "'"));
    }
    if (!node.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(node.Mark()), ": key '", key, "' must be a mapping"));
    }
    return node;
  }

  absl::StatusOr<TlsPaths> Tls() const {
    ASSIGN_OR_RETURN(const YAML::Node tls, Map("tls"));
    RETURN_IF_ERROR(CheckKeys(tls, {"ca", "cert", "key"}, "tls."));
    TlsPaths paths;
    ASSIGN_OR_RETURN(paths.ca, Path(tls, "ca", "tls.", true));
    ASSIGN_OR_RETURN(paths.cert, Path(tls, "cert", "tls.", true));
    ASSIGN_OR_RETURN(paths.key, Path(tls, "key", "tls.", true));
    return paths;
  }

  absl::StatusOr<SealPaths> Seal() const { return KeyPair("seal"); }

  // `sign: {cert, key}` (a party's statement-signing pair): absent gives empty paths.
  absl::StatusOr<SealPaths> Sign() const {
    const YAML::Node node = root_["sign"];
    if (!node.IsDefined() || node.IsNull()) return SealPaths{};
    return KeyPair("sign");
  }

  // A `<key>: {cert: ..., key: ...}` block.
  absl::StatusOr<SealPaths> KeyPair(const std::string& key) const {
    ASSIGN_OR_RETURN(const YAML::Node pair, Map(key));
    const std::string prefix = key + ".";
    RETURN_IF_ERROR(CheckKeys(pair, {"cert", "key"}, prefix));
    SealPaths paths;
    ASSIGN_OR_RETURN(paths.cert, Path(pair, "cert", prefix, true));
    ASSIGN_OR_RETURN(paths.key, Path(pair, "key", prefix, true));
    return paths;
  }

  absl::StatusOr<std::string> Name() const {
    ASSIGN_OR_RETURN(std::string name, String(root_, "name", "", true));
    if (absl::Status st = crypto::ValidateParticipantName(name); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(root_["name"].Mark()), ": key 'name': ", st.message()));
    }
    return name;
  }

  absl::StatusOr<std::string> Address(const std::string& key) const {
    ASSIGN_OR_RETURN(std::string address, String(root_, key, "", true));
    if (absl::Status st = ValidateHostPort(address, absl::StrCat("key '", key, "'")); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(Where(root_[key].Mark()), ": ", st.message()));
    }
    return address;
  }

  // `metrics_listen`, when present (empty when absent).
  absl::StatusOr<std::string> MetricsAddress(bool allow_non_loopback, std::string_view hint) const {
    ASSIGN_OR_RETURN(std::string address, String(root_, "metrics_listen", "", false));
    if (address.empty()) return address;
    if (absl::Status st =
            ValidateMetricsAddress(address, allow_non_loopback, "key 'metrics_listen'");
        !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(Where(root_["metrics_listen"].Mark()), ": ",
                                                     st.message(), std::string(hint)));
    }
    return address;
  }

  // The sequence of strings under `key` of `map`; nullopt when absent.
  absl::StatusOr<std::optional<std::vector<std::string>>> StringList(
      const YAML::Node& map, const std::string& key, std::string_view prefix) const {
    const YAML::Node node = map[key];
    if (!node.IsDefined() || node.IsNull()) return std::optional<std::vector<std::string>>();
    if (!node.IsSequence()) {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(node.Mark()), ": key '", std::string(prefix), key, "' must be a list of names"));
    }
    std::vector<std::string> out;
    for (const auto& item : node) {
      if (!item.IsScalar() || item.Scalar().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(Where(item.Mark()), ": key '",
                                                       std::string(prefix), key,
                                                       "' must list non-empty names"));
      }
      out.push_back(item.Scalar());
    }
    return std::optional<std::vector<std::string>>(std::move(out));
  }

  // A whole number >= `minimum` under `key` of `map`; nullopt when absent.
  absl::StatusOr<std::optional<uint64_t>> Count(const YAML::Node& map, const std::string& key,
                                                std::string_view prefix, uint64_t minimum,
                                                uint64_t maximum) const {
    ASSIGN_OR_RETURN(const std::string value, String(map, key, prefix, false));
    if (value.empty()) return std::optional<uint64_t>();
    uint64_t n = 0;
    if (!absl::SimpleAtoi(value, &n) || n < minimum || n > maximum) {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(map[key].Mark()), ": key '", std::string(prefix), key,
          "' must be a whole number in ", minimum, "..", maximum, ", not '", value, "'"));
    }
    return std::optional<uint64_t>(n);
  }

  absl::StatusOr<party::PartyPolicy> Policy() const {
    party::PartyPolicy policy;
    const YAML::Node node = root_["policy"];
    if (!node.IsDefined() || node.IsNull()) return policy;
    if (!node.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(node.Mark()), ": key 'policy' must be a mapping"));
    }
    RETURN_IF_ERROR(CheckKeys(node,
                              {"min_k", "min_l", "max_c", "qid_attributes", "released_attributes",
                               "recipients", "max_releases"},
                              "policy."));
    ASSIGN_OR_RETURN(const auto k, Count(node, "min_k", "policy.", 1, UINT32_MAX));
    ASSIGN_OR_RETURN(const auto l, Count(node, "min_l", "policy.", 1, UINT32_MAX));
    if (k) policy.min_k = static_cast<uint32_t>(*k);
    if (l) policy.min_l = static_cast<uint32_t>(*l);
    ASSIGN_OR_RETURN(const std::string c, String(node, "max_c", "policy.", false));
    if (!c.empty()) {
      double value = 0;
      if (!absl::SimpleAtod(c, &value) || !(value > 0 && value <= 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(node["max_c"].Mark()),
                         ": key 'policy.max_c' must be a number in (0, 1], not '", c, "'"));
      }
      policy.max_c = value;
    }
    ASSIGN_OR_RETURN(policy.qid_attributes, StringList(node, "qid_attributes", "policy."));
    ASSIGN_OR_RETURN(policy.released_attributes,
                     StringList(node, "released_attributes", "policy."));
    ASSIGN_OR_RETURN(policy.recipients, StringList(node, "recipients", "policy."));
    ASSIGN_OR_RETURN(policy.max_releases, Count(node, "max_releases", "policy.", 0, UINT64_MAX));
    return policy;
  }

  absl::StatusOr<LogFormat> Format() const {
    ASSIGN_OR_RETURN(const std::string value, String(root_, "log_format", "", false));
    if (value.empty()) return LogFormat::kText;
    absl::StatusOr<LogFormat> format = ParseLogFormat(value);
    if (!format.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(root_["log_format"].Mark()), ": key 'log_format': ", format.status().message()));
    }
    return format;
  }

 private:
  explicit ConfigReader(std::string path) : path_(std::move(path)) {}
  std::string path_;
  YAML::Node root_;
};

// ---- PostgreSQL sources and sink of a party (party.yaml `tables:`, `sink:`; docs/postgres.md)

// `postgres: {conninfo: ..., table: ... | query: ...}` under `where` ("tables.patients.").
absl::StatusOr<table_postgres::PostgresSource> PostgresSourceAt(const ConfigReader& reader,
                                                                const YAML::Node& entry,
                                                                const std::string& where) {
  if (!entry.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader.Where(entry.Mark()), ": key '", where.substr(0, where.size() - 1),
                     "' must be a mapping: {postgres: {conninfo: ..., table: ... or query: ...}}"));
  }
  RETURN_IF_ERROR(reader.CheckKeys(entry, {"postgres", "mode"}, where));
  const YAML::Node pg = entry["postgres"];
  if (!pg.IsDefined() || !pg.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader.Where(entry.Mark()), ": key '", where, "postgres' must be a mapping"));
  }
  const std::string prefix = where + "postgres.";
  RETURN_IF_ERROR(reader.CheckKeys(pg, {"conninfo", "table", "query"}, prefix));
  table_postgres::PostgresSource source;
  ASSIGN_OR_RETURN(source.conninfo, reader.String(pg, "conninfo", prefix, true));
  ASSIGN_OR_RETURN(source.table, reader.String(pg, "table", prefix, false));
  ASSIGN_OR_RETURN(source.query, reader.String(pg, "query", prefix, false));
  if (source.table.empty() == source.query.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(reader.Where(pg.Mark()), ": '", prefix,
                                                   "' needs exactly one of 'table' and 'query'"));
  }
  return source;
}

absl::Status ReadPostgresSettings(const ConfigReader& reader, PartyConfig* config) {
  const YAML::Node tables = reader.root()["tables"];
  if (tables.IsDefined() && !tables.IsNull()) {
    if (!tables.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(
          reader.Where(tables.Mark()), ": key 'tables' must be a mapping of table names"));
    }
    for (auto it = tables.begin(); it != tables.end(); ++it) {
      const std::string name = it->first.IsScalar() ? it->first.Scalar() : "";
      if (name.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(reader.Where(it->first.Mark()), ": a table name must be a string"));
      }
      ASSIGN_OR_RETURN(table_postgres::PostgresSource source,
                       PostgresSourceAt(reader, it->second, absl::StrCat("tables.", name, ".")));
      source.name = name;
      // `mode: push-down` (docs/postgres.md): statistics computed inside the database.
      const std::string where = absl::StrCat("tables.", name, ".");
      ASSIGN_OR_RETURN(const std::string mode, reader.String(it->second, "mode", where, false));
      if (!mode.empty() && mode != "load" && mode != "push-down") {
        return absl::InvalidArgumentError(absl::StrCat(reader.Where(it->second.Mark()), ": '",
                                                       where,
                                                       "mode' is 'load' (the default) or "
                                                       "'push-down', not '",
                                                       mode, "'"));
      }
      source.push_down = mode == "push-down";
      config->postgres_tables[name] = std::move(source);
    }
  }
  const YAML::Node sink = reader.root()["sink"];
  if (sink.IsDefined() && !sink.IsNull()) {
    if (sink.IsMap() && sink["mode"].IsDefined()) {
      return absl::InvalidArgumentError(
          absl::StrCat(reader.Where(sink.Mark()), ": unknown key 'sink.mode'"));
    }
    ASSIGN_OR_RETURN(table_postgres::PostgresSource parsed,
                     PostgresSourceAt(reader, sink, "sink."));
    if (!parsed.query.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          reader.Where(sink.Mark()), ": 'sink.postgres' names a 'table', not a 'query'"));
    }
    config->postgres_sink =
        table_postgres::PostgresSink{.conninfo = parsed.conninfo, .table = parsed.table};
  }
  return absl::OkStatus();
}

}  // namespace

std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  const fs::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (fs::path(base_dir) / p).lexically_normal().string();
}

absl::Status ValidateHostPort(const std::string& address, const std::string& what) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": '", address, "' is not host:port (", std::string(why), ")"));
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("missing host or port");
  const std::string host = address.substr(0, colon);
  if (host.front() == '[' && host.back() != ']') return bad("unbalanced '[' in an IPv6 address");
  if (host.front() != '[' && host.find(':') != std::string::npos) {
    return bad("write IPv6 addresses as [addr]:port");
  }
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return bad("port must be a number 0-65535");
  }
  return absl::OkStatus();
}

// The optional top-level integer `key` in lo..hi (`fallback` when absent).
absl::StatusOr<int> BoundedInt(const ConfigReader& reader, const std::string& key, int fallback,
                               int lo, int hi) {
  ASSIGN_OR_RETURN(const std::string text, reader.String(reader.root(), key, "", false));
  if (text.empty()) return fallback;
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < lo || value > hi) {
    return absl::InvalidArgumentError(absl::StrCat(reader.Where(reader.root()[key].Mark()),
                                                   ": key '", key, "' must be a whole number in ",
                                                   lo, "..", hi, ", not '", text, "'"));
  }
  return value;
}

absl::Status ValidateMetricsAddress(const std::string& address, bool allow_non_loopback,
                                    const std::string& what) {
  RETURN_IF_ERROR(ValidateHostPort(address, what));
  if (allow_non_loopback || IsLoopbackAddress(address)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": '", address,
      "' is not a loopback address; metrics are plain HTTP and are served only on 127.0.0.0/8 "
      "or [::1]"));
}

absl::StatusOr<int64_t> ParseRetentionPeriod(const std::string& text, const std::string& what) {
  int64_t n = 0;
  int64_t unit = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      case 'w':
        unit = int64_t{7} * 86400;
        break;
      default:
        break;
    }
  }
  // At most about 100 years: anything longer is a typo, and the product must not overflow.
  if (unit == 0 || !absl::SimpleAtoi(text.substr(0, text.size() - 1), &n) || n <= 0 ||
      n > int64_t{3'200'000'000} / unit) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be a positive whole number with a unit s, m, h, d or w (e.g. 30d), not '",
        text, "'"));
  }
  return n * unit;
}

std::string UnixSocketPath(const std::string& address) {
  return absl::StartsWith(address, "unix:") ? address.substr(5) : std::string();
}

// leader.yaml's metrics keys: metrics_allow_non_loopback, metrics_listen.
absl::Status ReadLeaderMetrics(const ConfigReader& reader, LeaderConfig* out) {
  LeaderConfig& config = *out;
  ASSIGN_OR_RETURN(const std::string allow_remote,
                   reader.String(reader.root(), "metrics_allow_non_loopback", "", false));
  if (!allow_remote.empty()) {
    if (allow_remote != "true" && allow_remote != "false") {
      return absl::InvalidArgumentError(absl::StrCat(
          reader.Where(reader.root()["metrics_allow_non_loopback"].Mark()),
          ": key 'metrics_allow_non_loopback' must be true or false, not '", allow_remote, "'"));
    }
    config.metrics_allow_non_loopback = allow_remote == "true";
  }
  ASSIGN_OR_RETURN(config.metrics_listen,
                   reader.MetricsAddress(config.metrics_allow_non_loopback,
                                         " (a leader opts in to other addresses with "
                                         "metrics_allow_non_loopback: true)"));
  return absl::OkStatus();
}

// leader.yaml's timeouts, waits and limits (each bounded).
absl::Status ReadLeaderTimesAndLimits(const ConfigReader& reader, LeaderConfig* out) {
  LeaderConfig& config = *out;
  ASSIGN_OR_RETURN(const std::string timeout,
                   reader.String(reader.root(), "round_timeout_seconds", "", false));
  if (!timeout.empty()) {
    if (!absl::SimpleAtoi(timeout, &config.round_timeout_seconds) ||
        config.round_timeout_seconds <= 0 || config.round_timeout_seconds > 86400) {
      return absl::InvalidArgumentError(
          absl::StrCat(reader.Where(reader.root()["round_timeout_seconds"].Mark()),
                       ": key 'round_timeout_seconds' must be a whole number of seconds in "
                       "1..86400, not '",
                       timeout, "'"));
    }
  }
  ASSIGN_OR_RETURN(
      config.resume_timeout_seconds,
      BoundedInt(reader, "resume_timeout_seconds", config.resume_timeout_seconds, 1, 86400));
  ASSIGN_OR_RETURN(config.party_wait_seconds,
                   BoundedInt(reader, "party_wait_seconds", config.party_wait_seconds, 0, 86400));
  ASSIGN_OR_RETURN(config.max_resumes,
                   BoundedInt(reader, "max_resumes", config.max_resumes, 0, 1000));
  ASSIGN_OR_RETURN(config.id_batch_ids,
                   BoundedInt(reader, "id_batch_ids", config.id_batch_ids, 0, kMaxIdBatchIds));
  ASSIGN_OR_RETURN(config.max_message_bytes,
                   BoundedInt(reader, "max_message_bytes", config.max_message_bytes,
                              static_cast<int>(wire::kMinMessageLimitBytes), kMaxMessageBytes));
  ASSIGN_OR_RETURN(config.max_concurrent_jobs,
                   BoundedInt(reader, "max_concurrent_jobs", config.max_concurrent_jobs, 1,
                              leader::kMaxConcurrentJobsLimit));
  ASSIGN_OR_RETURN(config.max_queued_jobs,
                   BoundedInt(reader, "max_queued_jobs", config.max_queued_jobs, 0,
                              leader::kMaxQueuedJobsLimit));
  ASSIGN_OR_RETURN(config.tls_reload_seconds,
                   BoundedInt(reader, "tls_reload_seconds", config.tls_reload_seconds, 0, 86400));
  ASSIGN_OR_RETURN(config.reload_seconds,
                   BoundedInt(reader, "reload_seconds", config.reload_seconds, 0, 86400));
  return absl::OkStatus();
}

absl::StatusOr<LeaderConfig> LoadLeaderConfig(const std::string& path) {
  ASSIGN_OR_RETURN(const ConfigReader reader, ConfigReader::Open(path));
  RETURN_IF_ERROR(reader.CheckKeys(reader.root(),
                                   {"name",
                                    "listen",
                                    "data_dir",
                                    "tls",
                                    "seal",
                                    "round_timeout_seconds",
                                    "log_format",
                                    "crl",
                                    "all_jobs_admins",
                                    "max_concurrent_jobs",
                                    "max_queued_jobs",
                                    "metrics_listen",
                                    "metrics_allow_non_loopback",
                                    "retention",
                                    "tls_reload_seconds",
                                    "resume_timeout_seconds",
                                    "reload_seconds",
                                    "id_batch_ids",
                                    "max_resumes",
                                    "party_wait_seconds",
                                    "max_message_bytes"},
                                   ""));
  LeaderConfig config;
  config.path = reader.path();
  ASSIGN_OR_RETURN(config.name, reader.Name());
  ASSIGN_OR_RETURN(config.listen, reader.Address("listen"));
  ASSIGN_OR_RETURN(config.data_dir, reader.Path(reader.root(), "data_dir", "", true));
  ASSIGN_OR_RETURN(config.tls, reader.Tls());
  ASSIGN_OR_RETURN(config.seal, reader.Seal());
  ASSIGN_OR_RETURN(config.crl, reader.Path(reader.root(), "crl", "", false));
  ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> all_jobs,
                   reader.StringList(reader.root(), "all_jobs_admins", ""));
  if (all_jobs) config.all_jobs_admins = *all_jobs;
  RETURN_IF_ERROR(ReadLeaderMetrics(reader, &config));
  RETURN_IF_ERROR(ReadLeaderTimesAndLimits(reader, &config));
  ASSIGN_OR_RETURN(const std::string retention,
                   reader.String(reader.root(), "retention", "", false));
  if (!retention.empty()) {
    absl::StatusOr<int64_t> seconds = ParseRetentionPeriod(retention, "key 'retention'");
    if (!seconds.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          reader.Where(reader.root()["retention"].Mark()), ": ", seconds.status().message()));
    }
    config.retention_seconds = *seconds;
  }
  ASSIGN_OR_RETURN(config.log_format, reader.Format());
  return config;
}

absl::StatusOr<PartyConfig> LoadPartyConfig(const std::string& path) {
  ASSIGN_OR_RETURN(const ConfigReader reader, ConfigReader::Open(path));
  RETURN_IF_ERROR(reader.CheckKeys(
      reader.root(),
      {"name", "leader", "data_dir", "data", "output_dir", "max_input_bytes", "tls", "seal", "sign",
       "log_format", "admins", "policy", "crl", "metrics_listen", "reload_seconds",
       // PostgreSQL (ReadPostgresSettings)
       "tables", "sink"},
      ""));
  PartyConfig config;
  config.path = reader.path();
  ASSIGN_OR_RETURN(config.name, reader.Name());
  ASSIGN_OR_RETURN(config.leader, reader.Address("leader"));
  ASSIGN_OR_RETURN(config.data_dir, reader.Path(reader.root(), "data_dir", "", true));
  // Like the data paths a job names, `data` is relative to data_dir (PartyAgent resolves it), so
  // it follows a --data-dir override; it is kept as written.
  ASSIGN_OR_RETURN(config.data, reader.String(reader.root(), "data", "", false));
  ASSIGN_OR_RETURN(config.output_dir, reader.Path(reader.root(), "output_dir", "", false));
  ASSIGN_OR_RETURN(const std::string max_input,
                   reader.String(reader.root(), "max_input_bytes", "", false));
  if (!max_input.empty() &&
      (!absl::SimpleAtoi(max_input, &config.max_input_bytes) || config.max_input_bytes == 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        reader.Where(reader.root()["max_input_bytes"].Mark()),
        ": key 'max_input_bytes' must be a positive whole number of bytes, not '", max_input, "'"));
  }
  ASSIGN_OR_RETURN(config.tls, reader.Tls());
  ASSIGN_OR_RETURN(config.seal, reader.Seal());
  ASSIGN_OR_RETURN(config.sign, reader.Sign());
  ASSIGN_OR_RETURN(config.log_format, reader.Format());
  ASSIGN_OR_RETURN(config.admins, reader.StringList(reader.root(), "admins", ""));
  ASSIGN_OR_RETURN(config.policy, reader.Policy());
  ASSIGN_OR_RETURN(config.crl, reader.Path(reader.root(), "crl", "", false));
  ASSIGN_OR_RETURN(const std::string metrics,
                   reader.String(reader.root(), "metrics_listen", "", false));
  if (absl::StartsWith(metrics, "unix:")) {
    // A unix socket: a path on this host, never a network address.
    const std::string socket = metrics.substr(5);
    if (socket.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(reader.Where(reader.root()["metrics_listen"].Mark()),
                       ": key 'metrics_listen': 'unix:' needs a socket path"));
    }
    config.metrics_listen = absl::StrCat("unix:", ResolvePath(reader.dir(), socket));
  } else {
    ASSIGN_OR_RETURN(config.metrics_listen,
                     reader.MetricsAddress(/*allow_non_loopback=*/false,
                                           " (a party listens on nothing on its network side; "
                                           "use a loopback address or unix:/path/to.sock)"));
  }
  RETURN_IF_ERROR(ReadPostgresSettings(reader, &config));
  ASSIGN_OR_RETURN(config.reload_seconds,
                   BoundedInt(reader, "reload_seconds", config.reload_seconds, 0, 86400));
  return config;
}

absl::StatusOr<AdminConfig> LoadAdminConfig(const std::string& path) {
  ASSIGN_OR_RETURN(const ConfigReader reader, ConfigReader::Open(path));
  RETURN_IF_ERROR(reader.CheckKeys(reader.root(), {"name", "leader", "tls", "log_format"}, ""));
  AdminConfig config;
  config.path = reader.path();
  ASSIGN_OR_RETURN(config.name, reader.Name());
  ASSIGN_OR_RETURN(config.leader, reader.Address("leader"));
  ASSIGN_OR_RETURN(config.tls, reader.Tls());
  ASSIGN_OR_RETURN(config.log_format, reader.Format());
  return config;
}

}  // namespace fedanon::server
