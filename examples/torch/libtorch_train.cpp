// A libtorch program with the profiler built in: a two-layer MLP trained on
// random data on the GPU. OpSummary attributes every kernel to the ATen
// operator that launched it (forward and backward), TensorAlloc follows the
// caching allocator. Reports go to PASTA_OUTPUT_DIR (pasta-out).
//   libtorch_train [steps]
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

#include <pasta/core/handlers.hpp>
#include <pasta/nv/cupti.hpp>
#include <pasta/pasta.hpp>
#include <pasta/tools/op_summary.hpp>
#include <pasta/tools/tensor_alloc.hpp>
#include <pasta/torch/aten.hpp>

using Prof = pasta::Profiler<pasta::Handlers<pasta::nv::Cupti, pasta::torch::Aten>,
                             pasta::proc::Cpu, pasta::tools::OpSummary, pasta::tools::TensorAlloc,
                             pasta::tools::KernelFreq>;

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "libtorch_train: no CUDA device\n");
    return 1;
  }
  Prof prof;  // before the first CUDA tensor
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(1024, 1024), torch::nn::ReLU(),
                            torch::nn::Linear(1024, 10));
  mlp->to(torch::kCUDA);
  torch::optim::SGD opt(mlp->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const auto x = torch::randn({256, 1024}, torch::kCUDA);
  const auto y = torch::randint(0, 10, {256}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kLong));
  float loss_value = 0;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(mlp->forward(x), y);
    loss.backward();
    opt.step();
    loss_value = loss.item<float>();
  }
  double checksum = 0;
  for (const auto& p : mlp->parameters()) checksum += p.sum().item<double>();
  std::printf("{\"steps\": %d, \"loss\": %.6f, \"checksum\": %.6f}\n", steps, loss_value, checksum);
  prof.stop();  // the reports, before the exit below
  // PyTorch 2.11's wheel aborts in its own static destructors when a C++
  // program exits (free() of an invalid pointer while deregistering
  // operators; seen on the H100 machine with and without pasta), so leave
  // without running them, once everything is written.
  std::fflush(stdout);
  std::_Exit(0);
}
