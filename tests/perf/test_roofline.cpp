// SPDX-License-Identifier: BSD-3-Clause
// The roofline: known GPUs found by the names CUDA reports (the specific before the general), and
// a verdict that calls a low-intensity case memory-bound and a high-intensity one compute-bound,
// with the fraction of the binding roof reached.
#include "perf/roofline.h"

#include <gtest/gtest.h>

namespace attnfuzz {
namespace {

TEST(Roofline, KnownGpusAreFoundByTheNamesCudaReportsMostSpecificFirst) {
  EXPECT_EQ(known_gpu_peak("NVIDIA H100 80GB HBM3")->name, "H100 SXM");
  EXPECT_EQ(known_gpu_peak("NVIDIA H100 PCIe")->name, "H100 PCIe");
  EXPECT_EQ(known_gpu_peak("NVIDIA H200")->name, "H200 SXM");
  EXPECT_EQ(known_gpu_peak("NVIDIA GH200 480GB")->name, "GH200");
  EXPECT_EQ(known_gpu_peak("NVIDIA A100-SXM4-80GB")->name, "A100 SXM 80GB");
  EXPECT_EQ(known_gpu_peak("NVIDIA L40S")->name, "L40S");
  EXPECT_EQ(known_gpu_peak("NVIDIA L4")->name, "L4");
  EXPECT_FALSE(known_gpu_peak("Some Future GPU").has_value());
}

TEST(Roofline, BelowTheRidgeBandwidthBindsAboveItCompute) {
  const GpuPeak peak{"", "test", 1000.0, 4000.0};  // ridge at 250 FLOP per byte
  // 1e9 FLOPs over 1e8 bytes (10 FLOP/byte) in 0.05 ms: 2 TB/s of the 4 TB/s roof.
  const RooflineVerdict memory = roofline_verdict(peak, 1e9, 1e8, 0.05);
  EXPECT_DOUBLE_EQ(memory.ridge_point, 250.0);
  EXPECT_FALSE(memory.compute_bound);
  EXPECT_NEAR(memory.fraction_of_roof, 0.5, 1e-12);
  // 1e12 FLOPs over 1e9 bytes (1000 FLOP/byte) in 2 ms: 500 TFLOP/s of 1000.
  const RooflineVerdict compute = roofline_verdict(peak, 1e12, 1e9, 2.0);
  EXPECT_TRUE(compute.compute_bound);
  EXPECT_NEAR(compute.fraction_of_roof, 0.5, 1e-12);
  EXPECT_EQ(roofline_to_json(compute)["bound"], "compute");
}

}  // namespace
}  // namespace attnfuzz
