// What user replay saves: the allocations the handler follows
// (nv::detail::Allocations), the spans of replayed kernels' `__device__`
// variables (nv::detail::VariableSpans), and how an allocation call's parameters are read
// (nv::detail::memory_change), on parameter blocks written by hand as CUPTI
// lays them out.
#include <doctest/doctest.h>

#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/counters/replay_memory.hpp>

#include <cstdint>
#include <vector>

using pasta::nv::detail::Allocations;
using pasta::nv::detail::memory_change;
using pasta::nv::detail::MemoryCall;
using pasta::nv::detail::MemoryChange;
using Range = Allocations::Range;

TEST_CASE("Allocations: added, freed by start, unmapped by range, a reused address replaces") {
  Allocations a;
  a.add(0x1000, 0x100);
  a.add(0x3000, 0x200);
  a.add(0x2000, 0);  // nothing allocated
  CHECK(a.bytes() == 0x300);
  CHECK(a.ranges() == std::vector<Range>{{0x1000, 0x100}, {0x3000, 0x200}});

  a.remove(0x1010);  // not the start of an allocation: nothing freed
  CHECK(a.bytes() == 0x300);
  a.remove(0x1000);
  CHECK(a.ranges() == std::vector<Range>{{0x3000, 0x200}});

  // An allocation over one pasta never saw freed: the old one is gone.
  a.add(0x3100, 0x400);
  CHECK(a.ranges() == std::vector<Range>{{0x3100, 0x400}});
  CHECK(a.bytes() == 0x400);

  // Mapped pieces of one reservation, then the middle one unmapped.
  a.add(0x10000, 0x1000);
  a.add(0x11000, 0x1000);
  a.add(0x12000, 0x1000);
  a.remove(0x11000, 0x1000);
  CHECK(a.ranges() == std::vector<Range>{{0x3100, 0x400}, {0x10000, 0x1000}, {0x12000, 0x1000}});
  CHECK(a.count() == 3);
  // An unmapped range covering the rest.
  a.remove(0x0, 0x20000);
  CHECK(a.ranges().empty());
  CHECK(a.count() == 0);
  CHECK(a.bytes() == 0);
}

TEST_CASE("VariableSpans: variables within 64 bytes of one another are one span") {
  pasta::nv::detail::VariableSpans spans;
  spans.add(1000, 16);  // a module's section: 16, 8, 4 and 3 bytes packed by alignment
  spans.add(1024, 4);   // 8 bytes after the first: joins it
  spans.add(1016, 8);   // between them, touching both
  spans.add(1028, 3);
  spans.add(1000, 16);  // seen again
  CHECK(spans.ranges() == std::vector<Range>{{1000, 31}});
  spans.add(1095, 1);  // 64 bytes after the span's end: joins it
  spans.add(1160, 8);  // 64 after that one: joins too
  spans.add(1233, 4);  // 65 after: a span of its own
  CHECK(spans.ranges() == std::vector<Range>{{1000, 168}, {1233, 4}});
  spans.add(900, 40);  // before the first, 60 bytes short of it: joins
  CHECK(spans.ranges() == std::vector<Range>{{900, 268}, {1233, 4}});
  spans.add(1100, 200);  // over the rest: one span
  CHECK(spans.ranges() == std::vector<Range>{{900, 400}});
  CHECK(spans.bytes() == 400);
  spans.add(5000, 0);  // nothing
  CHECK(spans.ranges().size() == 1);
  CHECK(spans.count() == 1);
  spans.clear();
  CHECK(spans.ranges().empty());
  CHECK(spans.count() == 0);
  CHECK(spans.bytes() == 0);
}

