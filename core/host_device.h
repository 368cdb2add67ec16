// SPDX-License-Identifier: BSD-3-Clause
// ATTNFUZZ_HOST_DEVICE marks a function that host code and CUDA device code both call, so that one
// definition serves both: __host__ __device__ under nvcc, nothing for the host compiler.
#pragma once

#if defined(__CUDACC__)
#define ATTNFUZZ_HOST_DEVICE __host__ __device__
#else
#define ATTNFUZZ_HOST_DEVICE
#endif
