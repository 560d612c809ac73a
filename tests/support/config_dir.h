// Tests only: a temporary directory for the daemons' config tests, which writes the smallest
// party.yaml or leader.yaml the config loaders accept with the keys a test appends.
#pragma once

#include <string>
#include <string_view>

#include "tests/support/temp_dir.h"

namespace fedanon::testing {

class ConfigDir : public TempDir {
 public:
  using TempDir::TempDir;

  // Writes `text` as `name` in the directory; its path.
  std::string Write(const std::string& name, const std::string& text) const;
  // A party's name, leader address, data directory, TLS and sealing files (five lines, so that
  // the first line of `extra` is line 6), then `extra`, as `name`; its path.
  std::string Party(const std::string& name, const std::string& extra = "") const;
  // The same for the leader (its listen address instead of the leader's).
  std::string Leader(const std::string& name, const std::string& extra = "") const;
};

}  // namespace fedanon::testing
