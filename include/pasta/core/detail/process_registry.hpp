// The job's list of processes: every process of a job writes
// <job dir>/processes/<host>-<pid>.json when its profiler starts ("running")
// and again when it stops ("finished" or "no GPU work", with its launches
// and report files). `pasta run` and `pasta report` read the list, so a
// process that did no GPU work, or died before writing its reports, is still
// named in the job's report. Format: docs/user-guide.md, "Jobs".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/this_process.hpp>
#include <pasta/core/log.hpp>
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

class ProcessRegistry {
 public:
  static constexpr int format_version = 1;

  // `sequence`: the how-many-th profiler of this process (0 for the first).
  ProcessRegistry(ProcessIdentity id, std::string job_dir, std::string process_dir,
                  unsigned sequence = 0)
      : id_(std::move(id)), job_dir_(std::move(job_dir)), process_dir_(std::move(process_dir)) {
    std::string name = fmt::format("{}-{}", id_.host.empty() ? "host" : id_.host, id_.pid);
    if (sequence) name += fmt::format("-{}", sequence);
    path_ = join_path(join_path(job_dir_, "processes"), name + ".json");
    entry_ = {{"pasta_process", format_version},
              {"pid", id_.pid},
              {"host", id_.host},
              {"rank", id_.rank ? nlohmann::json(*id_.rank) : nlohmann::json()},
              {"rank_variable", id_.rank_variable},
              {"local_rank", id_.local_rank ? nlohmann::json(*id_.local_rank) : nlohmann::json()},
              {"world_size", id_.world_size ? nlohmann::json(*id_.world_size) : nlohmann::json()},
              {"run_id", id_.run_id},
              {"launcher_child", id_.launcher_child},
              {"dir", relative_dir()},
              {"command", command_line()},
              {"started", utc_now()},
              {"status", "running"}};
  }

  const std::string& path() const { return path_; }

  // Entries of the same run that other processes wrote before this one.
  std::vector<nlohmann::json> others() const {
    std::vector<nlohmann::json> out;
    const std::string dir = join_path(job_dir_, "processes");
    for (const std::string& file : list_dir(dir)) {
      const std::string path = join_path(dir, file);
      if (path == path_ || !file.ends_with(".json")) continue;
      try {
        auto j = nlohmann::json::parse(read_file(path));
        if (j.value("run_id", std::string()) == id_.run_id) out.push_back(std::move(j));
      } catch (const std::exception&) {
        // Half-written by a process that died: `pasta run` names it.
      }
    }
    return out;
  }

  void started() { write(); }

  void finished(const ProcessOutcome& o, const std::string& stopped_by) {
    entry_["status"] = o.gpu_work ? "finished" : "no GPU work";
    entry_["finished"] = utc_now();
    entry_["launches"] = o.launches;
    entry_["events"] = o.events;
    entry_["reports"] = o.reports;
    if (!o.partial.empty()) entry_["partial"] = o.partial;
    if (!stopped_by.empty()) entry_["stopped_by"] = stopped_by;
    write();
  }

 private:
  // The process's directory as the registry names it: relative to the job's.
  std::string relative_dir() const {
    if (process_dir_ == job_dir_) return ".";
    const std::string prefix = job_dir_.ends_with('/') ? job_dir_ : job_dir_ + "/";
    return process_dir_.starts_with(prefix) ? process_dir_.substr(prefix.size()) : process_dir_;
  }
  void write() {
    std::string why = make_dirs(parent_dir(path_));
    if (why.empty())
      why = write_file(path_, entry_.dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!why.empty())
      log_once("registry:" + path_,
               fmt::format("{}: this process is missing from the job's list ({})", id_.label(),
                           why));
  }

  ProcessIdentity id_;
  std::string job_dir_, process_dir_, path_;
  nlohmann::json entry_;
};

}  // namespace pasta::detail
