// SPDX-License-Identifier: BSD-3-Clause
// The CUDA input generator (case/device_inputs.h): on a GPU, its buffers brought back equal
// generate_inputs()'s bit for bit, poison and guard tail included, for every distribution, both
// dtypes, every layout and each injection it covers; its buffers are reused; and the cases it does
// not cover are declined (that part runs everywhere). Without a usable GPU the GPU tests report
// skipped, never passed.
#include "case/device_inputs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "case/attention_case.h"
#include "kernels/cuda_device_probe.h"

namespace attnfuzz {
namespace {

#define ATTNFUZZ_SKIP_WITHOUT_GPU()                                                     \
  if (!cuda_device_status().usable) {                                                   \
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description; \
  }

constexpr TensorRole kTensors[] = {TensorRole::query, TensorRole::key, TensorRole::value};
constexpr const char* kTensorNames[] = {"q", "k", "v"};  // by TensorRole

// Shapes at the edges: GQA with seq_len_q != seq_len_k, an odd head_dim under MQA with more
// queries than keys (causal: fully masked rows), a window without causal, one row of one key.
AttentionCase shaped(int shape) {
  AttentionCase attention_case;
  attention_case.id = "device_inputs/" + std::to_string(shape);
  switch (shape) {
    case 0:
      attention_case.batch = 2;
      attention_case.heads = 6;
      attention_case.kv_heads = 2;
      attention_case.seq_len_q = 70;
      attention_case.seq_len_k = 97;
      attention_case.head_dim = 64;
      break;
    case 1:
      attention_case.batch = 3;
      attention_case.heads = 4;
      attention_case.kv_heads = 1;
      attention_case.seq_len_q = 41;
      attention_case.seq_len_k = 17;
      attention_case.head_dim = 37;
      attention_case.causal = true;
      break;
    case 2:
      attention_case.batch = 1;
      attention_case.heads = 2;
      attention_case.kv_heads = 2;
      attention_case.seq_len_q = 130;
      attention_case.seq_len_k = 129;
      attention_case.head_dim = 80;
      attention_case.window_left = 5;
      attention_case.window_right = 3;
      break;
    default:
      attention_case.batch = 1;
      attention_case.heads = 1;
      attention_case.kv_heads = 1;
      attention_case.seq_len_q = 1;
      attention_case.seq_len_k = 1;
      attention_case.head_dim = 16;
      break;
  }
  return attention_case;
}
constexpr int kShapes = 4;

struct LayoutChoice {
  Layout layout;
  std::int64_t row_padding;
};
constexpr LayoutChoice kLayouts[] = {
    {Layout::bshd, 0}, {Layout::bhsd, 0}, {Layout::bshd, 3}, {Layout::bhsd, 5}};

// Every injection the device covers: each kind but `large` into each tensor, `large` into V; a
// count beyond a small tensor's size overwrites all of it.
std::vector<SpecialValueInjection> covered_injections() {
  std::vector<SpecialValueInjection> injections = {SpecialValueInjection{}};
  for (const SpecialValueInfo& info : kSpecialValues) {
    if (info.value == SpecialValue::none) continue;
    for (const TensorRole tensor : kTensors) {
      if (info.value == SpecialValue::large && tensor != TensorRole::value) continue;
      injections.push_back({info.value, tensor, 7});
    }
  }
  injections.push_back({SpecialValue::one_ulp, TensorRole::key, 100'000});
  return injections;
}

// Generates the case on the device and on the host and counts the patterns that differ (a
// message names the first few); a buffer of another length counts as wholly different.
std::int64_t device_differences(const AttentionCase& attention_case, DeviceInputs& device,
                                std::string& message) {
  const AttentionProblem problem = problem_of(attention_case);
  if (!generate_inputs_on_device(problem, attention_case.data, attention_case.seed,
                                 attention_case.injection, device)) {
    message = "declined";
    return 1;
  }
  const AttentionInputs host =
      generate_inputs(problem, attention_case.data, attention_case.seed, attention_case.injection);
  const std::vector<std::uint16_t>* host_buffers[] = {&host.q, &host.k, &host.v};
  std::int64_t differing = 0;
  for (const TensorRole tensor : kTensors) {
    const std::vector<std::uint16_t>& expected = *host_buffers[static_cast<int>(tensor)];
    const std::vector<std::uint16_t> got = device.copy_to_host(tensor);
    const char* name = kTensorNames[static_cast<int>(tensor)];
    if (got.size() != expected.size()) {
      message += std::string(name) + ": " + std::to_string(got.size()) + " elements, the host " +
                 std::to_string(expected.size()) + "; ";
      differing += static_cast<std::int64_t>(expected.size());
      continue;
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (got[i] == expected[i]) continue;
      if (++differing <= 3) {
        message += std::string(name) + "[" + std::to_string(i) + "] " + std::to_string(got[i]) +
                   " vs " + std::to_string(expected[i]) + "; ";
      }
    }
  }
  return differing;
}

TEST(CudaDeviceInputs, EqualTheHostsBitForBitInEveryDistributionDtypeLayoutAndShape) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  const std::vector<SpecialValueInjection> injections = covered_injections();
  DeviceInputs device;  // one arena throughout: reuse must not leave stale elements
  std::size_t next_injection = 0;
  int cases = 0;
  for (const DataDistributionInfo& info : kDataDistributions) {
    for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
      for (const LayoutChoice& layout : kLayouts) {
        for (int shape = 0; shape < kShapes; ++shape) {
          AttentionCase attention_case = shaped(shape);
          attention_case.data = info.distribution;
          attention_case.dtype = dtype;
          attention_case.layout = layout.layout;
          attention_case.row_padding = layout.row_padding;
          attention_case.seed = 1000 + static_cast<std::uint64_t>(cases);
          attention_case.injection = injections[next_injection++ % injections.size()];
          std::string message;
          EXPECT_EQ(device_differences(attention_case, device, message), 0)
              << info.name << " " << dtype_name(dtype) << " " << layout_name(layout.layout)
              << " padding " << layout.row_padding << " shape " << shape << " inject "
              << format_injection(attention_case.injection) << ": " << message;
          ++cases;
        }
      }
    }
  }
}

TEST(CudaDeviceInputs, EqualTheHostsBitForBitWithEveryCoveredInjection) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  DeviceInputs device;
  for (const SpecialValueInjection& injection : covered_injections()) {
    for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
      AttentionCase attention_case = shaped(0);
      attention_case.dtype = dtype;
      attention_case.data = DataDistribution::value_outliers;
      attention_case.layout = Layout::bhsd;
      attention_case.row_padding = 2;
      attention_case.injection = injection;
      std::string message;
      EXPECT_EQ(device_differences(attention_case, device, message), 0)
          << dtype_name(dtype) << " inject " << format_injection(injection) << ": " << message;
    }
  }
}

