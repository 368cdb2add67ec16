// SPDX-License-Identifier: BSD-3-Clause
#include "core/fenced_buffer.h"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>
#include <new>
#include <utility>

namespace attnfuzz {
namespace {

constexpr std::byte kSlackFiller{0xa5};
constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::size_t page_bytes() {
  static const std::size_t bytes = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

// The labelled arrays the fault handler knows: fixed storage, written under a mutex, read by the
// handler without one (a slot's fields are set before it is marked in use).
struct FenceRecord {
  std::atomic<bool> in_use{false};
  char name[32] = {};
  std::uintptr_t mapping_begin = 0, mapping_end = 0;  // fences included
  std::uintptr_t data_begin = 0, data_end = 0;
  std::uintptr_t tensor_begin = 0, tensor_end = 0;
  std::size_t element_bytes = 1;
};
constexpr int kRecordSlots = 128;
std::array<FenceRecord, kRecordSlots> records;
std::mutex records_mutex;

struct sigaction previous_segv {};
struct sigaction previous_bus {};

// Async-signal-safe text building: no allocation, no locale, no stdio.
class SignalText {
 public:
  SignalText& operator<<(const char* text) {
    while (*text != '\0' && used_ < sizeof text_) text_[used_++] = *text++;
    return *this;
  }
  SignalText& operator<<(long long value) {
    char digits[24];
    int count = 0;
    unsigned long long magnitude =
        value < 0 ? 0ULL - static_cast<unsigned long long>(value) : value;
    do {
      digits[count++] = static_cast<char>('0' + magnitude % 10);
      magnitude /= 10;
    } while (magnitude != 0);
    if (value < 0) *this << "-";
    while (count > 0 && used_ < sizeof text_) text_[used_++] = digits[--count];
    return *this;
  }
  void write_to_stderr() const {
    std::size_t written = 0;
    while (written < used_) {
      const ssize_t count = write(STDERR_FILENO, text_ + written, used_ - written);
      if (count <= 0) return;
      written += static_cast<std::size_t>(count);
    }
  }

 private:
  char text_[512];
  std::size_t used_ = 0;
};

// Whether the faulting access was a write, where the CPU says so.
const char* access_of(void* context) {
#if defined(__x86_64__) && defined(REG_ERR)
  const auto* user_context = static_cast<const ucontext_t*>(context);
  return (user_context->uc_mcontext.gregs[REG_ERR] & 2) != 0 ? "wrote" : "read";
#else
  (void)context;
  return "touched";
#endif
}

void report_fault(const FenceRecord& record, std::uintptr_t address, int signal, void* context) {
  const auto element = [&](std::uintptr_t at) {
    const long long bytes =
        static_cast<long long>(at) - static_cast<long long>(record.tensor_begin);
    // Floor division: byte -1 is in element -1.
    const long long size = static_cast<long long>(record.element_bytes);
    return bytes >= 0 ? bytes / size : -((-bytes + size - 1) / size);
  };
  SignalText text;
  text << kFenceFaultPrefix.data() << "the kernel " << access_of(context) << " element "
       << element(address) << " of " << record.name << " (its " << element(record.tensor_end)
       << " elements have guard margins of "
       << element(record.tensor_begin) - element(record.data_begin) << " before and "
       << element(record.data_end) - element(record.tensor_end)
       << " after): past the margin lies an inaccessible page ("
       << (signal == SIGBUS ? "SIGBUS" : "SIGSEGV") << ")\n";
  text.write_to_stderr();
}

void on_fault(int signal, siginfo_t* info, void* context) {
  const struct sigaction& previous = signal == SIGBUS ? previous_bus : previous_segv;
  // A signal sent (kill, raise: si_code <= 0) has no faulting address to name.
  const bool sent = info->si_code <= 0;
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (const FenceRecord& record : records) {
    if (!sent && record.in_use.load(std::memory_order_acquire) && address >= record.mapping_begin &&
        address < record.mapping_end) {
      report_fault(record, address, signal, context);
      break;
    }
  }
  // The fault takes its course: the handler that was there before (libFuzzer's, a sanitizer's),
  // called as it would have been, ours staying in place; or the default action, when the access
  // runs again on return (a signal that was sent, raised again).
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if ((previous.sa_flags & SA_SIGINFO) == 0 && previous.sa_handler != SIG_DFL &&
      previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
    return;
  }
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal, &default_action, nullptr);
  if (sent) raise(signal);
}

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
    sigaction(SIGBUS, &action, &previous_bus);
  });
}

}  // namespace

