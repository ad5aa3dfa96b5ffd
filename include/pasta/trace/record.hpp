// Writes every event it sees to a trace file that pasta::Replay can feed
// back through any pipeline. The file goes to Config::trace_file, or to
// <output_dir>/trace.pasta; it is created at the first event.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <string>
#include <system_error>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/this_process.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/report.hpp>
#include <pasta/core/version.hpp>
#include <pasta/trace/writer.hpp>

namespace pasta::tools {

class Record {
 public:
  static constexpr std::string_view name = "record";

  explicit Record(const Config& cfg) : process_(cfg.process) {
    path_ =
        cfg.trace_file.empty() ? detail::join_path(cfg.output_dir, "trace.pasta") : cfg.trace_file;
  }

  template <TraceEvent E>
  void on(const E& e) {
    if (!opened_) open();
    writer_.write(e);
  }

  void flush() { writer_.flush(); }
  // A process of a job that saw no event leaves no file; any other process
  // leaves a trace, empty if need be.
  void finish() {
    if (!opened_ && !process_.in_job()) open();
    writer_.close();
  }

  void report(Report& out) const {
    out.page(160);
    out.summary("trace", path_);
    if (!error_.empty()) out.summary("error", error_);
    out.summary("events written", writer_.events());
    if (writer_.buffered()) out.summary("events buffered", writer_.buffered());
    if (writer_.dropped()) out.summary("events lost (write failed)", writer_.dropped());
    out.summary("bytes", writer_.bytes());
    out.summary("complete", !writer_.is_open() && error_.empty() && !writer_.failed());
    if (error_.empty()) out.attach(path_);
  }

  const std::string& path() const { return path_; }
  const trace::TraceWriter& writer() const { return writer_; }

  // What the header says about the run: program, host, time, pasta version,
  // and which process of a job recorded it.
  trace::Metadata metadata() const {
    trace::Metadata m;
    m.emplace_back("pasta_version", PASTA_VERSION_STRING);
    m.emplace_back("command", detail::command_line());
    if (auto host = detail::host_name(); !host.empty()) m.emplace_back("host", host);
    if (auto when = detail::utc_now(); !when.empty()) m.emplace_back("recorded_at", when);
    m.emplace_back("pid", std::to_string(::getpid()));
    if (process_.rank) m.emplace_back("rank", std::to_string(*process_.rank));
    if (process_.world_size) m.emplace_back("world_size", std::to_string(*process_.world_size));
    if (process_.local_rank) m.emplace_back("local_rank", std::to_string(*process_.local_rank));
    if (!process_.rank_variable.empty()) m.emplace_back("rank_variable", process_.rank_variable);
    if (!process_.run_id.empty()) m.emplace_back("run_id", process_.run_id);
    return m;
  }

 private:
  void open() {
    opened_ = true;
    detail::make_dirs(detail::parent_dir(path_));  // open() below reports what fails
    error_ = writer_.open(path_, metadata());
    if (!error_.empty()) detail::log(fmt::format("not recording a trace: {}", error_));
  }

  ProcessIdentity process_;
  bool opened_ = false;
  std::string path_, error_;
  trace::TraceWriter writer_;
};

}  // namespace pasta::tools
