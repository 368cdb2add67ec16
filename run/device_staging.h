// SPDX-License-Identifier: BSD-3-Clause
// Runs a CUDA-device kernel on host-generated data: the harness owns the memory on both sides.
// The inputs (with their NaN guard tails) are copied to the device as they are; the output's whole
// poisoned, fenced buffer goes over and comes back, so the host checks (unwritten elements, stray
// writes) see exactly what the kernel left on the device.
#pragma once

#include <string>

#include "case/data_distribution.h"
#include "kernels/attention_kernel.h"
#include "run/guarded_output.h"
#include "run/kernel_inputs.h"

#if ATTNFUZZ_HAVE_CUDA
#include <optional>

#include "core/device_array.h"
#endif

namespace attnfuzz {

// The kernel's or the CUDA runtime's error text (empty on success), and after a call without one,
// the first input the kernel changed on the device (run/kernel_inputs.h: the device copies come
// back and are compared with the host's originals). An error that leaves the CUDA context unusable
// (an illegal address, say) is also recorded with mark_cuda_context_lost(), so later CUDA cases
// are skipped with that reason instead of failing on an error that is not theirs.
KernelCall run_kernel_on_device(const AttentionKernel& kernel, const AttentionProblem& problem,
                                const AttentionInputs& inputs, PlantedBug plant,
                                GuardedOutput& output);

// After `error` on the device (a kernel's or the runtime's): when the CUDA context is left unusable
// (a sticky error), records that with mark_cuda_context_lost(), naming `error`.
void note_device_failure(const std::string& error);

#if ATTNFUZZ_HAVE_CUDA
// The problem's index arrays (cu_seqlens, block table, ALiBi slopes) copied to the device, and the
// descale factors of `inputs` (fp8 inputs) when given, for as long as this object lives.
class DeviceIndexArrays {
 public:
  explicit DeviceIndexArrays(const AttentionProblem& problem,
                             const AttentionInputs* inputs = nullptr);
  // `tensors` with these device copies in place of the index arrays.
  AttentionTensors bind(AttentionTensors tensors) const;
  // The device copies as they are now, into `handed`'s index arrays (sized as the problem's).
  void copy_to_host(KernelInputs& handed) const;

 private:
  std::optional<DeviceArray<std::int32_t>> cu_seqlens_q_, cu_seqlens_k_, block_table_;
  std::optional<DeviceArray<float>> alibi_slopes_;
  std::optional<DeviceArray<float>> q_descale_, k_descale_, v_descale_;
};

// The first input a kernel changed on the device: the device copies of Q, K and V and of the
// index arrays brought back and compared with the host's originals (find_changed_input).
std::optional<std::string> find_changed_device_input(const AttentionProblem& problem,
                                                     const AttentionInputs& inputs,
                                                     const DeviceArray<std::uint16_t>& q,
                                                     const DeviceArray<std::uint16_t>& k,
                                                     const DeviceArray<std::uint16_t>& v,
                                                     const DeviceIndexArrays& index_arrays);
#endif

}  // namespace attnfuzz
