// The PyTorch pipelines `pasta run --torch` injects into an unmodified
// (Python or libtorch) program. The CUDA driver loads this library at cuInit,
// which PyTorch calls after it is loaded, so the operator callbacks and the
// memory hook go in before the first CUDA tensor.
//   libpasta_torch.so         (default) operators with their kernels
//                             (OpSummary), tensor memory (TensorAlloc), kernels,
//                             a timeline with operators, NVTX ranges;
//   libpasta_torch_memory.so  (PASTA_TORCH_MEMORY) accesses per tensor through
//                             the Compute Sanitizer API (TensorHotness);
//   libpasta_torch_record.so  (PASTA_TORCH_RECORD) every event to a trace;
//   libpasta_torch_counters.so (PASTA_TORCH_COUNTERS) hardware counters per
//                             operator and kernel (OpCounters), OpSummary;
//   libpasta_torch_stall_sample.so / _stall_access.so (PASTA_TORCH_STALL_*)
//                             the two runs of `pasta run --torch -t
//                             stall_blame`: stall samples, then accesses
//                             per tensor and operator (StallBlame);
//   libpasta_torch_bench.so   (PASTA_TORCH_BENCH) OpSummary + TensorAlloc only,
//                             the pipeline bench/gpu/torch_overhead.py measures.
#include <pasta/nv/inject.hpp>
#include <pasta/pasta.hpp>
#include <pasta/torch/aten.hpp>
#include <pasta/tools/op_summary.hpp>
#include <pasta/tools/tensor_alloc.hpp>

#if defined(PASTA_TORCH_STALL_ACCESS)
#include <pasta/nv/sanitizer.hpp>
#include <pasta/tools/stall_blame.hpp>
using TorchProfiler = pasta::Profiler<pasta::Handlers<pasta::nv::Sanitizer, pasta::torch::Aten>,
                                      pasta::proc::Cpu, pasta::tools::StallBlame>;
#elif defined(PASTA_TORCH_MEMORY)
#include <pasta/nv/sanitizer.hpp>
#include <pasta/tools/tensor_hotness.hpp>
using TorchProfiler =
    pasta::Profiler<pasta::Handlers<pasta::nv::Sanitizer, pasta::torch::Aten>,
                    pasta::proc::GpuBucketing, pasta::tools::TensorHotness,
                    pasta::tools::MemHotness, pasta::tools::TensorAlloc, pasta::tools::KernelFreq>;
#else
#include <pasta/nv/cupti.hpp>
#include <pasta/tools/record.hpp>
#include <pasta/tools/timeline.hpp>
using Handler = pasta::Handlers<pasta::nv::Cupti, pasta::torch::Aten>;
#if defined(PASTA_TORCH_RECORD)
using TorchProfiler = pasta::Profiler<Handler, pasta::proc::Cpu, pasta::tools::Record>;
#elif defined(PASTA_TORCH_COUNTERS)
#include <pasta/tools/op_counters.hpp>
using TorchProfiler = pasta::Profiler<Handler, pasta::proc::Cpu, pasta::tools::OpCounters,
                                      pasta::tools::OpSummary, pasta::tools::KernelFreq>;
#elif defined(PASTA_TORCH_STALL_SAMPLE)
#include <pasta/tools/stall_blame.hpp>
using TorchProfiler = pasta::Profiler<Handler, pasta::proc::Cpu, pasta::tools::StallBlame,
                                      pasta::tools::OpSummary>;
#elif defined(PASTA_TORCH_BENCH)
using TorchProfiler = pasta::Profiler<Handler, pasta::proc::Cpu, pasta::tools::OpSummary,
                                      pasta::tools::TensorAlloc>;
#else
using TorchProfiler =
    pasta::Profiler<Handler, pasta::proc::Cpu, pasta::tools::OpSummary, pasta::tools::TensorAlloc,
                    pasta::tools::KernelFreq, pasta::tools::Timeline, pasta::tools::ScopeTime,
                    pasta::tools::EventCount>;
#endif
#endif

PASTA_INJECT(TorchProfiler)
