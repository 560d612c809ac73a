// The one way fedanon reads YAML (job specs, daemon configs, federation.yaml): yaml-cpp behind a
// size limit, with syntax errors turned into "<source>:<line>:<column>: ..." statuses, and the
// position helpers the readers of a document use for their own errors, so that every YAML error
// points at the same kind of place (1-based line and column, as editors count).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fedanon::spec {

// Far beyond any spec or config; keeps a wrong file (a table, a dump) from being parsed at all.
inline constexpr size_t kMaxYamlBytes = size_t{16} << 20;  // 16 MiB

struct YamlOptions {
  // Put between the position and yaml-cpp's message of a syntax error, so that each kind of file
  // keeps its wording: "" for job specs ("spec.yaml:3:1: end of sequence flow not found"),
  // "YAML syntax error: " for daemon configs, "invalid YAML: " for federation.yaml.
  std::string_view syntax_error_prefix = {};
  size_t max_bytes = kMaxYamlBytes;
};

// Parses `text`; `source` names it in errors. InvalidArgument for a syntax error
// ("<source>:<line>:<column>: <prefix><yaml-cpp's message>") and for text longer than
// `max_bytes`. An empty text gives a null node.
absl::StatusOr<YAML::Node> ParseYaml(std::string_view text, std::string_view source,
                                     const YamlOptions& options = {});
// Reads `path` (ReadFile: NotFound "cannot open '<path>': ..." and the like; InvalidArgument when
// larger than `max_bytes`) and parses it as above, naming `path` in errors.
absl::StatusOr<YAML::Node> LoadYamlFile(const std::string& path, const YamlOptions& options = {});

// "<source>:<line>:<column>" (1-based) of a node's mark, or "<source>" when the mark is unknown
// (a node yaml-cpp made up, e.g. for a missing key).
std::string YamlPosition(std::string_view source, const YAML::Mark& mark);
// InvalidArgument "<YamlPosition>: <message>".
absl::Status YamlError(std::string_view source, const YAML::Mark& mark, std::string_view message);

}  // namespace fedanon::spec
