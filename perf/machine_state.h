// SPDX-License-Identifier: BSD-3-Clause
// The state of the machine a benchmark ran on, read and never changed: on the CPU the frequency
// governor, the load average and the core count; on an NVIDIA GPU what NVML reports (clocks,
// temperature, power, throttle reasons, persistence mode, driver, ECC). A timing taken while the
// GPU throttled, or on a loaded CPU, is marked suspect rather than trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnfuzz {

struct CpuState {
  int cores = 0;         // online logical cores
  std::string governor;  // cpufreq scaling governor of cpu0, or "unknown"
  double load_average_1m = 0, load_average_5m = 0, load_average_15m = 0;
};

struct GpuState {
  bool available = false;
  std::string unavailable_reason;  // why NVML could not be read; empty when available
  std::string name, driver_version, pci_bus_id;
  unsigned sm_clock_mhz = 0, memory_clock_mhz = 0;
  unsigned temperature_c = 0;
  double power_w = 0;
  std::uint64_t throttle_reasons = 0;  // NVML's clocks event reasons bit mask
  bool persistence_mode = false;
  std::optional<bool> ecc_enabled;  // absent on boards without ECC
};

CpuState read_cpu_state();

// The CPU time the whole machine and this process have spent, read together with the time: what
// tells how much of the cores other work took while a round was timed.
struct CpuTimes {
  bool available = false;           // /proc/stat could be read
  double machine_busy_seconds = 0;  // every core's non-idle time, stolen time included
  double own_seconds = 0;           // this process's, all threads, user and system
  double wall_seconds = 0;          // a steady clock's reading
  double tick_seconds = 0;          // /proc/stat's unit: each core's count may lag by up to one
  int cores = 0;
};
CpuTimes read_cpu_times();

// The cores that other work kept busy on average from `before` to `after`: the machine's busy
// time less this process's, over the time between (a virtual machine's stolen time counts: another
// tenant's work), less what /proc/stat's ticks can be off by (a tick per core: on many cores and a
// short round, more than the work itself). 0 when either reading is unavailable.
double other_work_cores(const CpuTimes& before, const CpuTimes& after);

// Other work above this many cores makes a host timing suspect: a single competing thread on a
// two-core machine takes two thirds of a core while the kernel's threads want both.
inline constexpr double kSuspectOtherWorkCores = 0.5;

// The GPU with this PCI bus id (as cudaDeviceGetPCIBusId writes it), or the first GPU when empty.
// NVML is loaded at run time (libnvidia-ml.so.1): a machine without the driver reads as
// unavailable, with the reason.
GpuState read_gpu_state(const std::string& pci_bus_id = "");

// The throttle reasons that slow the clocks (power cap, thermal, hardware slowdown, power brake),
// named; an idle GPU or one held at its application clocks is not throttled.
std::vector<std::string> slowing_throttle_reasons(std::uint64_t reasons);

// A timing is suspect when a slowing throttle reason was set before or after it, or the SM clock
// fell by more than 10% across it. Returns why, or nothing.
std::optional<std::string> gpu_timing_suspect(const GpuState& before, const GpuState& after);

// A warning for a CPU benchmark that starts while the one-minute load average already exceeds the
// core count: other work competes for the cores, and timings will be noisy.
std::optional<std::string> cpu_load_warning(const CpuState& state);

nlohmann::json cpu_state_to_json(const CpuState& state);
nlohmann::json gpu_state_to_json(const GpuState& state);

}  // namespace attnfuzz
