// libFuzzer target: every parser of user input in the core: the PASTA_*
// variables (apply_env, one value per line of the input, in the order of
// all_variables) and the kernel filter applied to a name. Bad values must
// give error lines, never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/regex.hpp>
#include <pasta/variables.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> values;
  for (std::size_t at = 0; at <= input.size() && values.size() < std::size(pasta::all_variables);) {
    const std::size_t nl = input.find('\n', at);
    const std::size_t end = nl == std::string_view::npos ? input.size() : nl;
    values.emplace_back(input.substr(at, end - at));
    at = end + 1;
  }
  auto getenv = [&](const char* name) -> const char* {
    for (std::size_t i = 0; i < values.size(); ++i)
      if (pasta::all_variables[i] == name) return values[i].c_str();
    return nullptr;
  };
  pasta::ConfigWithAll cfg;
  const auto errors = pasta::apply_env(cfg, getenv);
  (void)errors;
  // The filter, as accepted, against the last line as a kernel name. (The
  // regex directly: KernelSelector interns names, which live for the process.)
  const pasta::detail::Regex filter(cfg.kernel_filter);
  (void)filter.search(values.empty() ? "k" : values.back().c_str());
  return 0;
}
