// SPDX-License-Identifier: BSD-3-Clause
// An array in a mapping of its own, between inaccessible pages: what the harness hands a kernel.
//
// A kernel that overshoots the guard margins the harness leaves around its tensors (poisoned, and
// checked after the call) writes, on a shared heap, into whatever lies beyond: another buffer (to
// be blamed on a kernel that never touched it) or the allocator's own records (a crash far from
// the cause). Here what lies beyond is kFenceBytes of pages with no access on each side: the write
// faults at once, and the fault handler this file installs prints which array the address belongs
// to and how far past its tensor it is (a line starting with kFenceFaultPrefix) before the
// process dies of it as it would have. Reads fault alike: past the margins there is nothing a
// kernel may read.
//
// The array ends as near the fence after it as its start's alignment allows: it starts
// kFenceAlignment-aligned (what a kernel may expect of an allocator: 16-byte vector loads, 128-byte
// lines), so up to kFenceAlignment - 1 bytes lie between its end and the fence, and up to a page
// between the fence before it and its start. That slack holds a filler byte, which the owner
// checks with first_changed_slack_byte().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

namespace attnfuzz {

inline constexpr std::size_t kFenceBytes = std::size_t{1} << 20;
inline constexpr std::size_t kFenceAlignment = 256;
// How the fault handler's report starts, on its own line of stderr (the worker's supervisor looks
// for it to name the fault in the case's reason).
inline constexpr std::string_view kFenceFaultPrefix = "fuzz_attention: fenced buffer: ";

// What a fault report says about an array: its name and where its tensor lies inside it (the rest
// is guard margin), as byte offsets from the array's start.
struct FenceLabel {
  std::string_view name;  // at most 31 bytes are kept
  std::size_t tensor_begin_bytes = 0;
  std::size_t tensor_end_bytes = 0;
  std::size_t element_bytes = 1;
};

// The untyped mapping; FencedBuffer<T> below is what callers use.
class FencedMapping {
 public:
  FencedMapping() = default;
  // `bytes` readable and writable bytes (uninitialised: zero, as fresh anonymous pages are) with a
  // fence on each side. Throws std::bad_alloc when the mapping cannot be made.
  explicit FencedMapping(std::size_t bytes);
  FencedMapping(FencedMapping&& other) noexcept;
  FencedMapping& operator=(FencedMapping&& other) noexcept;
  FencedMapping(const FencedMapping&) = delete;
  FencedMapping& operator=(const FencedMapping&) = delete;
  ~FencedMapping();

  std::byte* data() const { return data_; }
  std::size_t size_bytes() const { return bytes_; }

  // Names the array in fault reports (until it is relabelled or freed).
  void label(const FenceLabel& label);

  // The first byte of the slack that no longer holds the filler, as an offset from the array: 0 is
  // the first byte past its end, -1 the last byte before its start. A write that skipped the
  // margins but stopped short of the fences.
  std::optional<std::ptrdiff_t> first_changed_slack_byte() const;

 private:
  void release() noexcept;

  std::byte* mapping_ = nullptr;  // the whole mapping, fences included
  std::size_t mapping_bytes_ = 0;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  int registry_slot_ = -1;
};

template <typename T>
class FencedBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  FencedBuffer() = default;
  FencedBuffer(std::size_t count, T fill) : mapping_(bytes_of(count)), count_(count) {
    std::fill(begin(), end(), fill);
  }
  explicit FencedBuffer(std::span<const T> contents)
      : mapping_(bytes_of(contents.size())), count_(contents.size()) {
    if (count_ > 0) std::memcpy(data(), contents.data(), contents.size_bytes());
  }

  FencedBuffer(FencedBuffer&& other) noexcept
      : mapping_(std::move(other.mapping_)), count_(std::exchange(other.count_, 0)) {}
  FencedBuffer& operator=(FencedBuffer&& other) noexcept {
    mapping_ = std::move(other.mapping_);
    count_ = std::exchange(other.count_, 0);
    return *this;
  }

  T* data() { return reinterpret_cast<T*>(mapping_.data()); }
  const T* data() const { return reinterpret_cast<const T*>(mapping_.data()); }
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  T* begin() { return data(); }
  T* end() { return data() + count_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + count_; }
  T& operator[](std::size_t index) { return data()[index]; }
  const T& operator[](std::size_t index) const { return data()[index]; }
  operator std::span<const T>() const { return {data(), count_}; }

  // Names the array in fault reports; its tensor is elements [tensor_begin, tensor_end).
  void label(std::string_view name, std::size_t tensor_begin, std::size_t tensor_end) {
    mapping_.label({name, tensor_begin * sizeof(T), tensor_end * sizeof(T), sizeof(T)});
  }
  std::optional<std::ptrdiff_t> first_changed_slack_byte() const {
    return mapping_.first_changed_slack_byte();
  }

 private:
  static std::size_t bytes_of(std::size_t count) {
    if (count > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    return count * sizeof(T);
  }

  FencedMapping mapping_;
  std::size_t count_ = 0;
};

}  // namespace attnfuzz
