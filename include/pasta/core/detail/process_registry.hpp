// The job's list of processes: every process of a job writes
// <job dir>/processes/<host>-<pid>.json when its profiler starts ("running")
// and again when it stops ("finished" or "no GPU work", with its launches
// and report files). `pasta run` and `pasta report` read the list, so a
// process that did no GPU work, or died before writing its reports, is still
// named in the job's report. Format: docs/user-guide.md, "Jobs".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pasta/core/detail/api.hpp>
#include <pasta/core/process_identity.hpp>

namespace pasta::detail {

// What a process did, as its registry entry says at the end.
struct ProcessOutcome {
  std::uint64_t launches = 0;  // kernel launches that reached the pipeline
  std::uint64_t events = 0;    // events of any kind
  bool gpu_work = false;
  std::vector<std::string> reports;  // files written, relative to its directory
  std::string partial;               // why its reports are partial
};

// Another process's entry in the list, as far as this one needs it.
struct OtherProcess {
  std::uint64_t pid = 0;
  std::string host;
  std::optional<std::uint64_t> rank;
};

class ProcessRegistry {
 public:
  static constexpr int format_version = 1;

  // `sequence`: the how-many-th profiler of this process (0 for the first).
  PASTA_FUNC ProcessRegistry(ProcessIdentity id, std::string job_dir, std::string process_dir,
                             unsigned sequence = 0);

  const std::string& path() const { return path_; }

  // Entries of the same run that other processes wrote before this one.
  PASTA_FUNC std::vector<OtherProcess> others() const;

  void started() { write(); }
  PASTA_FUNC void finished(const ProcessOutcome& o, const std::string& stopped_by);

 private:
  // The process's directory as the registry names it: relative to the job's.
  PASTA_FUNC std::string relative_dir() const;
  PASTA_FUNC void write();

  ProcessIdentity id_;
  std::string job_dir_, process_dir_, path_;
  std::string command_, started_;
  std::optional<ProcessOutcome> outcome_;  // set when finished
  std::string finished_, stopped_by_;
};

}  // namespace pasta::detail

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/core/detail/process_registry_impl.hpp>
#endif
