// libFuzzer target: the trace reader on arbitrary bytes. Every input must
// end in events or in a TraceError; anything else (a crash, a sanitizer
// report, another exception, a hang) is a bug. Seeds: tests/data/*.pasta.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <pasta/trace.hpp>

namespace {
// The reader opens a path: hand it an in-memory file.
int memory_file() {
  static const int fd = ::memfd_create("pasta-fuzz", 0);
  return fd;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memory_file();
  if (fd < 0 || ::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) return 0;
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) return 0;
    done += static_cast<std::size_t>(n);
  }
  try {
    pasta::trace::TraceReader reader("/proc/self/fd/" + std::to_string(fd));
    std::uint64_t n = 0;
    reader.read_all([&](const auto&) { ++n; });
  } catch (const pasta::trace::TraceError&) {
    // the expected way for damaged input to end
  }
  return 0;
}
