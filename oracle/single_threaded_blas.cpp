#include "oracle/single_threaded_blas.h"

#include <cblas.h>

namespace attnfuzz {

void use_single_threaded_blas() {
  openblas_set_num_threads(1);
}

}  // namespace attnfuzz
