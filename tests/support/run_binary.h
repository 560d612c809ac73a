// Runs one of the project's executables as a child process for CLI tests (tests only): stdin
// from /dev/null, stdout and stderr captured to files in a directory of their own (so that they
// never show up among a job's outputs), exit status or signal recorded.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_paths.h"

extern char** environ;

namespace fedanon::testing {

struct CliResult {
  int exit_code = -1;  // exit status; -1 if the process did not exit normally
  int signal = 0;      // the signal that ended it, if any
  std::string out;     // stdout
  std::string err;     // stderr
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `binary args...` and waits for it. `capture_dir` must exist; it receives the files
// "stdout" and "stderr".
inline CliResult RunBinary(const std::string& binary, const std::vector<std::string>& args,
                           const std::string& capture_dir) {
  CliResult result;
  const std::string out_path = capture_dir + "/stdout";
  const std::string err_path = capture_dir + "/stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<std::string> storage = {binary};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ADD_FAILURE() << "cannot run " << binary << ": " << std::strerror(rc);
    return result;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = ReadAll(out_path);
  result.err = ReadAll(err_path);
  return result;
}

// Runs the `fedanon` tool built in this tree with `args`, capturing its output in a fresh
// temporary directory that is removed afterwards.
inline CliResult RunFedanon(const std::vector<std::string>& args) {
  std::string capture = (std::filesystem::temp_directory_path() / "fedanon_cli_XXXXXX").string();
  if (mkdtemp(capture.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    return CliResult{};
  }
  CliResult result = RunBinary(::fedanon::testing::BinaryDir() + "/bin/fedanon", args, capture);
  std::filesystem::remove_all(capture);
  return result;
}

}  // namespace fedanon::testing
