// Whole-file reads and whole-buffer writes: the one place the harness loops over short reads and
// writes, retries on EINTR and turns errno into a message naming the file.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace attnfuzz {

// The whole file as bytes; throws HarnessError "cannot open|read <path>: <strerror>".
std::string read_file(const std::filesystem::path& path);

// Writes all of `bytes` to `fd`, retrying short writes and EINTR. Returns 0, or the errno that
// stopped it.
int write_all(int fd, std::string_view bytes);

// Reads what `fd` has, up to `size` bytes into `buffer`, retrying EINTR: the count read, 0 at end
// of file, or -1 with errno set (EAGAIN: a non-blocking descriptor has nothing for now).
ssize_t read_some(int fd, char* buffer, std::size_t size);

}  // namespace attnfuzz
