// A probe for replaying kernels in pasta itself (CUPTI's user replay, what
// nv::detail::RangeCounters does by default) rather than in CUPTI (its kernel
// replay, PASTA_COUNTER_REPLAY=cupti): CUPTI's Range Profiler on six
// kernels (0 `big`, an in-place stream over 256 MB; 1 `small`, 4 MB that stay
// in L2; 2 `wonly`, 256 KB written and never read; 3 a cuBLAS SGEMM writing
// 1.5 MB; 4 `one`, one block reading 64 KB; 5 `touch`, a 256 MB stream that
// writes one word per 4 KB of a 4 MB buffer; 6 `idle`, one block spinning
// ~100 us; 7 `slow`, one block of 64 threads summing 4 MB), each measured 3 times
// (PROBE_KERNELS picks some, e.g. "45"; PROBE_METRICS replaces pasta's
// metrics, or adds to them when it starts with "+"), with
//   kernel          CUPTI's kernel replay (L2 flushed before the launch)
//   kernel-discard  the same, the flush buffer's lines then discarded from L2
//   user            user replay: memory saved, then per pass restored, L2
//                   flushed, kernel launched between Start and Stop
//   user-discard    user replay, the flush buffer's lines then discarded
//                   (discard.global.L2), so L2 is left empty
//   user-noflush    the same without the flush
//   user-gap        user replay, the flush waited for and 2 ms of quiet
//                   before each pass's range
//   user-tlb        user replay, then after the flush one word read per 2 MB page
//                   of every buffer (the pages' translations warm, as after
//                   the program's own kernels)
//   user-norestore  user replay with nothing saved or restored (results change)
//   user-ncu        user replay, but per pass L2 flushed first and only then
//                   the memory the kernel writes restored
//   user-keep       user replay, the configuration kept across launches
//   user-warm       the kernels' module loaded before the profiler starts
//   user-drv        relaunched through cuLaunchKernel
//   user-sub        a CUPTI callback subscriber present
//   user-cb-same    replayed inside the launch's CUPTI callback
//   user-cb         replayed on another thread while the callback waits
//   user-act        user-sub with CUPTI's kernel activity records on (the
//                   SASS counts read 0)
//   plain           no profiler (for ncu)
// It prints the metrics and where the time went per launch; run.sh builds it,
// runs the modes in PROBE_MODES and ncu on `plain`, on the GPU machine.
// Measured on the H100 (2026-11-24): `wonly` writes 0-256 bytes to DRAM under
// user replay with or without the discard, 16 KB or less under ncu, and
// 123-146 KB under CUPTI's kernel replay; its L2 hit rate reads ~100% in all
// three, ncu's included (98.6-101%). The SGEMM (cuBLAS picks a split-K
// pair; the first kernel is read): 256-1024 bytes written under user replay,
// 0 under ncu, 7.1 MB under CUPTI's kernel replay; 3.98 MB read in all three.
// 2026-11-24, second session (PROBE_KERNELS=345 PROBE_METRICS=+lts__t_sectors.sum,
// lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum PROBE_MODES="user user-ncu"
// NCU_REPLAYS="kernel application" bash bench/gpu/probe/run.sh): `touch` writes
// 302-371 KB to DRAM under user replay, 93-436 KB under ncu's application
// replay (no memory saved or restored) and 2.17-2.36 MB under ncu's kernel
// replay: ncu's own save and restore adds ~2 MB. user-ncu does not reproduce
// it (114-319 KB). `one`: L2 hit rate 94.8-95.9% under user replay, 92.6-93.3%
// under ncu's kernel replay, 91.7-93.3% under its application replay; hits
// and misses agree (44.7K and 3.2K sectors in both), but pasta's
// lts__t_sectors.sum (the rate's denominator) reads 46.6-47.1K where ncu's
// reads 47.9K, i.e. hits plus misses: the same shortfall, on smaller kernels,
// puts pasta's L2 hit rate above 100%.
// 2026-11-24, third session (PROBE_KERNELS=467 PROBE_METRICS=PROBE_NCU_METRICS=L2's raw
// counters by source, PROBE_MODES="user user-gap kernel"): every range carries L2 traffic
// that is not the kernel's. `idle` (no memory access, 104 us) counts 44.6-47.4K sectors
// (1.4 MB), 96-100% of them hits, 1 from the SMs' L1/TEX (srcunit_tex), ~21.2K crossing
// between L2's two halves (srcunit_ltcfabric, all hits), under user replay, CUPTI's kernel
// replay and ncu alike (ncu: 47.0K sectors, 95.9-100.0% hits); `one` adds its 2K sectors to
// the same; `slow` (6.2 ms) counts ~300K, 131K its own. Waiting for the flush and 2 ms of
// quiet before each range (user-gap) changes nothing. So a kernel whose own L2 traffic is
// not well above ~1.5 MB has the profiler's hit rate, in ncu as in pasta. On GH100
// lts__t_sectors and lts__t_sectors_lookup_hit cannot share a pass (the host API gives the
// hit rate 2 passes): the rate is a ratio of two passes in every tool.
// 2026-11-24, sixth session (PROBE_KERNELS=981 PROBE_METRICS=gpu__time_duration.sum,
// gpc__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second and the two throughputs,
// PROBE_MODES="user kernel" NCU_REPLAYS="kernel application"): a range adds a little to a short
// launch, a little more under the Range Profiler than under ncu. `empty` lasts 2144-2240 ns
// under user replay, 2144-2272 under CUPTI's kernel replay, 2080-2112 under ncu's kernel replay
// and 2144-2464 under its application replay; `tiny` (~5 us) 5056-5408, 5152-5280, 4992-5024
// and 5056-5376, so its DRAM throughput reads 11.7-12.5% under user replay, 12.6% under ncu's
// kernel replay and 11.8-12.5% under its application replay (CUPTI's kernel replay: 24-25%,
// the restore's dirty lines written back). Restoring no memory (user-norestore), warming the
// pages' translations after the flush (user-tlb) or 2 ms of quiet (user-gap) change nothing:
// 5152-5280 ns after the first launch in every mode. The SM clock was 1.93-1.98 GHz in all.
#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "range_setup.hpp"

