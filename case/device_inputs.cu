// SPDX-License-Identifier: BSD-3-Clause
// The CUDA input generator: per tensor, a poison fill of its whole buffer, then one thread per
// logical element drawing it through case/input_draws.h exactly as the host's fill_tensor() does
// (data_distribution.cpp), then the injected elements, computed on the host, written over it.
// peaked_softmax's Q reads K, so K is drawn first.
#include <cuda_runtime.h>

#include <algorithm>

#include "case/device_inputs.h"
#include "case/input_draws.h"
#include "core/cuda_check.h"
#include "core/device_array.h"
#include "core/device_launch.cuh"

namespace attnfuzz {

// A device buffer kept from case to case (core/device_array.h) and what this case uses of it.
template <typename T>
class GrowingDeviceBuffer {
 public:
  T* reserve(std::size_t count) {
    T* memory = memory_.reserve(static_cast<std::int64_t>(count));
    size_ = count;  // only once the memory is there
    return memory;
  }
  T* get() const { return memory_.get(); }
  std::size_t size() const { return size_; }

 private:
  DeviceBuffer<T> memory_;
  std::size_t size_ = 0;
};

struct DeviceInputs::Arena {
  GrowingDeviceBuffer<std::uint16_t> tensors[3];  // by TensorRole
  GrowingDeviceBuffer<InjectedElement> injected;
};

namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any GPU several times over; the loops stride over the rest.
constexpr std::int64_t kMaxBlocks = 8192;

unsigned grid_for(std::int64_t work) {
  return blocks_for(work, kThreads, kMaxBlocks);
}

// Every element of `shape`: drawn_value() of its logical index, rounded to the dtype.
__global__ void draw_by_index(std::uint16_t* buffer, TensorShape shape, TensorDraws draws,
                              Dtype dtype) {
  ATTNFUZZ_FOR_EACH_THREAD(i, shape.elements()) {
    buffer[shape.offset_of_logical(i)] = element_bits(drawn_value(draws, shape, i), dtype);
  }
}

// peaked_softmax's Q from the drawn K: each row a copy of its dominant key. A dense problem's
// rows all lie within their sequence, so the visible keys are the problem's (visible_keys_of).
__global__ void copy_dominant_keys(std::uint16_t* queries, const std::uint16_t* keys,
                                   TensorShape query_shape, TensorShape key_shape,
                                   ProblemShape problem) {
  const bool last_is_diagonal = problem.causal || problem.window_right >= 0;
  const std::int64_t group = problem.group_size();
  ATTNFUZZ_FOR_EACH_THREAD(i, query_shape.elements()) {
    const TensorShape::Coordinates at = query_shape.coordinates_of(i);
    const std::int64_t key = dominant_key_among(
        visible_keys(problem, at.s, problem.seq_len_q, problem.seq_len_k), at.s, last_is_diagonal);
    const float key_value =
        dtype_to_float(keys[key_shape.offset(at.b, key, at.h / group, at.d)], problem.dtype);
    queries[query_shape.offset(at.b, at.s, at.h, at.d)] =
        element_bits(peaked_query_value(key_value), problem.dtype);
  }
}

__global__ void write_injected(std::uint16_t* buffer, const InjectedElement* elements,
                               std::int64_t count) {
  ATTNFUZZ_FOR_EACH_THREAD(i, count) {
    buffer[elements[i].offset] = elements[i].bits;
  }
}

#undef ATTNFUZZ_FOR_EACH_THREAD

TensorShape shape_of(const AttentionProblem& problem, TensorRole tensor) {
  switch (tensor) {
    case TensorRole::query:
      return {problem.batch, problem.seq_len_q, problem.heads, problem.head_dim, problem.q_strides};
    case TensorRole::key:
      return {problem.batch, problem.seq_len_k, problem.kv_heads, problem.head_dim,
              problem.k_strides};
    case TensorRole::value:
      break;
  }
  return {problem.batch, problem.seq_len_k, problem.kv_heads, problem.head_dim, problem.v_strides};
}

// A tensor's whole buffer, as fill_tensor() sizes it, poisoned.
std::uint16_t* poisoned_buffer(GrowingDeviceBuffer<std::uint16_t>& buffer, const TensorShape& shape,
                               Dtype dtype) {
  const std::int64_t size =
      span_elements(shape.strides, shape.batch, shape.seq_len, shape.heads, shape.head_dim) +
      input_guard_elements(shape.strides, shape.head_dim);
  std::uint16_t* data = buffer.reserve(static_cast<std::size_t>(size));
  fill_pattern<<<grid_for(size), kThreads>>>(data, size, traits_of(dtype).poison_bits);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  return data;
}

}  // namespace

DeviceInputs::DeviceInputs() : arena_(std::make_unique<Arena>()) {}
DeviceInputs::~DeviceInputs() = default;
DeviceInputs::DeviceInputs(DeviceInputs&&) noexcept = default;
DeviceInputs& DeviceInputs::operator=(DeviceInputs&&) noexcept = default;

const std::uint16_t* DeviceInputs::data(TensorRole tensor) const {
  return arena_ ? arena_->tensors[static_cast<int>(tensor)].get() : nullptr;
}

std::size_t DeviceInputs::size(TensorRole tensor) const {
  return arena_ ? arena_->tensors[static_cast<int>(tensor)].size() : 0;
}

std::vector<std::uint16_t> DeviceInputs::copy_to_host(TensorRole tensor) const {
  std::vector<std::uint16_t> host(size(tensor));
  if (!host.empty()) {
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host.data(), data(tensor), host.size() * sizeof(std::uint16_t),
                                   cudaMemcpyDeviceToHost));
  }
  return host;
}

bool generate_inputs_on_device(const AttentionProblem& problem, DataDistribution distribution,
                               std::uint64_t seed, const SpecialValueInjection& injection,
                               DeviceInputs& out) {
  // Also declines varlen and paged problems, which the checks below need not handle again.
  const std::optional<std::vector<InjectedElement>> injected =
      data_independent_injection(problem, seed, injection);
  if (!injected) return false;
  if (!out.arena_) out.arena_ = std::make_unique<DeviceInputs::Arena>();
  DeviceInputs::Arena& arena = *out.arena_;
  const Dtype dtype = problem.dtype;

  // K first: peaked_softmax's Q copies it.
  for (TensorRole tensor : {TensorRole::key, TensorRole::value, TensorRole::query}) {
    const TensorShape shape = shape_of(problem, tensor);
    std::uint16_t* buffer = poisoned_buffer(arena.tensors[static_cast<int>(tensor)], shape, dtype);
    if (copies_another_tensor(distribution, tensor)) {
      copy_dominant_keys<<<grid_for(shape.elements()), kThreads>>>(
          buffer, arena.tensors[static_cast<int>(TensorRole::key)].get(), shape,
          shape_of(problem, TensorRole::key), problem);
    } else {
      draw_by_index<<<grid_for(shape.elements()), kThreads>>>(
          buffer, shape, tensor_draws(problem, distribution, seed, tensor), dtype);
    }
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  }

  if (!injected->empty()) {
    const auto count = static_cast<std::int64_t>(injected->size());
    InjectedElement* elements = arena.injected.reserve(injected->size());
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(elements, injected->data(),
                                   injected->size() * sizeof(InjectedElement),
                                   cudaMemcpyHostToDevice));
    write_injected<<<grid_for(count), kThreads>>>(
        arena.tensors[static_cast<int>(injection.tensor)].get(), elements, count);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  }
  ATTNFUZZ_CUDA_CHECK(cudaDeviceSynchronize());
  return true;
}

}  // namespace attnfuzz
