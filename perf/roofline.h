// SPDX-License-Identifier: BSD-3-Clause
// Where a kernel's speed stands against its GPU's limits (the roofline model): a case whose
// arithmetic intensity (FLOPs per byte moved) lies below the GPU's ridge point is bound by memory
// bandwidth, above it by the tensor cores' peak; the verdict says which, and what fraction of that
// roof the kernel reached. The peaks come from a table of known GPUs (dense fp16/bf16 tensor-core
// FLOP/s with fp32 accumulation, and DRAM bandwidth, from the vendors' data sheets); a GPU not in
// the table gets no verdict.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace attnfuzz {

struct GpuPeak {
  std::string_view name_contains;  // matched against the device's name, first match wins
  std::string_view name;           // as reported
  double tensor_tflops;            // dense fp16/bf16, fp32 accumulation
  double bandwidth_gb_s;           // DRAM
};

// The peak of the GPU whose name (cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3") is given.
std::optional<GpuPeak> known_gpu_peak(std::string_view device_name);

struct RooflineVerdict {
  std::string gpu;  // the table's name for it
  double peak_tflops = 0, peak_bandwidth_gb_s = 0;
  double arithmetic_intensity = 0;  // FLOPs per byte
  double ridge_point = 0;           // FLOPs per byte where the two roofs meet
  bool compute_bound = false;
  double fraction_of_roof = 0;  // achieved / the roof that binds this case (0..1, ideally)
};

RooflineVerdict roofline_verdict(const GpuPeak& peak, double flops, double bytes,
                                 double milliseconds);

nlohmann::json roofline_to_json(const RooflineVerdict& verdict);

}  // namespace attnfuzz