// Large enough that every grid-stride loop strides (more elements than 8192 blocks of 256
// threads), with the largest guard tails.
TEST(CudaDeviceInputs, EqualTheHostsBitForBitInALargeCase) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  AttentionCase attention_case;
  attention_case.batch = 4;
  attention_case.heads = 16;
  attention_case.kv_heads = 4;
  attention_case.seq_len_q = 1024;
  attention_case.seq_len_k = 2100;
  attention_case.head_dim = 128;
  attention_case.causal = true;
  attention_case.data = DataDistribution::peaked_softmax;
  attention_case.row_padding = 8;
  attention_case.injection = {SpecialValue::subnormal, TensorRole::query, 1000};
  DeviceInputs device;
  std::string message;
  EXPECT_EQ(device_differences(attention_case, device, message), 0) << message;
}

TEST(CudaDeviceInputs, ReuseTheirBuffersWhenTheNextCaseFits) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  DeviceInputs device;
  std::string message;
  AttentionCase large = shaped(0);
  large.injection = {SpecialValue::zero, TensorRole::value, 3};
  ASSERT_EQ(device_differences(large, device, message), 0) << message;
  const std::uint16_t* buffers[] = {device.data(TensorRole::query), device.data(TensorRole::key),
                                    device.data(TensorRole::value)};
  AttentionCase small = shaped(3);
  small.data = DataDistribution::flat_softmax;
  EXPECT_EQ(device_differences(small, device, message), 0) << message;
  for (const TensorRole tensor : kTensors) {
    EXPECT_EQ(device.data(tensor), buffers[static_cast<int>(tensor)])
        << kTensorNames[static_cast<int>(tensor)] << " was reallocated for a smaller case";
  }
  // And a larger one again after the small one.
  large.seq_len_q = 300;
  EXPECT_EQ(device_differences(large, device, message), 0) << message;
}

// Runs on every machine: the cases declined are declined before any CUDA call.
TEST(CudaDeviceInputs, DeclineVarlenPagedAndLargeIntoQueryOrKeyLeavingTheirBuffers) {
  DeviceInputs device;
  AttentionCase varlen = shaped(0);
  varlen.seq_lens_q = {70, 3};
  varlen.seq_lens_k = {0, 97};
  AttentionCase paged = shaped(0);
  paged.page_size = 16;
  AttentionCase large_q = shaped(0);
  large_q.injection = {SpecialValue::large, TensorRole::query, 4};
  AttentionCase large_k = shaped(0);
  large_k.injection = {SpecialValue::large, TensorRole::key, 4};
  for (const AttentionCase& attention_case : {varlen, paged, large_q, large_k}) {
    EXPECT_FALSE(generate_inputs_on_device(problem_of(attention_case), attention_case.data,
                                           attention_case.seed, attention_case.injection, device))
        << attention_case.id << " inject " << format_injection(attention_case.injection);
    for (const TensorRole tensor : kTensors) EXPECT_EQ(device.size(tensor), 0u);
  }
}

TEST(CudaDeviceInputs, CoverNothingInABuildWithoutCuda) {
  if (cuda_device_status().built_with_cuda) GTEST_SKIP() << "this build has CUDA";
  DeviceInputs device;
  const AttentionCase attention_case = shaped(0);
  EXPECT_FALSE(generate_inputs_on_device(problem_of(attention_case), attention_case.data,
                                         attention_case.seed, attention_case.injection, device));
  EXPECT_EQ(device.data(TensorRole::query), nullptr);
}

}  // namespace
}  // namespace attnfuzz
