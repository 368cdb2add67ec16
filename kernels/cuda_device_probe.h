// SPDX-License-Identifier: BSD-3-Clause
// Whether this process can run CUDA kernels, and why not when it cannot. Never throws and never
// hangs on a machine without a driver: the reason becomes the skip reason of CUDA cases.
#pragma once

#include <string>

namespace attnfuzz {

struct CudaDeviceStatus {
  bool built_with_cuda = false;
  bool usable = false;
  std::string description;  // the device ("NVIDIA H100 80GB HBM3, sm_90"), or why none is usable
  std::string device_name;  // device 0's name and compute capability ("NVIDIA H100 ..., sm_90")
  std::string pci_bus_id;   // device 0's, as NVML takes it ("0000:1B:00.0"); empty without one
};

const CudaDeviceStatus& cuda_device_status();  // probed once, on first call

// After an error that leaves the CUDA context unusable (a "sticky" error such as an illegal
// address), the device is no longer usable in this process: later CUDA cases are skipped with
// `reason`. The first reason recorded stays.
void mark_cuda_context_lost(const std::string& reason);

}  // namespace attnfuzz
