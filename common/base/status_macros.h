// Early-return helpers for absl::Status / absl::StatusOr (Debian's Abseil 20220623 ships none).
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FEDANON_CONCAT_INNER_(a, b) a##b
#define FEDANON_CONCAT_(a, b) FEDANON_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function when not OK.
#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::absl::Status fedanon_status_ = (expr);           \
    if (!fedanon_status_.ok()) return fedanon_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, Foo());` evaluates Foo() (an absl::StatusOr<T>); on error returns its
// status, otherwise moves the value into the declaration on the left.
#define ASSIGN_OR_RETURN(lhs, expr) \
  FEDANON_ASSIGN_OR_RETURN_IMPL_(FEDANON_CONCAT_(fedanon_statusor_, __LINE__), lhs, expr)

// `statusor` is a name and `lhs` a declaration: neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define FEDANON_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();  \
  lhs = std::move(statusor).value()
// NOLINTEND(bugprone-macro-parentheses)
