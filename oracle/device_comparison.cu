// SPDX-License-Identifier: BSD-3-Clause
// Compiled with --fmad=false (CMakeLists.txt): check_row's and the summary's operations round as
// the host's, one by one (the summary's totals are added in another order).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <new>
#include <stdexcept>

#include "core/device_array.h"
#include "core/device_launch.cuh"
#include "oracle/device_comparison.h"
#include "oracle/device_pairs.cuh"
#include "oracle/row_check.h"
#include "oracle/rows_summary.h"

namespace attnfuzz {
namespace {

constexpr int kRowsPerBlock = 128;
constexpr int kSummaryThreads = 128;
// Blocks whose summaries one thread then merges: enough to fill a GPU, few enough to merge fast.
constexpr std::int64_t kMaxSummaryBlocks = 1024;

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

// The bias test counts the rows with the same expected values once: the first of them in (b, h, i)
// order, as the host's set of fingerprints keeps it. An open-addressing table from each sampled
// row's fingerprint to the lowest row that has it; 0 marks an empty slot, so the fingerprint 0 has
// the slot past the table's end.
struct FirstRowTable {
  unsigned long long* fingerprints;  // `mask + 1` slots (a power of two, twice the rows at least)
  unsigned long long* first_rows;    // `mask + 2` slots, all bits set: none
  std::uint64_t mask;

  __device__ void insert(std::uint64_t fingerprint, std::int64_t row) const {
    std::uint64_t slot = mask + 1;
    if (fingerprint != 0) {
      for (slot = fingerprint & mask;; slot = (slot + 1) & mask) {
        const unsigned long long held = atomicCAS(&fingerprints[slot], 0ull, fingerprint);
        if (held == 0ull || held == fingerprint) break;
      }
    }
    atomicMin(&first_rows[slot], static_cast<unsigned long long>(row));
  }

