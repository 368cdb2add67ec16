// SPDX-License-Identifier: BSD-3-Clause
#include "oracle/single_threaded_blas.h"

#include <cblas.h>

namespace attnfuzz {

void use_single_threaded_blas() {
  // Only a change writes: a reference called while another runs BLAS leaves its setting alone.
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

}  // namespace attnfuzz
