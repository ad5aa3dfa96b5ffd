// pasta's own kernel that copies many small device ranges in one launch,
// for ReplayMemory's restores of `__device__` variables: a cuDNN model's
// kernels name hundreds of them, most in modules of their own, and one
// cuMemcpyDtoDAsync each costs about 4 us of host time (a torchvision
// ResNet-18 step: 7 s of its user replay). The driver's batched copy
// (cuMemcpyBatchAsync) cannot serve inside a replay pass: the range
// profiler then finds more ranges than launches (measured on the H200), as
// if the driver ran kernels of its own for it. Inside a pass a restore's rows
// go in the L2 flush's launch where they fit (l2_flush.hpp calls this
// kernel's row loop); otherwise this kernel takes a range of its own, which
// RangeCounters counts as it counts the flush's.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include <pasta/nv/detail/driver.hpp>

namespace pasta::nv::detail {

// A PTX module's text from its parts, at compile time (each a string literal).
template <std::size_t... N>
constexpr auto join_ptx(const char (&... parts)[N]) {
  std::array<char, (N + ...) - sizeof...(N) + 1> out{};
  std::size_t at = 0;
  ((std::copy_n(parts, N - 1, out.begin() + at), at += N - 1), ...);
  return out;
}
inline constexpr char ptx_header[] = ".version 7.0\n.target sm_70\n.address_size 64\n";

class SpanCopy {
 public:
  // A row of the table the kernel reads: `bytes` from `from` to `to`.
  struct Row {
    std::uint64_t to, from, bytes;
  };
  static_assert(sizeof(Row) == 24);

  // Block b copies rows b, b + gridDim, ...: 8-byte words where both
  // addresses are 8-aligned, then the bytes left (all of them otherwise).
  // A PTX function of its own: L2Flush's kernel calls it too, to restore a
  // pass's variables in the flush's launch (l2_flush.hpp).
  static constexpr char copy_rows_ptx[] = R"(
.func pasta_copy_rows(.param .u64 table, .param .u64 n)
{
  .reg .pred p;
  .reg .b16 h;
  .reg .b32 r<5>;
  .reg .b64 e, t, dst, src, bytes, words, i, step, blocks, rd<4>;
  ld.param.u64 t, [table];
  ld.param.u64 rd0, [n];
  mov.u32 r1, %ctaid.x;
  cvt.u64.u32 e, r1;
  mov.u32 r2, %ntid.x;
  cvt.u64.u32 step, r2;
  mov.u32 r3, %nctaid.x;
  cvt.u64.u32 blocks, r3;
  mov.u32 r4, %tid.x;
  setp.ge.u64 p, e, rd0;
  @p bra DONE;
ROW:
  mad.lo.u64 rd1, e, 24, t;
  ld.global.u64 dst, [rd1];
  ld.global.u64 src, [rd1+8];
  ld.global.u64 bytes, [rd1+16];
  or.b64 rd2, dst, src;
  and.b64 rd2, rd2, 7;
  setp.eq.u64 p, rd2, 0;
  shr.u64 words, bytes, 3;
  selp.b64 words, words, 0, p;
  cvt.u64.u32 i, r4;
  setp.ge.u64 p, i, words;
  @p bra BYTES;
WIDE:
  shl.b64 rd2, i, 3;
  add.u64 rd3, src, rd2;
  ld.global.u64 rd3, [rd3];
  add.u64 rd2, dst, rd2;
  st.global.u64 [rd2], rd3;
  add.u64 i, i, step;
  setp.lt.u64 p, i, words;
  @p bra WIDE;
BYTES:
  cvt.u64.u32 i, r4;
  shl.b64 rd2, words, 3;
  add.u64 i, i, rd2;
  setp.ge.u64 p, i, bytes;
  @p bra NEXT;
NARROW:
  add.u64 rd2, src, i;
  ld.global.u8 h, [rd2];
  add.u64 rd2, dst, i;
  st.global.u8 [rd2], h;
  add.u64 i, i, step;
  setp.lt.u64 p, i, bytes;
  @p bra NARROW;
NEXT:
  add.u64 e, e, blocks;
  setp.lt.u64 p, e, rd0;
  @p bra ROW;
DONE:
  ret;
}
)";
  static constexpr char entry_ptx[] = R"(
.visible .entry pasta_copy_spans(.param .u64 table, .param .u64 n)
{
  .reg .b64 a<2>;
  ld.param.u64 a0, [table];
  ld.param.u64 a1, [n];
  {
    .param .u64 t0;
    .param .u64 t1;
    st.param.u64 [t0], a0;
    st.param.u64 [t1], a1;
    call.uni pasta_copy_rows, (t0, t1);
  }
  ret;
}
)";
  static constexpr auto ptx = join_ptx(ptx_header, copy_rows_ptx, entry_ptx);

  explicit SpanCopy(Driver& driver) : api_(driver) {}
  SpanCopy(const SpanCopy&) = delete;
  SpanCopy& operator=(const SpanCopy&) = delete;

  // Copies the `n` rows of `table` (device memory) on `stream`, after the
  // work queued on it before. The first call loads the kernel in the
  // current context. Throws std::runtime_error when the driver refuses.
  void copy(CUdeviceptr table, std::uint64_t n, CUstream stream) {
    if (!n) return;
    if (!module_) {
      api_.call(api_.module_load_data(&module_, ptx.data()), "loading pasta's copy kernel");
      api_.call(api_.module_function(&function_, module_, "pasta_copy_spans"),
                "finding pasta's copy kernel");
    }
    const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(n, max_blocks));
    void* args[] = {&table, &n};
    api_.call(api_.launch(function_, blocks, 1, 1, threads, 1, 1, 0, stream, args, nullptr),
              "launching pasta's copy kernel");
  }
  // Unloads the kernel in `ctx`, if it was loaded and the context still
  // exists. Not from a launch callback.
  void release(CUcontext ctx) {
    if (module_ && ctx) api_.in_context(ctx, [&] { api_.module_unload(module_); });
    module_ = nullptr;
    function_ = nullptr;
  }

 private:
  static constexpr unsigned threads = 128, max_blocks = 1024;

  Driver& api_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

}  // namespace pasta::nv::detail
