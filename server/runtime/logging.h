// Logging for the daemons: spdlog's default logger writing to stderr, either as text for people
// or as one JSON object per line for log collectors.
//
//   text: 2024-05-01T12:00:00.123Z info  fedanon-leader: party 'hospital-a' connected from ...
//   json: {"ts":"2024-05-01T12:00:00.123Z","level":"info","program":"fedanon-leader",
//          "role":"leader","job":"job-0123456789ab","round":3,"msg":"job=job-0123456789ab ..."}
//
// Convention: every message about a job starts with LogJob(job_id, round), i.e.
// "job=<id> round=<n> ...", so one job's lines can be filtered with a plain grep in either format.
// JSON lines carry the role (the program without "fedanon-": leader, party) and, for a message
// with that prefix, the job id and round as their own fields, for log collectors.
// Secrets, key material and record values are never logged (only names, sizes and codes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fedanon::server {

enum class LogFormat { kText, kJson };

// "text" or "json"; InvalidArgument otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(std::string_view name);

// Replaces spdlog's default logger (level info; FEDANON_LOG_LEVEL=debug|info|warn|error overrides).
void InitLogging(std::string_view program, LogFormat format);

// "job=<id> round=<n>": the prefix of every job-related log line.
std::string LogJob(std::string_view job_id, uint32_t round);

// The "job=<id> round=<n>" prefix of a message: the id ("" when the message has none) and the
// round (absent when only the job is named).
struct JobPrefix {
  std::string job_id;
  std::optional<uint32_t> round;
};
JobPrefix ParseJobPrefix(std::string_view msg);

// One JSON log line (without the newline), exposed for tests.
std::string FormatJsonLogLine(std::string_view ts, std::string_view level, std::string_view program,
                              std::string_view msg);

}  // namespace fedanon::server
