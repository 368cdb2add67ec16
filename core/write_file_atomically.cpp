// SPDX-License-Identifier: BSD-3-Clause
#include "core/write_file_atomically.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "core/file_io.h"
#include "core/harness_error.h"

namespace attnfuzz {
namespace {

// How many links a path may pass through, as the kernel's own limit (MAXSYMLINKS) has it.
constexpr int kMaxLinkHops = 40;

// Where `path` leads: each symbolic link replaced by its target (relative ones resolved against
// the link's folder) until a path that is not a link, or one that does not exist.
std::filesystem::path resolved_target(const std::filesystem::path& path) {
  std::filesystem::path target = path;
  for (int hop = 0; hop < kMaxLinkHops; ++hop) {
    std::error_code error;
    if (!std::filesystem::is_symlink(target, error)) return target;
    const std::filesystem::path link = std::filesystem::read_symlink(target, error);
    if (error) return target;
    target = link.is_absolute() ? link : target.parent_path() / link;
  }
  throw HarnessError("cannot write " + path.string() + ": more than " +
                     std::to_string(kMaxLinkHops) + " symbolic links in a row (a loop?)");
}

// What is at `target` now: nothing, a regular file, a folder, or something else.
enum class TargetKind { absent, regular, directory, other };

TargetKind kind_of(const std::filesystem::path& target) {
  struct stat status {};
  if (::stat(target.c_str(), &status) != 0) return TargetKind::absent;
  if (S_ISREG(status.st_mode)) return TargetKind::regular;
  if (S_ISDIR(status.st_mode)) return TargetKind::directory;
  return TargetKind::other;
}

std::filesystem::path temporary_path_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  return temporary;
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::filesystem::path& temporary,
                       const std::string& what, int error) {
  std::error_code ignored;
  if (!temporary.empty()) std::filesystem::remove(temporary, ignored);
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

// Creates the temporary file next to `target` ("x": never reuse one someone else left), naming
// the folder when it is the folder that is missing.
std::FILE* create_temporary(const std::filesystem::path& path, const std::filesystem::path& target,
                            const std::filesystem::path& temporary) {
  std::FILE* file = std::fopen(temporary.c_str(), "wbx");
  if (file != nullptr) return file;
  const int error = errno;
  const std::filesystem::path directory = target.parent_path();
  std::error_code ignored;
  if (error == ENOENT && !directory.empty() && !std::filesystem::exists(directory, ignored)) {
    throw HarnessError("cannot write " + path.string() + ": directory " + directory.string() +
                       " does not exist (" + std::strerror(error) + ")");
  }
  throw HarnessError("cannot write " + path.string() + ": cannot create " + temporary.string() +
                     ": " + std::strerror(error));
}

void write_in_place(const std::filesystem::path& path, const std::filesystem::path& target,
                    const std::string& contents) {
  const int descriptor = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (descriptor < 0) fail(path, {}, "", errno);
  if (const int error = write_all(descriptor, contents); error != 0) {
    ::close(descriptor);
    fail(path, {}, "write: ", error);
  }
  ::close(descriptor);
}

void replace_atomically(const std::filesystem::path& path, const std::filesystem::path& target,
                        const std::string& contents) {
  const std::filesystem::path temporary = temporary_path_for(target);
  std::FILE* file = create_temporary(path, target, temporary);
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
  std::filesystem::rename(temporary, target, rename_error);
  if (rename_error) {
    fail(path, temporary,
         "cannot rename " + temporary.string() + " over it: ", rename_error.value());
  }
  sync_directory(target.parent_path());
}

}  // namespace

// The kind is read through the path as given (stat follows every link, /proc/self/fd/1's magic
// one to a pipe included); only a regular file or a path where nothing is yet needs the link
// resolved by hand, to put the temporary file beside the real target.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents) {
  switch (kind_of(path)) {
    case TargetKind::directory:
      throw HarnessError("cannot write " + path.string() + ": it is a directory");
    case TargetKind::other:
      write_in_place(path, path, contents);
      return;
    case TargetKind::absent:
    case TargetKind::regular:
      replace_atomically(path, resolved_target(path), contents);
      return;
  }
}

void check_file_writable(const std::filesystem::path& path, const std::string& what) {
  try {
    switch (kind_of(path)) {
      case TargetKind::directory:
        throw HarnessError("cannot write " + path.string() + ": it is a directory");
      case TargetKind::other:
        if (::access(path.c_str(), W_OK) != 0) fail(path, {}, "", errno);
        return;
      case TargetKind::absent:
      case TargetKind::regular: {
        const std::filesystem::path target = resolved_target(path);
        const std::filesystem::path probe = temporary_path_for(target);
        std::fclose(create_temporary(path, target, probe));
        std::error_code ignored;
        std::filesystem::remove(probe, ignored);
        return;
      }
    }
  } catch (const HarnessError& error) {
    throw HarnessError(what + ": " + error.what());
  }
}

}  // namespace attnfuzz
