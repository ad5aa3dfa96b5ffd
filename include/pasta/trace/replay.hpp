// pasta::Replay: the handler that feeds a recorded trace through a pipeline,
// as if the recorded program were running. Every CPU test uses it. A
// damaged trace is replayed up to the damage and the rest is reported.
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/config.hpp>
#include <pasta/core/detail/reflect.hpp>
#include <pasta/core/log.hpp>
#include <pasta/trace/reader.hpp>

namespace pasta {

class Replay {
 public:
  static constexpr std::string_view name = "replay";
  // A trace is replayed whole: a capture range applies when it is recorded.
  static constexpr bool replays_whole = true;

  explicit Replay(const Config& cfg) : path_(cfg.trace_file) {}

  // Replays the whole trace into `sink`, one lock per block, decoding only
  // the event types some tool wants.
  template <class Sink>
  void start(Sink& sink) {
    if (path_.empty()) {
      error_ = "no trace to replay: set PASTA_TRACE or Config::trace_file";
      detail::log(error_);
      return;
    }
    static constexpr auto wanted = [] {
      std::array<bool, detail::event_type_count + 1> w{};
      for_each_type(all_events, [&](auto type) {
        using E = typename decltype(type)::type;
        w[static_cast<std::size_t>(E::kind)] = Sink::template wants<E>();
      });
      return w;
    }();
    auto want = [](EventKind k) {
      const auto i = static_cast<std::size_t>(k);
      return i < wanted.size() && wanted[i];
    };
    std::unique_ptr<trace::TraceReader> reader;
    try {
      reader = std::make_unique<trace::TraceReader>(path_);
      metadata_ = reader->metadata();
      // The batch runs under the pipeline's lock and reports exceptions as
      // analysis failures, so a trace error is carried out of it by hand.
      std::exception_ptr damage;
      for (bool more = true; more;) {
        more = false;
        sink.batch([&](auto& locked) {
          try {
            more = reader->next_block([&](const auto& e) { locked.emit(e); }, want);
          } catch (const trace::TraceError&) {
            damage = std::current_exception();
          }
        });
      }
      if (damage) std::rethrow_exception(damage);
      complete_ = reader->complete();
    } catch (const trace::TraceError& e) {
      error_ = fmt::format("{}: {}", path_, e.what());
      detail::log(fmt::format("{}; replayed the {} events before it", error_,
                              reader ? reader->events() : 0));
    }
    if (reader) events_ = reader->events();
  }

  void stop() {}
  void flush() {}

  // Why the reports cover only part of the trace; empty when it was whole.
  std::string partial_reason() const { return error_; }
  const std::string& error() const { return error_; }
  bool complete() const { return complete_; }
  std::uint64_t events() const { return events_; }
  const trace::Metadata& metadata() const { return metadata_; }

 private:
  std::string path_;
  std::string error_;
  trace::Metadata metadata_;
  std::uint64_t events_ = 0;
  bool complete_ = false;
};

}  // namespace pasta
