// SPDX-License-Identifier: BSD-3-Clause
// Compiled with --fmad=false (CMakeLists.txt): check_row's sums and products round as the host's.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/device_array.h"
#include "core/device_launch.cuh"
#include "oracle/device_comparison.h"
#include "oracle/device_pairs.cuh"
#include "oracle/row_check.h"

namespace attnfuzz {
namespace {

constexpr int kRowsPerBlock = 128;

// Where a dense problem's rows are: row r of the compact [batch][heads][seq_len_q] order.
struct RowGeometry {
  std::int64_t heads, seq_len_q, group_size, kv_heads, head_dim;
  TensorStrides output;
};

// An output pattern's value (device_pairs.cuh), as check_row widens.
struct WidenOnDevice {
  bool fp16;
  __device__ double operator()(std::uint16_t bits) const { return widen_element(bits, fp16); }
};

__global__ void __launch_bounds__(kRowsPerBlock)
    check_rows(RowGeometry geometry, DeviceReferenceView reference, const std::uint16_t* output,
               const float* plain, ToleranceTerms terms, RoundingSteps steps, std::uint16_t poison,
               double relative_floor, WidenOnDevice widen, std::int64_t rows, RowCheck* checks) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x;
  if (row >= rows) return;
  const std::int64_t i = row % geometry.seq_len_q;
  const std::int64_t h = (row / geometry.seq_len_q) % geometry.heads;
  const std::int64_t b = row / (geometry.seq_len_q * geometry.heads);
  const std::int64_t kv_head = h / geometry.group_size;
  const std::int64_t dim = geometry.head_dim;
  const RowArrays arrays{
      reference.output + row * dim,
      reference.magnitude + row * dim,
      reference.value_abs_sum + (b * geometry.kv_heads + kv_head) * dim,
      reference.inverse_row_sum[row],
      reference.score_scale[row],
      reference.bias_scale[row],
      output + b * geometry.output.batch + i * geometry.output.seq + h * geometry.output.head,
      plain == nullptr ? nullptr : plain + row * dim,
      static_cast<std::uint64_t>(kv_head)};
  checks[row] = check_row(arrays, dim, terms, steps, poison, relative_floor, widen);
}

}  // namespace

std::span<const RowCheck> check_rows_on_device(const AttentionProblem& problem,
                                               const DeviceReferenceView& reference,
                                               const std::uint16_t* output, const float* plain,
                                               double max_abs_expected,
                                               const DeclaredNumerics& numerics) {
  if (!device_comparison_supports(problem)) {
    throw std::invalid_argument(
        "the device comparison takes neither packed sequences nor the log-sum-exp");
  }
  const std::int64_t rows = problem.batch * problem.heads * problem.seq_len_q;
  if (rows == 0) return {};
  const ToleranceTerms terms(problem, numerics);
  const RowGeometry geometry{problem.heads,    problem.seq_len_q, problem.group_size(),
                             problem.kv_heads, problem.head_dim,  problem.o_strides};
  // Kept from case to case: neither side allocates once the largest case has run.
  thread_local DeviceBuffer<RowCheck> device_checks;
  thread_local PinnedBuffer<RowCheck> host_checks;
  RowCheck* device_rows = device_checks.reserve(rows);
  RowCheck* host_rows = host_checks.reserve(rows);
  check_rows<<<blocks_for(rows, kRowsPerBlock), kRowsPerBlock>>>(
      geometry, reference, output, plain, terms, RoundingSteps(problem.dtype),
      traits_of(problem.dtype).poison_bits, terms.unit_roundoff * max_abs_expected,
      WidenOnDevice{problem.dtype == Dtype::fp16}, rows, device_rows);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  ATTNFUZZ_CUDA_CHECK(
      cudaMemcpy(host_rows, device_rows, rows * sizeof(RowCheck), cudaMemcpyDeviceToHost));
  return {host_rows, static_cast<std::size_t>(rows)};
}

Comparison compare_on_device(const AttentionProblem& problem, const ReferenceAttention& reference,
                             const std::vector<float>& plain, const std::uint16_t* output,
                             std::size_t output_elements, const DeclaredNumerics& numerics) {
  const auto output_on_device = device_copy_of(output, output_elements);
  const auto expected = device_copy_of(reference.output.data(), reference.output.size());
  const auto magnitude = device_copy_of(reference.magnitude.data(), reference.magnitude.size());
  const auto inverse =
      device_copy_of(reference.inverse_row_sum.data(), reference.inverse_row_sum.size());
  const auto score_scale =
      device_copy_of(reference.score_scale.data(), reference.score_scale.size());
  const auto bias_scale = device_copy_of(reference.bias_scale.data(), reference.bias_scale.size());
  const auto value_abs_sum =
      device_copy_of(reference.value_abs_sum.data(), reference.value_abs_sum.size());
  const auto plain_on_device = device_copy_of(plain.data(), plain.size());
  const double largest = max_abs_expected(reference.output);
  const DeviceReferenceView view{expected.get(),    magnitude.get(),  inverse.get(),
                                 score_scale.get(), bias_scale.get(), value_abs_sum.get()};
  return comparison_of_rows(
      problem,
      check_rows_on_device(problem, view, output_on_device.get(),
                           plain.empty() ? nullptr : plain_on_device.get(), largest, numerics),
      largest, numerics);
}

}  // namespace attnfuzz
