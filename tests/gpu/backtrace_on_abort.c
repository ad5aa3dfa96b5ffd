/* LD_PRELOAD helper for the GPU machine, which has no debugger: on SIGABRT
 * or SIGSEGV, print the native stack to stderr, then die as before.
 *   cc -shared -fPIC -o /tmp/bt.so tests/gpu/backtrace_on_abort.c
 *   LD_PRELOAD=/tmp/bt.so ./program */
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

static void on_signal(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  signal(SIGABRT, on_signal);
  signal(SIGSEGV, on_signal);
}
