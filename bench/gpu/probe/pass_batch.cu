// A probe for the cost of a user-replay pass under CUPTI's Range Profiler,
// and whether several launches can share one: N kernels (even: 2 MB read and
// written, odd: 16 MB updated in place), each measured with pasta's metric
// set (its passes, under user replay) three ways:
//   launch      as RangeCounters::run_passes does: per launch, its memory
//               saved, then per pass restored, L2 flushed, profiling started,
//               the kernel launched, profiling stopped; decoded after each
//               launch
//   batch       every launch's memory saved first; then per pass profiling
//               started once, and for each launch its memory restored, L2
//               flushed and the kernel launched, auto ranges (the flush
//               kernel's range passed over)
//   batch-noflush  batch without the L2 flush (a range a launch)
//   batch-user  batch with user ranges: one range pushed and popped
//               around each kernel, the restore and the flush outside (a
//               fresh range-profiler object)
//   batch-ctxflush  batch with the flush in a CUDA context of its own on the
//               same device, ordered by an event each way: the profiled
//               context's auto ranges then hold the launches alone
// It prints the time of each call and how many ranges each image holds, and
// every metric's largest and mean signed difference between `launch` and the other modes,
// over the kernels (`launch-again`, launch run twice, is the floor). The second argument
// lists the modes run after `launch` (all by default). Build and run on the GPU machine:
//   nvcc -std=c++17 -arch=sm_90 -o /tmp/pass_batch bench/gpu/probe/pass_batch.cu \
//     -I$CUPTI_INC -L$CUPTI_LIB -lcupti -lcuda -Xlinker -rpath=$CUPTI_LIB && /tmp/pass_batch 24
// Measured on one H200 (2026-11-29, driver 580.159.04, CUDA 13.0's CUPTI; 24 launches, 9
// passes): `launch` 125-129 ms a launch, its 216 starts 8.7-9.5 ms each and its stops 3.3-3.6
// ms; `batch` 28.5-29.3 ms a launch, 9 starts of 8.3-8.5 ms and stops of 5.7-6.2 ms, 48 ranges
// (each flush and each kernel; a copy adds none); `batch-noflush` 18.9 ms, 24 ranges. So a
// start costs ~9 ms whatever it covers and each range ~1.2 ms more. `batch` against `launch`
// is within `launch-again`'s spread on every metric but SM throughput: instruction and FFMA
// counts equal, DRAM bytes read within 0.2% (0.0%), L2 sectors within 1.2-2.8% (1.3-3.5%),
// warps active within 8.0% (7.2%); SM throughput within 17.2% (7.3%) on these 2 MB kernels of
// a few microseconds; DRAM bytes written, a few KB here, differ by up to 100% in both.
// `batch-noflush` differs as the L2 it leaves does (hit counts 41%). `batch-user` (the next
// session, `/tmp/pass_batch 24 launch-again,batch,batch-user`, with the range names kept
// alive until the image is decoded: the first try had passed a name that died at once,
// and crashed): 24 ranges, 26.3 ms a launch against batch's 28.5, but each start 29.3 ms
// (batch 8.8) and the throughputs wrong: DRAM and SM throughput 58% under `launch` on
// average (batch: -1.0% and +1.3%, launch-again -1.3% and +0.8%), as a user range's
// elapsed cycles run from the push to the pop, the host's launch between them included.
// Counts (instructions, bytes, sectors) agree. So user ranges cannot keep the flush out of
// the ranges; batches keep auto ranges.
// batch-ctxflush (2026-11-30, `/tmp/pass_batch 24 launch-again,batch,batch-noflush,batch-ctxflush`,
// the same H200): 24 ranges and every metric as close to `launch` as batch's (L2 lookup hits
// within 3.4%, DRAM bytes written 0), but 30.9 ms a launch against batch's 30.1 and
// batch-noflush's 19.5: the flush costs its ~1.2 ms a pass in the other context too. The
// price is a kernel the GPU runs while the profiler is on, whatever range or context it is
// in, not the range; so the restore of a batch member's variables goes in the flush kernel's
// launch (L2Flush), one kernel fewer a member and pass, rather than in a context of its own.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "range_setup.hpp"

