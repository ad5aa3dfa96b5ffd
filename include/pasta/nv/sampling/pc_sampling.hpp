// Warp stall samples per instruction for nv::Cupti, through CUPTI's PC
// Sampling API in continuous mode: kernels run concurrently and unreplayed,
// and each SM samples one warp every 2^period cycles, recording its pc and
// why it is not issuing. CUPTI aggregates the samples per (function, pc,
// reason); pasta reads them at synchronisations, at module unloads (a
// reloaded module may reuse pcs) and at the end, and emits StallSample.
#pragma once

#include <cupti_pcsampling.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/events.hpp>
#include <pasta/core/log.hpp>
#include <pasta/core/names.hpp>
#include <pasta/nv/detail/cupti_api.hpp>

namespace pasta::nv::detail {

class PcSampler {
 public:
  static constexpr std::size_t pcs_per_read = 4096;
  static constexpr std::size_t scratch_bytes = 64u << 20;  // about 350K pcs (CUPTI: 1 MB ~ 5500)

  PcSampler() = default;
  PcSampler(const PcSampler&) = delete;
  PcSampler& operator=(const PcSampler&) = delete;

  void set_period(unsigned period) { period_ = period; }
  // With a capture window (core/capture.hpp): contexts sample only between
  // window(true) and window(false), under CUPTI's start/stop control.
  void set_windowed(bool windowed, bool open) {
    windowed_ = windowed;
    open_ = open;
  }

  // The capture window opened or closed: each context starts or stops
  // sampling; what a closing range sampled is read at once, as CUPTI asks.
  template <class Emit>
  void window(bool open, Emit&& emit) {
    std::lock_guard lock(mutex_);
    open_ = open;
    for (auto& owned : contexts_) {
      Context& c = *owned;
      if (c.failed || c.done) continue;
      if (start_stop(c, open) && !open) read(c, c.read_buffer, emit);
    }
  }

  // Before a launch on `ctx`: sampling starts on each context the first
  // time. Cheap after that.
  void enable(CUcontext ctx) {
    if (!ctx) return;
    std::lock_guard lock(mutex_);
    for (const auto& c : contexts_)
      if (c->ctx == ctx) return;
    // CUPTI keeps &c.config_buffer: each context stays where it is.
    Context& c = *contexts_.emplace_back(std::make_unique<Context>());
    c.ctx = ctx;
    c.failed = !start(c);
    if (!c.failed && windowed_ && open_) start_stop(c, true);
  }

  // Reads what CUPTI holds for every context.
  template <class Emit>
  void collect(Emit&& emit) {
    std::lock_guard lock(mutex_);
    for (auto& c : contexts_)
      if (!c->failed) read(*c, c->read_buffer, emit);
  }
  // At a context's end, and at the handler's: the last samples, then off.
  template <class Emit>
  void finish(CUcontext only, Emit&& emit) {
    std::lock_guard lock(mutex_);
    for (auto& owned : contexts_) {
      Context& c = *owned;
      if (c.failed || c.done || (only && c.ctx != only)) continue;
      read(c, c.read_buffer, emit);
      CUpti_PCSamplingDisableParams p{CUpti_PCSamplingDisableParamsSize, nullptr, c.ctx};
      const CUptiResult r = cuptiPCSamplingDisable(&p);
      if (r != CUPTI_SUCCESS) note(fmt::format("cuptiPCSamplingDisable: {}", cupti_error(r)));
      emit_buffer(c, c.config_buffer, emit);  // what Disable copied into the configured buffer
      c.done = true;
    }
  }

  const std::string& error() const { return error_; }
  std::uint64_t samples() const { return samples_; }
  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t non_user() const { return non_user_; }
  std::uint64_t records() const { return records_; }
  bool buffer_full() const { return buffer_full_; }
  std::size_t reasons() const { return reason_names_.size(); }

 private:
  // Plain arrays, as for the configuration in start().
  struct Buffer {
    CUpti_PCSamplingData data{};
    std::unique_ptr<CUpti_PCSamplingPCData[]> pcs;
    std::unique_ptr<CUpti_PCSamplingStallReason[]> reasons;
  };
  struct Context {
    CUcontext ctx = nullptr;
    std::uint32_t device = 0;
    bool failed = false, done = false;
    Buffer read_buffer, config_buffer;
  };

