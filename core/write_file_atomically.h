// SPDX-License-Identifier: BSD-3-Clause
// Writing a report or case file where the user pointed. A regular file (or a path where nothing
// is yet) is replaced atomically: a temporary file in the same folder, flushed, renamed over the
// target, so a reader sees the old file or the whole new one, never a torn write. A symbolic link
// is followed, and its target written, so the link stays a link. Anything that is not a regular
// file (/dev/stdout, /dev/null, a FIFO, a terminal) is written in place, as a shell's `>` would:
// renaming a file over a device node would replace the node itself.
#pragma once

#include <filesystem>
#include <string>

namespace attnfuzz {

// Writes `contents` to `path` as above; throws HarnessError naming the path on failure.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);

// Throws HarnessError, naming `what` (the flag, e.g. "--json") and the path, when
// write_file_atomically(path, ...) cannot work: a missing folder, a folder in the way, no
// permission, a read-only file system. Creates and removes a probe file to be sure; writes nothing
// to a target that is not a regular file. For checking every output before a long run starts.
void check_file_writable(const std::filesystem::path& path, const std::string& what);

}  // namespace attnfuzz
