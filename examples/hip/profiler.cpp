// The profiler of the annotated HIP examples, in a translation unit of its
// own so that the host compiler builds it (define __HIP_PLATFORM_AMD__ and
// PASTA_DEVICE_ANNOTATIONS). Reports are written when the program exits.
#include <pasta/device/annotations.hpp>
#include <pasta/pasta.hpp>

pasta::device::Annotations& annotations() {
  static pasta::Profiler<pasta::device::Annotations, pasta::proc::GpuBucketing,
                         pasta::tools::MemHotness>
      prof;
  return prof.handler();
}
