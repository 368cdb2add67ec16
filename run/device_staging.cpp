// SPDX-License-Identifier: BSD-3-Clause
#include "run/device_staging.h"

#include <chrono>
#include <span>
#include <stdexcept>

#include "core/clock.h"
#include "kernels/cuda_device_probe.h"

#if ATTNFUZZ_HAVE_CUDA
#include "core/device_array.h"
#endif

namespace attnfuzz {

#if ATTNFUZZ_HAVE_CUDA
namespace {

// A device copy of `host` with `extra` elements of room after it (left as they are).
DeviceArray<std::uint16_t> copy_to_device(std::span<const std::uint16_t> host,
                                          std::size_t extra = 0) {
  DeviceArray<std::uint16_t> array(host.size() + extra);
  array.copy_from_host(host.data(), host.size());
  return array;
}

// Errors after which the context is unusable until the process ends (CUDA's "sticky" errors).
bool is_sticky(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

// A device copy of a host array, or nothing when it is empty.
template <typename T>
std::optional<DeviceArray<T>> copy_if_any(const std::vector<T>& host) {
  if (host.empty()) return std::nullopt;
  std::optional<DeviceArray<T>> array(std::in_place, host.size());
  array->copy_from_host(host.data(), host.size());
  return array;
}

template <typename T>
T* pointer_or_null(const std::optional<DeviceArray<T>>& array) {
  return array ? array->get() : nullptr;
}

}  // namespace

DeviceIndexArrays::DeviceIndexArrays(const AttentionProblem& problem, const AttentionInputs* inputs)
    : cu_seqlens_q_(copy_if_any(problem.cu_seqlens_q)),
      cu_seqlens_k_(copy_if_any(problem.cu_seqlens_k)),
      block_table_(copy_if_any(problem.block_table)),
      alibi_slopes_(copy_if_any(problem.alibi_slopes)) {
  if (inputs != nullptr) {
    q_descale_ = copy_if_any(inputs->q_descale);
    k_descale_ = copy_if_any(inputs->k_descale);
    v_descale_ = copy_if_any(inputs->v_descale);
  }
}

void DeviceIndexArrays::copy_to_host(KernelInputs& handed) const {
  const auto copy = [](const auto& device, auto& host) {
    if (device) device->copy_to_host(host.data(), host.size());
  };
  copy(cu_seqlens_q_, handed.cu_seqlens_q);
  copy(cu_seqlens_k_, handed.cu_seqlens_k);
  copy(block_table_, handed.block_table);
  copy(alibi_slopes_, handed.alibi_slopes);
  copy(q_descale_, handed.q_descale);
  copy(k_descale_, handed.k_descale);
  copy(v_descale_, handed.v_descale);
}

AttentionTensors DeviceIndexArrays::bind(AttentionTensors tensors) const {
  tensors.cu_seqlens_q = pointer_or_null(cu_seqlens_q_);
  tensors.cu_seqlens_k = pointer_or_null(cu_seqlens_k_);
  tensors.block_table = pointer_or_null(block_table_);
  tensors.alibi_slopes = pointer_or_null(alibi_slopes_);
  tensors.q_descale = pointer_or_null(q_descale_);
  tensors.k_descale = pointer_or_null(k_descale_);
  tensors.v_descale = pointer_or_null(v_descale_);
  return tensors;
}

std::optional<std::string> find_changed_device_input(const AttentionProblem& problem,
                                                     const AttentionInputs& inputs,
                                                     const DeviceArray<std::uint16_t>& q,
                                                     const DeviceArray<std::uint16_t>& k,
                                                     const DeviceArray<std::uint16_t>& v,
                                                     const DeviceIndexArrays& index_arrays) {
  KernelInputs handed = KernelInputs::copy_of(problem, inputs);
  q.copy_to_host(handed.q.data(), handed.q.size());
  k.copy_to_host(handed.k.data(), handed.k.size());
  v.copy_to_host(handed.v.data(), handed.v.size());
  index_arrays.copy_to_host(handed);
  return find_changed_input(problem, inputs, handed);
}

KernelCall run_kernel_on_device(const AttentionKernel& kernel, const AttentionProblem& problem,
                                const AttentionInputs& inputs, PlantedBug plant,
                                GuardedOutput& output) {
  std::string error;
  std::optional<std::string> changed_input;
  double transfer_seconds = 0.0;
  try {
    const auto staging_started = std::chrono::steady_clock::now();
    const DeviceArray<std::uint16_t> q = copy_to_device(inputs.q);
    const DeviceArray<std::uint16_t> k = copy_to_device(inputs.k);
    const DeviceArray<std::uint16_t> v = copy_to_device(inputs.v);
    // Past the checked margin, one more tile of rows that nobody checks: a kernel that overshoots
    // the margin still writes memory the harness owns, and the margin has told the story already.
    const std::size_t slack = static_cast<std::size_t>(64 * problem.o_strides.seq);
    FencedBuffer<std::uint16_t>& host_output = output.buffer();
    const DeviceArray<std::uint16_t> o = copy_to_device(host_output, slack);
    const std::vector<std::uint16_t> poison(slack, traits_of(problem.dtype).poison_bits);
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(o.get() + host_output.size(), poison.data(),
                                   slack * sizeof(std::uint16_t), cudaMemcpyHostToDevice));
    const DeviceIndexArrays index_arrays(problem, &inputs);
    std::optional<DeviceArray<float>> lse;
    if (problem.return_lse) {
      lse.emplace(output.lse_buffer().size());
      lse->copy_from_host(output.lse_buffer().data(), output.lse_buffer().size());
    }
    AttentionTensors tensors =
        index_arrays.bind({q.get(), k.get(), v.get(), o.get() + GuardedOutput::kGuardElements});
    if (lse) tensors.lse = lse->get() + GuardedOutput::kGuardElements;
    transfer_seconds = seconds_since(staging_started);
    try {
      kernel.forward(problem, tensors, plant);
      ATTNFUZZ_CUDA_CHECK(cudaDeviceSynchronize());  // the kernel's time is not the copies'
    } catch (const std::exception& kernel_error) {
      error = "kernel " + std::string(kernel.name()) + " failed: " + kernel_error.what();
    }
    if (error.empty()) {
      const auto copy_back_started = std::chrono::steady_clock::now();
      ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host_output.data(), o.get(),
                                     host_output.size() * sizeof(std::uint16_t),
                                     cudaMemcpyDeviceToHost));
      if (lse) {
        ATTNFUZZ_CUDA_CHECK(cudaMemcpy(output.lse_buffer().data(), lse->get(),
                                       output.lse_buffer().size() * sizeof(float),
                                       cudaMemcpyDeviceToHost));
      }
      // The inputs as the kernel left them on the device, against the host's originals.
      changed_input = find_changed_device_input(problem, inputs, q, k, v, index_arrays);
      transfer_seconds += seconds_since(copy_back_started);
    }
  } catch (const std::exception& staging_error) {
    error = "device staging for kernel " + std::string(kernel.name()) +
            " failed: " + staging_error.what();
  }
  if (!error.empty()) note_device_failure(error);
  return {error, error.empty() ? changed_input : std::nullopt, transfer_seconds};
}

void note_device_failure(const std::string& error) {
  cudaError_t state = cudaDeviceSynchronize();
  if (!is_sticky(state)) state = cudaGetLastError();
  if (is_sticky(state)) {
    mark_cuda_context_lost("the CUDA context was lost to an earlier case's error (" +
                           std::string(cudaGetErrorName(state)) + "): " + error);
  }
}

#else

KernelCall run_kernel_on_device(const AttentionKernel& kernel, const AttentionProblem&,
                                const AttentionInputs&, PlantedBug, GuardedOutput&) {
  return {"kernel " + std::string(kernel.name()) +
              " runs on a CUDA device, and this build has no CUDA support",
          std::nullopt};
}

void note_device_failure(const std::string&) {}

#endif

}  // namespace attnfuzz
