// Reads a trace written by TraceWriter, block by block. Every way a file can
// be damaged (cut off, flipped bits, foreign or newer format) ends in a
// TraceError that names the byte offset; events before the damage have
// already been delivered, so a cut-off recording is still useful.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/detail/reflect.hpp>
#include <pasta/core/names.hpp>
#include <pasta/trace/format.hpp>
#include <pasta/trace/writer.hpp>

namespace pasta::trace {

class TraceReader {
 public:
  // Fuzzing builds accept any checksum, so mutated inputs reach the parsers
  // behind it (the libFuzzer convention's macro; never set in a release).
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  static constexpr bool skip_checksums = true;
#else
  static constexpr bool skip_checksums = false;
#endif
  using Kind = TraceError::Kind;

  explicit TraceReader(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) throw TraceError(Kind::io, 0, fmt::format("cannot open: {}", std::strerror(errno)));
    try {
      if (std::fseek(file_, 0, SEEK_END) == 0)
        size_ = static_cast<std::uint64_t>(std::ftell(file_));
      std::rewind(file_);
      read_header();
    } catch (...) {
      std::fclose(file_);
      file_ = nullptr;
      throw;
    }
  }
  ~TraceReader() {
    if (file_) std::fclose(file_);
  }
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const Metadata& metadata() const { return metadata_; }
  const std::vector<TypeDesc>& schema() const { return schema_; }
  std::uint16_t major_version() const { return major_; }
  std::uint16_t minor_version() const { return minor_; }
  std::uint64_t events() const { return events_; }
  std::uint64_t skipped() const { return skipped_; }  // records of kinds this build does not know
  std::uint64_t offset() const { return offset_; }
  bool complete() const { return done_; }
  const std::string& path() const { return path_; }

  // Reads one block, calling f(const E&) for each event whose kind passes
  // want(EventKind). Returns false once the end marker has been read.
  template <class F, class Want>
  bool next_block(F&& f, Want&& want) {
    if (done_) return false;
    const std::uint64_t at = offset_;
    std::byte header[block_header_bytes];
    const std::size_t got = read_some(header, sizeof header);
    if (got == 0)
      throw TraceError(Kind::truncated, at,
                       fmt::format("the trace ends without its end marker after {} events: the "
                                   "recording was cut off",
                                   events_));
    if (got < sizeof header)
      throw TraceError(Kind::truncated, at,
                       fmt::format("block header cut off ({} of {} bytes)", got, sizeof header));
    std::uint32_t bytes, records, crc;
    std::memcpy(&bytes, header + 4, 4);
    std::memcpy(&records, header + 8, 4);
    std::memcpy(&crc, header + 12, 4);
    if (std::memcmp(header, end_magic, 4) == 0) {
      if (bytes != 0 || crc != 0) throw TraceError(Kind::corrupt, at, "damaged end marker");
      if (records != records_)
        throw TraceError(
            Kind::corrupt, at,
            fmt::format("end marker counts {} records, the blocks held {}", records, records_));
      if (offset_ != size_)
        throw TraceError(Kind::corrupt, offset_,
                         fmt::format("{} bytes follow the end marker", size_ - offset_));
      done_ = true;
      return false;
    }
    if (std::memcmp(header, block_magic, 4) != 0)
      throw TraceError(Kind::corrupt, at, "not a block header (bad magic)");
    if (bytes > max_block_payload)
      throw TraceError(
          Kind::corrupt, at,
          fmt::format("block claims {} bytes, over the {} byte limit", bytes, max_block_payload));
    payload_.resize(bytes);
    if (const std::size_t n = read_some(payload_.data(), bytes); n < bytes)
      throw TraceError(Kind::truncated, at,
                       fmt::format("block cut off: {} of its {} bytes are present", n, bytes));
    if (crc32(payload_.data(), bytes) != crc && !skip_checksums)
      throw TraceError(Kind::corrupt, at, "block checksum mismatch: the block is damaged");
    parse_block(at + block_header_bytes, records, f, want);
    records_ += records;
    return true;
  }

  template <class F>
  bool next_block(F&& f) {
    return next_block(std::forward<F>(f), [](EventKind) { return true; });
  }

  // Reads to the end marker; throws at the first damage.
  template <class F>
  void read_all(F&& f) {
    while (next_block(f)) {
    }
  }

 private:
  // Bounds-checked reading of a byte range; `base` is its file offset.
  struct Cursor {
    const std::byte* begin;
    const std::byte* p;
    const std::byte* end;
    std::uint64_t base;
    const char* where;

