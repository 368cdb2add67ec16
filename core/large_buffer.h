// SPDX-License-Identifier: BSD-3-Clause
// A std::vector for large results that their writer fills completely, element by element, from
// many threads. Two costs of a plain vector go away:
//  - resize() leaves the elements uninitialised, so no serial zeroing pass runs before the
//    parallel fill (the writer must set every element);
//  - allocations of 2 MiB or more are aligned to 2 MiB and advised as transparent huge pages, so
//    first touch costs one page fault per 2 MiB instead of one per 4 KiB.
// For a float64 oracle's output of tens of MiB, those two were a fifth of its wall time.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace attnfuzz {

template <class T>
struct LargeBufferAllocator {
  using value_type = T;
  static constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

  LargeBufferAllocator() = default;
  template <class U>
  LargeBufferAllocator(const LargeBufferAllocator<U>&) noexcept {}

  T* allocate(std::size_t count) {
    if (count > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    const std::size_t bytes = count * sizeof(T);
    void* memory = nullptr;
    if (bytes >= kHugePageBytes) {
      const std::size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
      memory = std::aligned_alloc(kHugePageBytes, rounded);
#if defined(MADV_HUGEPAGE)
      // Advice only: where huge pages are off or unavailable, the pages stay small.
      if (memory != nullptr) (void)madvise(memory, rounded, MADV_HUGEPAGE);
#endif
    } else {
      memory = std::malloc(bytes == 0 ? 1 : bytes);
    }
    if (memory == nullptr) throw std::bad_alloc();
    return static_cast<T*>(memory);
  }
  void deallocate(T* pointer, std::size_t) noexcept {
    std::free(pointer);
  }

  // Default-initialisation: nothing for arithmetic types.
  template <class U>
  void construct(U* pointer) noexcept {
    ::new (static_cast<void*>(pointer)) U;
  }
  template <class U, class... Args>
  void construct(U* pointer, Args&&... args) {
    ::new (static_cast<void*>(pointer)) U(std::forward<Args>(args)...);
  }

  friend bool operator==(const LargeBufferAllocator&, const LargeBufferAllocator&) {
    return true;
  }
};

template <class T>
using LargeBuffer = std::vector<T, LargeBufferAllocator<T>>;

// Gives `buffer` `count` elements that its writer is about to overwrite, reusing its storage when
// that is large enough (no allocation and no page faults: the point of keeping a buffer from call
// to call). Otherwise the old storage goes first, its contents neither copied nor held alongside
// the new; so does storage over a quarter larger than needed, lest a small call after a large one
// keep the large one's memory (a worker's resident memory is limited).
template <class T>
void resize_for_overwrite(LargeBuffer<T>& buffer, std::size_t count) {
  if (count > buffer.capacity() || buffer.capacity() - count > count / 4) {
    LargeBuffer<T>().swap(buffer);
  }
  buffer.resize(count);
}

}  // namespace attnfuzz
