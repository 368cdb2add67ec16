// SPDX-License-Identifier: BSD-3-Clause
// The run's results as JSON Lines, one case_to_json record per line, appended the moment each case
// finishes: written, flushed to the kernel and synced to disk before the next case starts, so a
// run killed with -9 (or a machine that loses power) keeps every case it finished. --resume reads
// the file back and runs only what is missing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "run/case_result.h"

namespace attnfuzz {

// The most --resume reads of a stream: a record is 1 to 3 KB, so a million cases fit.
inline constexpr std::int64_t kMaxStreamFileBytes = std::int64_t{4} << 30;

class ResultStream {
 public:
  // Opens `path` for appending, creating it. A file that is already there must be a stream of
  // this run's cases (`case_ids`): every complete line a record of one of them, and a last line cut
  // off mid-write (by a kill) the start of a record, which is cut away so that new records start
  // on a line of their own. Anything else there (notes, a case file, another matrix's results) is
  // left untouched and refused. Pipes and devices are only ever appended to. Throws HarnessError
  // naming the path.
  ResultStream(const std::filesystem::path& path, const std::set<std::string>& case_ids);
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

// The same for a stream's text; `source` names it in messages.
std::vector<nlohmann::json> parse_result_stream(std::string_view text, const std::string& source);

}  // namespace attnfuzz
