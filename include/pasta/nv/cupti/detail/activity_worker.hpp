// nv::Cupti's activity records: CUPTI's buffers, handed to pasta's worker
// thread and processed there in batches, off the application's threads
// (ActivityWorker); each record turned into pasta's events (ActivityRecords).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <pasta/core/detail/self_time.hpp>
#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/nv/cupti/detail/activity.hpp>
#include <pasta/nv/cupti/detail/buffer_pool.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/cupti/detail/flush_schedule.hpp>
#include <pasta/nv/cupti/detail/graph_callbacks.hpp>
#include <pasta/nv/cupti/detail/graph_ops.hpp>
#include <pasta/nv/cupti/detail/op_tags.hpp>

namespace pasta::nv::detail {

// nv::Cupti::Stats.
struct CuptiStats {
  std::atomic<std::uint64_t> records{0};    // activity records processed
  std::atomic<std::uint64_t> dropped{0};    // records CUPTI reports it dropped
  std::atomic<std::uint64_t> refused{0};    // buffers refused at the limit
  std::atomic<std::uint64_t> buffers{0};    // buffers processed
  std::atomic<std::uint64_t> callbacks{0};  // API callbacks handled
  std::atomic<std::uint64_t> flushes{0};    // flushes pasta asked CUPTI for while running
  std::atomic<std::uint64_t> flush_ns{0};   // time spent in them
  std::atomic<std::uint64_t> detaches{0};   // CUPTI detached at a window's close ...
  std::atomic<std::uint64_t> detach_ns_max{0};  // ... the longest it took
  std::atomic<std::uint64_t> missed_windows{0};  // stops seen with no window open, after one
  // PASTA_SELF_TIME: API callbacks (program threads); activity buffers and the
  // program threads' queued events (the worker).
  pasta::detail::SelfTime callback_time, buffer_time, settle_time;
};

// The correlation ids of pasta's own API calls during replays, so their
// activity records (the relaunched kernels, the memory copies) are dropped.
class OwnCalls {
 public:
  void add(std::uint32_t id) {
    std::lock_guard lock(mutex_);
    ids_.insert(id);
    size_.store(ids_.size(), std::memory_order_release);
  }
  bool take(std::uint32_t id) {
    if (size_.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard lock(mutex_);
    const bool own = ids_.erase(id) > 0;
    size_.store(ids_.size(), std::memory_order_release);
    return own;
  }

 private:
  std::mutex mutex_;
  std::unordered_set<std::uint32_t> ids_;
  std::atomic<std::size_t> size_{0};
};

// A buffer's records as events, in one batch of the sink. Touched only
// inside the sink's batch, which serialises buffer processing.
class ActivityRecords {
 public:
  // Kernel records are KernelLaunch too, unless launch callbacks give them.
  void set_host_launches(bool on) { host_launches_ = on; }
  OwnCalls& own_calls() { return own_calls_; }
  // Device work is tagged with operators from now on (tag_with_op), and
  // that of graph launches with the operator of their capture (graph_ops()).
  void enable_op_tags(bool verbose = false) {
    op_of_.enable();
    graph_tags_ = true;
    verbose_ = verbose;
  }
  // The graph nodes' operators; the graph callbacks write them. Any thread.
  GraphOps& graph_ops() { return graph_ops_; }
  // In a launch, copy or memset callback: the call's device record will
  // carry the calling thread's operator. Any thread.
  void tag_with_op(std::uint32_t correlation) {
    if (const std::uint64_t op = current_op()) op_of_.add(correlation, op);
  }

  // The records processed.
  template <class Sink>
  std::uint64_t process(Sink& sink, std::uint8_t* buffer, std::size_t valid);

 private:
  NameId kernel_name(const char* name) {
    if (!name) return {};
    auto [it, fresh] = kernel_names_.try_emplace(name);
    if (fresh) it->second = intern(name);
    return it->second;
  }
  // A device activity with the operator its launch was tagged with (0 if none).
  template <class E>
  E tagged(E e) const {
    e.op = op_of_.find(static_cast<std::uint32_t>(e.correlation));
    return e;
  }
  // ... and, run by a graph launch (graph node `node`, 0 if not), with the
  // operator of the node's capture where one is known.
  template <class E>
  E tagged(E e, std::uint32_t graph, std::uint64_t node) {
    e = tagged(e);
    if (node == 0 || !graph_tags_) return e;
    const std::uint64_t launch_op = e.op;
    e.op = graph_ops_.charge(node, launch_op);
    if (verbose_) log_graph_record(E::type_name, graph, node, launch_op, e.op);
    return e;
  }
  std::uint32_t device_of_context(std::uint32_t context) const {
    auto it = context_device_.find(context);
    return it == context_device_.end() ? 0 : it->second;
  }

