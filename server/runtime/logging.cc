#include "server/runtime/logging.h"

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/json_string.h"

namespace fedanon::server {
namespace {

constexpr char kTimeFormat[] = "%Y-%m-%dT%H:%M:%E3SZ";

class JsonFormatter final : public spdlog::formatter {
 public:
  explicit JsonFormatter(std::string program) : program_(std::move(program)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string ts =
        absl::FormatTime(kTimeFormat, absl::FromChrono(msg.time), absl::UTCTimeZone());
    const auto level = spdlog::level::to_string_view(msg.level);
    const std::string line =
        FormatJsonLogLine(ts, std::string_view(level.data(), level.size()), program_,
                          std::string_view(msg.payload.data(), msg.payload.size())) +
        "\n";
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>(program_);
  }

 private:
  std::string program_;
};

}  // namespace

JobPrefix ParseJobPrefix(std::string_view msg) {
  JobPrefix prefix;
  if (msg.substr(0, 4) != "job=") return prefix;
  msg.remove_prefix(4);
  const size_t end = std::min(msg.find(' '), msg.size());
  const std::string_view id = msg.substr(0, end);
  // Job ids are "job-" and hex digits (base::ValidateJobId); anything else is not a job's line.
  if (id.empty() || id.size() > 64 ||
      id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string_view::npos) {
    return prefix;
  }
  prefix.job_id = std::string(id);
  msg.remove_prefix(end);
  if (msg.substr(0, 7) != " round=") return prefix;
  msg.remove_prefix(7);
  uint32_t round = 0;
  const size_t digits = std::min(msg.find(' '), msg.size());
  if (digits > 0 && digits <= 10 &&
      absl::SimpleAtoi(absl::string_view(msg.data(), digits), &round)) {
    prefix.round = round;
  }
  return prefix;
}

absl::StatusOr<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("log format must be 'text' or 'json', not '", std::string(name), "'"));
}

std::string FormatJsonLogLine(std::string_view ts, std::string_view level, std::string_view program,
                              std::string_view msg) {
  std::string out = "{\"ts\":";
  base::AppendJsonString(ts, out);
  out += ",\"level\":";
  base::AppendJsonString(level, out);
  out += ",\"program\":";
  base::AppendJsonString(program, out);
  std::string_view role = program;
  if (role.substr(0, 8) == "fedanon-") role.remove_prefix(8);
  out += ",\"role\":";
  base::AppendJsonString(role, out);
  if (const JobPrefix prefix = ParseJobPrefix(msg); !prefix.job_id.empty()) {
    out += ",\"job\":";
    base::AppendJsonString(prefix.job_id, out);
    if (prefix.round.has_value()) absl::StrAppend(&out, ",\"round\":", *prefix.round);
  }
  out += ",\"msg\":";
  base::AppendJsonString(msg, out);
  out += "}";
  return out;
}

void InitLogging(std::string_view program, LogFormat format) {
  std::shared_ptr<spdlog::logger> logger;
  if (format == LogFormat::kJson) {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    sink->set_formatter(std::make_unique<JsonFormatter>(std::string(program)));
    logger = std::make_shared<spdlog::logger>(std::string(program), std::move(sink));
  } else {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    // UTC timestamps, as in the JSON format, so lines from several sites line up.
    sink->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        absl::StrCat("%Y-%m-%dT%H:%M:%S.%eZ %^%-5l%$ ", std::string(program), ": %v"),
        spdlog::pattern_time_type::utc));
    logger = std::make_shared<spdlog::logger>(std::string(program), std::move(sink));
  }
  logger->set_level(spdlog::level::info);
  if (const char* level = std::getenv("FEDANON_LOG_LEVEL"); level != nullptr) {
    // from_str() answers "off" for unknown names; never silence the daemon by a typo.
    const auto parsed = spdlog::level::from_str(level);
    if (parsed != spdlog::level::off || std::string_view(level) == "off") logger->set_level(parsed);
  }
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

std::string LogJob(std::string_view job_id, uint32_t round) {
  return absl::StrCat("job=", std::string(job_id), " round=", round);
}

}  // namespace fedanon::server
