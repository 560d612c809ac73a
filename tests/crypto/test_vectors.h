// Reader for the known-answer files in tests/testdata/crypto (tests only).
// Format: "key = value" lines ("key =" for an empty value); a blank line ends a block; lines
// starting with '#' are comments. The first block is the file header (e.g. the DST).
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_paths.h"

namespace fedanon::crypto::testing {

using Block = std::map<std::string, std::string>;

struct VectorFile {
  Block header;
  std::vector<Block> vectors;
};

inline std::string TestdataPath(const std::string& name) {
  return ::fedanon::testing::TestDataDir() + "/crypto/" + name;
}

// Returns false (and leaves `out` partial) if the file cannot be read or a line is malformed.
inline bool ReadVectorFile(const std::string& name, VectorFile* out) {
  std::ifstream in(TestdataPath(name));
  if (!in) return false;
  std::vector<Block> blocks;
  Block current;
  std::string line;
  auto flush = [&] {
    if (!current.empty()) blocks.push_back(std::move(current));
    current.clear();
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line[0] == '#') continue;
    if (line.empty()) {
      flush();
      continue;
    }
    const size_t eq = line.find(" =");
    if (eq == std::string::npos) return false;
    std::string value = line.substr(eq + 2);
    if (!value.empty()) {
      if (value[0] != ' ') return false;
      value.erase(0, 1);
    }
    current[line.substr(0, eq)] = value;
  }
  flush();
  if (blocks.empty()) return false;
  out->header = blocks.front();
  out->vectors.assign(blocks.begin() + 1, blocks.end());
  return true;
}

}  // namespace fedanon::crypto::testing
