// Atomic replacement of a file (temporary file in the same folder, flushed, renamed over the
// target): a reader sees the old file or the whole new one, never a torn write.
#pragma once

#include <filesystem>
#include <string>

namespace attnfuzz {

// Writes `contents` to `path` atomically; throws HarnessError naming the path on failure.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);

}  // namespace attnfuzz
