// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the readers of bytes the harness did not write in this process: the binary
// case codec (libFuzzer crash files and --replay), a worker's case request (case keys as JSON),
// and the result-stream reader (--resume, --stream). Built with ASan and UBSan by the nested build
// in cmake/LibFuzzer.cmake, beside the matrix reader's fuzzer.
//
// The first byte picks the reader, the rest is its input. A reader may refuse an input (with its
// documented error: a reason from decode_case, std::invalid_argument, HarnessError); what it
// accepts must hold up:
//   0 binary case:  a decoded case encodes again and decodes back to itself;
//   1 case keys:    the case read from the keys writes back to keys that read as the same case;
//   2 stream:       each record of the text reads back into a result, or is refused cleanly.
// Anything else (another exception, a broken round trip) is printed and the process aborts, so
// libFuzzer keeps the input; memory errors and undefined behaviour abort through the sanitizers.
//
//   saved_input_fuzzer [libFuzzer flags] CORPUS_DIR...
//   (scripts/fuzz_reader.sh saved_input builds it and runs it on a copy of corpus/saved_input/)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "case/case_codec.h"
#include "core/harness_error.h"
#include "core/json_parse.h"
#include "run/case_result_json.h"
#include "run/result_stream.h"

namespace {

using attnfuzz::AttentionCase;

[[noreturn]] void misbehaved(const std::string& reader, const std::string& what) {
  std::fprintf(stderr, "%s reader misbehaved: %s\n", reader.c_str(), what.c_str());
  std::abort();
}

void read_binary_case(std::span<const std::uint8_t> bytes) {
  std::string why;
  const std::optional<AttentionCase> decoded = attnfuzz::decode_case(bytes, &why);
  if (!decoded) {
    if (why.empty()) misbehaved("binary case", "refused without a reason");
    return;
  }
  (void)attnfuzz::first_field_cut_off(bytes);
  const auto encoded = attnfuzz::encode_case(*decoded, &why);
  if (!encoded) misbehaved("binary case", "a decoded case does not encode: " + why);
  const std::optional<AttentionCase> again = attnfuzz::decode_case(*encoded, &why);
  if (!again || !(*again == *decoded)) misbehaved("binary case", "decode(encode(c)) != c");
}

void read_case_keys(std::string_view text) {
  const nlohmann::json keys = attnfuzz::parse_json_or_discarded(text);
  AttentionCase attention_case;
  try {
    attention_case = attnfuzz::case_from_keys_json(keys);
  } catch (const std::invalid_argument&) {
    return;  // refused, with a message naming the key
  }
  if (!(attnfuzz::case_from_keys_json(attnfuzz::case_keys_to_json(attention_case)) ==
        attention_case)) {
    misbehaved("case keys", "keys written back read as another case");
  }
}

void read_stream(std::string_view text) {
  std::vector<nlohmann::json> records;
  try {
    records = attnfuzz::parse_result_stream(text, "fuzzed stream");
  } catch (const attnfuzz::HarnessError&) {
    return;
  }
  for (const nlohmann::json& record : records) {
    if (!record.is_object()) misbehaved("stream", "a record that is not an object was accepted");
    AttentionCase attention_case;
    try {
      (void)attnfuzz::case_result_from_json(record, attention_case);
    } catch (const std::exception&) {
      // A record this build cannot read is refused; --resume turns it into a harness error.
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::uint8_t> input(data + 1, size - 1);
  const std::string_view text(reinterpret_cast<const char*>(input.data()), input.size());
  try {
    switch (data[0] % 3) {
      case 0:
        read_binary_case(input);
        break;
      case 1:
        read_case_keys(text);
        break;
      default:
        read_stream(text);
        break;
    }
  } catch (const std::exception& error) {
    misbehaved("saved input", std::string("unexpected exception: ") + error.what());
  }
  return 0;
}
