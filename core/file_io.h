// SPDX-License-Identifier: BSD-3-Clause
// Whole-file reads and whole-buffer writes: the one place the harness loops over short reads and
// writes, retries on EINTR and turns errno into a message naming the file.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace attnfuzz {

// The most the harness reads from one matrix, include or case file: far beyond any real one (a
// 10^6-case matrix written out case by case is about 100 MiB less), small enough that /dev/zero or
// a wrong path to a disk image fails at once with a message instead of exhausting memory.
inline constexpr std::int64_t kMaxInputFileBytes = std::int64_t{64} << 20;

// The whole file as bytes; throws HarnessError naming the path: "cannot open|read <path>:
// <strerror>", "<path> is a directory", or "<path> is larger than <limit>" once more than
// `max_bytes` have been read (pipes and devices have no size to check up front).
std::string read_file(const std::filesystem::path& path,
                      std::int64_t max_bytes = kMaxInputFileBytes);

// Writes all of `bytes` to `fd`, retrying short writes and EINTR. Returns 0, or the errno that
// stopped it.
int write_all(int fd, std::string_view bytes);

// Reads what `fd` has, up to `size` bytes into `buffer`, retrying EINTR: the count read, 0 at end
// of file, or -1 with errno set (EAGAIN: a non-blocking descriptor has nothing for now).
ssize_t read_some(int fd, char* buffer, std::size_t size);

}  // namespace attnfuzz
