// SPDX-License-Identifier: BSD-3-Clause
#include "perf/roofline.h"

#include <algorithm>

namespace attnfuzz {
namespace {

// Dense (no sparsity) fp16/bf16 tensor-core peaks with fp32 accumulation and DRAM bandwidths, from
// NVIDIA's data sheets. More specific names come first (an "H100 PCIe" also contains "H100").
constexpr GpuPeak kKnownGpus[] = {
    {"GH200", "GH200", 989.4, 4000},
    {"H200", "H200 SXM", 989.4, 4800},
    {"H100 PCIe", "H100 PCIe", 756.0, 2000},
    {"H100 NVL", "H100 NVL", 835.0, 3900},
    {"H100", "H100 SXM", 989.4, 3350},
    {"H800", "H800 SXM", 989.4, 3350},
    {"A100-SXM4-80GB", "A100 SXM 80GB", 312.0, 2039},
    {"A100-PCIE-80GB", "A100 PCIe 80GB", 312.0, 1935},
    {"A100", "A100 40GB", 312.0, 1555},
    {"A10G", "A10G", 70.0, 600},
    {"A10", "A10", 125.0, 600},
    {"L40S", "L40S", 362.0, 864},
    {"L40", "L40", 181.0, 864},
    {"L4", "L4", 121.0, 300},
    {"RTX 4090", "GeForce RTX 4090", 165.2, 1008},
    {"RTX 3090", "GeForce RTX 3090", 71.0, 936},
    {"V100", "V100 SXM2", 125.0, 900},
    {"T4", "T4", 65.0, 320},
};

}  // namespace

std::optional<GpuPeak> known_gpu_peak(std::string_view device_name) {
  for (const GpuPeak& peak : kKnownGpus) {
    if (device_name.find(peak.name_contains) != std::string_view::npos) return peak;
  }
  return std::nullopt;
}

RooflineVerdict roofline_verdict(const GpuPeak& peak, double flops, double bytes,
                                 double milliseconds) {
  RooflineVerdict verdict;
  verdict.gpu = std::string(peak.name);
  verdict.peak_tflops = peak.tensor_tflops;
  verdict.peak_bandwidth_gb_s = peak.bandwidth_gb_s;
  verdict.arithmetic_intensity = bytes > 0 ? flops / bytes : 0;
  verdict.ridge_point = peak.tensor_tflops * 1e12 / (peak.bandwidth_gb_s * 1e9);
  verdict.compute_bound = verdict.arithmetic_intensity >= verdict.ridge_point;
  const double seconds = milliseconds * 1e-3;
  // The roof at this intensity: the lower of the compute peak and bandwidth times intensity.
  const double roof_flops_per_second =
      std::min(peak.tensor_tflops * 1e12, peak.bandwidth_gb_s * 1e9 * verdict.arithmetic_intensity);
  verdict.fraction_of_roof =
      seconds > 0 && roof_flops_per_second > 0 ? flops / seconds / roof_flops_per_second : 0;
  return verdict;
}

nlohmann::json roofline_to_json(const RooflineVerdict& verdict) {
  return {{"gpu", verdict.gpu},
          {"peak_tflops", verdict.peak_tflops},
          {"peak_bandwidth_gb_s", verdict.peak_bandwidth_gb_s},
          {"arithmetic_intensity", verdict.arithmetic_intensity},
          {"ridge_point", verdict.ridge_point},
          {"bound", verdict.compute_bound ? "compute" : "memory"},
          {"fraction_of_roof", verdict.fraction_of_roof}};
}

}  // namespace attnfuzz