static void CUPTIAPI buf_req(uint8_t** b, size_t* size, size_t* maxn) {
  *size = 1 << 20;
  *b = (uint8_t*)aligned_alloc(8, *size);
  *maxn = 0;
}
static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t* b, size_t, size_t) { free(b); }
// One block reading 64 KB (like a reduction's last step): L2 hit rate of a tiny kernel.
__global__ void one(const float* a, float* e) {
  float x = 0;
  for (int i = threadIdx.x; i < (16 << 10); i += blockDim.x) x += a[i];
  if (x == 12345.f) e[threadIdx.x] = x;
  if (threadIdx.x == 0) e[0] = x;
}
// One block spinning ~100 us with no memory traffic: what L2 counts in a range
// besides the kernel's own requests.
__global__ void idle(float* e) {
  const long long t0 = clock64();
  while (clock64() - t0 < 200000) {
  }
  if (threadIdx.x == 0 && e[1023] == 12345.f) e[0] = 1.f;
}
// One block of 64 threads summing 4 MB (like a reduction over a whole
// tensor in one block): long, with little L2 traffic for its duration.
__global__ void slow(const float* a, float* e) {
  float x = 0;
  for (int i = threadIdx.x; i < (1 << 20); i += blockDim.x) x += a[i];
  if (x == 12345.f) e[threadIdx.x] = x;
  if (threadIdx.x == 0) e[1] = x;
}
// Streams 256 MB and writes one word per 4 KB of a 4 MB buffer: what a restore
// left dirty in L2 before the launch shows as DRAM writes.
__global__ void touch(const float* a, float* c, size_t n, size_t nc) {
  float x = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    x += a[i];
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t * 1024 < nc) c[t * 1024] = x;
}
// One element per thread, 2 MB read and 2 MB written (like the GPT's short elementwise
// kernels, ~4 us): a fixed cost per launch shows in its throughputs.
__global__ void tiny(const float* a, float* c, size_t n) {
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] * 2.f + 1.f;
}
// Nothing: what a range adds to a launch's duration.
__global__ void empty() {}
// One word per 2 MB page of [p, p + n): the pages' translations loaded, the
// data barely (user-tlb).
__global__ void touch_pages(const float* p, size_t n, float* sink) {
  const size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * (512u << 10);
  if (i < n && p[i] == 12345.f) *sink = 1.f;
}
__global__ void big(const float* a, float* b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    b[i] += a[i];
}
__global__ void small(float* c, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    c[i] = c[i] * 1.0001f + 1.f;
}
// Writes without reading, a few hundred KB (like an optimizer's foreach kernels).
__global__ void wonly(float* d, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    d[i] = 0.5f * (float)i;
}
// After a flush: drops the flush buffer's lines from L2 without writing them
// back (sm_80+), so L2 is left empty, as after ncu's invalidation.
__global__ void discard(const int4* buf, size_t lines) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < lines;
       i += (size_t)gridDim.x * blockDim.x)
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(buf + 8 * i) : "memory");
}