TEST_CASE("VariableSpans: variables in different driver allocations are never one span") {
  pasta::nv::detail::VariableSpans spans;
  spans.add(1000, 16, 1000);  // one module's section, in its allocation [1000, 1020)
  spans.add(1004, 8, 1000);
  spans.add(1024, 8, 1024);  // the next module's, 8 bytes on: a copy over both is refused
  spans.add(1036, 4, 1024);
  spans.add(1100, 4);  // where the driver would not say: joins only others like it
  spans.add(1120, 4);
  CHECK(spans.ranges() == std::vector<Range>{{1100, 24}, {1000, 16}, {1024, 16}});
  CHECK(spans.count() == 3);
  CHECK(spans.bytes() == 56);
  spans.add(pasta::nv::detail::Variable{990, 4, 1000});  // before the first, in its allocation
  CHECK(spans.ranges() == std::vector<Range>{{1100, 24}, {990, 26}, {1024, 16}});
}

TEST_CASE("memory_change reads the allocation calls' parameter blocks") {
  std::uint64_t ptr = 0x7f0000200000;  // what the call wrote through its T** parameter
  std::uint64_t pitch = 512;           // what a pitched allocation wrote through size_t*

  struct {
    std::uint64_t* dptr;
    std::uint64_t bytes;
    std::uint64_t stream;
  } alloc{&ptr, 4096, 7};  // cuMemAllocAsync(CUdeviceptr*, size_t, CUstream)
  CHECK(memory_change(MemoryCall::alloc, &alloc) ==
        MemoryChange{MemoryChange::added, 0x7f0000200000, 4096});

  struct {
    std::uint64_t* dptr;
    std::uint64_t* pitch;
    std::uint64_t width, height;
    std::uint32_t element;
  } pitched{&ptr, &pitch, 500, 30, 4};  // cuMemAllocPitch_v2
  CHECK(memory_change(MemoryCall::alloc_pitch, &pitched) ==
        MemoryChange{MemoryChange::added, 0x7f0000200000, 512 * 30});

  struct {
    std::uint64_t dptr;
  } freed{0x7f0000200000};  // cuMemFree_v2(CUdeviceptr)
  CHECK(memory_change(MemoryCall::free, &freed) ==
        MemoryChange{MemoryChange::removed, 0x7f0000200000, 0});

  struct {
    std::uint64_t ptr, size, offset, handle, flags;
  } mapped{0x7f0000400000, 2 << 20, 0, 9, 0};  // cuMemMap
  CHECK(memory_change(MemoryCall::map, &mapped) ==
        MemoryChange{MemoryChange::added, 0x7f0000400000, 2 << 20});
  CHECK(memory_change(MemoryCall::unmap, &mapped) ==
        MemoryChange{MemoryChange::unmapped, 0x7f0000400000, 2 << 20});

  struct {
    std::uint64_t* dptr;
    std::uint64_t bytes;
  } failed{nullptr, 64};  // no pointer to read: nothing allocated
  CHECK_FALSE(memory_change(MemoryCall::alloc, &failed).has_value());
  CHECK_FALSE(memory_change(MemoryCall::none, &alloc).has_value());
}

TEST_CASE("memory_calls: every allocation call once, driver and runtime") {
  using pasta::nv::detail::memory_calls;
  for (std::size_t i = 0; i < memory_calls.size(); ++i)
    for (std::size_t j = i + 1; j < memory_calls.size(); ++j)
      CHECK_FALSE((memory_calls[i].domain == memory_calls[j].domain &&
                   memory_calls[i].cbid == memory_calls[j].cbid));
  std::size_t driver = 0;
  for (const auto& m : memory_calls) driver += m.domain == CUPTI_CB_DOMAIN_DRIVER_API;
  CHECK(driver == 12);
}

TEST_CASE("ByCallback: a value per runtime and driver callback, nothing for other domains") {
  pasta::nv::detail::ByCallback<char> t;
  CHECK(t(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) == 0);  // none set
  t.set(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 'y');
  t.set(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 'g');
  CHECK(t(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) == 'y');
  CHECK(t(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) == 'g');
  CHECK(t(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2) == 0);
  CHECK(t(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) == 0);
  CHECK(t(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE + 5) == 0);  // past the table
}