  bool host_launches_ = false;
  OwnCalls own_calls_;
  std::unordered_map<const char*, NameId> kernel_names_;
  const NameId l2_flush_name_ = intern("pasta_l2_flush");
  const NameId copy_spans_name_ = intern("pasta_copy_spans");
  std::unordered_map<std::uint32_t, std::uint32_t> context_device_;
  OpCorrelations op_of_;  // also written by the threads that call CUDA: atomics
  bool graph_tags_ = false, verbose_ = false;
  GraphOps graph_ops_;  // written by the graph callbacks: locked
};

// pasta's worker thread: processes the buffers CUPTI completed (outside
// CUPTI's own locks, so launches never wait for pasta's tools) and asks
// CUPTI for a flush after a synchronisation (at most every min_flush_gap)
// and every flush_period.
class ActivityWorker {
 public:
  static constexpr std::size_t buffer_bytes = 8u << 20;
  static constexpr std::size_t max_buffers = 64;  // at most 512 MiB of records in flight
  static constexpr std::size_t spare_buffers = 4;  // kept zeroed for reuse (buffer_pool.hpp)
  static constexpr auto min_flush_gap = std::chrono::milliseconds(100);
  // What a filled buffer goes to, on the worker or the thread that drains.
  using Process = void (*)(void* owner, std::uint8_t* buffer, std::size_t valid);
  // What the worker also does at each wake-up (every wake_period at least).
  using Wake = void (*)(void* owner);
  using Attach = bool (*)(void* owner);  // true: CUPTI attached
  static constexpr auto wake_period = std::chrono::milliseconds(10);

  // flush_period 0: flush only when asked and at exit.
  ActivityWorker(CuptiStats& stats, std::chrono::milliseconds flush_period)
      : stats_(stats), flush_period_(flush_period) {}
  ~ActivityWorker() { stop_thread(); }
  ActivityWorker(const ActivityWorker&) = delete;
  ActivityWorker& operator=(const ActivityWorker&) = delete;

  // CUPTI's buffers from now on, each processed by `process(owner, ...)`;
  // pooled: reused and zeroed by pasta's worker (PASTA_CUPTI_BUFFER_POOL),
  // else allocated for each request and zeroed by CUPTI there.
  void listen(void* owner, Process process, bool pooled) {
    owner_ = owner;
    process_ = process;
    // CUPTI zeroes a buffer on the thread that asked for it unless told
    // they come zeroed; without the attribute the pool only saves faults.
    std::uint8_t zeroed = 1;
    std::size_t size = sizeof zeroed;
    pooled_ = pooled;
    if (pooled_)
      cupti_ok(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size,
                                         &zeroed),
               "telling CUPTI its activity buffers come zeroed");
    current() = this;
    cupti_ok(cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed),
             "registering activity buffers");
  }
  // Before start_thread: `wake(owner)` at every wake-up of the worker, which
  // then wakes every wake_period.
  void on_wake(Wake wake) { wake_ = wake; }
  void start_thread() {
    {
      std::lock_guard lock(worker_mutex_);
      schedule_.emplace(min_flush_gap, flush_period_,
                        wake_ ? FlushSchedule::clock::duration(wake_period)
                              : FlushSchedule::clock::duration(min_flush_gap),
                        FlushSchedule::clock::now());
    }
    worker_ = std::thread([this] {
      if (pooled_) pool_.prepare();  // the spares' pages, off the program's threads
      worker_loop();
    });
  }
  void stop_thread() {
    if (!worker_.joinable()) return;
    {
      std::lock_guard lock(worker_mutex_);
      stopping_ = true;
    }
    worker_cv_.notify_one();
    worker_.join();
  }
  // CUPTI's buffers are not pasta's any more.
  void forget() {
    ActivityWorker* self = this;
    current().compare_exchange_strong(self, nullptr);
  }
  void request_flush() {
    {
      std::lock_guard lock(worker_mutex_);
      if (!schedule_) return;  // no worker
      schedule_->request();
    }
    worker_cv_.notify_one();
  }
  const BufferPool& pool() const { return pool_; }

