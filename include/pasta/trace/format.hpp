// The binary trace format (docs/trace-format.md): constants, the
// self-describing schema of each event type, and packed little-endian
// encoding of events, all derived from the reflected event structs.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/crc.hpp>
#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/reflect.hpp>
#include <pasta/core/events.hpp>

namespace pasta::trace {

static_assert(std::endian::native == std::endian::little,
              "pasta traces are little-endian; this build targets a big-endian host");

inline constexpr char file_magic[8] = {'P', 'A', 'S', 'T', 'A', 'T', 'R', 'C'};
inline constexpr char block_magic[4] = {'P', 'B', 'L', 'K'};
inline constexpr char end_magic[4] = {'P', 'E', 'N', 'D'};
inline constexpr std::uint16_t version_major = 1;
inline constexpr std::uint16_t version_minor = 8;  // 1: op ids in events; 2: KernelCounters;
                                                   // 3: StallSample; 4: TensorView;
                                                   // 5: FusedKernel; 6: PcAccessCount;
                                                   // 7: ModuleCall, OpBegin's module and source;
                                                   // 8: KernelCounters' l2_warm_replay
inline constexpr std::size_t fixed_header_bytes = 20;
inline constexpr std::size_t block_header_bytes = 16;
inline constexpr std::size_t max_block_payload = 16u << 20;
inline constexpr std::size_t target_block_payload = 64u << 10;
inline constexpr std::uint16_t name_record = 0xFFFF;  // u32 id, u16 length, bytes

enum class FieldType : std::uint8_t {
  u8 = 1,
  u16 = 2,
  u32 = 3,
  u64 = 4,
  i32 = 5,
  i64 = 6,
  f64 = 7,
  name = 8
};

struct FieldDesc {
  std::string name;
  FieldType type;
  friend bool operator==(const FieldDesc&, const FieldDesc&) = default;
};

struct TypeDesc {
  std::uint16_t kind = 0;
  std::string name;
  std::uint16_t payload_bytes = 0;
  std::vector<FieldDesc> fields;
};

// A damaged, truncated or foreign trace. `offset` is the byte where the
// problem was found.
class TraceError : public std::runtime_error {
 public:
  enum class Kind { io, not_a_trace, version, truncated, corrupt };
  TraceError(Kind kind, std::uint64_t offset, const std::string& what)
      : std::runtime_error(fmt::format("byte {}: {}", offset, what)),
        kind_(kind),
        offset_(offset) {}
  Kind kind() const { return kind_; }
  std::uint64_t offset() const { return offset_; }

 private:
  Kind kind_;
  std::uint64_t offset_;
};

inline std::uint32_t crc32(const void* data, std::size_t n) {
  boost::crc_32_type crc;
  crc.process_bytes(data, n);
  return crc.checksum();
}

namespace detail {

template <class T>
constexpr bool is_scalar_field =
    std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, NameId>;

template <class T>
constexpr FieldType field_type() {
  if constexpr (std::is_same_v<T, NameId>)
    return FieldType::name;
  else if constexpr (std::is_enum_v<T>)
    return field_type<std::underlying_type_t<T>>();
  else if constexpr (std::is_same_v<T, double>)
    return FieldType::f64;
  else if constexpr (std::is_signed_v<T>) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "unsupported signed field width");
    return sizeof(T) == 4 ? FieldType::i32 : FieldType::i64;
  } else {
    static_assert(std::is_unsigned_v<T>, "unsupported field type");
    if constexpr (sizeof(T) == 1)
      return FieldType::u8;
    else if constexpr (sizeof(T) == 2)
      return FieldType::u16;
    else if constexpr (sizeof(T) == 4)
      return FieldType::u32;
    else
      return FieldType::u64;
  }
}

template <class T>
constexpr std::size_t packed_size() {
  if constexpr (is_scalar_field<T>) {
    return sizeof(T);
  } else {
    std::size_t n = 0;
    pasta::detail::for_each_field_type<T>(
        [&](std::string_view, auto type) { n += packed_size<typename decltype(type)::type>(); });
    return n;
  }
}

template <class T>
void describe_fields(std::string prefix, std::vector<FieldDesc>& out) {
  pasta::detail::for_each_field_type<T>([&](std::string_view name, auto type) {
    using F = typename decltype(type)::type;
    std::string full = prefix + std::string(name);
    if constexpr (is_scalar_field<F>)
      out.push_back({std::move(full), field_type<F>()});
    else
      describe_fields<F>(full + ".", out);
  });
}

}  // namespace detail

template <class E>
inline constexpr std::size_t payload_bytes = detail::packed_size<E>();

template <class E>
TypeDesc describe() {
  TypeDesc d{static_cast<std::uint16_t>(E::kind),
             std::string(E::type_name),
             static_cast<std::uint16_t>(payload_bytes<E>),
             {}};
  detail::describe_fields<E>("", d.fields);
  return d;
}

inline std::vector<TypeDesc> build_schema() {
  std::vector<TypeDesc> out;
  for_each_type(all_events,
                [&](auto type) { out.push_back(describe<typename decltype(type)::type>()); });
  return out;
}

// Writes `v`'s fields packed, in order; returns one past the last byte.
template <class T>
std::byte* encode(const T& v, std::byte* out) {
  if constexpr (std::is_same_v<T, NameId>) {
    std::memcpy(out, &v.value, 4);
    return out + 4;
  } else if constexpr (detail::is_scalar_field<T>) {
    std::memcpy(out, &v, sizeof(T));
    return out + sizeof(T);
  } else {
    pasta::detail::for_each_field(v,
                                  [&](std::string_view, const auto& f) { out = encode(f, out); });
    return out;
  }
}

// Reads fields written by encode(). Names come back as the file's ids; the
// reader remaps them.
template <class T>
const std::byte* decode(const std::byte* in, T& v) {
  if constexpr (std::is_same_v<T, NameId>) {
    std::memcpy(&v.value, in, 4);
    return in + 4;
  } else if constexpr (detail::is_scalar_field<T>) {
    std::memcpy(&v, in, sizeof(T));
    return in + sizeof(T);
  } else {
    pasta::detail::for_each_field(v, [&](std::string_view, auto& f) { in = decode(in, f); });
    return in;
  }
}

// f(field_name, field&) for each scalar field, nested structs flattened.
template <class T, class F>
void for_each_scalar(T& v, F&& f) {
  pasta::detail::for_each_field(v, [&](std::string_view name, auto& field) {
    using Field = std::remove_cvref_t<decltype(field)>;
    if constexpr (detail::is_scalar_field<Field>)
      f(name, field);
    else
      for_each_scalar(field, f);
  });
}

}  // namespace pasta::trace
