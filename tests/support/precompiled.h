// The headers nearly every test program parses (GoogleTest, the standard library, Abseil's status
// and strings, the generated protobuf messages), compiled once per build into a precompiled header
// that every test target reuses (tests/CMakeLists.txt, fedanon_test_uses_precompiled): parsing them
// was about a third of a test file's compile time. Only what does not change with our own code.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "fedanon/v1/federation.pb.h"
#include "fedanon/v1/job.pb.h"
