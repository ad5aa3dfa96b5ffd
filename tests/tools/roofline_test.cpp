#include <doctest/doctest.h>

#include <string>

#include <pasta/tools/detail/roofline.hpp>

using namespace pasta::detail;

TEST_CASE("roofline: ceilings from the datasheet table, PASTA_CEILINGS, or none, said plainly") {
  const Ceilings h200 = ceilings_for("NVIDIA H200", "");
  CHECK(h200.dram_bytes_per_s == doctest::Approx(4.8e12));
  CHECK(h200.tensor_flops_per_s == doctest::Approx(989e12));
  CHECK(h200.source == "NVIDIA's H200 SXM datasheet: DRAM 4.8 TB/s, FP32 67 TFLOP/s, BF16 tensor "
                       "989 TFLOP/s (dense)");
  // The PCIe H100 is not the SXM one, whose name has no "PCIe".
  CHECK(ceilings_for("NVIDIA H100 PCIe", "").dram_bytes_per_s == doctest::Approx(2.0e12));
  CHECK(ceilings_for("NVIDIA H100 80GB HBM3", "").dram_bytes_per_s == doctest::Approx(3.35e12));
  const Ceilings unknown = ceilings_for("NVIDIA GeForce GT 710", "");
  CHECK_FALSE(unknown.known());
  CHECK(unknown.source.find("none known for 'NVIDIA GeForce GT 710'") == 0);
  const Ceilings given = ceilings_for("NVIDIA GeForce GT 710", "dram_tbps=0.014,fp32_tflops=0.366");
  CHECK(given.known());
  CHECK(given.source == "PASTA_CEILINGS");
  CHECK(given.tensor_flops_per_s == doctest::Approx(0.366e12));  // no tensor cores: the FP32 peak
  const Ceilings bad = ceilings_for("NVIDIA H200", "dram_tbps=fast");
  CHECK_FALSE(bad.known());
  CHECK(bad.source == "none: PASTA_CEILINGS 'dram_tbps=fast' is not key=positive number");
  std::string error;
  CHECK_FALSE(parse_ceilings("dram_tbps=1,gpu=2", error).known());
  CHECK(error == "unknown key 'gpu' (dram_tbps, fp32_tflops, tensor_tflops)");
}

TEST_CASE("roofline: a GEMM on tensor cores is compute-bound, an elementwise op memory-bound") {
  Ceilings c;
  c.dram_bytes_per_s = 4e12;
  c.fp32_flops_per_s = 50e12;
  c.tensor_flops_per_s = 1000e12;
  // 1 ms, tensor pipes 50% active: 0.5 PFLOP/s of tensor work = 5e11 FLOPs,
  // plus 1e9 FP FLOPs of epilogue; 1 GB of DRAM traffic.
  const Verdict gemm = judge({.device_ns = 1e6, .launches = 1, .dram_bytes = 1e9, .fp_flops = 1e9,
                              .dram_pct = 25, .sm_pct = 70, .tensor_pct = 50},
                             c);
  CHECK(gemm.bound == Bound::compute_tensor);
  CHECK(gemm.flops == doctest::Approx(5.01e11));
  CHECK(gemm.intensity == doctest::Approx(501));
  // At the ceilings: max(1e9 B / 4e12 B/s, 1e9 / 50e12 + 5e11 / 1e15) = max(250 us, 520 us).
  CHECK(gemm.attainable_ns == doctest::Approx(520e3));
  CHECK(gemm.saving_ns == doctest::Approx(480e3));
  // 100 us moving 0.3 GB (75% of peak), 1e7 FLOPs.
  const Verdict add = judge({.device_ns = 1e5, .launches = 1, .dram_bytes = 3e8, .fp_flops = 1e7,
                             .dram_pct = 75, .sm_pct = 20, .tensor_pct = 0},
                            c);
  CHECK(add.bound == Bound::memory);
  CHECK(add.intensity == doctest::Approx(1e7 / 3e8));
  CHECK(add.attainable_ns == doctest::Approx(75e3));
  CHECK(add.saving_ns == doctest::Approx(25e3));
  CHECK(to_string(add.bound) == "memory-bound");
}

TEST_CASE("roofline: little work at low throughput is launch- or latency-bound, FP work, FP pipes") {
  const Ceilings none{};
  const Verdict tiny = judge({.device_ns = 3e4, .launches = 10, .dram_pct = 5, .sm_pct = 8}, none);
  CHECK(tiny.bound == Bound::launch);  // 3 us a launch
  CHECK(tiny.attainable_ns == 0);      // no ceilings: no saving claimed
  CHECK(tiny.saving_ns == 0);
  const Verdict slow = judge({.device_ns = 1e6, .launches = 2, .dram_pct = 30, .sm_pct = 40}, none);
  CHECK(slow.bound == Bound::latency);
  const Verdict fp = judge({.device_ns = 1e6, .launches = 1, .fp_flops = 4e10, .dram_pct = 10,
                            .sm_pct = 90, .tensor_pct = 0},
                           none);
  CHECK(fp.bound == Bound::compute_fp);
  CHECK(to_string(fp.bound) == "compute-bound (FP pipes)");
  CHECK(judge({}, none).bound == Bound::unknown);
}
