// The event stream and tool set every dispatch variant runs: the same four
// tools, the same events, so the variants differ only in how events reach
// the tools.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include <pasta/pasta.hpp>

namespace pasta::bench {

using AnyEvent = std::variant<KernelLaunch, KernelComplete, MemAccess, ScopeBegin, ScopeEnd>;

inline constexpr std::uint64_t allocations = 64;
inline constexpr std::uint64_t alloc_bytes = 1 << 20;
inline constexpr std::uint64_t alloc_base(std::uint64_t i) {
  return 0x7f0000000000 + i * (2 << 20);
}

// Allocations are set up once, outside the timed loop, so every timed pass
// sees the same state: launches, accesses, completions and scopes only.
inline std::vector<MemAlloc> setup_events() {
  std::vector<MemAlloc> out;
  for (std::uint64_t i = 0; i < allocations; ++i)
    out.push_back({.address = alloc_base(i), .bytes = alloc_bytes, .mem_kind = MemKind::device});
  return out;
}

// A kernel-heavy mix: per launch, 32 accesses (already correlated to their
// allocation), a completion, and a scope around every 8 launches. Accesses
// come as a warp makes them: two runs of 16 consecutive 8-byte accesses,
// each run in one allocation picked at random.
inline std::vector<AnyEvent> timed_events(std::uint64_t kernels) {
  std::vector<AnyEvent> out;
  const NameId names[] = {intern("gemm"), intern("softmax"), intern("layernorm"),
                          intern("elementwise")};
  const NameId scope = intern("step");
  std::uint64_t x = 12345;
  auto next = [&] { return x = x * 6364136223846793005ull + 1442695040888963407ull; };
  for (std::uint64_t k = 0; k < kernels; ++k) {
    if (k % 8 == 0) out.emplace_back(ScopeBegin{.name = scope, .time_ns = k});
    const NameId n = names[k % 4];
    out.emplace_back(
        KernelLaunch{.correlation = k, .name = n, .grid = {128, 1, 1}, .block = {256, 1, 1}});
    for (int run = 0; run < 2; ++run) {
      const std::uint64_t alloc = (next() >> 33) % allocations;
      const std::uint64_t start = ((next() >> 33) % (alloc_bytes - 128)) & ~7ull;
      for (int lane = 0; lane < 16; ++lane)
        out.emplace_back(MemAccess{.correlation = k,
                                   .address = alloc_base(alloc) + start + 8 * lane,
                                   .alloc_base = alloc_base(alloc),
                                   .bytes = 8,
                                   .flags = run ? access::write : access::read});
    }
    out.emplace_back(KernelComplete{.correlation = k,
                                    .name = n,
                                    .grid = {128, 1, 1},
                                    .block = {256, 1, 1},
                                    .start_ns = 1000 * k + 1,
                                    .end_ns = 1000 * k + 500});
    if (k % 8 == 7) out.emplace_back(ScopeEnd{.name = scope, .time_ns = k});
  }
  return out;
}

}  // namespace pasta::bench
