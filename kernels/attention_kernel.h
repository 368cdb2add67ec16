// SPDX-License-Identifier: BSD-3-Clause
// What every kernel under test provides: a name, where it runs, what it supports, which planted
// bugs it carries, and the forward call. The harness owns all memory; a kernel only computes.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/attention_problem.h"
#include "kernels/planted_bug.h"

namespace attnfuzz {

enum class ExecutionSite { host, cuda_device };

// Whether a kernel can run a problem; when not, `reason` says why in one line (the case is then
// skipped with that reason, never failed).
struct SupportVerdict {
  bool supported = true;
  std::string reason;
  static SupportVerdict yes() { return {}; }
  static SupportVerdict no(std::string why) { return {false, std::move(why)}; }
};

class AttentionKernel {
 public:
  virtual ~AttentionKernel() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;  // one line for --list-kernels
  virtual std::string capabilities() const = 0;  // what it supports, one line
  virtual ExecutionSite site() const = 0;
  virtual std::span<const PlantedBug> plants() const = 0;
  virtual SupportVerdict supports(const AttentionProblem& problem) const = 0;
  // Computes O for `problem`. Throws std::runtime_error with a message when it cannot.
  virtual void forward(const AttentionProblem& problem, const AttentionTensors& tensors,
                       PlantedBug plant) const = 0;

  // Whether the kernel has a backward pass for `problem`; the default: none.
  virtual SupportVerdict backward_support(const AttentionProblem& problem) const {
    (void)problem;
    return SupportVerdict::no(std::string(name()) + " has no backward pass");
  }
  // Computes dQ, dK and dV (`gradients`) from the inputs, the forward's O and log-sum-exp
  // (tensors.o, tensors.lse: the harness hands the float64 forward's, rounded, as
  // docs/tolerance.md's backward bound assumes; the log-sum-exp always) and dO. Throws
  // std::runtime_error with a message when it cannot; calling it where backward_support() says
  // no is the caller's error (std::logic_error here).
  virtual void backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                        const BackwardTensors& gradients, PlantedBug plant) const {
    (void)problem, (void)tensors, (void)gradients, (void)plant;
    throw std::logic_error(std::string(name()) + " has no backward pass");
  }

  // False when the backward's gradients may differ in a bit from run to run on the same inputs
  // (atomics on dQ): each run is then judged against the oracle on its own, as
  // --allow-nondeterminism does for every kernel, instead of being held to the first run's bits.
  virtual bool backward_deterministic() const { return true; }

  // True when a row's arithmetic does not depend on the problem's other dimensions (batch, heads,
  // kv heads): then two problems that differ only there give the same bits, and properties that
  // compare such problems (gqa_equals_mha) demand them. A library that picks its reduction order
  // by shape (BLAS) does not promise that; a plugin declares it with
  // --shape-independent-arithmetic.
  virtual bool shape_independent_arithmetic() const { return false; }

  bool carries(PlantedBug plant) const {
    for (PlantedBug carried : plants()) {
      if (carried == plant) return true;
    }
    return plant == PlantedBug::none;
  }
};

}  // namespace attnfuzz
