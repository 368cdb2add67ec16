// SPDX-License-Identifier: BSD-3-Clause
// One case's inputs, float64 reference and plain reference, with a poisoned output buffer for a
// test to fill by hand: what the comparison's tests (tests/oracle/) judge.
#pragma once

#include <vector>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "oracle/plain_attention.h"
#include "oracle/reference_attention.h"
#include "run/guarded_output.h"

namespace attnfuzz {

struct ReferenceFixture {
  AttentionProblem problem;
  AttentionInputs inputs;
  ReferenceAttention reference;
  std::vector<float> plain;
  GuardedOutput output;

  explicit ReferenceFixture(const AttentionCase& attention_case)
      : problem(problem_of(attention_case)),
        inputs(generate_inputs(problem, attention_case.data, attention_case.seed)),
        reference(reference_attention(problem, tensors())),
        plain(plain_attention(problem, tensors())),
        output(problem) {}

  AttentionTensors tensors() const { return input_tensors(inputs); }
};

}  // namespace attnfuzz
