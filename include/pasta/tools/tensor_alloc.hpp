// Tensor memory as the framework's allocator hands it out (torch::Aten): per
// device the peak of live tensor bytes, when it happened and which operator
// allocated at that moment; allocation sizes, lifetimes, bytes per operator,
// and live memory over time. Answers "what sets my peak memory".
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/address_map.hpp>
#include <pasta/core/detail/api.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/names.hpp>
#include <pasta/core/report.hpp>
#include <pasta/tools/detail/live_ops.hpp>

namespace pasta::tools {

class TensorAlloc {
 public:
  static constexpr std::string_view name = "tensor_alloc";
  // Points of the live-memory timeline kept per device; see Device::timeline.
  static constexpr std::size_t timeline_points = 4096;
  static constexpr std::uint32_t cpu_device = pasta::host_device;  // shown as "cpu"

  struct Point {
    std::uint64_t time_ns = 0, live_bytes = 0;
    friend bool operator==(const Point&, const Point&) = default;
  };
  struct Device {
    std::uint32_t device = 0;
    std::uint64_t live_bytes = 0, live_tensors = 0;
    std::uint64_t peak_bytes = 0, peak_ns = 0;
    NameId peak_op{};                  // the operator whose allocation set the peak; 0 = none
    NameId peak_source{};              // the line of the program that called it; 0 = not known
    std::uint64_t allocator_peak = 0;  // largest total_allocated the allocator reported
    std::uint64_t allocations = 0, frees = 0;
    // Live bytes after each event, halved when full: each pair of
    // neighbours becomes the larger of the two, so the peak always survives.
    // After k halvings a point stands for 2^k events (`stride`).
    std::vector<Point> timeline;
    Point pending{};
    std::uint64_t pending_n = 0, stride = 1;
  };
  struct Bucket {
    std::uint64_t count = 0, bytes = 0;
  };
  // Lifetimes at free, by decade: < 10 us, < 100 us, ... < 1 s, >= 1 s.
  static constexpr std::size_t lifetime_buckets = 7;
  // Sizes by power of two: <= 512 B, <= 1 KiB, ... (index 0 holds <= 512 B).
  static constexpr std::size_t size_buckets = 55;

  void on(const OpBegin& e);
  void on(const OpEnd& e) { ops_.on(e); }

  void on(const pasta::TensorAlloc& e);

  void on(const TensorFree& e);

  // nullptr if no tensor event named that device.
  const Device* device_stats(std::uint32_t device) const;
  // The live-memory timeline of a device, with the point still being merged.
  std::vector<Point> timeline(std::uint32_t device) const;
  const std::array<Bucket, size_buckets>& sizes() const { return sizes_; }
  const std::array<Bucket, lifetime_buckets>& lifetimes() const { return lifetimes_; }
  // Allocations by the operator that made them ("(no operator)" for none).
  Bucket op_stats(std::string_view op) const;
  std::uint64_t unknown_frees() const { return unknown_frees_; }
  std::uint64_t replaced() const { return replaced_; }

  void report(Report& out) const;  // tools/detail/tensor_alloc_impl.hpp

 private:
  struct Live {  // a live tensor, by its address range
    std::uint64_t base = 0, bytes = 0, time_ns = 0;
    std::uint32_t device = 0;
  };

  static std::size_t size_bucket(std::uint64_t bytes);
  static std::size_t lifetime_bucket(std::uint64_t ns);
  static std::string size_text(std::size_t bucket);
  static std::string label(NameId op) { return detail::LiveOps::label(op); }
  static Cell device_cell(std::uint32_t d) {
    return d == cpu_device ? Cell{std::string("cpu")} : Cell{std::uint64_t{d}};
  }

  // Times in tables count from the first event the tool saw.
  void origin(std::uint64_t t) {
    if (!origin_ns_ && t) origin_ns_ = t;
  }
  std::uint64_t since_origin(std::uint64_t t) const { return t >= origin_ns_ ? t - origin_ns_ : 0; }

  Device& device(std::uint32_t id);
  Bucket& at(NameId op);

  // One timeline point per `stride` events: the largest live value among them.
  static void record(Device& d, std::uint64_t time_ns);

  detail::LiveOps ops_;
  BasicAddressMap<Live> live_;
  std::vector<Device> devices_;  // few: a linear search beats a map
  std::array<Bucket, size_buckets> sizes_{};
  std::array<Bucket, lifetime_buckets> lifetimes_{};
  std::vector<Bucket> by_op_;  // indexed by NameId of the allocating operator
  std::unordered_map<NameId, Bucket> by_line_;  // by the line that called the allocating operator
  std::uint64_t unknown_frees_ = 0, replaced_ = 0, origin_ns_ = 0;
};

}  // namespace pasta::tools

#ifdef PASTA_DETAIL_DEFINE
#include <pasta/tools/detail/tensor_alloc_impl.hpp>
#endif
