// Shared by the fuzz targets in tests/fuzz (docs/fuzzing.md): the entry points every target
// defines, a reader that splits one fuzz input into a selector and length-prefixed pieces, and a
// scratch directory per process.
//
// Every fuzz_<name>.cc defines LLVMFuzzerTestOneInput (libFuzzer's entry point) and FuzzSeeds()
// (generated seed inputs; text targets return none, their seeds are checked-in files). Built with
// FEDANON_FUZZ, libFuzzer supplies main(); otherwise replay_main.cc does and replays the
// checked-in corpus as a regression test. Either binary writes the generated seeds to DIR and
// exits: `fuzz_<name>_replay --write-seeds DIR`, or `FEDANON_FUZZ_WRITE_SEEDS=DIR fuzz_<name>`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fedanon::fuzz {

// (file name, content) of the seed inputs this target generates.
std::vector<std::pair<std::string, std::string>> FuzzSeeds();

// Writes FuzzSeeds() into `dir` (created if missing); returns a process exit code.
int WriteSeeds(const std::string& dir);

// A fuzz input read front to back: single bytes (selectors) and pieces prefixed with a 2-byte
// little-endian length. Reading past the end yields zeros and empty pieces; a length longer than
// what is left yields the rest.
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(reinterpret_cast<const char*>(data), size) {}

  bool empty() const { return data_.empty(); }
  uint8_t Byte() {
    if (data_.empty()) return 0;
    const auto b = static_cast<uint8_t>(data_.front());
    data_.remove_prefix(1);
    return b;
  }
  std::string_view Piece() {
    const size_t len = Byte() | static_cast<size_t>(Byte()) << 8;
    const std::string_view piece = data_.substr(0, len);
    data_.remove_prefix(piece.size());
    return piece;
  }
  std::string_view Rest() {
    const std::string_view rest = data_;
    data_ = {};
    return rest;
  }

 private:
  std::string_view data_;
};

// Appends what FuzzInput::Piece() reads back.
inline void AppendPiece(std::string* out, std::string_view piece) {
  out->push_back(static_cast<char>(piece.size() & 0xff));
  out->push_back(static_cast<char>(piece.size() >> 8 & 0xff));
  out->append(piece);
}

// A broken invariant: the fuzz target reports it as a crash (libFuzzer keeps the input).
[[noreturn]] inline void FuzzFail(const char* what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  std::abort();
}

// A fresh directory under $TMPDIR, created on first use, for the process's lifetime (left behind
// after a crash, so that its content can be inspected).
const std::string& ScratchDir();

// Silences protobuf's own logging (e.g. about invalid UTF-8 in string fields of fuzzed messages,
// which the parser then rejects): thousands of lines a second otherwise.
void QuietProtobuf();

// Writes `text` to `path` (creating its directory); a failure is fatal to the fuzz target.
void WriteTextFile(const std::string& path, std::string_view text);

}  // namespace fedanon::fuzz
