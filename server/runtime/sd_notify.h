// The systemd notification protocol (sd_notify(3)) without libsystemd: one datagram with
// newline-separated assignments ("READY=1", "STATUS=...", "STOPPING=1") to the unix socket named
// by $NOTIFY_SOCKET — a path, or an abstract-namespace name written with a leading '@'. Outside
// systemd (no NOTIFY_SOCKET) it does nothing. Used by fedanon-party (Type=notify).
#pragma once

#include <string>

#include "absl/status/status.h"

namespace fedanon::server {

// Sends `state` to $NOTIFY_SOCKET. OK (nothing sent) when the variable is unset or empty;
// InvalidArgument for an unusable socket name; the errno status when sending fails.
absl::Status SdNotify(const std::string& state);

// The same to an explicit socket name (tests): a path or "@abstract".
absl::Status SdNotifyTo(const std::string& socket_name, const std::string& state);

}  // namespace fedanon::server
