// Definitions for core/detail/process_registry.hpp, JSON included: inline in
// header-only builds, compiled once otherwise (core/detail/api.hpp).
#pragma once

#include <exception>
#include <utility>

#include <nlohmann/json.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/files.hpp>
#include <pasta/core/detail/process_registry.hpp>
#include <pasta/core/detail/this_process.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/version.hpp>

namespace pasta::detail {

PASTA_FUNC ProcessRegistry::ProcessRegistry(ProcessIdentity id, std::string job_dir,
                                            std::string process_dir, unsigned sequence)
    : id_(std::move(id)),
      job_dir_(std::move(job_dir)),
      process_dir_(std::move(process_dir)),
      command_(command_line()),
      started_(utc_now()) {
  std::string name = fmt::format("{}-{}", id_.host.empty() ? "host" : id_.host, id_.pid);
  if (sequence) name += fmt::format("-{}", sequence);
  path_ = join_path(join_path(job_dir_, "processes"), name + ".json");
}

PASTA_FUNC std::vector<OtherProcess> ProcessRegistry::others() const {
  std::vector<OtherProcess> out;
  const std::string dir = join_path(job_dir_, "processes");
  for (const std::string& file : list_dir(dir)) {
    const std::string path = join_path(dir, file);
    if (path == path_ || !file.ends_with(".json")) continue;
    try {
      const auto j = nlohmann::json::parse(read_file(path));
      if (j.value("run_id", std::string()) != id_.run_id) continue;
      OtherProcess o{.pid = j.value("pid", std::uint64_t{0}),
                     .host = j.value("host", std::string("?")),
                     .rank = std::nullopt};
      if (const auto r = j.find("rank"); r != j.end() && r->is_number_unsigned())
        o.rank = r->get<std::uint64_t>();
      out.push_back(std::move(o));
    } catch (const std::exception&) {
      // Half-written by a process that died: `pasta run` names it.
    }
  }
  return out;
}

PASTA_FUNC void ProcessRegistry::finished(const ProcessOutcome& o, const std::string& stopped_by) {
  outcome_ = o;
  finished_ = utc_now();
  stopped_by_ = stopped_by;
  write();
}

PASTA_FUNC std::string ProcessRegistry::relative_dir() const {
  if (process_dir_ == job_dir_) return ".";
  const std::string prefix = job_dir_.ends_with('/') ? job_dir_ : job_dir_ + "/";
  return process_dir_.starts_with(prefix) ? process_dir_.substr(prefix.size()) : process_dir_;
}

PASTA_FUNC void ProcessRegistry::write() {
  auto optional = [](const std::optional<std::uint64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
  };
  nlohmann::json entry = {{"pasta_process", format_version},
                          {"pasta_version", PASTA_VERSION_STRING},
                          {"pid", id_.pid},
                          {"host", id_.host},
                          {"rank", optional(id_.rank)},
                          {"rank_variable", id_.rank_variable},
                          {"local_rank", optional(id_.local_rank)},
                          {"world_size", optional(id_.world_size)},
                          {"run_id", id_.run_id},
                          {"launcher_child", id_.launcher_child},
                          {"dir", relative_dir()},
                          {"command", command_},
                          {"started", started_},
                          {"status", "running"}};
  if (outcome_) {
    entry["status"] = outcome_->gpu_work ? "finished" : "no GPU work";
    entry["finished"] = finished_;
    entry["launches"] = outcome_->launches;
    entry["events"] = outcome_->events;
    entry["reports"] = outcome_->reports;
    if (!outcome_->partial.empty()) entry["partial"] = outcome_->partial;
    if (!stopped_by_.empty()) entry["stopped_by"] = stopped_by_;
  }
  std::string why = make_dirs(parent_dir(path_));
  if (why.empty())
    why = write_file(path_, entry.dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!why.empty())
    log_once("registry:" + path_,
             fmt::format("{}: this process is missing from the job's list ({})", id_.label(),
                         why));
}

}  // namespace pasta::detail
