// Protobuf messages as JSON, the one way the project prints them (reports, fedanonctl --json):
// field names as in the .proto files, primitive fields printed even when zero.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace fedanon::spec {

// `pretty`: indented over several lines; otherwise one line. No trailing newline. Fails
// (InvalidArgument) only for a message protobuf cannot print, e.g. a string with invalid UTF-8.
absl::StatusOr<std::string> ProtoToJson(const google::protobuf::Message& message,
                                        bool pretty = true);

}  // namespace fedanon::spec