  void note(std::string what) {
    if (error_.empty()) error_ = "CUPTI PC sampling: " + what;
    pasta::detail::log_once("cupti:pcsampling:" + what, "CUPTI PC sampling: " + what);
  }

  void prepare(Buffer& b) {
    const std::size_t n = reason_index_.size();
    b.pcs = std::make_unique<CUpti_PCSamplingPCData[]>(pcs_per_read);
    b.reasons = std::make_unique<CUpti_PCSamplingStallReason[]>(pcs_per_read * n);
    for (std::size_t i = 0; i < pcs_per_read; ++i) {
      b.pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      b.pcs[i].stallReason = b.reasons.get() + i * n;
    }
    b.data = {};
    b.data.size = sizeof(CUpti_PCSamplingData);
    b.data.collectNumPcs = pcs_per_read;
    b.data.pPcData = b.pcs.get();
  }

  bool start(Context& c) {
    cuptiGetDeviceId(c.ctx, &c.device);
    // Enabled first: CUPTI names the stall reasons only on a context that samples.
    CUpti_PCSamplingEnableParams enable{CUpti_PCSamplingEnableParamsSize, nullptr, c.ctx};
    if (const CUptiResult r = cuptiPCSamplingEnable(&enable); r != CUPTI_SUCCESS) {
      note(fmt::format("cuptiPCSamplingEnable: {}", cupti_error(r)));
      return false;
    }
    auto off = [&] {
      CUpti_PCSamplingDisableParams p{CUpti_PCSamplingDisableParamsSize, nullptr, c.ctx};
      cuptiPCSamplingDisable(&p);
      return false;
    };
    if (reason_index_.empty() && !load_reasons(c.ctx)) return off();
    prepare(c.read_buffer);
    prepare(c.config_buffer);
    // A plain array: nvcc 13.0's front end aborts on a std::vector of these.
    CUpti_PCSamplingConfigurationInfo info[8] = {};
    std::size_t count = 0;
    auto add = [&](CUpti_PCSamplingConfigurationAttributeType type) {
      info[count].attributeType = type;
      return &info[count++];
    };
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE)
        ->attributeData.collectionModeData.collectionMode =
        CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT)
        ->attributeData.outputDataFormatData.outputDataFormat =
        CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE)
        ->attributeData.scratchBufferSizeData.scratchBufferSize = scratch_bytes;
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
        ->attributeData.samplingDataBufferData.samplingDataBuffer = &c.config_buffer.data;
    auto& reasons =
        add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON)->attributeData.stallReasonData;
    reasons.stallReasonCount = reason_index_.size();
    reasons.pStallReasonIndex = reason_index_.data();
    if (period_)
      add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
          ->attributeData.samplingPeriodData.samplingPeriod = period_;
    if (windowed_)
      add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL)
          ->attributeData.enableStartStopControlData.enableStartStopControl = 1;

    CUpti_PCSamplingConfigurationInfoParams config{};
    config.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    config.ctx = c.ctx;
    config.numAttributes = count;
    config.pPCSamplingConfigurationInfo = info;
    if (const CUptiResult r = cuptiPCSamplingSetConfigurationAttribute(&config);
        r != CUPTI_SUCCESS) {
      for (std::size_t i = 0; i < count; ++i)
        if (info[i].attributeStatus != CUPTI_SUCCESS)
          note(fmt::format("configuration attribute {}: {}",
                           static_cast<int>(info[i].attributeType),
                           cupti_error(info[i].attributeStatus)));
      note(fmt::format("cuptiPCSamplingSetConfigurationAttribute: {}", cupti_error(r)));
      return off();
    }
    return true;
  }

  bool start_stop(Context& c, bool start) {
    if (start) {
      CUpti_PCSamplingStartParams p{CUpti_PCSamplingStartParamsSize, nullptr, c.ctx};
      if (const CUptiResult r = cuptiPCSamplingStart(&p); r != CUPTI_SUCCESS) {
        note(fmt::format("cuptiPCSamplingStart: {}", cupti_error(r)));
        return false;
      }
    } else {
      CUpti_PCSamplingStopParams p{CUpti_PCSamplingStopParamsSize, nullptr, c.ctx};
      if (const CUptiResult r = cuptiPCSamplingStop(&p); r != CUPTI_SUCCESS) {
        note(fmt::format("cuptiPCSamplingStop: {}", cupti_error(r)));
        return false;
      }
    }
    return true;
  }

  // The device's stall reasons: their indexes and names, short names kept
  // ("long_scoreboard" for smsp__pcsamp_warps_issue_stalled_long_scoreboard).
  bool load_reasons(CUcontext ctx) {
    std::size_t n = 0;
    CUpti_PCSamplingGetNumStallReasonsParams count{CUpti_PCSamplingGetNumStallReasonsParamsSize,
                                                   nullptr, ctx, &n};
    if (const CUptiResult r = cuptiPCSamplingGetNumStallReasons(&count); r != CUPTI_SUCCESS || !n) {
      note(fmt::format("cuptiPCSamplingGetNumStallReasons: {}", cupti_error(r)));
      return false;
    }
    std::vector<std::uint32_t> index(n);
    std::vector<std::vector<char>> storage(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE));
    std::vector<char*> names(n);
    for (std::size_t i = 0; i < n; ++i) names[i] = storage[i].data();
    CUpti_PCSamplingGetStallReasonsParams get{
        CUpti_PCSamplingGetStallReasonsParamsSize, nullptr, ctx, n, index.data(), names.data()};
    if (const CUptiResult r = cuptiPCSamplingGetStallReasons(&get); r != CUPTI_SUCCESS) {
      note(fmt::format("cuptiPCSamplingGetStallReasons: {}", cupti_error(r)));
      return false;
    }
    reason_index_ = index;
    for (std::size_t i = 0; i < n; ++i) {
      std::string_view name(names[i]);
      for (std::string_view prefix : {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"})
        if (name.starts_with(prefix)) {
          name.remove_prefix(prefix.size());
          break;
        }
      if (index[i] >= reason_names_.size()) reason_names_.resize(index[i] + 1);
      reason_names_[index[i]] = intern(name);
    }
    return true;
  }

  template <class Emit>
  void read(Context& c, Buffer& b, Emit& emit) {
    for (int round = 0; round < 1 << 20; ++round) {
      CUpti_PCSamplingGetDataParams p{CUpti_PCSamplingGetDataParamsSize, nullptr, c.ctx, &b.data};
      const CUptiResult r = cuptiPCSamplingGetData(&p);
      if (r == CUPTI_ERROR_OUT_OF_MEMORY) buffer_full_ = true;
      if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY) {
        note(fmt::format("cuptiPCSamplingGetData: {}", cupti_error(r)));
        return;
      }
      emit_buffer(c, b, emit);
      if (b.data.remainingNumPcs == 0) return;
    }
  }

  template <class Emit>
  void emit_buffer(Context& c, Buffer& b, Emit& emit) {
    samples_ += b.data.totalSamples;
    dropped_ += b.data.droppedSamples;
    non_user_ += b.data.nonUsrKernelsTotalSamples;
    if (b.data.hardwareBufferFull) buffer_full_ = true;
    for (std::size_t i = 0; i < b.data.totalNumPcs && i < pcs_per_read; ++i) {
      CUpti_PCSamplingPCData& pc = b.pcs[i];
      const NameId function = pc.functionName ? intern(pc.functionName) : NameId{};
      ++records_;
      for (std::size_t k = 0; k < pc.stallReasonCount && k < reason_index_.size(); ++k) {
        const auto& s = pc.stallReason[k];
        if (!s.samples) continue;
        emit(StallSample{.function = function,
                         .pc = pc.pcOffset,
                         .reason = s.pcSamplingStallReasonIndex < reason_names_.size()
                                       ? reason_names_[s.pcSamplingStallReasonIndex]
                                       : intern("unknown"),
                         .samples = s.samples,
                         .device = c.device});
      }
      // The name may be shared with other records, activity records
      // included (CUPTI says: free it after all of them): kept, one per kernel.
      pc.functionName = nullptr;
    }
    b.data.totalNumPcs = 0;
    b.data.totalSamples = b.data.droppedSamples = b.data.nonUsrKernelsTotalSamples = 0;
  }

  std::mutex mutex_;
  bool windowed_ = false, open_ = true;
  unsigned period_ = 0;
  std::vector<std::unique_ptr<Context>> contexts_;
  std::vector<std::uint32_t> reason_index_;
  std::vector<NameId> reason_names_;  // by CUPTI's reason index
  std::string error_;
  std::uint64_t samples_ = 0, dropped_ = 0, non_user_ = 0, records_ = 0;
  bool buffer_full_ = false;
};

}  // namespace pasta::nv::detail
