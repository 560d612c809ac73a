#include "tests/fuzz/fuzz_support.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "google/protobuf/stubs/logging.h"

namespace fedanon::fuzz {
namespace {

std::string* scratch = nullptr;

void RemoveScratch() {
  std::error_code ec;
  std::filesystem::remove_all(*scratch, ec);
}

}  // namespace

const std::string& ScratchDir() {
  if (scratch == nullptr) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/fedanon-fuzz-scratch.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) FuzzFail("cannot create a scratch directory");
    scratch = new std::string(std::move(pattern));
    std::atexit(RemoveScratch);
  }
  return *scratch;
}

void WriteTextFile(const std::string& path, std::string_view text) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) FuzzFail("cannot write a file in the scratch directory");
}

void QuietProtobuf() { google::protobuf::SetLogHandler(nullptr); }

int WriteSeeds(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  int written = 0;
  for (const auto& [name, content] : FuzzSeeds()) {
    const std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
    ++written;
  }
  std::printf("wrote %d seeds to %s\n", written, dir.c_str());
  return 0;
}

}  // namespace fedanon::fuzz

// libFuzzer calls this once before fuzzing (the replay main does not).
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  const char* dir = std::getenv("FEDANON_FUZZ_WRITE_SEEDS");
  if (dir != nullptr && *dir != '\0') std::exit(fedanon::fuzz::WriteSeeds(dir));
  return 0;
}
