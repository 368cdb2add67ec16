// SPDX-License-Identifier: BSD-3-Clause
#include "run/result_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/json_parse.h"
#include "core/json_text.h"
#include "run/case_result_json.h"

namespace attnfuzz {
namespace {

// The stream's text; a stream that does not exist (yet) reads as empty.
std::string read_stream(const std::filesystem::path& path) {
  return std::filesystem::exists(path) ? read_file(path, kMaxStreamFileBytes) : std::string();
}

}  // namespace

ResultStream::ResultStream(const std::filesystem::path& path, const std::set<std::string>& case_ids)
    : path_(path) {
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw HarnessError("--stream: cannot open " + path.string() + ": " + std::strerror(errno));
  }
  struct stat status {};
  if (fstat(fd_, &status) != 0 || !S_ISREG(status.st_mode)) return;  // a pipe: nothing to mend
  const std::string text = read_stream(path);
  const std::size_t complete = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  const auto refuse = [&](const std::string& why) {
    close(fd_);
    fd_ = -1;
    throw HarnessError("--stream: " + path.string() + " " + why +
                       "; it is left as it was (name a new file, or --resume a stream of this "
                       "run)");
  };
  std::vector<nlohmann::json> records;
  try {
    records = parse_result_stream(text, path.string());
  } catch (const HarnessError& error) {
    refuse(std::string("is not a result stream: ") + error.what());
  }
  for (const nlohmann::json& record : records) {
    const nlohmann::json* id = record.contains("case_id") ? &record["case_id"] : nullptr;
    if (id == nullptr || !id->is_string() || case_ids.count(id->get<std::string>()) == 0) {
      refuse("holds a record of another run (case " +
             (id == nullptr ? std::string("?") : id->dump()) + ", not a case of this run)");
    }
  }
  if (complete < text.size() && text[complete] != '{') {
    refuse("ends in a line that is not the start of a record");
  }
  if (complete < text.size() && ftruncate(fd_, static_cast<off_t>(complete)) != 0) {
    throw HarnessError("--stream: cannot cut the partial last line of " + path.string() + ": " +
                       std::strerror(errno));
  }
}

ResultStream::~ResultStream() {
  if (fd_ >= 0) close(fd_);
}

void ResultStream::append(const CaseResult& result) {
  const std::string line = json_text(case_to_json(result)) + "\n";
  if (const int error = write_all(fd_, line); error != 0) {
    throw HarnessError("--stream: cannot write to " + path_.string() + ": " + std::strerror(error));
  }
  if (fdatasync(fd_) != 0 && errno != EINVAL) {  // EINVAL: a pipe or terminal, nothing to sync
    throw HarnessError("--stream: cannot sync " + path_.string() + ": " + std::strerror(errno));
  }
}

std::vector<nlohmann::json> read_result_stream(const std::filesystem::path& path) {
  return parse_result_stream(read_stream(path), path.string());
}

std::vector<nlohmann::json> parse_result_stream(std::string_view text, const std::string& source) {
  std::vector<nlohmann::json> records;
  std::size_t start = 0;
  int line_number = 0;
  for (std::size_t end = text.find('\n'); end != std::string_view::npos;
       start = end + 1, end = text.find('\n', start)) {
    ++line_number;
    if (end == start) continue;
    nlohmann::json record = parse_json_or_discarded(text.substr(start, end - start));
    if (!record.is_object()) {
      throw HarnessError(source + ": line " + std::to_string(line_number) +
                         ": not a JSON object (is this a result stream?)");
    }
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace attnfuzz
