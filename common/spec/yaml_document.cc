#include "common/spec/yaml_document.h"

#include <sys/stat.h>

#include <string>

#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"

namespace fedanon::spec {
namespace {

absl::Status TooLarge(std::string_view source, size_t bytes, size_t max_bytes) {
  return absl::InvalidArgumentError(base::Cat(
      source, ": ", bytes, " bytes is too large for a YAML document (at most ", max_bytes, ")"));
}

}  // namespace

std::string YamlPosition(std::string_view source, const YAML::Mark& mark) {
  if (mark.is_null()) return std::string(source);
  return base::Cat(source, ":", mark.line + 1, ":", mark.column + 1);
}

absl::Status YamlError(std::string_view source, const YAML::Mark& mark, std::string_view message) {
  return absl::InvalidArgumentError(base::Cat(YamlPosition(source, mark), ": ", message));
}

absl::StatusOr<YAML::Node> ParseYaml(std::string_view text, std::string_view source,
                                     const YamlOptions& options) {
  if (text.size() > options.max_bytes) return TooLarge(source, text.size(), options.max_bytes);
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return YamlError(source, e.mark, base::Cat(options.syntax_error_prefix, e.msg));
  }
}

absl::StatusOr<YAML::Node> LoadYamlFile(const std::string& path, const YamlOptions& options) {
  // An oversized file is refused before it is read into memory.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<size_t>(st.st_size) > options.max_bytes) {
    return TooLarge(path, static_cast<size_t>(st.st_size), options.max_bytes);
  }
  ASSIGN_OR_RETURN(const std::string text, base::ReadFile(path));
  return ParseYaml(text, path, options);
}

}  // namespace fedanon::spec
