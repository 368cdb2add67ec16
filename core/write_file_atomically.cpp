// Atomic replacement of a file: the contents go to a temporary file in the target's directory, are
// flushed to disk, and the temporary file is renamed over the target. A reader sees either the old
// file or the complete new one, never a torn write.
#include "core/write_file_atomically.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "core/harness_error.h"

namespace attnfuzz {
namespace {

std::filesystem::path temporary_path_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  return temporary;
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::filesystem::path& temporary,
                       const std::string& what, int error) {
  std::error_code ignored;
  std::filesystem::remove(temporary, ignored);
  throw HarnessError("cannot write " + path.string() + ": " + what + std::strerror(error));
}

// Makes the rename itself durable. Best effort: some file systems refuse fsync on a directory.
void sync_directory(const std::filesystem::path& directory) {
  const int descriptor =
      ::open(directory.empty() ? "." : directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (descriptor < 0) return;
  ::fsync(descriptor);
  ::close(descriptor);
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, const std::string& contents) {
  const std::filesystem::path directory = path.parent_path();
  const std::filesystem::path temporary = temporary_path_for(path);

  // "x": fail rather than reuse a temporary file someone else left with the same name.
  std::FILE* file = std::fopen(temporary.c_str(), "wbx");
  if (file == nullptr) {
    const int error = errno;
    std::error_code ignored;
    if (error == ENOENT && !directory.empty() && !std::filesystem::exists(directory, ignored)) {
      throw HarnessError("cannot write " + path.string() + ": directory " + directory.string() +
                         " does not exist (" + std::strerror(error) + ")");
    }
    throw HarnessError("cannot write " + path.string() + ": cannot create " + temporary.string() +
                       ": " + std::strerror(error));
  }

  // Each step's errno is taken before fclose can overwrite it.
  const auto step_failed = [&](const char* step) {
    const int error = errno;
    std::fclose(file);
    fail(path, temporary, step, error);
  };
  if (std::fwrite(contents.data(), 1, contents.size(), file) != contents.size()) {
    step_failed("write: ");
  }
  if (std::fflush(file) != 0) step_failed("flush: ");
  if (::fsync(::fileno(file)) != 0) step_failed("fsync: ");
  if (std::fclose(file) != 0) fail(path, temporary, "close: ", errno);

  std::error_code rename_error;
  std::filesystem::rename(temporary, path, rename_error);
  if (rename_error) {
    fail(path, temporary,
         "cannot rename " + temporary.string() + " over it: ", rename_error.value());
  }
  sync_directory(directory);
}

}  // namespace attnfuzz