    std::uint64_t offset() const { return base + static_cast<std::uint64_t>(p - begin); }
    const std::byte* take(std::size_t n) {
      if (static_cast<std::size_t>(end - p) < n)
        throw TraceError(Kind::corrupt, offset(),
                         fmt::format("{} ends in the middle of a field", where));
      const std::byte* at = p;
      p += n;
      return at;
    }
    template <class T>
    T get() {
      T v;
      std::memcpy(&v, take(sizeof(T)), sizeof(T));
      return v;
    }
    std::string str() {
      const auto n = get<std::uint16_t>();
      const std::byte* s = take(n);
      return std::string(reinterpret_cast<const char*>(s), n);
    }
  };

  std::size_t read_some(void* out, std::size_t n) {
    const std::size_t got = n ? std::fread(out, 1, n, file_) : 0;
    if (got < n && std::ferror(file_))
      throw TraceError(Kind::io, offset_ + got,
                       fmt::format("read error: {}", std::strerror(errno)));
    offset_ += got;
    return got;
  }

  void read_header() {
    std::byte fixed[fixed_header_bytes];
    const std::size_t got = read_some(fixed, sizeof fixed);
    if (got < sizeof file_magic || std::memcmp(fixed, file_magic, sizeof file_magic) != 0)
      throw TraceError(Kind::not_a_trace, 0, "not a pasta trace (no PASTATRC magic)");
    if (got < sizeof fixed)
      throw TraceError(Kind::truncated, got,
                       fmt::format("header cut off ({} of {} bytes)", got, sizeof fixed));
    std::uint32_t header_bytes, crc;
    std::memcpy(&major_, fixed + 8, 2);
    std::memcpy(&minor_, fixed + 10, 2);
    std::memcpy(&header_bytes, fixed + 12, 4);
    std::memcpy(&crc, fixed + 16, 4);
    if (major_ != version_major)
      throw TraceError(Kind::version, 8,
                       fmt::format("trace format {}.{} is not supported; this build reads {}.x",
                                   major_, minor_, version_major));
    if (header_bytes < fixed_header_bytes || header_bytes > max_block_payload)
      throw TraceError(Kind::corrupt, 12, fmt::format("implausible header size {}", header_bytes));
    std::vector<std::byte> body(header_bytes - fixed_header_bytes);
    if (const std::size_t n = read_some(body.data(), body.size()); n < body.size())
      throw TraceError(
          Kind::truncated, fixed_header_bytes + n,
          fmt::format("header cut off ({} of {} bytes)", fixed_header_bytes + n, header_bytes));
    std::memset(fixed + 16, 0, 4);
    boost::crc_32_type header_crc;
    header_crc.process_bytes(fixed, sizeof fixed);
    header_crc.process_bytes(body.data(), body.size());
    if (header_crc.checksum() != crc && !skip_checksums)
      throw TraceError(Kind::corrupt, 0, "header checksum mismatch: the header is damaged");

    Cursor c{body.data(), body.data(), body.data() + body.size(), fixed_header_bytes, "the header"};
    const auto types = c.get<std::uint16_t>();
    for (std::uint16_t i = 0; i < types; ++i) {
      const std::uint64_t at = c.offset();
      TypeDesc t;
      t.kind = c.get<std::uint16_t>();
      t.name = c.str();
      t.payload_bytes = c.get<std::uint16_t>();
      const auto fields = c.get<std::uint16_t>();
      for (std::uint16_t k = 0; k < fields; ++k) {
        std::string name = c.str();
        t.fields.push_back({std::move(name), static_cast<FieldType>(c.get<std::uint8_t>())});
      }
      if (t.kind == name_record || payload_size_.count(t.kind))
        throw TraceError(Kind::corrupt, at, fmt::format("event kind {} listed twice", t.kind));
      check_known_type(t, at);
      payload_size_[t.kind] = t.payload_bytes;
      schema_.push_back(std::move(t));
    }
    const auto entries = c.get<std::uint16_t>();
    for (std::uint16_t i = 0; i < entries; ++i) {
      std::string key = c.str();
      metadata_.emplace_back(std::move(key), c.str());
    }
  }

  // A kind this build knows is read field by field, by name: fields the
  // trace lacks keep their defaults, fields this build lacks are skipped.
  // A field whose type changed is a version error.
  void check_known_type(const TypeDesc& t, std::uint64_t at) {
    pasta::detail::visit_kind(static_cast<EventKind>(t.kind), [&](auto type) {
      using E = typename decltype(type)::type;
      const TypeDesc ours = describe<E>();
      if (t.name == ours.name && t.fields == ours.fields && t.payload_bytes == ours.payload_bytes)
        return;
      auto differs = [&](std::string why) {
        return TraceError(Kind::version, at,
                          fmt::format("event {} (kind {}) is laid out differently in this trace "
                                      "({}): it was written by another pasta version",
                                      ours.name, t.kind, why));
      };
      if (t.name != ours.name) throw differs(fmt::format("named {}", t.name));
      std::vector<std::int32_t> offsets(ours.fields.size(), -1);
      std::size_t offset = 0;
      for (const FieldDesc& f : t.fields) {
        for (std::size_t i = 0; i < ours.fields.size(); ++i) {
          if (ours.fields[i].name != f.name) continue;
          if (ours.fields[i].type != f.type)
            throw differs(fmt::format("field {} has another type", f.name));
          offsets[i] = static_cast<std::int32_t>(offset);
        }
        offset += field_bytes(f.type);
      }
      if (offset != t.payload_bytes)
        throw TraceError(Kind::corrupt, at,
                         fmt::format("event {} lists fields of {} bytes in a {}-byte payload",
                                     t.name, offset, t.payload_bytes));
      layouts_[t.kind] = std::move(offsets);
    });
  }

