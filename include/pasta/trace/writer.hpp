// Writes events to a trace file in checksummed blocks. A name is defined in
// the stream just before its first use. Write failures (disk full) are
// counted and logged once, never thrown.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/log.hpp>
#include <pasta/trace/format.hpp>

namespace pasta::trace {

using Metadata = std::vector<std::pair<std::string, std::string>>;

class TraceWriter {
 public:
  TraceWriter() = default;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter() { close(); }

  // Creates `path` and writes the header. Returns an empty string or why not.
  std::string open(const std::string& path, const Metadata& metadata) {
    close();
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) return fmt::format("cannot create {}: {}", path, std::strerror(errno));
    path_ = path;
    const std::vector<std::byte> header = make_header(metadata);
    put(header.data(), header.size());
    return failed_ ? fmt::format("cannot write {}", path) : std::string();
  }

  template <Event E>
  void write(const E& e) {
    if (!file_ || failed_) {
      ++dropped_;
      return;
    }
    for_each_scalar(e, [&](std::string_view, const auto& f) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(f)>, NameId>) define(f);
    });
    const std::size_t at = block_.size();
    block_.resize(at + 2 + payload_bytes<E>);
    const std::uint16_t kind = static_cast<std::uint16_t>(E::kind);
    std::memcpy(block_.data() + at, &kind, 2);
    encode(e, block_.data() + at + 2);
    ++block_records_;
    ++block_events_;
    if (block_.size() >= target_block_payload) flush();
  }

  // Writes the current block (the stream stays open).
  void flush() {
    if (!file_ || block_records_ == 0) return;
    write_block(block_magic, block_.data(), static_cast<std::uint32_t>(block_.size()),
                block_records_);
    if (std::fflush(file_) != 0) fail();
    (failed_ ? dropped_ : events_) += block_events_;
    total_records_ += block_records_;
    block_.clear();
    block_records_ = 0;
    block_events_ = 0;
  }

  // Flushes and writes the end marker; a closed trace is complete.
  void close() {
    if (!file_) return;
    flush();
    write_block(end_magic, nullptr, 0, static_cast<std::uint32_t>(total_records_));
    if (std::fclose(file_) != 0) fail();
    file_ = nullptr;
  }

  bool is_open() const { return file_ != nullptr; }
  bool failed() const { return failed_; }
  // Events in blocks written so far (a buffered block is not counted yet).
  std::uint64_t events() const { return events_; }
  std::uint64_t buffered() const { return block_events_; }
  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  static void put_u16(std::vector<std::byte>& out, std::uint16_t v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + 2);
  }
  static void put_u32(std::vector<std::byte>& out, std::uint32_t v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + 4);
  }
  static void put_str(std::vector<std::byte>& out, std::string_view s) {
    s = s.substr(0, 0xFFFF);
    put_u16(out, static_cast<std::uint16_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
  }

  static std::vector<std::byte> make_header(const Metadata& metadata) {
    std::vector<std::byte> h(fixed_header_bytes);
    const std::vector<TypeDesc> schema = build_schema();
    put_u16(h, static_cast<std::uint16_t>(schema.size()));
    for (const TypeDesc& t : schema) {
      put_u16(h, t.kind);
      put_str(h, t.name);
      put_u16(h, t.payload_bytes);
      put_u16(h, static_cast<std::uint16_t>(t.fields.size()));
      for (const FieldDesc& f : t.fields) {
        put_str(h, f.name);
        h.push_back(static_cast<std::byte>(f.type));
      }
    }
    put_u16(h, static_cast<std::uint16_t>(std::min<std::size_t>(metadata.size(), 0xFFFF)));
    for (std::size_t i = 0; i < metadata.size() && i < 0xFFFF; ++i) {
      put_str(h, metadata[i].first);
      put_str(h, metadata[i].second);
    }
    std::memcpy(h.data(), file_magic, 8);
    std::memcpy(h.data() + 8, &version_major, 2);
    std::memcpy(h.data() + 10, &version_minor, 2);
    const auto size = static_cast<std::uint32_t>(h.size());
    std::memcpy(h.data() + 12, &size, 4);
    const std::uint32_t crc = crc32(h.data(), h.size());  // with the CRC field still zero
    std::memcpy(h.data() + 16, &crc, 4);
    return h;
  }

  void define(NameId id) {
    if (!id) return;
    if (id.value < defined_.size() && defined_[id.value]) return;
    if (id.value >= defined_.size()) defined_.resize(id.value + 1, false);
    defined_[id.value] = true;
    const std::string_view s = name_of(id).substr(0, 0xFFFF);
    const std::size_t at = block_.size();
    block_.resize(at + 2 + 4 + 2 + s.size());
    std::byte* p = block_.data() + at;
    std::memcpy(p, &name_record, 2);
    std::memcpy(p + 2, &id.value, 4);
    const auto len = static_cast<std::uint16_t>(s.size());
    std::memcpy(p + 6, &len, 2);
    std::memcpy(p + 8, s.data(), s.size());
    ++block_records_;
  }

  void write_block(const char (&magic)[4], const std::byte* payload, std::uint32_t bytes,
                   std::uint32_t records) {
    std::byte header[block_header_bytes];
    const std::uint32_t crc = payload ? crc32(payload, bytes) : 0;
    std::memcpy(header, magic, 4);
    std::memcpy(header + 4, &bytes, 4);
    std::memcpy(header + 8, &records, 4);
    std::memcpy(header + 12, &crc, 4);
    put(header, sizeof header);
    if (bytes) put(payload, bytes);
  }

  void put(const void* data, std::size_t n) {
    if (failed_) {
      return;
    }
    if (std::fwrite(data, 1, n, file_) != n) {
      fail();
      return;
    }
    bytes_ += n;
  }

  void fail() {
    if (!failed_)
      pasta::detail::log(fmt::format(
          "writing trace {} failed ({}); recording stops, the {} events written before stay "
          "readable",
          path_, std::strerror(errno), events_));
    failed_ = true;
  }

  std::FILE* file_ = nullptr;
  std::string path_;
  std::vector<std::byte> block_;
  std::uint32_t block_records_ = 0;  // names and events
  std::uint32_t block_events_ = 0;
  std::uint64_t total_records_ = 0;
  std::vector<bool> defined_;  // by NameId: already written to this file
  std::uint64_t events_ = 0, dropped_ = 0, bytes_ = 0;
  bool failed_ = false;
};

}  // namespace pasta::trace
