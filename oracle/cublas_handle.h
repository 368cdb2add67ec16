// SPDX-License-Identifier: BSD-3-Clause
// The process's one cuBLAS handle, in pedantic math mode: every product in the precision asked for
// (FP64 in true FP64, FP32 without TF32 or other reduced-precision shortcuts). The oracle and the
// plain reference on the device both use it.
#pragma once

#include <cublas_v2.h>

namespace attnfuzz {

// Created on first use (after the CUDA runtime has started) and destroyed at exit, before the
// runtime's own teardown, so that its workspace is given back (a leak checker such as
// compute-sanitizer --leak-check full would otherwise report it).
cublasHandle_t cublas_handle();

// Throws std::runtime_error naming `call` when `status` is not success.
void check_cublas(cublasStatus_t status, const char* call);

}  // namespace attnfuzz

#define ATTNFUZZ_CUBLAS_CHECK(call) ::attnfuzz::check_cublas((call), #call)
