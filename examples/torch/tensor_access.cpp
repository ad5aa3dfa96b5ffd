// Three CUDA tensors from PyTorch's caching allocator and kernels with known
// accesses, for TensorHotness (built with PASTA_PROFILE as tensor_access_pasta:
// nv::Sanitizer + torch::Aten in the binary):
//   x   (n floats): n stores (fill_index), n loads (gather_add)
//   hot (m floats): m stores (fill_index), n loads (gather_add, i % m)
//   y   (n floats): n stores (gather_add)
// Every access is 4 bytes. Prints the expected counts and a checksum as JSON.
#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#ifdef PASTA_PROFILE
#include <pasta/core/handlers.hpp>
#include <pasta/nv/sanitizer.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/tensor_alloc.hpp>
#include <pasta/tools/tensor_hotness.hpp>
#include <pasta/torch/aten.hpp>
using Prof = pasta::Profiler<pasta::Handlers<pasta::nv::Sanitizer, pasta::torch::Aten>,
                             pasta::proc::GpuBucketing, pasta::tools::TensorHotness,
                             pasta::tools::TensorAlloc>;
#endif

void launch_fill_index(float* a, int n);
void launch_gather_add(const float* x, const float* hot, float* y, int n, int m);

int main() {
#ifdef PASTA_PROFILE
  Prof prof;  // before the first CUDA call
#endif
  constexpr int n = 1 << 16, m = 1 << 10;  // 256 KiB and 4 KiB: multiples of 512 B
  const auto cuda = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  at::Tensor x = at::empty({n}, cuda);
  at::Tensor hot = at::empty({m}, cuda);
  at::Tensor y = at::empty({n}, cuda);
  launch_fill_index(x.data_ptr<float>(), n);
  launch_fill_index(hot.data_ptr<float>(), m);
  launch_gather_add(x.data_ptr<float>(), hot.data_ptr<float>(), y.data_ptr<float>(), n, m);
  std::vector<float> host(n);
  if (cudaMemcpy(host.data(), y.data_ptr<float>(), n * sizeof(float), cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    std::fprintf(stderr, "tensor_access: copying y back failed\n");
    return 1;
  }
  double checksum = 0;
  for (float v : host) checksum += v;
  std::printf(
      "{\"checksum\": %.1f, \"x\": {\"address\": %llu, \"bytes\": %d, \"reads\": %d, "
      "\"writes\": %d}, \"hot\": {\"address\": %llu, \"bytes\": %d, \"reads\": %d, \"writes\": %d}, "
      "\"y\": {\"address\": %llu, \"bytes\": %d, \"reads\": 0, \"writes\": %d}}\n",
      checksum, static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(x.data_ptr())),
      n * 4, n, n, static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(hot.data_ptr())),
      m * 4, n, m, static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(y.data_ptr())),
      n * 4, n);
#ifdef PASTA_PROFILE
  prof.stop();  // the reports, before the exit below
#endif
  // PyTorch 2.11's wheel aborts in its own static destructors when a C++
  // program exits (free() of an invalid pointer while deregistering
  // operators; seen on the H100 machine with and without pasta), so leave
  // without running them, once everything is written.
  std::fflush(stdout);
  std::_Exit(0);
}