FencedMapping::FencedMapping(std::size_t bytes) {
  if (bytes == 0) return;
  if (bytes > (std::size_t{1} << 50)) throw std::bad_alloc();
  const std::size_t aligned_bytes = round_up(bytes, kFenceAlignment);
  const std::size_t accessible = round_up(aligned_bytes, page_bytes());
  mapping_bytes_ = kFenceBytes + accessible + kFenceBytes;
  void* mapping =
      mmap(nullptr, mapping_bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  mapping_ = static_cast<std::byte*>(mapping);
  std::byte* const accessible_begin = mapping_ + kFenceBytes;
  if (mprotect(accessible_begin, accessible, PROT_READ | PROT_WRITE) != 0) {
    munmap(mapping_, mapping_bytes_);
    throw std::bad_alloc();
  }
#if defined(MADV_HUGEPAGE)
  if (accessible >= kHugePageBytes) (void)madvise(accessible_begin, accessible, MADV_HUGEPAGE);
#endif
  data_ = accessible_begin + (accessible - aligned_bytes);
  bytes_ = bytes;
  std::memset(accessible_begin, static_cast<int>(kSlackFiller), accessible - aligned_bytes);
  std::memset(data_ + bytes_, static_cast<int>(kSlackFiller), aligned_bytes - bytes_);
  install_fault_handler();
}

FencedMapping::FencedMapping(FencedMapping&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      registry_slot_(std::exchange(other.registry_slot_, -1)) {}

FencedMapping& FencedMapping::operator=(FencedMapping&& other) noexcept {
  if (this != &other) {
    release();
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    registry_slot_ = std::exchange(other.registry_slot_, -1);
  }
  return *this;
}

FencedMapping::~FencedMapping() {
  release();
}

void FencedMapping::release() noexcept {
  if (registry_slot_ >= 0) {
    const std::lock_guard lock(records_mutex);
    records[static_cast<std::size_t>(registry_slot_)].in_use.store(false,
                                                                   std::memory_order_release);
    registry_slot_ = -1;
  }
  if (mapping_ != nullptr) munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

void FencedMapping::label(const FenceLabel& label) {
  if (mapping_ == nullptr) return;
  const std::lock_guard lock(records_mutex);
  if (registry_slot_ < 0) {
    for (int slot = 0; slot < kRecordSlots; ++slot) {
      if (!records[static_cast<std::size_t>(slot)].in_use.load(std::memory_order_relaxed)) {
        registry_slot_ = slot;
        break;
      }
    }
    if (registry_slot_ < 0) return;  // every slot taken: faults here go unnamed
  }
  FenceRecord& record = records[static_cast<std::size_t>(registry_slot_)];
  record.in_use.store(false, std::memory_order_release);
  const std::size_t name_bytes = std::min(label.name.size(), sizeof record.name - 1);
  std::memcpy(record.name, label.name.data(), name_bytes);
  record.name[name_bytes] = '\0';
  const auto at = [](const std::byte* pointer) {
    return reinterpret_cast<std::uintptr_t>(pointer);
  };
  record.mapping_begin = at(mapping_);
  record.mapping_end = at(mapping_ + mapping_bytes_);
  record.data_begin = at(data_);
  record.data_end = at(data_ + bytes_);
  record.tensor_begin = at(data_ + std::min(label.tensor_begin_bytes, bytes_));
  record.tensor_end = at(data_ + std::min(label.tensor_end_bytes, bytes_));
  record.element_bytes = std::max<std::size_t>(label.element_bytes, 1);
  record.in_use.store(true, std::memory_order_release);
}

std::optional<std::ptrdiff_t> FencedMapping::first_changed_slack_byte() const {
  if (mapping_ == nullptr) return std::nullopt;
  const std::byte* const accessible_begin = mapping_ + kFenceBytes;
  const std::byte* const accessible_end = mapping_ + mapping_bytes_ - kFenceBytes;
  // Nearest the array first: a run-on write changes those bytes before the far ones.
  for (const std::byte* at = data_ + bytes_; at < accessible_end; ++at) {
    if (*at != kSlackFiller) return at - (data_ + bytes_);
  }
  for (const std::byte* at = data_; at > accessible_begin; --at) {
    if (at[-1] != kSlackFiller) return (at - 1) - data_;
  }
  return std::nullopt;
}

}  // namespace attnfuzz