  // CUPTI attached or detached (nv::Cupti detaches it between capture
  // windows). Every flush pasta asks for goes through here, so none reaches
  // a detached CUPTI: any CUPTI call would attach it again, bare.
  bool flush_all(std::uint32_t flags) {
    std::lock_guard lock(cupti_mutex_);
    if (detached_) return false;
    cuptiActivityFlushAll(flags);
    return true;
  }
  bool detached() const {
    std::lock_guard lock(cupti_mutex_);
    return detached_;
  }
  // CUPTI detached (cuptiFinalize), at an API call's exit: there, CUPTI
  // waits for the device work it traces and hands every buffer back itself
  // (a forced flush first would hand back records of work still running).
  void finalize() {
    std::lock_guard lock(cupti_mutex_);
    if (detached_) return;
    cuptiActivityFlushAll(0);  // the completed buffers first
    cuptiFinalize();
    detached_ = true;
  }
  // After finalize: the worker calls `attach(owner)`, which subscribes
  // again, `settle` from now, and says whether it did (CUPTI stays
  // detached, and flushes held back, if not). The thread that detached
  // CUPTI is inside CUPTI's callback, and CUPTI's code after the callback
  // must not meet a CUPTI attached again (on an H200, it crashed when it
  // did); so CUPTI is attached by another thread after a pause, as in
  // CUPTI's own sample.
  // False if no worker runs.
  bool attach_after(Attach attach, std::chrono::milliseconds settle) {
    {
      std::lock_guard lock(worker_mutex_);
      if (!schedule_) return false;
      attach_ = attach;
      attach_at_ = FlushSchedule::clock::now() + settle;
    }
    worker_cv_.notify_one();
    return true;
  }
  // The buffers CUPTI completed, processed on this thread.
  void drain() {
    std::vector<Filled> work;
    {
      std::lock_guard lock(worker_mutex_);
      work.swap(filled_);
    }
    process_all(work);
  }

 private:
  static std::atomic<ActivityWorker*>& current() {
    static std::atomic<ActivityWorker*> c{nullptr};
    return c;
  }
  static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                        std::size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer,
                                        std::size_t size, std::size_t valid);
  void worker_loop() {
    using clock = FlushSchedule::clock;
    std::unique_lock lock(worker_mutex_);
    FlushSchedule& schedule = *schedule_;
    while (!stopping_) {
      // Asleep until a buffer comes, a requested flush is due, or the
      // schedule's next wake-up (every wake_period where wake_ is set).
      const auto until = attach_ ? std::min(schedule.deadline(clock::now()), attach_at_)
                                 : schedule.deadline(clock::now());
      worker_cv_.wait_until(lock, until, [&] {
        return stopping_ || !filled_.empty() || (attach_ && clock::now() >= attach_at_) ||
               schedule.due(clock::now());
      });
      if (stopping_) break;
      std::vector<Filled> work;
      work.swap(filled_);
      const bool flush = schedule.take(clock::now());
      const Attach attach = attach_ && clock::now() >= attach_at_
                                ? std::exchange(attach_, nullptr)
                                : nullptr;
      lock.unlock();
      if (attach && attach(owner_)) {
        std::lock_guard attached(cupti_mutex_);
        detached_ = false;
      }
      process_all(work);
      if (wake_) wake_(owner_);
      if (flush) {
        const auto t0 = clock::now();
        flush_all(0);  // completed buffers come back through buffer_completed
        const auto t1 = clock::now();
        stats_.flushes.fetch_add(1, std::memory_order_relaxed);
        stats_.flush_ns.fetch_add(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count(),
            std::memory_order_relaxed);
        lock.lock();
        schedule.flushed(t1);
      } else {
        lock.lock();
      }
    }
  }
  struct Filled {
    std::uint8_t* buffer;
    std::size_t valid;
  };
  void process_all(std::vector<Filled>& work) {
    for (const Filled& f : work) {
      try {
        if (f.valid) process_(owner_, f.buffer, f.valid);
      } catch (...) {
        pasta::detail::log_once("cupti:buffer", "processing a CUPTI activity buffer failed");
      }
      release(f.buffer);
      outstanding_.fetch_sub(1);
      stats_.buffers.fetch_add(1, std::memory_order_relaxed);
    }
    work.clear();
  }
  void release(std::uint8_t* buffer) {
    if (pooled_)
      pool_.give_back(buffer);
    else
      std::free(buffer);
  }

  CuptiStats& stats_;
  std::chrono::milliseconds flush_period_;
  void* owner_ = nullptr;
  Process process_ = nullptr;
  Wake wake_ = nullptr;
  std::atomic<std::size_t> outstanding_{0};
  bool pooled_ = false;
  BufferPool pool_{buffer_bytes, spare_buffers};
  std::thread worker_;
  mutable std::mutex cupti_mutex_;  // guards detached_; held across flushes and the detach
  bool detached_ = false;
  Attach attach_ = nullptr;  // CUPTI to attach again, on the worker, at attach_at_
  FlushSchedule::clock::time_point attach_at_{};
  std::mutex worker_mutex_;  // guards filled_, schedule_, stopping_, attach_
  std::condition_variable worker_cv_;
  std::vector<Filled> filled_;
  std::optional<FlushSchedule> schedule_;  // from start_thread on
  bool stopping_ = false;
};

