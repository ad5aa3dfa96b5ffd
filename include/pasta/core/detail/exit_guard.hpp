// Reports survive the ways a program ends without destroying its Profiler:
// exit() (an atexit handler stops every live profiler; the reports are
// complete), and, while their action is the default one, SIGINT, SIGTERM,
// SIGHUP and SIGABRT (abort(), an uncaught exception): the reports are
// written, marked partial with the reason, and the signal then ends the
// program as it would have. A handler the program installed itself is left
// alone (Python's SIGINT handler, for one: its KeyboardInterrupt then ends the
// program through exit()).
//
// Writing reports is not async-signal-safe, so the signal handler only wakes
// pasta's exit thread and waits for it (at most 10 s): if the signal came
// while the interrupted thread held the pipeline's lock, the reports are lost,
// never the program's end. SIGKILL cannot be caught; tools::Record streams,
// so its trace stays readable up to the last complete block.
#pragma once

#include <string>

#include <pasta/core/detail/api.hpp>

namespace pasta::detail {

using ExitStopFn = void (*)(void* self, const std::string& why);

// Until exit_guard_remove(self): stop(self, why) when the program ends
// without destroying `self` (`why` empty for exit()). The first call
// installs the handlers.
PASTA_FUNC void exit_guard_add(void* self, ExitStopFn stop);
PASTA_FUNC void exit_guard_remove(void* self);

}  // namespace pasta::detail

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/exit_guard_impl.hpp>
#endif
