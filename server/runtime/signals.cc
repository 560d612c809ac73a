#include "server/runtime/signals.h"

#include <pthread.h>
#include <signal.h>

namespace fedanon::server {
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

void BlockTerminationSignals() {
  const sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal(const std::function<void()>& on_hangup) {
  const sigset_t set = TerminationSignals();
  while (true) {
    int signal = 0;
    if (sigwait(&set, &signal) != 0) continue;
    if (signal != SIGHUP) return signal;
    if (on_hangup) on_hangup();
  }
}

}  // namespace fedanon::server