#define CK2(x)                                    \
  do {                                            \
    CUresult r_ = (x);                            \
    if (r_ != CUDA_SUCCESS) {                     \
      std::printf("FAIL %s: %d\n", #x, (int)r_); \
      std::exit(1);                               \
    }                                             \
  } while (0)

// pasta's metric set.
static const char** const names = default_names;
constexpr int nm = sizeof(default_names) / sizeof(default_names[0]);

__global__ void tiny(const float* a, float* c, size_t n) {
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] * 2.f + 1.f;
}
__global__ void inplace(float* c, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    c[i] = c[i] * 1.0001f + 1.f;
}

struct Times {
  double start = 0, stop = 0, decode = 0, copy = 0, total = 0;
  int starts = 0;
};

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 24;
  // The modes to run after `launch` (the reference), by name; all by default.
  const std::string wanted =
      argc > 2 ? argv[2] : "launch-again,batch,batch-noflush,batch-user,batch-ctxflush";
  const auto runs = [&](const char* mode) {
    return ("," + wanted + ",").find("," + std::string(mode) + ",") != std::string::npos;
  };
  const size_t small = 512u << 10, large = 4u << 20;  // floats: 2 MB, 16 MB
  std::vector<float*> in(n), out(n), backup(n);
  std::vector<size_t> words(n);
  for (int i = 0; i < n; ++i) {
    words[i] = i % 2 ? large : small;
    CR(cudaMalloc(&in[i], words[i] * 4));
    CR(cudaMalloc(&out[i], words[i] * 4));
    CR(cudaMalloc(&backup[i], words[i] * 4));
    CR(cudaMemset(in[i], 0x3c, words[i] * 4));
    CR(cudaMemset(out[i], 0x3d, words[i] * 4));
  }
  int l2 = 0;
  CR(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const size_t fwords = 2ull * l2 / 16;
  int4* fb;
  CR(cudaMalloc(&fb, fwords * 16 + 16));
  CR(cudaMemset(fb, 0, fwords * 16 + 16));
  int* sink = (int*)(fb + fwords);
  auto launch = [&](int i) {
    if (i % 2)
      inplace<<<1056, 256>>>(out[i], words[i]);
    else
      tiny<<<(unsigned)(words[i] / 256), 256>>>(in[i], out[i], words[i]);
  };
  auto doflush = [&] { flush<<<1056, 256>>>(fb, fwords, sink); };
  // batch-ctxflush: the flush in a context of its own on the same device,
  // ordered with the measured context's stream by an event each way.
  CUcontext own = nullptr, measured = nullptr;
  CUevent to_flush = nullptr, flushed = nullptr;
  int4* ofb = nullptr;
  int* osink = nullptr;
  cuCtxGetCurrent(&measured);
  auto setup_own = [&] {
    CUdevice dev;
    cuCtxGetDevice(&dev);
    CK2(cuCtxCreate(&own, nullptr, 0, dev));  // current now
    CR(cudaMalloc(&ofb, fwords * 16 + 16));
    CR(cudaMemset(ofb, 0, fwords * 16 + 16));
    osink = (int*)(ofb + fwords);
    CK2(cuEventCreate(&flushed, CU_EVENT_DISABLE_TIMING));
    flush<<<1056, 256>>>(ofb, fwords, osink);  // its module loaded here
    CR(cudaDeviceSynchronize());
    CK2(cuCtxSetCurrent(measured));
    CK2(cuEventCreate(&to_flush, CU_EVENT_DISABLE_TIMING));
  };
  auto ctxflush = [&] {
    CK2(cuEventRecord(to_flush, nullptr));
    CK2(cuCtxSetCurrent(own));
    CK2(cuStreamWaitEvent(nullptr, to_flush, 0));
    flush<<<1056, 256>>>(ofb, fwords, osink);
    CK2(cuEventRecord(flushed, nullptr));
    CK2(cuCtxSetCurrent(measured));
    CK2(cuStreamWaitEvent(nullptr, flushed, 0));
  };
  auto copy = [&](int i, bool save) {
    CR(cudaMemcpyAsync(save ? backup[i] : out[i], save ? out[i] : backup[i], words[i] * 4,
                       cudaMemcpyDeviceToDevice));
  };
  // warm: module loaded, pages touched
  for (int i = 0; i < n; ++i) launch(i);
  doflush();
  CR(cudaDeviceSynchronize());

  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  const HostConfig hc = host_config(ctx, names, nm);
  std::printf("chip %s, %d metrics in %zu passes, %d launches\n", hc.chip.c_str(), nm, hc.passes,
              n);

  auto en = prm<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
  en.ctx = ctx;
  CK(cuptiRangeProfilerEnable(&en));
  CUpti_RangeProfiler_Object* obj = en.pRangeProfilerObject;
  const size_t max_ranges = 2 * size_t(n) + 8;
  auto ds = prm<CUpti_RangeProfiler_GetCounterDataSize_Params>(
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
  ds.pRangeProfilerObject = obj;
  ds.pMetricNames = names;
  ds.numMetrics = nm;
  ds.maxNumOfRanges = max_ranges;
  ds.maxNumRangeTreeNodes = max_ranges;
  CK(cuptiRangeProfilerGetCounterDataSize(&ds));
  std::vector<uint8_t> data(ds.counterDataSize);

  auto arm_image = [&](bool user_range) {
    arm(obj, hc, data, user_range ? CUPTI_UserRange : CUPTI_AutoRange, CUPTI_UserReplay,
        max_ranges);
  };
  Times t;
  auto start = [&] {
    auto s = Clock::now();
    auto st = prm<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    st.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerStart(&st));
    t.start += ms_since(s);
    ++t.starts;
  };
  auto stop = [&] {
    auto s = Clock::now();
    auto sp = prm<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    sp.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerStop(&sp));
    t.stop += ms_since(s);
    return sp.isAllPassSubmitted != 0;
  };
  auto decoded = [&] {
    auto s = Clock::now();
    const size_t ranges = decode(obj, data).ranges;
    t.decode += ms_since(s);
    return ranges;
  };
  auto values = [&](size_t range) { return evaluate(hc, data, names, nm, range); };
  auto timed_copy = [&](int i, bool save) {
    auto s = Clock::now();
    copy(i, save);
    t.copy += ms_since(s);
  };
  std::vector<std::vector<std::vector<double>>> results;  // [mode][launch][metric]
  const char* modes[] = {"launch",     "launch-again", "batch",
                         "batch-noflush", "batch-user", "batch-ctxflush"};
  // Each metric: the largest relative difference from `launch` over the launches, and the
  // mean signed one (a bias of one side shows there, spread does not).
  auto compare = [&](int mode, const std::vector<std::vector<double>>& got) {
    std::printf(
        "%s against launch, per metric: largest relative difference (launch, value), mean "
        "signed difference:\n",
        modes[mode]);
    for (int m = 0; m < nm; ++m) {
      double worst = 0, sum = 0;
      int at = 0;
      for (int i = 0; i < n; ++i) {
        const double a = results[0][i][m], b = got[i][m];
        const double scale = std::max({std::fabs(a), std::fabs(b), 1e-9});
        const double d = std::fabs(a - b) / scale;
        sum += (b - a) / scale;
        if (d > worst) worst = d, at = i;
      }
      std::printf("  %-66s %6.1f%%  (%d: %.4g vs %.4g)  %+6.1f%%\n", names[m], 100 * worst, at,
                  results[0][at][m], got[at][m], 100 * sum / n);
    }
    std::fflush(stdout);
  };
  // Range names outlive the passes: CUPTI may read them until the image is decoded.
  std::vector<std::string> range_names;
  for (int i = 0; i < n; ++i) range_names.push_back("launch " + std::to_string(i));
  auto step = [](const char* what) {
    std::printf("  batch-user: %s\n", what);
    std::fflush(stdout);
  };
  for (int mode = 0; mode < 6; ++mode) {
    if (mode && !runs(modes[mode])) continue;
    if (mode == 5) setup_own();
    if (mode == 4) {  // a fresh object for user ranges
      step("disabling the auto-range object");
      auto off =
          prm<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      off.pRangeProfilerObject = obj;
      CK(cuptiRangeProfilerDisable(&off));
      step("enabling a fresh object");
      auto on =
          prm<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
      on.ctx = ctx;
      CK(cuptiRangeProfilerEnable(&on));
      obj = on.pRangeProfilerObject;
      step("sizing its image");
      ds.pRangeProfilerObject = obj;
      CK(cuptiRangeProfilerGetCounterDataSize(&ds));
      data.assign(ds.counterDataSize, 0);
    }
    t = Times{};
    std::vector<std::vector<double>> got;
    const auto t0 = Clock::now();
    size_t ranges = 0, passes = 0;
    if (mode < 2) {
      arm_image(false);  // one image across the launches, decoded after each, as pasta does
      for (int i = 0; i < n; ++i) {
        timed_copy(i, true);
        for (size_t pass = 0;; ++pass) {
          if (pass) timed_copy(i, false);
          doflush();
          CR(cudaDeviceSynchronize());
          start();
          launch(i);
          const bool last = stop();
          passes = pass + 1;
          if (last) break;
        }
        timed_copy(i, false);
        CR(cudaDeviceSynchronize());
        ranges = decoded();
        got.push_back(values(ranges - 1));
      }
    } else {
      const bool user_range = mode == 4, flushing = mode != 3 && mode != 5;
      if (user_range) step("configuring user ranges");
      arm_image(user_range);
      if (user_range) step("configured");
      for (int i = 0; i < n; ++i) timed_copy(i, true);
      for (size_t pass = 0;; ++pass) {
        CR(cudaDeviceSynchronize());
        start();
        for (int i = 0; i < n; ++i) {
          if (pass) timed_copy(i, false);
          if (flushing) doflush();
          if (mode == 5) ctxflush();
          if (user_range) {
            auto pr = prm<CUpti_RangeProfiler_PushRange_Params>(
                CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE);
            pr.pRangeProfilerObject = obj;
            pr.pRangeName = range_names[i].c_str();
            if (!pass && !i) step("pushing the first range");
            CK(cuptiRangeProfilerPushRange(&pr));
          }
          launch(i);
          if (user_range) {
            auto pp = prm<CUpti_RangeProfiler_PopRange_Params>(
                CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
            pp.pRangeProfilerObject = obj;
            CK(cuptiRangeProfilerPopRange(&pp));
          }
        }
        const bool last = stop();
        passes = pass + 1;
        if (last) break;
      }
      for (int i = 0; i < n; ++i) timed_copy(i, false);
      CR(cudaDeviceSynchronize());
      if (user_range) step("decoding");
      ranges = decoded();
      // auto ranges: flush, kernel per launch (a copy adds none, or the count says so)
      for (int i = 0; i < n; ++i)
        got.push_back(values(ranges == 2 * size_t(n) ? 2 * size_t(i) + 1 : size_t(i)));
    }
    t.total = ms_since(t0);
    std::printf(
        "%-10s %zu passes, %zu ranges in the last image; total %.1f ms = %.2f ms a launch; "
        "%d starts %.2f ms each, stops %.2f ms each, decode %.1f ms, copies enqueued %.1f ms\n",
        modes[mode], passes, ranges, t.total, t.total / n, t.starts, t.start / t.starts,
        t.stop / t.starts, t.decode, t.copy);
    std::fflush(stdout);
    if (!mode) results.push_back(got);
    if (mode) compare(mode, got);
  }
  return 0;
}