static std::function<void(const cuLaunchKernel_params*)>* g_hook = nullptr;
static thread_local bool g_in = false;
static void CUPTIAPI on_cb(void*, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (g_in || d != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_ENTER) return;
  if (id != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel &&
      id != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz)
    return;
  if (g_hook) (*g_hook)(static_cast<const cuLaunchKernel_params*>(cb->functionParams));
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "plain";
  // pasta's metrics (core/metrics.hpp), or PROBE_METRICS (comma-separated;
  // "+a,b" adds a and b to pasta's)
  std::vector<std::string> metric_strings;
  const char* m = std::getenv("PROBE_METRICS");
  if (!m || *m == '+') metric_strings.assign(std::begin(default_names), std::end(default_names));
  if (m) {
    std::string all = *m == '+' ? m + 1 : m;
    for (size_t p = 0, q; p <= all.size(); p = q + 1) {
      q = all.find(',', p);
      if (q == std::string::npos) q = all.size();
      if (q > p) metric_strings.push_back(all.substr(p, q - p));
    }
  }
  std::vector<const char*> name_ptrs;
  for (auto& m : metric_strings) name_ptrs.push_back(m.c_str());
  const char** names = name_ptrs.data();
  const int nm = int(name_ptrs.size());
  // The kernels to run (PROBE_KERNELS, indices: 0 big, 1 small, 2 wonly, 3 SGEMM, 4 one, 5 touch,
  // 6 idle, 7 slow, 8 tiny, 9 empty)
  std::vector<int> kernels;
  for (const char* k = std::getenv("PROBE_KERNELS") ? std::getenv("PROBE_KERNELS") : "012345"; *k;
       ++k)
    if (*k >= '0' && *k <= '9') kernels.push_back(*k - '0');
  const size_t nb = 64u << 20, ns = 1u << 20, nw = 64u << 10;
  float *a, *b, *c, *d, *e;
  int4* fb;
  int* sink;
  CR(cudaMalloc(&a, nb * 4));
  CR(cudaMalloc(&b, nb * 4));
  CR(cudaMalloc(&c, ns * 4));
  CR(cudaMalloc(&d, nw * 4));
  CR(cudaMemset(d, 0, nw * 4));
  CR(cudaMalloc(&e, 1024 * 4));
  CR(cudaMemset(e, 0, 1024 * 4));
  int l2 = 0;
  CR(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  size_t fwords = 2ull * l2 / 16;
  CR(cudaMalloc(&fb, fwords * 16 + 16));
  sink = (int*)(fb + fwords);
  CR(cudaMemset(a, 0x3c, nb * 4));
  CR(cudaMemset(b, 0, nb * 4));
  CR(cudaMemset(c, 0, ns * 4));
  CR(cudaMemset(fb, 0, fwords * 16));
  const int gm = 768, gn = 512, gk = 768;
  float *ga, *gb, *gc, *sgc;
  CR(cudaMalloc(&ga, sizeof(float) * gm * gk));
  CR(cudaMalloc(&gb, sizeof(float) * gk * gn));
  CR(cudaMalloc(&gc, sizeof(float) * gm * gn));
  CR(cudaMalloc(&sgc, sizeof(float) * gm * gn));
  CR(cudaMemset(ga, 0x3c, sizeof(float) * gm * gk));
  CR(cudaMemset(gb, 0x3c, sizeof(float) * gk * gn));
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    std::printf("FAIL cublasCreate\n");
    return 1;
  }
  float *sa, *sb, *sc, *sd, *se;  // backups for user replay
  CR(cudaMalloc(&sa, nb * 4));
  CR(cudaMalloc(&sb, nb * 4));
  CR(cudaMalloc(&sc, ns * 4));
  CR(cudaMalloc(&sd, nw * 4));
  CR(cudaMalloc(&se, 1024 * 4));
  CR(cudaDeviceSynchronize());
  // Every buffer the kernels write, copied to its backup (save) or back (restore).
  auto copy_all = [&](bool save) {
    auto copy = [&](float* buf, float* backup, size_t n) {
      CR(cudaMemcpyAsync(save ? backup : buf, save ? buf : backup, n * 4,
                         cudaMemcpyDeviceToDevice));
    };
    copy(a, sa, nb);
    copy(b, sb, nb);
    copy(c, sc, ns);
    copy(d, sd, nw);
    copy(e, se, 1024);
    copy(gc, sgc, size_t(gm) * gn);
  };
  // Only what kernel k writes, back from its backup (user-ncu: after the flush).
  auto restore_written = [&](int k) {
    auto back = [&](float* buf, float* backup, size_t n) {
      CR(cudaMemcpyAsync(buf, backup, n * 4, cudaMemcpyDeviceToDevice));
    };
    if (k == 0) back(b, sb, nb);
    if (k == 1 || k == 5 || k == 8) back(c, sc, ns);
    if (k == 2) back(d, sd, nw);
    if (k == 3) back(gc, sgc, size_t(gm) * gn);
    if (k == 4 || k == 6 || k == 7) back(e, se, 1024);
  };
  auto results = [&](const char* label) {
    CR(cudaDeviceSynchronize());
    float hb = 0, hc = 0;
    CR(cudaMemcpy(&hb, b + 7, 4, cudaMemcpyDeviceToHost));
    CR(cudaMemcpy(&hc, c + 7, 4, cudaMemcpyDeviceToHost));
    std::printf("%s results b %g c %g\n", label, hb, hc);
  };
  auto launch = [&](int k) {
    if (k == 0)
      big<<<1056, 512>>>(a, b, nb);
    else if (k == 1)
      small<<<264, 256>>>(c, ns);
    else if (k == 2)
      wonly<<<64, 256>>>(d, nw);
    else if (k == 4)
      one<<<1, 256>>>(a, e);
    else if (k == 5)
      touch<<<1056, 512>>>(a, c, nb, ns);
    else if (k == 6)
      idle<<<1, 32>>>(e);
    else if (k == 7)
      slow<<<1, 64>>>(a, e);
    else if (k == 8)
      tiny<<<4096, 128>>>(a, c, 512u << 10);
    else if (k == 9)
      empty<<<1, 32>>>();
    else {  // a GEMM whose 1.5 MB output stays in L2, as the GPT's do
      const float one = 1.f, zero = 0.f;
      if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, gm, gn, gk, &one, ga, gm, gb, gk, &zero, gc,
                      gm) != CUBLAS_STATUS_SUCCESS) {
        std::printf("FAIL cublasSgemm\n");
        std::exit(1);
      }
    }
  };
  if (mode == "user-warm") {
    launch(0);
    launch(1);
    CR(cudaDeviceSynchronize());
    CR(cudaMemset(b, 0, nb * 4));
    CR(cudaMemset(c, 0, ns * 4));
  }
  auto doflush = [&] {
    flush<<<1056, 256>>>(fb, fwords, sink);
    if (mode == "user-discard" || mode == "kernel-discard") discard<<<1056, 256>>>(fb, fwords / 8);
  };
  if (mode == "plain") {
    for (int r = 0; r < 3; ++r)
      for (int k : kernels) launch(k);
    results("plain");
    return 0;
  }
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  const HostConfig hc = host_config(ctx, names, nm);
  std::printf("chip %s passes %zu mode %s\n", hc.chip.c_str(), hc.passes, mode.c_str());
  auto t0 = Clock::now();
  auto en = prm<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
  en.ctx = ctx;
  CK(cuptiRangeProfilerEnable(&en));
  auto* obj = en.pRangeProfilerObject;
  auto ds = prm<CUpti_RangeProfiler_GetCounterDataSize_Params>(
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
  ds.pRangeProfilerObject = obj;
  ds.pMetricNames = names;
  ds.numMetrics = nm;
  ds.maxNumOfRanges = 64;
  ds.maxNumRangeTreeNodes = 64;
  CK(cuptiRangeProfilerGetCounterDataSize(&ds));
  std::vector<uint8_t> data(ds.counterDataSize);
  std::printf("enable %.1f ms\n", ms_since(t0));
  const bool user = mode.rfind("user", 0) == 0;  // every user-replay mode's name starts so
  // The configuration kept across launches; the other user modes set it up for each launch.
  const bool keep = mode == "user-discard" || mode == "user-keep" || mode == "user-act" ||
                    mode == "user-warm" || mode == "user-drv" || mode == "user-cb" ||
                    mode == "user-cb-same" || mode == "user-sub";
  int launchNo = 0;
  const bool drv = mode == "user-drv";
  const bool cbmode =
      mode == "user-cb" || mode == "user-cb-same" || mode == "user-sub" || mode == "user-act";
  if (mode == "user-act") {
    CK(cuptiActivityRegisterCallbacks(buf_req, buf_done));
    CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  }
  if (cbmode) {
    CUpti_SubscriberHandle sub;
    CK(cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_cb, nullptr));
    CK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
  }
  CUfunction fbig, fsmall;
  CR(cudaGetFuncBySymbol(&fbig, (const void*)big));
  CR(cudaGetFuncBySymbol(&fsmall, (const void*)small));
  const bool doFlush = mode != "user-noflush";
  // Profiling on; off again, returning whether CUPTI has all its passes.
  auto start_range = [&] {
    auto st = prm<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    st.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerStart(&st));
  };
  auto stop_range = [&] {
    auto sp = prm<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    sp.pRangeProfilerObject = obj;
    CK(cuptiRangeProfilerStop(&sp));
    return sp.isAllPassSubmitted != 0;
  };
  auto check_launch = [](CUresult cr) {
    if (cr == CUDA_SUCCESS) return;
    std::printf("FAIL cuLaunchKernel %d\n", (int)cr);
    std::exit(1);
  };
  for (int r = 0; r < 3; ++r)
    for (int k : kernels) {
      auto tl = Clock::now();
      if (!keep || launchNo == 0) {
        arm(obj, hc, data, CUPTI_AutoRange, user ? CUPTI_UserReplay : CUPTI_KernelReplay, 64);
      }
      double t_cfg = ms_since(tl), t_start = 0, t_stop = 0, t_save = 0;
      int passes = 0;
      if (!user) {
        doflush();
        CR(cudaDeviceSynchronize());
        auto ts = Clock::now();
        start_range();
        t_start = ms_since(ts);
        launch(k);
        ts = Clock::now();
        stop_range();
        t_stop = ms_since(ts);
        passes = 1;
      } else {
        auto body = [&](const cuLaunchKernel_params* pp) {
          auto ts = Clock::now();
          const bool copies = mode != "user-norestore";
          if (copies) copy_all(true);
          t_save += ms_since(ts);
          for (;;) {
            ts = Clock::now();
            if (mode == "user-ncu") {  // flush, then restore what the kernel writes
              doflush();
              if (passes > 0) restore_written(k);
            } else {
              if (passes > 0 && copies) copy_all(false);
              if (doFlush) doflush();
            }
            if (mode == "user-tlb") {
              auto pages = [&](const float* buf, size_t n) {
                touch_pages<<<(unsigned)((n >> 19) / 128 + 1), 128>>>(buf, n, e + 1023);
              };
              pages(a, nb);
              pages(b, nb);
              pages(c, ns);
              pages(d, nw);
              pages(e, 1024);
              pages(ga, size_t(gm) * gk);
              pages(gb, size_t(gk) * gn);
              pages(gc, size_t(gm) * gn);
            }
            if (mode == "user-gap") {  // the flush over and 2 ms of quiet before the range
              CR(cudaDeviceSynchronize());
              std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
            t_save += ms_since(ts);
            ts = Clock::now();
            start_range();
            t_start += ms_since(ts);
            if (pp) {
              check_launch(cuLaunchKernel(
                  pp->f, pp->gridDimX, pp->gridDimY, pp->gridDimZ, pp->blockDimX, pp->blockDimY,
                  pp->blockDimZ, pp->sharedMemBytes, pp->hStream, pp->kernelParams, pp->extra));
            } else if (drv) {
              size_t nn = k == 0 ? nb : ns;
              void* args0[] = {&a, &b, &nn};
              void* args1[] = {&c, &nn};
              if (k >= 2)
                launch(k);
              else
                check_launch(
                    k == 0 ? cuLaunchKernel(fbig, 1056, 1, 1, 512, 1, 1, 0, 0, args0, nullptr)
                           : cuLaunchKernel(fsmall, 264, 1, 1, 256, 1, 1, 0, 0, args1, nullptr));
            } else
              launch(k);
            ts = Clock::now();
            const bool last = stop_range();
            t_stop += ms_since(ts);
            ++passes;
            if (last) break;
            if (passes > 64) {
              std::printf("FAIL: passes never all submitted\n");
              std::exit(1);
            }
          }
          if (copies) copy_all(false);  // a last restore, for the program's own launch
        };
        if (mode == "user-cb") {
          std::function<void(const cuLaunchKernel_params*)> hook =
              [&](const cuLaunchKernel_params* pp) {
                std::thread t([&] {
                  g_in = true;
                  cuCtxSetCurrent(ctx);
                  body(pp);
                });
                t.join();
              };
          g_hook = &hook;
          launch(k);
          g_hook = nullptr;
        } else if (mode == "user-cb-same") {
          std::function<void(const cuLaunchKernel_params*)> hook =
              [&](const cuLaunchKernel_params* pp) {
                g_in = true;
                body(pp);
                g_in = false;
              };
          g_hook = &hook;
          launch(k);
          g_hook = nullptr;
        } else {
          g_in = true;
          body(nullptr);
          g_in = false;
          launch(k);
        }
      }
      auto ts = Clock::now();
      const Decoded decoded = decode(obj, data);
      const std::vector<double> v = evaluate(hc, data, names, nm, keep ? launchNo : 0);
      double t_dec = ms_since(ts);
      ++launchNo;
      std::printf(
          "%s k=%d r=%d ranges=%zu dropped=%zu passes=%d | cfg %.1f start %.1f stop %.1f "
          "save/flush %.1f decode %.1f total %.1f ms\n",
          mode.c_str(), k, r, decoded.ranges, decoded.dropped, passes, t_cfg, t_start, t_stop,
          t_save, t_dec, ms_since(tl));
      for (int i = 0; i < nm; ++i) std::printf("  %-64s %.6g\n", names[i], v[i]);
    }
  results(mode.c_str());
  return 0;
}