  static std::size_t field_bytes(FieldType t) {
    switch (t) {
      case FieldType::u8: return 1;
      case FieldType::u16: return 2;
      case FieldType::u32: case FieldType::i32: case FieldType::name: return 4;
      case FieldType::u64: case FieldType::i64: case FieldType::f64: return 8;
    }
    return 0;
  }

  // Decodes a record written with another layout of E (see check_known_type).
  template <class E>
  static void decode_mapped(const std::byte* data, E& e, const std::vector<std::int32_t>& at) {
    std::size_t i = 0;
    for_each_scalar(e, [&](std::string_view, auto& v) {
      const std::int32_t off = at[i++];
      if (off < 0) return;
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, NameId>)
        std::memcpy(&v.value, data + off, sizeof v.value);
      else
        std::memcpy(&v, data + off, sizeof v);
    });
  }

  template <class F, class Want>
  void parse_block(std::uint64_t base, std::uint32_t records, F& f, Want& want) {
    Cursor c{payload_.data(), payload_.data(), payload_.data() + payload_.size(), base, "a block"};
    for (std::uint32_t i = 0; i < records; ++i) {
      const std::uint64_t at = c.offset();
      const auto kind = c.get<std::uint16_t>();
      if (kind == name_record) {
        const auto id = c.get<std::uint32_t>();
        const std::string s = c.str();
        if (id == 0) throw TraceError(Kind::corrupt, at, "name record defines id 0");
        names_[id] = intern(s);
        continue;
      }
      auto size = payload_size_.find(kind);
      if (size == payload_size_.end())
        throw TraceError(Kind::corrupt, at,
                         fmt::format("record of kind {}, which the header does not list", kind));
      const std::byte* data = c.take(size->second);
      if (!want(static_cast<EventKind>(kind))) continue;
      const bool known = pasta::detail::visit_kind(static_cast<EventKind>(kind), [&](auto type) {
        using E = typename decltype(type)::type;
        E e{};
        if (auto layout = layouts_.find(kind); layout == layouts_.end())
          decode(data, e);
        else
          decode_mapped(data, e, layout->second);
        fix_up(e, at);
        ++events_;
        f(static_cast<const E&>(e));
      });
      if (!known) ++skipped_;
    }
    if (c.p != c.end)
      throw TraceError(Kind::corrupt, c.offset(),
                       fmt::format("{} bytes follow the block's {} records", c.end - c.p, records));
  }

  // Maps the file's name ids to this process's and rejects invalid enums.
  template <class E>
  void fix_up(E& e, std::uint64_t at) {
    for_each_scalar(e, [&](std::string_view field, auto& v) {
      using V = std::remove_cvref_t<decltype(v)>;
      if constexpr (std::is_same_v<V, NameId>) {
        if (!v) return;
        auto it = names_.find(v.value);
        if (it == names_.end())
          throw TraceError(Kind::corrupt, at,
                           fmt::format("{} record uses name id {}, which the trace never defined",
                                       E::type_name, v.value));
        v = it->second;
      } else if constexpr (std::is_enum_v<V>) {
        if (static_cast<std::size_t>(v) >= std::size(enum_names<V>))
          throw TraceError(Kind::corrupt, at,
                           fmt::format("{} record has invalid value {} in field {}", E::type_name,
                                       static_cast<std::uint64_t>(v), field));
      }
    });
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  std::uint64_t size_ = 0, offset_ = 0;
  std::uint16_t major_ = 0, minor_ = 0;
  std::vector<TypeDesc> schema_;
  Metadata metadata_;
  std::unordered_map<std::uint16_t, std::uint16_t> payload_size_;
  // Kinds laid out otherwise than in this build: per field of ours, its
  // offset in the record, -1 if the trace lacks it.
  std::unordered_map<std::uint16_t, std::vector<std::int32_t>> layouts_;
  std::unordered_map<std::uint32_t, NameId> names_;  // file id -> process id
  std::vector<std::byte> payload_;
  std::uint64_t events_ = 0, skipped_ = 0, records_ = 0;
  bool done_ = false;
};

}  // namespace pasta::trace
