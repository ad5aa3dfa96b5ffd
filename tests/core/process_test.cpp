#include <doctest/doctest.h>

#include <map>

#include <nlohmann/json.hpp>

#include <pasta/core/detail/this_process.hpp>
#include <pasta/core/process.hpp>
#include <pasta/pasta.hpp>

#include "../support.hpp"

using namespace pasta;

namespace {

// An environment for identify(): name -> value.
struct Env {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* name) const {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};

ProcessIdentity who(Env env, std::vector<std::string>* errors = nullptr,
                    std::uint64_t parent = 1) {
  std::vector<std::string> ignored;
  return detail::identify(env, 4242, parent, "node7", errors ? *errors : ignored);
}

nlohmann::json entry(const std::string& path) {
  return nlohmann::json::parse(detail::read_file(path));
}

Config into(const test::TempDir& dir) {
  Config cfg;
  cfg.output_dir = dir.path();
  cfg.print = PrintTo::none;
  return cfg;
}

// Runs a profiler that sees `kernels` launches; returns its entry in the job's list,
// and where it wrote and what its entry said while it ran.
std::string profile(const Config& cfg, int kernels, std::string* dir = nullptr,
                    std::string* status_while_running = nullptr) {
  Profiler<Direct, proc::Cpu, tools::KernelFreq> prof(cfg);
  if (status_while_running) *status_while_running = entry(prof.job_entry())["status"];
  for (int i = 1; i <= kernels; ++i) {
    prof.emit(test::launch(i, "k"));
    prof.emit(test::complete(i, 100 * i, 100 * i + 50));
  }
  if (dir) *dir = prof.config().output_dir;
  return prof.job_entry();
}

}  // namespace

TEST_CASE("each launcher's rank variable names the process") {
  SUBCASE("torchrun") {
    const auto id = who({{{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}}});
    CHECK(id.rank == 3u);
    CHECK(id.local_rank == 1u);
    CHECK(id.world_size == 8u);
    CHECK(id.rank_variable == "RANK");
    CHECK(id.dir_name() == "rank3");
  }
  SUBCASE("Open MPI") {
    const auto id = who({{{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "6"},
                          {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}});
    CHECK(id.rank == 5u);
    CHECK(id.world_size == 6u);
    CHECK(id.local_rank == 2u);
  }
  SUBCASE("PMIx, MPICH and Intel MPI, Slurm") {
    CHECK(who({{{"PMIX_RANK", "7"}}}).rank == 7u);
    CHECK(who({{{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}}}).world_size == 4u);
    CHECK(who({{{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "16"}}}).rank_variable == "SLURM_PROCID");
  }
  SUBCASE("torchrun's RANK counts workers: it wins over srun's task number") {
    const auto id = who({{{"SLURM_PROCID", "1"}, {"RANK", "12"}}});
    CHECK(id.rank == 12u);
    CHECK(id.rank_variable == "RANK");
  }
  SUBCASE("no launcher: no rank, and no place of its own outside pasta run") {
    const auto id = who({});
    CHECK_FALSE(id.rank.has_value());
    CHECK_FALSE(id.in_job());
    CHECK(id.dir_name().empty());
  }
}

TEST_CASE("a rank that is not a number is said in one line and passed over") {
  std::vector<std::string> errors;
  const auto id = who({{{"RANK", "first"}, {"SLURM_PROCID", "4"}}}, &errors);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "RANK=\"first\" is not a rank (a whole number >= 0); this process is named by its pid");
  CHECK(id.rank == 4u);  // the next launcher's variable
  errors.clear();
  CHECK(who({{{"RANK", "-1"}}}, &errors).dir_name().empty());
  CHECK(errors.size() == 1);
}

TEST_CASE("under pasta run, the program itself writes into the directory, other processes below") {
  const Env run{{{"PASTA_RUN_ID", "r1"}, {"PASTA_LAUNCHER_PID", "77"}}};
  const auto child = who(run, nullptr, 77);
  CHECK(child.launcher_child);
  CHECK(child.in_job());
  CHECK(child.dir_name().empty());
  const auto grandchild = who(run, nullptr, 78);
  CHECK_FALSE(grandchild.launcher_child);
  CHECK(grandchild.dir_name() == "pid4242");
  Env ranked = run;
  ranked.vars["RANK"] = "0";
  CHECK(who(ranked, nullptr, 77).dir_name() == "rank0");
}

TEST_CASE("output names take Nsight Systems' placeholders") {
  const auto id = who({{{"RANK", "2"}}});
  const Env env{{{"SLURM_JOB_ID", "991"}}};
  std::vector<std::string> errors;
  auto expand = [&](std::string_view p) { return detail::expand_placeholders(p, id, env, errors); };
  CHECK(expand("out/%h/%p") == "out/node7/4242");
  CHECK(expand("out/job%q{SLURM_JOB_ID}/r%r") == "out/job991/r2");
  CHECK(expand("100%%") == "100%");
  CHECK(expand("sampled/%n/x") == "sampled/rank2/x");
  CHECK(errors.empty());
  CHECK(expand("out/%x") == "out/%x");
  CHECK(expand("out/%q{NOT_SET}x") == "out/x");
  CHECK(expand("out/%") == "out/%");
  REQUIRE(errors.size() == 3);
  CHECK(errors[0] ==
        "\"out/%x\": %x is not a placeholder (%p pid, %h host, %q{VAR}, %r rank, %n place, %% a "
        "%); kept as written");
  CHECK(errors[1] == "\"out/%q{NOT_SET}x\": %q{NOT_SET} is not set; it stands for nothing");
  CHECK(errors[2] == "\"out/%\": a lone % at the end (write %% for a %)");
  // %r without a rank is the pid.
  CHECK(detail::expand_placeholders("%r", who({}), env, errors) == "4242");
}

