// SPDX-License-Identifier: BSD-3-Clause
#include "oracle/cublas_handle.h"

#include <stdexcept>
#include <string>

namespace attnfuzz {
namespace {

class CublasHandle {
 public:
  CublasHandle() {
    ATTNFUZZ_CUBLAS_CHECK(cublasCreate(&handle_));
    ATTNFUZZ_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH));
  }
  ~CublasHandle() { cublasDestroy(handle_); }  // at exit nothing is left to report a failure to
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed with " + cublasGetStatusName(status) +
                             " (" + cublasGetStatusString(status) + ")");
  }
}

cublasHandle_t cublas_handle() {
  static const CublasHandle handle;
  return handle.get();
}

}  // namespace attnfuzz
