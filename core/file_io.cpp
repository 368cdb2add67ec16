// SPDX-License-Identifier: BSD-3-Clause
#include "core/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/harness_error.h"
#include "core/number_text.h"

namespace attnfuzz {

std::string read_file(const std::filesystem::path& path, std::int64_t max_bytes) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    throw HarnessError("cannot open " + path.string() + ": " + std::strerror(errno));
  }
  struct stat status {};
  if (fstat(fileno(file), &status) == 0 && S_ISDIR(status.st_mode)) {
    std::fclose(file);
    throw HarnessError(path.string() + " is a directory, not a file");
  }
  std::string text;
  char buffer[1 << 16];
  std::size_t count = 0;
  while ((count = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    text.append(buffer, count);
    if (static_cast<std::int64_t>(text.size()) > max_bytes) {
      std::fclose(file);
      throw HarnessError(path.string() + " is larger than " + mebibytes_text(max_bytes) +
                         ", the most the harness reads from one file of its kind");
    }
  }
  const bool failed = std::ferror(file) != 0;
  const int error = errno;
  std::fclose(file);
  if (failed) throw HarnessError("cannot read " + path.string() + ": " + std::strerror(error));
  return text;
}

int write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t count = ::write(fd, bytes.data(), bytes.size());
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) return count < 0 ? errno : EIO;
    bytes.remove_prefix(static_cast<std::size_t>(count));
  }
  return 0;
}

ssize_t read_some(int fd, char* buffer, std::size_t size) {
  for (;;) {
    const ssize_t count = ::read(fd, buffer, size);
    if (count >= 0 || errno != EINTR) return count;
  }
}

}  // namespace attnfuzz
