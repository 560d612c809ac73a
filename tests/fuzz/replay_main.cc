// main() of a fuzz target built without libFuzzer (FEDANON_FUZZ OFF): replays every file of the
// directories given (the checked-in corpus and crashes) through LLVMFuzzerTestOneInput, so that
// an input that once crashed stays fixed in every build. A directory that does not exist is
// skipped; finding no input at all is an error (a misconfigured test).
//   fuzz_<name>_replay DIR...               replay
//   fuzz_<name>_replay --write-seeds DIR    write the target's generated seeds (FuzzSeeds) to DIR
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_support.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc == 3 && std::string(argv[1]) == "--write-seeds") {
    return fedanon::fuzz::WriteSeeds(argv[2]);
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR... | --write-seeds DIR\n", argv[0]);
    return 2;
  }
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (!fs::is_directory(argv[i], ec)) {
      std::printf("skipping %s (no such directory)\n", argv[i]);
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(argv[i])) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      std::ifstream in(file, std::ios::binary);
      if (!in.is_open()) {
        std::fprintf(stderr, "cannot read %s\n", file.c_str());
        return 1;
      }
      const std::string data((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      std::printf("replaying %s (%zu bytes)\n", file.c_str(), data.size());
      std::fflush(stdout);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
      ++replayed;
    }
  }
  std::printf("replayed %zu inputs\n", replayed);
  return replayed > 0 ? 0 : 1;
}
