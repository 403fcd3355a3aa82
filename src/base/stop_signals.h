// The servers' shutdown: SIGINT and SIGTERM are blocked before any thread
// starts (threads inherit the mask, so none of them takes the signal), then
// one thread waits for them.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace strata {

// Blocks SIGINT and SIGTERM in the calling thread; returns the set to sigwait on.
inline sigset_t BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return stop;
}

}  // namespace strata
