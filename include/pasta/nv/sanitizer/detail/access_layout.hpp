// The memory layout shared by the device patches (kernels/), the post-pass
// kernel and the host side of nv::Sanitizer. Plain structs, no library
// headers: nvcc compiles this for the device, the host compiler for the host.
#pragma once

#include <stdint.h>

#include <pasta/core/detail/region_key.hpp>

namespace pasta::nv::device {

// One live allocation in the device-side lookup table, sorted by base.
// Its pages are counted in slots first_slot .. first_slot + pages - 1.
struct AllocRange {
  uint64_t base;
  uint64_t end;  // one past the last byte
  uint64_t first_slot;
};

// Counters of one page (or of one catch-all bucket).
struct Slot {
  unsigned long long reads, writes, read_bytes, write_bytes;
};

// A compacted, non-empty slot, as the post-pass hands it to the host.
struct Bin {
  uint64_t slot;
  Slot counts;
};

// One access, as the conventional trace records it: 16 bytes.
struct TraceRecord {
  uint64_t address;
  uint32_t pc;  // offset within the function
  uint16_t bytes;
  uint8_t flags;  // pasta::access bits
  uint8_t space;  // pasta::MemSpace
};

// Accesses of one instruction to one region (core/detail/region_key.hpp),
// a slot of the device's hash table: key 0 marks an empty slot.
struct PcCount {
  unsigned long long key;
  unsigned long long count;    // accesses
  unsigned long long address;  // the first one counted
  uint32_t bytes;              // of one access
  uint32_t flags;              // pasta::access bits
};

// The last slots count what no allocation owns: global accesses outside
// every known allocation, then shared and local accesses.
inline constexpr uint64_t catch_all_slots = 3;

// What a patched launch reads through its callback data pointer.
struct Params {
  const AllocRange* ranges;
  uint32_t range_count;
  uint32_t page_shift;
  Slot* slots;
  uint64_t slot_count;  // including the catch_all_slots
  TraceRecord* records;
  uint64_t capacity;                 // records that fit
  unsigned long long* record_count;  // records written or attempted; above capacity = lost
  uint64_t function_pc;              // start of the launched function
  // Per-instruction counts (the pc patches): keyed by the regions, in a
  // table of table_mask + 1 slots; a key that finds no slot within
  // max_probes goes to the overflow records, and past their capacity it is
  // lost (overflow_count - overflow_capacity of them).
  pasta::detail::region::Table regions;
  PcCount* table;
  uint64_t table_mask;
  PcCount* overflow;
  uint64_t overflow_capacity;
  unsigned long long* overflow_count;
  uint32_t max_probes;
};

// Probes before a key goes to the overflow records.
inline constexpr uint32_t pc_max_probes = 64;

// The post-pass kernel's launch shape.
inline constexpr unsigned compact_block = 256;

}  // namespace pasta::nv::device
