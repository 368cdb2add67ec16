// SPDX-License-Identifier: BSD-3-Clause
#include "perf/machine_state.h"

#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/number_text.h"

namespace attnfuzz {

CpuState read_cpu_state() {
  CpuState state;
  state.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream governor("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  if (!(governor >> state.governor)) state.governor = "unknown";
  std::ifstream load("/proc/loadavg");
  load >> state.load_average_1m >> state.load_average_5m >> state.load_average_15m;
  return state;
}

CpuTimes read_cpu_times() {
  CpuTimes times;
  times.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    times.own_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                        static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  }
  // "cpu  user nice system idle iowait irq softirq steal ...", in clock ticks.
  std::ifstream stat("/proc/stat");
  std::string label;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal &&
      label == "cpu" && ticks_per_second > 0) {
    times.machine_busy_seconds =
        (user + nice + system + irq + softirq + steal) / static_cast<double>(ticks_per_second);
    times.tick_seconds = 1.0 / static_cast<double>(ticks_per_second);
    times.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    times.available = true;
  }
  return times;
}

double other_work_cores(const CpuTimes& before, const CpuTimes& after) {
  const double wall = after.wall_seconds - before.wall_seconds;
  if (!before.available || !after.available || !(wall > 0)) return 0;
  const double others = (after.machine_busy_seconds - before.machine_busy_seconds) -
                        (after.own_seconds - before.own_seconds) -
                        std::max(before.cores, after.cores) * after.tick_seconds;
  return std::max(0.0, others / wall);
}

namespace {

// NVML's C interface, declared here for the few calls read (the stable, versioned entry points of
// nvml.h): the header is not part of every CUDA installation, and the library is the driver's,
// loaded at run time so that a machine without one still runs.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1, kNvmlClockMemory = 2, kNvmlTemperatureGpu = 0;

struct Nvml {
  NvmlReturn (*init)();
  const char* (*error_string)(NvmlReturn);
  NvmlReturn (*driver_version)(char*, unsigned);
  NvmlReturn (*handle_by_index)(unsigned, NvmlDevice*);
  NvmlReturn (*handle_by_pci_bus_id)(const char*, NvmlDevice*);
  NvmlReturn (*name)(NvmlDevice, char*, unsigned);
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*);
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*);
  NvmlReturn (*power_milliwatts)(NvmlDevice, unsigned*);
  NvmlReturn (*throttle_reasons)(NvmlDevice, unsigned long long*);
  NvmlReturn (*persistence_mode)(NvmlDevice, int*);
  NvmlReturn (*ecc_mode)(NvmlDevice, int*, int*);
  std::string unavailable_reason;  // empty when loaded and initialized
};

template <typename Function>
bool bind(void* library, const char* symbol, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, symbol));
  return function != nullptr;
}

const Nvml& nvml() {
  static Nvml loaded = [] {
    Nvml api{};
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      api.unavailable_reason = "NVML (libnvidia-ml.so.1, part of the NVIDIA driver) is not here";
      return api;
    }
    const bool bound =
        bind(library, "nvmlInit_v2", api.init) &&
        bind(library, "nvmlErrorString", api.error_string) &&
        bind(library, "nvmlSystemGetDriverVersion", api.driver_version) &&
        bind(library, "nvmlDeviceGetHandleByIndex_v2", api.handle_by_index) &&
        bind(library, "nvmlDeviceGetHandleByPciBusId_v2", api.handle_by_pci_bus_id) &&
        bind(library, "nvmlDeviceGetName", api.name) &&
        bind(library, "nvmlDeviceGetClockInfo", api.clock) &&
        bind(library, "nvmlDeviceGetTemperature", api.temperature) &&
        bind(library, "nvmlDeviceGetPowerUsage", api.power_milliwatts) &&
        bind(library, "nvmlDeviceGetCurrentClocksThrottleReasons", api.throttle_reasons) &&
        bind(library, "nvmlDeviceGetPersistenceMode", api.persistence_mode) &&
        bind(library, "nvmlDeviceGetEccMode", api.ecc_mode);
    if (!bound) {
      api.unavailable_reason = "NVML lacks an expected function: " + std::string(dlerror());
    } else if (const NvmlReturn status = api.init(); status != kNvmlSuccess) {
      api.unavailable_reason = "nvmlInit failed: " + std::string(api.error_string(status));
    }
    return api;
  }();
  return loaded;
}

// The clocks event reasons of nvml.h, by bit; `slows` marks those that lower the clocks below
// what the card would otherwise run at.
struct ThrottleReason {
  std::uint64_t bit;
  const char* name;
  bool slows;
};
constexpr ThrottleReason kThrottleReasons[] = {
    {0x1, "gpu_idle", false},
    {0x2, "applications_clocks_setting", false},
    {0x4, "sw_power_cap", true},
    {0x8, "hw_slowdown", true},
    {0x10, "sync_boost", false},
    {0x20, "sw_thermal_slowdown", true},
    {0x40, "hw_thermal_slowdown", true},
    {0x80, "hw_power_brake_slowdown", true},
    {0x100, "display_clock_setting", false},
};

