// Writes back and evicts the L2 cache before a measured launch, as ncu's
// default `--cache-control all` does: without it a kernel's counters include
// the write-back of lines the program's earlier kernels left dirty (a small
// kernel after a big one "writes" megabytes to DRAM it never wrote) and its
// hit rates depend on what ran before it.
//
// There is no driver call for this: a kernel reads a scratch buffer twice the
// size of L2, so every line the program left is evicted (dirty ones written
// back) and what stays is clean. The kernel is PTX built into this header,
// loaded into the measured context at the first flush, and it runs on the
// measured launch's own stream, just before it: no host synchronisation in
// the launch callback (the program's other threads may be launching too).
// The driver's entry points are Driver's. Callers run flush() with the
// range profiler stopped and inside a DispatchScope (CUPTI's callbacks
// ignore this work).
#pragma once

#include <cuda.h>

#include <cstdint>

#include <pasta/nv/counters/span_copy.hpp>
#include <pasta/nv/detail/driver.hpp>

namespace pasta::nv::detail {

class L2Flush {
 public:
  // Copies `rows` rows of `table` first (SpanCopy's rows: a replay pass's
  // restore of variables, in this launch rather than a kernel of its own),
  // then reads `n` 16-byte words from `buf` (grid-stride); stores only if
  // their XOR is a value it never is in practice, so the loads are not dead
  // code. The copies' lines are written in the kernel's first microseconds
  // and its reads of twice L2 evict them after (with_rows() bounds them).
  static constexpr char entry_ptx[] = R"(
.visible .entry pasta_l2_flush(.param .u64 buf, .param .u64 n, .param .u64 sink,
                               .param .u64 table, .param .u64 rows)
{
  .reg .pred p;
  .reg .b32 r<10>;
  .reg .b64 rd<8>, tb, nr;
  ld.param.u64 tb, [table];
  ld.param.u64 nr, [rows];
  setp.eq.u64 p, nr, 0;
  @p bra FLUSH;
  {
    .param .u64 t0;
    .param .u64 t1;
    st.param.u64 [t0], tb;
    st.param.u64 [t1], nr;
    call.uni pasta_copy_rows, (t0, t1);
  }
FLUSH:
  ld.param.u64 rd1, [buf];
  ld.param.u64 rd2, [n];
  ld.param.u64 rd3, [sink];
  mov.u32 r1, %ctaid.x;
  mov.u32 r2, %ntid.x;
  mov.u32 r3, %tid.x;
  mov.u32 r4, %nctaid.x;
  mul.wide.u32 rd4, r1, r2;
  cvt.u64.u32 rd5, r3;
  add.u64 rd4, rd4, rd5;
  mul.wide.u32 rd6, r4, r2;
  mov.b32 r5, 0;
  setp.ge.u64 p, rd4, rd2;
  @p bra DONE;
LOOP:
  shl.b64 rd7, rd4, 4;
  add.u64 rd7, rd1, rd7;
  ld.global.v4.u32 {r6, r7, r8, r9}, [rd7];
  xor.b32 r5, r5, r6;
  xor.b32 r5, r5, r7;
  xor.b32 r5, r5, r8;
  xor.b32 r5, r5, r9;
  add.u64 rd4, rd4, rd6;
  setp.lt.u64 p, rd4, rd2;
  @p bra LOOP;
DONE:
  setp.ne.u32 p, r5, 0x5a17c0de;
  @p bra END;
  st.global.u32 [rd3], r5;
END:
  ret;
}
)";
  static constexpr auto ptx = join_ptx(ptx_header, SpanCopy::copy_rows_ptx, entry_ptx);

  explicit L2Flush(Driver& driver) : api_(driver) {}
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;

  // Evicts L2 on `stream`, before the work launched on it next, after
  // copying `rows` rows of SpanCopy's `table` (with_rows() says which fit).
  // Returns false, flushing and copying nothing, for a stream being captured
  // into a graph (its launches do not run now). The first call, in `ctx`
  // (current), loads the kernel and allocates the scratch buffer. Throws
  // std::runtime_error when the driver refuses (no memory for the buffer).
  bool flush(CUcontext ctx, CUstream stream, CUdeviceptr table = 0, std::uint64_t rows = 0) {
    prepare(ctx);
    if (api_.capturing(stream)) return false;
    void* args[] = {&buffer_, &words_, &sink_, &table, &rows};
    api_.call(api_.launch(function_, blocks_, 1, 1, threads, 1, 1, 0, stream, args, nullptr),
              "launching the L2 flush");
    return true;
  }

  // The kernel loaded and the buffer allocated, in `ctx` (current), if not yet.
  void prepare(CUcontext ctx) {
    if (!ctx_) setup(ctx);
  }
  bool ready() const { return ctx_ != nullptr; }
  // Whether `rows` rows of at most max_row_bytes each go in a flush's
  // launch: a block each (a few on a GPU of under 128 SMs), each row done in
  // two strides of the block's threads, well before the flush's reads of
  // twice L2 are done (they evict what the copies wrote). More are copied
  // by SpanCopy's own launch before the flush.
  static constexpr bool with_rows(std::uint64_t rows) { return rows <= max_rows; }
  static constexpr std::uint64_t max_rows = 1024, max_row_bytes = 4096;

  // Frees what setup() made, in its context, if that context still exists
  // (cuMemFree waits for a flush still running). Not from a launch callback.
  void release() {
    if (!ctx_) return;
    api_.in_context(ctx_, [&] {
      if (buffer_) api_.mem_free(buffer_);
      if (module_) api_.module_unload(module_);
    });
    ctx_ = nullptr;
    buffer_ = 0;
    module_ = nullptr;
  }
  ~L2Flush() = default;  // release() is the caller's: the driver may be gone at exit

 private:
  static constexpr unsigned threads = 256;

  void setup(CUcontext ctx) {
    api_.bind();
    CUdevice device = 0;
    int l2 = 0, sms = 0;
    api_.call(api_.ctx_get_device(&device), "finding the device");
    api_.call(api_.device_attribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device),
              "reading L2's size");
    api_.call(api_.device_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
              "counting the SMs");
    ctx_ = ctx;  // from here on, release() frees what was made
    api_.call(api_.module_load_data(&module_, ptx.data()), "loading the L2 flush kernel");
    api_.call(api_.module_function(&function_, module_, "pasta_l2_flush"),
              "finding the L2 flush kernel");
    // Twice L2, and a 16-byte word after it for the store that never happens.
    const std::uint64_t bytes = 2 * static_cast<std::uint64_t>(l2 > 0 ? l2 : 64 << 20);
    api_.call(api_.mem_alloc(&buffer_, bytes + 16),
              "allocating the L2 flush buffer (twice the L2 size)");
    words_ = bytes / 16;
    sink_ = buffer_ + bytes;
    blocks_ = static_cast<unsigned>(sms > 0 ? sms : 1) * 8;
  }

  Driver& api_;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUdeviceptr buffer_ = 0, sink_ = 0;
  std::uint64_t words_ = 0;
  unsigned blocks_ = 1;
};

}  // namespace pasta::nv::detail
