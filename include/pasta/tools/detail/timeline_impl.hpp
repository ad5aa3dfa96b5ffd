// Timeline's file (its header, opening and closing it), its report and the JSON
// escaping of names: inline in header-only builds; in a compiled build
// (core/detail/api.hpp) compiled once, in the runtime, so a unit that includes
// the header parses no nlohmann/json for it. The event handlers stay in the header.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/thread.hpp>
#include <pasta/core/log.hpp>
#include <pasta/tools/timeline.hpp>

namespace pasta::tools {

PASTA_FUNC void Timeline::finish() {
  if (!file_) return;
  std::fputs("{}]}\n", file_);
  if (std::fclose(file_) != 0) fail("close failed");
  file_ = nullptr;
}

PASTA_FUNC void Timeline::report(Report& out) const {
  out.page(110);
  out.summary("trace", path_);
  out.summary("events", events_);
  out.summary("kernels", kernels_);
  if (!error_.empty()) out.summary("error", error_);
  if (error_.empty() && opened_) {
    out.attach(path_);
    out.note("open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing");
  }
}

PASTA_FUNC std::string Timeline::json_string(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

PASTA_FUNC bool Timeline::open() {
  opened_ = true;
  if (const auto why = detail::make_dirs(dir_); !why.empty()) {
    fail(why);
    return false;
  }
  file_ = std::fopen(path_.c_str(), "w");
  if (!file_) {
    fail(std::strerror(errno));
    return false;
  }
  // Large writes: a system call per 4 KiB costs the traced program time
  // on virtual machines; one per MiB does not.
  std::setvbuf(file_, nullptr, _IOFBF, 1u << 20);
  std::fputs(header().c_str(), file_);
  meta(host_pid, 0, "process_name", "Host");
  return true;
}

PASTA_FUNC std::string Timeline::header() const {
  timespec wall{};
  ::clock_gettime(CLOCK_REALTIME, &wall);
  nlohmann::json pasta = {
      {"clock_ns", detail::now_ns()},
      {"wall_ns", static_cast<std::uint64_t>(wall.tv_sec) * 1000000000ull + wall.tv_nsec},
      {"pid", process_.pid},
      {"host", process_.host}};
  if (process_.rank) pasta["rank"] = *process_.rank;
  std::string h = "{\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",";
  if (process_.rank)
    h += fmt::format(R"j("distributedInfo":{{"backend":"","rank":{},"world_size":{}}},)j",
                     *process_.rank, process_.world_size.value_or(0));
  return h + "\"pasta\":" + pasta.dump() + ",\"traceEvents\":[\n";
}

PASTA_FUNC void Timeline::fail(const std::string& why) {
  error_ = fmt::format("cannot write {}: {}", path_, why);
  detail::log_once("timeline:" + path_, error_);
}

}  // namespace pasta::tools