// A clock may legitimately differ a little between two readings; a drop past this is a slowdown.
constexpr double kClockDropAllowed = 0.10;

}  // namespace

GpuState read_gpu_state(const std::string& pci_bus_id) {
  GpuState state;
  const Nvml& api = nvml();
  if (!api.unavailable_reason.empty()) {
    state.unavailable_reason = api.unavailable_reason;
    return state;
  }
  NvmlDevice device = nullptr;
  const NvmlReturn found = pci_bus_id.empty()
                               ? api.handle_by_index(0, &device)
                               : api.handle_by_pci_bus_id(pci_bus_id.c_str(), &device);
  if (found != kNvmlSuccess) {
    state.unavailable_reason = "NVML has no GPU " +
                               (pci_bus_id.empty() ? std::string("0") : pci_bus_id) + ": " +
                               api.error_string(found);
    return state;
  }
  state.available = true;
  state.pci_bus_id = pci_bus_id;
  char text[96] = {};
  if (api.name(device, text, sizeof text) == kNvmlSuccess) state.name = text;
  if (api.driver_version(text, sizeof text) == kNvmlSuccess) state.driver_version = text;
  api.clock(device, kNvmlClockSm, &state.sm_clock_mhz);
  api.clock(device, kNvmlClockMemory, &state.memory_clock_mhz);
  api.temperature(device, kNvmlTemperatureGpu, &state.temperature_c);
  unsigned milliwatts = 0;
  if (api.power_milliwatts(device, &milliwatts) == kNvmlSuccess) state.power_w = milliwatts / 1e3;
  unsigned long long reasons = 0;
  if (api.throttle_reasons(device, &reasons) == kNvmlSuccess) state.throttle_reasons = reasons;
  int persistence = 0;
  if (api.persistence_mode(device, &persistence) == kNvmlSuccess) {
    state.persistence_mode = persistence != 0;
  }
  int ecc_current = 0, ecc_pending = 0;
  if (api.ecc_mode(device, &ecc_current, &ecc_pending) == kNvmlSuccess) {
    state.ecc_enabled = ecc_current != 0;
  }
  return state;
}

std::vector<std::string> slowing_throttle_reasons(std::uint64_t reasons) {
  std::vector<std::string> names;
  for (const ThrottleReason& reason : kThrottleReasons) {
    if (reason.slows && (reasons & reason.bit) != 0) names.emplace_back(reason.name);
  }
  return names;
}

std::optional<std::string> gpu_timing_suspect(const GpuState& before, const GpuState& after) {
  if (!before.available || !after.available) return std::nullopt;
  std::vector<std::string> reasons = slowing_throttle_reasons(before.throttle_reasons);
  for (const std::string& reason : slowing_throttle_reasons(after.throttle_reasons)) {
    if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end()) {
      reasons.push_back(reason);
    }
  }
  if (!reasons.empty()) {
    std::string text = "the GPU throttled (";
    for (std::size_t index = 0; index < reasons.size(); ++index) {
      text += (index ? ", " : "") + reasons[index];
    }
    return text + ")";
  }
  if (before.sm_clock_mhz > 0 &&
      after.sm_clock_mhz < (1.0 - kClockDropAllowed) * before.sm_clock_mhz) {
    return "the SM clock fell from " + std::to_string(before.sm_clock_mhz) + " to " +
           std::to_string(after.sm_clock_mhz) + " MHz";
  }
  return std::nullopt;
}

std::optional<std::string> cpu_load_warning(const CpuState& state) {
  if (state.cores <= 0 || state.load_average_1m <= state.cores) return std::nullopt;
  return "the load average was " + significant_digits(state.load_average_1m, 3) + " on " +
         std::to_string(state.cores) + " cores when the benchmark began: other work competes " +
         "for the cores, expect noisy timings";
}

nlohmann::json cpu_state_to_json(const CpuState& state) {
  return {{"cores", state.cores},
          {"governor", state.governor},
          {"load_average", {state.load_average_1m, state.load_average_5m, state.load_average_15m}}};
}

nlohmann::json gpu_state_to_json(const GpuState& state) {
  if (!state.available) return {{"available", false}, {"reason", state.unavailable_reason}};
  nlohmann::json throttle = nlohmann::json::array();
  for (const ThrottleReason& reason : kThrottleReasons) {
    if ((state.throttle_reasons & reason.bit) != 0) throttle.push_back(reason.name);
  }
  return {{"available", true},
          {"name", state.name},
          {"driver_version", state.driver_version},
          {"pci_bus_id", state.pci_bus_id},
          {"sm_clock_mhz", state.sm_clock_mhz},
          {"memory_clock_mhz", state.memory_clock_mhz},
          {"temperature_c", state.temperature_c},
          {"power_w", state.power_w},
          {"throttle_reasons", throttle},
          {"persistence_mode", state.persistence_mode},
          {"ecc_enabled", state.ecc_enabled ? nlohmann::json(*state.ecc_enabled) : nullptr}};
}

}  // namespace attnfuzz