template <class Sink>
std::uint64_t ActivityRecords::process(Sink& sink, std::uint8_t* buffer, std::size_t valid) {
  std::uint64_t n = 0;
  sink.batch([&](auto& s) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      ++n;
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          const auto& k = *reinterpret_cast<const CUpti_ActivityKernel10*>(record);
          if (own_calls_.take(k.correlationId)) break;  // a replay pass
          const NameId name = kernel_name(k.name);
          if (name == l2_flush_name_ || name == copy_spans_name_)
            break;  // pasta's own (hardware counters)
          context_device_[k.contextId] = k.deviceId;
          if constexpr (Sink::template wants<KernelLaunch>())
            if (!host_launches_) s.emit(kernel_launch(k, name));
          if constexpr (Sink::template wants<KernelComplete>())
            s.emit(tagged(kernel_complete(k, name), k.graphId, k.graphNodeId));
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
          if (own_calls_.take(m.correlationId)) break;  // a replay's save or restore
          if constexpr (Sink::template wants<Memcpy>())
            s.emit(tagged(memcpy_of(m), m.graphId, m.graphNodeId));
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY2:
          if constexpr (Sink::template wants<Memcpy>()) {
            const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
            s.emit(tagged(memcpy_of(m), m.graphId, m.graphNodeId));
          }
          break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
          if constexpr (Sink::template wants<Memset>()) {
            const auto& m = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
            s.emit(tagged(memset_of(m), m.graphId, m.graphNodeId));
          }
          break;
        case CUPTI_ACTIVITY_KIND_MEMORY2: {
          const auto& m = *reinterpret_cast<const CUpti_ActivityMemory4*>(record);
          if (is_allocation(m)) {
            if constexpr (Sink::template wants<MemAlloc>()) s.emit(mem_alloc(m));
          } else {
            if constexpr (Sink::template wants<MemFree>()) s.emit(mem_free(m));
          }
          break;
        }
        case CUPTI_ACTIVITY_KIND_CONTEXT: {
          const auto& c = *reinterpret_cast<const CUpti_ActivityContext3*>(record);
          context_device_[c.contextId] = c.deviceId;
          break;
        }
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
          if constexpr (Sink::template wants<Synchronize>()) {
            const auto& y = *reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
            s.emit(synchronize_of(y, device_of_context(y.contextId)));
          }
          break;
        case CUPTI_ACTIVITY_KIND_DEVICE:
          if constexpr (Sink::template wants<DeviceInfo>()) {
            const auto& d = *reinterpret_cast<const CUpti_ActivityDevice5*>(record);
            s.emit(device_info(d, intern(d.name ? d.name : "")));
          }
          break;
        default:
          break;
      }
    }
  });
  return n;
}

inline void CUPTIAPI ActivityWorker::buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                                      std::size_t* max_records) {
  *max_records = 0;
  ActivityWorker* self = current().load();
  if (!self || self->outstanding_.load() >= max_buffers) {
    *buffer = nullptr;
    *size = 0;
    if (self) self->stats_.refused.fetch_add(1);
    return;
  }
  *buffer = self->pooled_ ? self->pool_.take()
                         : static_cast<std::uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  if (*buffer) self->outstanding_.fetch_add(1);
}

inline void CUPTIAPI ActivityWorker::buffer_completed(CUcontext ctx, std::uint32_t stream,
                                                      std::uint8_t* buffer, std::size_t,
                                                      std::size_t valid) {
  ActivityWorker* self = current().load();
  if (!self || !buffer) {
    std::free(buffer);
    return;
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
    self->stats_.dropped.fetch_add(dropped);
  // Queued, not processed here: CUPTI may hold its locks while it calls us.
  {
    std::lock_guard lock(self->worker_mutex_);
    self->filled_.push_back({buffer, valid});
  }
  self->worker_cv_.notify_one();
}

}  // namespace pasta::nv::detail
