// The run's results as JSON Lines, one case_to_json record per line, appended the moment each case
// finishes: written, flushed to the kernel and synced to disk before the next case starts, so a
// run killed with -9 (or a machine that loses power) keeps every case it finished. --resume reads
// the file back and runs only what is missing.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "run/case_result.h"

namespace attnfuzz {

class ResultStream {
 public:
  // Opens `path` for appending, creating it. A last line cut off mid-write (by a kill) is cut
  // away first, so new records start on a line of their own. Throws HarnessError naming the path.
  explicit ResultStream(const std::filesystem::path& path);
  ~ResultStream();
  ResultStream(const ResultStream&) = delete;
  ResultStream& operator=(const ResultStream&) = delete;

  // Appends one record and syncs it; throws HarnessError when the disk refuses it.
  void append(const CaseResult& result);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// The complete records of a stream file, in order; a last line without its newline (a write cut
// off by a kill) is left out. A missing file has none. Throws HarnessError naming the file and
// line of a complete line that is not a JSON object.
std::vector<nlohmann::json> read_result_stream(const std::filesystem::path& path);

}  // namespace attnfuzz
