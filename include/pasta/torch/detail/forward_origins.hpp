// Where a backward operator's forward ran: autograd gives a backward
// function the sequence number and thread of the forward operator that made
// it (as torch.profiler links them), and this table maps those to the
// forward call's module and source line. Direct-mapped on the sequence
// number, lock-free: forward threads write, autograd's threads read later.
// A slot holds two words, each tagged with the thread and low bits of the
// sequence number, so a read that races a write sees unequal tags and finds
// nothing rather than a mix.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <pasta/core/names.hpp>

namespace pasta::torch::detail {

class ForwardOrigins {
 public:
  static constexpr std::size_t slots = std::size_t{1} << 16;
  struct Origin {
    NameId module{}, source{};
  };

  void put(std::uint64_t thread, std::int64_t sequence, Origin o) {
    if (sequence < 0 || (!o.module && !o.source)) return;
    Slot& s = slot(sequence);
    const std::uint64_t t = tag(thread, sequence);
    s.module.store(t | o.module.value, std::memory_order_relaxed);
    s.source.store(t | o.source.value, std::memory_order_release);
  }
  Origin find(std::uint64_t thread, std::int64_t sequence) const {
    if (sequence < 0) return {};
    const Slot& s = slot(sequence);
    const std::uint64_t t = tag(thread, sequence);
    const std::uint64_t source = s.source.load(std::memory_order_acquire);
    const std::uint64_t module = s.module.load(std::memory_order_relaxed);
    if ((source & ~low) != t || (module & ~low) != t) return {};
    return {NameId{static_cast<std::uint32_t>(module & low)},
            NameId{static_cast<std::uint32_t>(source & low)}};
  }

 private:
  static constexpr std::uint64_t low = 0xFFFF'FFFFull;
  struct Slot {
    std::atomic<std::uint64_t> module{0}, source{0};
  };
  // The upper word: a set top bit (a written slot is never all zeros), 7 bits
  // of the thread, 24 of the sequence number (the low 16 of which pick the slot).
  static std::uint64_t tag(std::uint64_t thread, std::int64_t sequence) {
    const auto seq = static_cast<std::uint64_t>(sequence) & 0xFF'FFFFull;
    return std::uint64_t{1} << 63 | (thread & 0x7F) << 56 | seq << 32;
  }
  Slot& slot(std::int64_t sequence) {
    return (*table_)[static_cast<std::uint64_t>(sequence) & (slots - 1)];
  }
  const Slot& slot(std::int64_t sequence) const {
    return (*table_)[static_cast<std::uint64_t>(sequence) & (slots - 1)];
  }
  // 1 MiB, made with the handler.
  std::unique_ptr<std::array<Slot, slots>> table_ = std::make_unique<std::array<Slot, slots>>();
};

}  // namespace pasta::torch::detail
