// SIGTERM / SIGINT handling for the daemons without async-signal-unsafe handlers: the signals are
// blocked in every thread (call BlockTerminationSignals() first thing in main, before any thread
// exists, so that gRPC's and spdlog's threads inherit the mask) and one thread collects them
// with sigwait().
#pragma once

namespace fedanon::server {

// Blocks SIGTERM and SIGINT in the calling thread (and the threads it creates afterwards).
void BlockTerminationSignals();
// Waits for SIGTERM or SIGINT and returns its number.
int WaitForTerminationSignal();

}  // namespace fedanon::server