  // Whether `row` is the first row with `fingerprint` (which insert() was given).
  __device__ bool is_first(std::uint64_t fingerprint, std::int64_t row) const {
    std::uint64_t slot = mask + 1;
    if (fingerprint != 0) {
      for (slot = fingerprint & mask; fingerprints[slot] != fingerprint; slot = (slot + 1) & mask) {
      }
    }
    return first_rows[slot] == static_cast<unsigned long long>(row);
  }
};

// Whether a row's check is one of the bias test's samples, before the first-of-its-kind rule.
__device__ bool may_sample_bias(const RowCheck& check) {
  return check.judgeable && check.bias.weight > 0.0;
}

__global__ void __launch_bounds__(kRowsPerBlock)
    check_rows(RowGeometry geometry, DeviceReferenceView reference, const std::uint16_t* output,
               const float* plain, ToleranceTerms terms, RoundingSteps steps, std::uint16_t poison,
               double relative_floor, WidenOnDevice widen, std::int64_t rows, RowCheck* checks,
               FirstRowTable first_rows) {
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
  const RowCheck check = check_row(arrays, dim, terms, steps, poison, relative_floor, widen);
  checks[row] = check;
  if (may_sample_bias(check)) first_rows.insert(check.fingerprint, row);
}

// Each thread adds a run of consecutive rows to its summary; the block merges its threads'
// summaries in their rows' order, pairs of neighbours at a time, into its own.
__global__ void __launch_bounds__(kSummaryThreads)
    summarize_rows(const RowCheck* checks, std::int64_t rows, double head_dim,
                   FirstRowTable first_rows, RowsSummary* block_summaries) {
  // Raw storage: a __shared__ array may not run RowsSummary's initialisers.
  __shared__ alignas(RowsSummary) unsigned char storage[kSummaryThreads * sizeof(RowsSummary)];
  RowsSummary* summaries = reinterpret_cast<RowsSummary*>(storage);
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * kSummaryThreads;
  const std::int64_t per_thread = (rows + threads - 1) / threads;
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * kSummaryThreads + threadIdx.x;
  RowsSummary summary;
  const std::int64_t end = (thread + 1) * per_thread < rows ? (thread + 1) * per_thread : rows;
  for (std::int64_t row = thread * per_thread; row < end; ++row) {
    const RowCheck& check = checks[row];
    summary.add(row, check, head_dim,
                may_sample_bias(check) && first_rows.is_first(check.fingerprint, row));
  }
  new (&summaries[threadIdx.x]) RowsSummary(summary);
  __syncthreads();
  for (int stride = 1; stride < kSummaryThreads; stride *= 2) {
    if (threadIdx.x % (2 * stride) == 0)
      summaries[threadIdx.x].merge(summaries[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) block_summaries[blockIdx.x] = summaries[0];
}

// What comes back to the host: the summary of every row and the checks of the rows it names.
struct RowsVerdict {
  RowsSummary summary;
  NamedRowChecks named;
};

// One thread: the blocks' summaries merged in order, and the named rows' checks gathered.
__global__ void finish_summary(const RowsSummary* block_summaries, int blocks,
                               const RowCheck* checks, RowsVerdict* verdict) {
  RowsSummary summary;
  for (int block = 0; block < blocks; ++block) summary.merge(block_summaries[block]);
  verdict->summary = summary;
  const RowCheck none;
  verdict->named.first_failing =
      summary.first_failing_row >= 0 ? checks[summary.first_failing_row] : none;
  verdict->named.worst = summary.worst_row >= 0 ? checks[summary.worst_row] : none;
  verdict->named.first_inconclusive =
      summary.first_inconclusive_row >= 0 ? checks[summary.first_inconclusive_row] : none;
}

}  // namespace

Comparison compare_rows_on_device(const AttentionProblem& problem,
                                  const DeviceReferenceView& reference, const std::uint16_t* output,
                                  const float* plain, double max_abs_expected,
                                  const DeclaredNumerics& numerics) {
  if (!device_comparison_supports(problem)) {
    throw std::invalid_argument(
        "the device comparison takes neither packed sequences nor the log-sum-exp");
  }
  const std::int64_t rows = problem.batch * problem.heads * problem.seq_len_q;
  if (rows == 0) return comparison_of_summary(problem, {}, {}, max_abs_expected, numerics);
  const ToleranceTerms terms(problem, numerics);
  const RowGeometry geometry{problem.heads,    problem.seq_len_q, problem.group_size(),
                             problem.kv_heads, problem.head_dim,  problem.o_strides};
  // Kept from case to case: nothing is allocated once the largest case has run.
  thread_local DeviceBuffer<RowCheck> checks;
  thread_local DeviceBuffer<unsigned long long> fingerprints, first_rows;
  thread_local DeviceBuffer<RowsSummary> block_summaries;
  thread_local DeviceBuffer<RowsVerdict> device_verdict;
  thread_local PinnedBuffer<RowsVerdict> host_verdict;
  std::uint64_t slots = 1;
  while (slots < 2 * static_cast<std::uint64_t>(rows)) slots *= 2;
  const FirstRowTable table{fingerprints.reserve(static_cast<std::int64_t>(slots)),
                            first_rows.reserve(static_cast<std::int64_t>(slots) + 1), slots - 1};
  ATTNFUZZ_CUDA_CHECK(cudaMemset(table.fingerprints, 0, slots * sizeof(unsigned long long)));
  ATTNFUZZ_CUDA_CHECK(cudaMemset(table.first_rows, 0xFF, (slots + 1) * sizeof(unsigned long long)));
  RowCheck* device_checks = checks.reserve(rows);
  check_rows<<<blocks_for(rows, kRowsPerBlock), kRowsPerBlock>>>(
      geometry, reference, output, plain, terms, rounding_steps_of(problem),
      traits_of(problem.dtype).poison_bits, terms.unit_roundoff * max_abs_expected,
      WidenOnDevice{problem.dtype == Dtype::fp16}, rows, device_checks, table);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  const unsigned blocks = blocks_for(rows, kSummaryThreads, kMaxSummaryBlocks);
  RowsSummary* summaries = block_summaries.reserve(blocks);
  summarize_rows<<<blocks, kSummaryThreads>>>(
      device_checks, rows, static_cast<double>(problem.head_dim), table, summaries);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  RowsVerdict* verdict = device_verdict.reserve(1);
  finish_summary<<<1, 1>>>(summaries, static_cast<int>(blocks), device_checks, verdict);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  RowsVerdict* back = host_verdict.reserve(1);
  ATTNFUZZ_CUDA_CHECK(cudaMemcpy(back, verdict, sizeof(RowsVerdict), cudaMemcpyDeviceToHost));
  return comparison_of_summary(problem, back->summary, back->named, max_abs_expected, numerics);
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
  return compare_rows_on_device(problem, view, output_on_device.get(),
                                plain.empty() ? nullptr : plain_on_device.get(), largest, numerics);
}

}  // namespace attnfuzz
