// SPDX-License-Identifier: BSD-3-Clause
// The backward pass's metamorphic properties (the rows of properties.h's table that judge the
// backward): relations that the exact gradients keep whatever the data, checked on the kernel's
// gradients within the backward bound (oracle/backward_tolerance.h) of each run they involve.
// Each of the kernel's gradient elements is within its bound of the exact one, so a relation
// among exact gradients holds among the kernel's within the sum of the bounds, each weighted as
// the relation weights its element. The float64 gradients give the bounds their scale; the
// relations themselves are checked on the kernel's gradients alone, so a mistake the oracle
// shared with a kernel would not hide the kernel's from them. Dense cases only, as the forward's
// metamorphic properties; a case whose gradients may leave the dtype's range is not judged.
#pragma once

#include "case/attention_case.h"
#include "fuzz/properties.h"
#include "kernels/attention_kernel.h"

namespace attnfuzz {

// `property` is one whose pass is PropertyPass::backward; `kernel` is the kernel whose backward is
// judged, which has a backward for the case (KernelChoice of the case with "backward": true).
// `deterministic`: the backward is asked for its ordered version (not --allow-nondeterminism).
PropertyCheck check_backward_property(Property property, const AttentionCase& attention_case,
                                      const AttentionKernel& kernel, PlantedBug plant,
                                      bool deterministic);

}  // namespace attnfuzz