TEST_CASE("every placeholder of the table is one expand_placeholders takes") {
  const auto id = who({{{"RANK", "2"}}});
  const Env env{{{"X", "x"}}};
  for (const Placeholder& p : placeholders) {
    CAPTURE(p.letter);
    std::vector<std::string> errors;
    const std::string pattern = p.letter == 'q' ? "%q{X}" : std::string("%") + p.letter;
    CHECK_FALSE(detail::expand_placeholders(pattern, id, env, errors).empty());
    CHECK(errors.empty());
    CHECK(p.means.starts_with(std::string("%") + p.letter));  // the rejection line's text
  }
}

TEST_CASE("every row of the rank table names the process, with its local rank and size") {
  for (const RankVariables& r : rank_variables) {
    CAPTURE(r.rank);
    Env env{{{std::string(r.rank), "3"}}};
    if (!r.local_rank.empty()) env.vars[std::string(r.local_rank)] = "1";
    if (!r.world_size.empty()) env.vars[std::string(r.world_size)] = "8";
    const auto id = who(env);
    CHECK(id.rank == 3u);
    CHECK(id.rank_variable == r.rank);
    CHECK(id.local_rank == (r.local_rank.empty() ? std::nullopt : std::optional<std::uint64_t>(1)));
    CHECK(id.world_size == (r.world_size.empty() ? std::nullopt : std::optional<std::uint64_t>(8)));
  }
}

TEST_CASE("a process's directory: placeholders name it, else the rank or pid below the job's") {
  std::vector<std::string> errors;
  const Env none;
  const auto ranked = who({{{"RANK", "1"}}});
  CHECK(detail::process_output_dir("out", ranked, none, errors) == "out/rank1");
  CHECK(detail::process_output_dir("out/%h-%p", ranked, none, errors) == "out/node7-4242");
  CHECK(detail::process_output_dir("out", who({}), none, errors) == "out");
  CHECK(detail::job_dir("out") == "out");
  CHECK(detail::job_dir("/scratch/run/%h/%p") == "/scratch/run");
  CHECK(detail::job_dir("%p") == ".");
  CHECK(detail::job_dir("/%p") == "/");
}

TEST_CASE("in a job, each process writes its own reports and enters the job's list") {
  test::TempDir dir;
  test::ScopedEnv env{{"RANK", "1"},          {"WORLD_SIZE", "2"},     {"PASTA_RUN_ID", "run-a"},
                      {"PASTA_LAUNCHER_PID", "1"}, {"PASTA_OUTPUT_DIR", nullptr},
                      {"PASTA_TRACE", nullptr}};
  std::string where, status;
  const std::string registry = profile(into(dir), 1, &where, &status);
  CHECK(status == "running");
  CHECK(registry.starts_with(
      dir.file(fmt::format("processes/{}-{}", detail::host_name(), ::getpid()))));
  CHECK(where == dir.file("rank1"));
  CHECK(detail::is_directory(dir.file("rank1")));
  const auto e = entry(registry);
  CHECK(e["status"] == "finished");
  CHECK(e["rank"] == 1);
  CHECK(e["world_size"] == 2);
  CHECK(e["rank_variable"] == "RANK");
  CHECK(e["run_id"] == "run-a");
  CHECK(e["pasta_version"] == PASTA_VERSION_STRING);  // the job merge names another version's
  CHECK(e["dir"] == "rank1");
  CHECK(e["launches"] == 1);
  CHECK(e["pid"] == ::getpid());
  CHECK(e["reports"] == nlohmann::json({"correlation.json", "correlation.txt", "kernel_freq.json",
                                        "kernel_freq.kernels.csv", "kernel_freq.shapes.csv",
                                        "kernel_freq.txt"}));
}

TEST_CASE("a job's process that did no GPU work writes no report, only its entry") {
  test::TempDir dir;
  test::ScopedEnv env{{"RANK", nullptr},        {"PASTA_RUN_ID", "run-b"},
                      {"PASTA_LAUNCHER_PID", "1"}, {"PASTA_OUTPUT_DIR", nullptr}};
  const std::string registry = profile(into(dir), 0);
  const auto files = detail::list_dir(dir.path());
  CHECK(files == std::vector<std::string>{"processes"});
  const auto e = entry(registry);
  CHECK(e["status"] == "no GPU work");
  CHECK(e["dir"] == fmt::format("pid{}", ::getpid()));  // its parent is not the launcher
  CHECK(e["reports"].empty());
}

TEST_CASE("a process that finds its rank already taken in this run says so") {
  test::TempDir dir;
  test::ScopedEnv env{{"RANK", "0"}, {"PASTA_RUN_ID", "run-c"}, {"PASTA_OUTPUT_DIR", nullptr}};
  REQUIRE(detail::make_dirs(dir.file("processes")).empty());
  REQUIRE(detail::write_file(dir.file("processes/other-1.json"),
                             R"({"pid": 1, "host": "other", "rank": 0, "run_id": "run-c"})")
              .empty());
  test::CapturedLog log;
  profile(into(dir), 1);
  CHECK(log.contains("rank 0 (RANK) is also claimed by pid 1 on other; the reports in " +
                     dir.file("rank0") + " are this process's and may mix with that one's"));
}

TEST_CASE("outside a job nothing changes: the reports go where they always went") {
  test::TempDir dir;
  test::ScopedEnv env{{"RANK", nullptr}, {"PASTA_RUN_ID", nullptr}, {"PASTA_OUTPUT_DIR", nullptr}};
  CHECK(profile(into(dir), 1).empty());
  CHECK(detail::list_dir(dir.path()).size() == 6);  // kernel_freq and correlation: no list
  CHECK_FALSE(detail::is_directory(dir.file("processes")));
}
