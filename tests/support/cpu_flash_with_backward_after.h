// SPDX-License-Identifier: BSD-3-Clause
// A test kernel that is cpu_flash, forward and backward, then does something to the gradients its
// backward wrote (a misdeed, a bend): what the tests of the backward's checks must see.
#pragma once

#include <span>

#include "kernels/attention_kernel.h"
#include "kernels/kernel_registry.h"

namespace attnfuzz {

class CpuFlashWithBackwardAfter : public AttentionKernel {
 public:
  ExecutionSite site() const override { return ExecutionSite::host; }
  std::span<const PlantedBug> plants() const override { return {}; }
  SupportVerdict supports(const AttentionProblem& problem) const override {
    return cpu_flash_kernel().supports(problem);
  }
  void forward(const AttentionProblem& problem, const AttentionTensors& tensors,
               PlantedBug plant) const override {
    cpu_flash_kernel().forward(problem, tensors, plant);
  }
  SupportVerdict backward_support(const AttentionProblem& problem) const override {
    return cpu_flash_kernel().backward_support(problem);
  }
  void backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                const BackwardTensors& gradients, PlantedBug plant) const override {
    cpu_flash_kernel().backward(problem, tensors, gradients, plant);
    after_backward(problem, gradients);
  }

 protected:
  // What the test kernel does once cpu_flash's backward has written the gradients.
  virtual void after_backward(const AttentionProblem& problem,
                              const BackwardTensors& gradients) const = 0;
};

}  // namespace attnfuzz
