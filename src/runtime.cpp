// pasta's non-template code, compiled once: the pasta::runtime library.
// Programs that link it define PASTA_COMPILED (the target does it for
// them), so that their own translation units only declare this code.
#define PASTA_IMPLEMENT
#include <pasta/pasta.hpp>

// The templates a program linked to the runtime does not instantiate itself
// (PASTA_RUNTIME_TEMPLATES): StallBlame with its default disassembler.
#include <pasta/tools/stall_blame.hpp>
template class pasta::tools::BasicStallBlame<pasta::nv::detail::Nvdisasm>;
template void pasta::detail::stall::report_sampled<pasta::nv::detail::Nvdisasm>(
    pasta::Report&, const pasta::nv::detail::Nvdisasm&, const pasta::detail::stall::Samples&,
    const std::map<std::string, pasta::detail::stall::KernelCode>&, std::uint64_t,
    const std::string&);
