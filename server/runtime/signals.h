// SIGTERM / SIGINT / SIGHUP handling for the daemons without async-signal-unsafe handlers: the
// signals are blocked in every thread (call BlockTerminationSignals() first thing in main, before
// any thread exists, so that gRPC's and spdlog's threads inherit the mask) and one thread
// collects them with sigwait(). SIGHUP asks a daemon to re-read its settings now (what it
// re-reads: docs/operations.md "Rotating keys and certificates"); it never stops a daemon.
#pragma once

#include <functional>

namespace fedanon::server {

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and the threads it creates
// afterwards).
void BlockTerminationSignals();
// Waits for SIGTERM or SIGINT and returns its number. Each SIGHUP meanwhile calls `on_hangup`
// (on this thread; ignored when empty) and the wait goes on.
int WaitForTerminationSignal(const std::function<void()>& on_hangup = {});

}  // namespace fedanon::server
