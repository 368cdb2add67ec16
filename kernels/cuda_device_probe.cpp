// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/cuda_device_probe.h"

#include <sstream>

#if ATTNFUZZ_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace attnfuzz {
namespace {

CudaDeviceStatus probe() {
  CudaDeviceStatus status;
#if ATTNFUZZ_HAVE_CUDA
  status.built_with_cuda = true;
  int runtime_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  std::ostringstream text;
  text << "CUDA runtime " << runtime_version / 1000 << "." << (runtime_version % 1000) / 10 << ": ";
  int device_count = 0;
  const cudaError_t error = cudaGetDeviceCount(&device_count);
  if (error != cudaSuccess) {
    text << "no usable device: cudaGetDeviceCount failed with " << cudaGetErrorName(error) << " ("
         << cudaGetErrorString(error) << ")";
  } else if (device_count == 0) {
    text << "no usable device: cudaGetDeviceCount found 0 devices";
  } else {
    cudaDeviceProp properties{};
    cudaGetDeviceProperties(&properties, 0);
    status.device_name = std::string(properties.name) + ", sm_" + std::to_string(properties.major) +
                         std::to_string(properties.minor);
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, 0) == cudaSuccess) status.pci_bus_id = bus_id;
    text << status.device_name << ", " << device_count << " device(s)";
    status.usable = true;
    // A thread that waits for the device sleeps instead of spinning: a case waits on the device
    // a few dozen times, and spinning would cost each worker a core for the whole run. Kernel
    // times come from CUDA events, which this does not change. Set before any context exists;
    // when one does (a plugin made it), the flag is left as it is.
    if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) cudaGetLastError();
  }
  status.description = text.str();
#else
  status.description = "this build has no CUDA support (nvcc was not found at configure time)";
#endif
  return status;
}

CudaDeviceStatus& mutable_status() {
  static CudaDeviceStatus status = probe();
  return status;
}

}  // namespace

const CudaDeviceStatus& cuda_device_status() {
  return mutable_status();
}

void mark_cuda_context_lost(const std::string& reason) {
  CudaDeviceStatus& status = mutable_status();
  if (!status.usable) return;
  status.usable = false;
  status.description = reason;
}

}  // namespace attnfuzz
