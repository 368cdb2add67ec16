// SPDX-License-Identifier: BSD-3-Clause
#include "case/case_codec.h"

#include <stdexcept>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/problem_features.h"

namespace attnfuzz {
namespace {

constexpr std::size_t kHeaderBytes = 4;
// The placement's index in the flags byte, above causal and the layout; wrapping into the table.
constexpr unsigned kPlacementShift = 2;
constexpr unsigned kPlacementCount = std::size(kPlacements);
constexpr std::int64_t kDistributionCount = std::size(kDataDistributions);
constexpr int kSpecialValueCount = 0
#define ATTNFUZZ_COUNT_SPECIAL(id, what) +1
    ATTNFUZZ_SPECIAL_VALUES(ATTNFUZZ_COUNT_SPECIAL)
#undef ATTNFUZZ_COUNT_SPECIAL
    ;

// A softmax scale is usable when it stays within 2^8 of 1/sqrt(head_dim): beyond that, scores of
// unit-scale data overflow fp32 or every softmax is one-hot, and neither tests a kernel.
bool usable_scale(double scale, std::int64_t head_dim) {
  if (scale == 0.0) return true;  // the default
  const double ratio = scale * std::sqrt(static_cast<double>(head_dim));
  return std::isfinite(scale) && scale > 0.0 && ratio >= 0x1p-8 && ratio <= 0x1p8;
}

bool usable_kernel_name(const std::string& name) {
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

class ByteWriter {
 public:
  void put(std::uint64_t value, int bytes) {
    for (int index = 0; index < bytes; ++index)
      out_.push_back(static_cast<std::uint8_t>(value >> (8 * index)));
  }
  void put_double(double value) {
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    put(bits, 8);
  }
  std::vector<std::uint8_t> take() { return std::move(out_); }

 private:
  std::vector<std::uint8_t> out_;
};

// Reads little-endian fields; past the end of the input every byte reads as zero.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool exhausted() const { return position_ >= bytes_.size(); }
  std::size_t remaining() const { return exhausted() ? 0 : bytes_.size() - position_; }
  std::uint64_t get(int bytes) {
    std::uint64_t value = 0;
    for (int index = 0; index < bytes; ++index, ++position_) {
      if (position_ < bytes_.size()) value |= std::uint64_t{bytes_[position_]} << (8 * index);
    }
    return value;
  }
  std::size_t position() const { return position_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t position_ = 0;
};

template <typename Value>
std::optional<Value> fail(std::string* why, std::string message) {
  if (why) *why = std::move(message);
  return std::nullopt;
}

}  // namespace

bool starts_with_case_magic(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= std::size(kCaseMagic) &&
         std::equal(std::begin(kCaseMagic), std::end(kCaseMagic), bytes.begin(),
                    [](char m, std::uint8_t b) { return static_cast<std::uint8_t>(m) == b; });
}

namespace {

// The fields of the binary form in order, each with the byte just past its end.
struct EncodedField {
  const char* name;
  std::size_t end;
};
constexpr EncodedField kEncodedFields[] = {{"seq_len_q", 6},
                                           {"seq_len_k", 8},
                                           {"causal, layout and placement", 9},
                                           {"batch", 10},
                                           {"kv_heads", 11},
                                           {"heads per kv head", 12},
                                           {"head_dim", 13},
                                           {"dtype", 14},
                                           {"row_padding", 15},
                                           {"data", 16},
                                           {"seed", 24},
                                           {"injected value", 25},
                                           {"injection tensor", 26},
                                           {"injection count", 27},
                                           {"softmax_scale", 35},
                                           {"kernel name length", kWholeCaseMinBytes}};

// Version 2 has the variants' block between the softmax scale and the kernel name.
constexpr EncodedField kVariantFields[] = {{"variant flags", 36},
                                           {"page_size", 38},
                                           {"window_left", 40},
                                           {"window_right", 42},
                                           {"softcap", 44}};
constexpr std::size_t kVariantBlockEnd = 44;

// Version 3 has the wide extents after the variants' block, before the sequence lengths.
constexpr EncodedField kWideFields[] = {{"wide batch", 47}, {"wide seq_len_q", 50}};
constexpr std::size_t kWideBlockEnd = 50;

// Variant flags of version 2 (the backward pass rides with them: a case of it is not a dense
// forward case, which is all version 1 holds).
constexpr unsigned kFlagAlibi = 1, kFlagReturnLse = 2, kFlagVarlenQ = 4, kFlagVarlenK = 8,
                   kFlagBackward = 16, kFlagFp8Inputs = 32;

// The fp8 inputs' byte (the last byte, after the kernel name, when kFlagFp8Inputs is set): two
// bits each for Q's, K's and V's storage and the descale form, each wrapping (modulo 3). Last, so
// that an input of an earlier build whose mutated flags hold a stray 32 (the flag meant nothing
// then) ends at its name and decodes as it did, and so that cutting the end drops it first.
constexpr std::uint64_t kInputStorageCount = std::size(kInputStorageNames);
constexpr std::uint64_t kDescaleCount = std::size(kDescales);
bool has_fp8_fields(const AttentionCase& attention_case) {
  return attention_case.q_storage != InputStorage::same ||
         attention_case.k_storage != InputStorage::same ||
         attention_case.v_storage != InputStorage::same || attention_case.descale != Descale::none;
}

// Softcap is stored in sixteenths: every value a matrix or generator uses (5, 30, 50, 12.5) is
// exact, and any two bytes decode to a usable one.
constexpr double kSoftcapStep = 1.0 / 16.0;
constexpr std::int64_t kEncodedMaxWindow = 65534;

// Whether the case needs version 2: it uses one of the attention variants
// (core/problem_features.h), whose fields only version 2 carries.
bool has_variants(const AttentionCase& attention_case) {
  return features_of(problem_shape_of(attention_case)) != 0 || attention_case.backward;
}

// Whether the case needs version 3: a batch or seq_len_q past version 2's limits.
bool needs_wide_extents(const AttentionCase& attention_case) {
  return attention_case.batch > kEncodedMaxBatch || attention_case.seq_len_q > kEncodedMaxSeqLen;
}

}  // namespace

std::optional<std::string> first_field_cut_off(std::span<const std::uint8_t> bytes) {
  const bool version_3 = bytes.size() > 3 && bytes[3] == kCaseEncodingVersionWide;
  const bool version_2 =
      version_3 || (bytes.size() > 3 && bytes[3] == kCaseEncodingVersionWithVariants);
  for (const EncodedField& field : kEncodedFields) {
    if (version_2 && field.end == kWholeCaseMinBytes) break;
    if (bytes.size() < field.end) return std::string(field.name);
  }
  if (!version_2) return std::nullopt;
  for (const EncodedField& field : kVariantFields) {
    if (bytes.size() < field.end) return std::string(field.name);
  }
  std::size_t block_end = kVariantBlockEnd;
  std::size_t batch = 1 + bytes[9] % kEncodedMaxBatch;
  std::size_t length_bytes = 2;
  if (version_3) {
    length_bytes = 3;
    for (const EncodedField& field : kWideFields) {
      if (bytes.size() < field.end) return std::string(field.name);
    }
    block_end = kWideBlockEnd;
    batch =
        1 + (std::size_t{bytes[44]} | std::size_t{bytes[45]} << 8 | std::size_t{bytes[46]} << 16) %
                kEncodedMaxWideBatch;
  }
  // The lengths' count depends on the batch and the flags: a whole case has its name's length
  // byte after them.
  const std::uint8_t flags = bytes[35];
  const std::size_t lengths =
      length_bytes * batch *
      (((flags & kFlagVarlenQ) != 0 ? 1 : 0) + ((flags & kFlagVarlenK) != 0 ? 1 : 0));
  if (bytes.size() < block_end + lengths) return std::string("sequence lengths");
  if (bytes.size() < block_end + lengths + 1) return std::string("kernel name length");
  const std::size_t name_end = block_end + lengths + 1 + bytes[block_end + lengths];
  if ((flags & kFlagFp8Inputs) != 0 && bytes.size() < name_end + 1) {
    return std::string("fp8 inputs");
  }
  return std::nullopt;
}

std::optional<std::vector<std::uint8_t>> encode_case(const AttentionCase& attention_case,
                                                     std::string* why) {
  using Bytes = std::vector<std::uint8_t>;
  const std::int64_t group =
      attention_case.kv_heads > 0 ? attention_case.heads / attention_case.kv_heads : 0;
  const auto head_dim_index =
      std::find(std::begin(kEncodedHeadDims), std::end(kEncodedHeadDims), attention_case.head_dim);
  const bool injected = attention_case.injection.value != SpecialValue::none;
  if (attention_case.batch < 1 || attention_case.batch > kEncodedMaxWideBatch)
    return fail<Bytes>(why, "batch outside 1..2^20");
  if (attention_case.kv_heads < 1 || attention_case.kv_heads > kEncodedMaxKvHeads || group < 1 ||
      group > kEncodedMaxGroup || group * attention_case.kv_heads != attention_case.heads) {
    return fail<Bytes>(why, "heads/kv_heads outside 1..8 kv heads of 1..8 query heads each");
  }
  if (attention_case.seq_len_q < 1 || attention_case.seq_len_q > kEncodedMaxWideSeqLenQ)
    return fail<Bytes>(why, "seq_len_q outside 1..2^20");
  if (attention_case.seq_len_k < 1 || attention_case.seq_len_k > kEncodedMaxSeqLen)
    return fail<Bytes>(why, "seq_len_k outside 1..16384");
  if (head_dim_index == std::end(kEncodedHeadDims))
    return fail<Bytes>(why, "head_dim not encodable");
  if (case_work(attention_case) > kCaseWorkCap) {
    return fail<Bytes>(why, "work " + std::to_string(case_work(attention_case)) +
                                " is over the binary form's cap 2^24 (fit_to_work_cap)");
  }
  if (page_pool_elements(attention_case) > kCaseWorkCap) {
    return fail<Bytes>(why, "page pool of " + std::to_string(page_pool_elements(attention_case)) +
                                " elements is over the binary form's cap 2^24 (fit_to_work_cap)");
  }
  if (attention_case.row_padding < 0 || attention_case.row_padding > kEncodedMaxRowPadding) {
    return fail<Bytes>(why, "row_padding outside 0..16");
  }
  if (injected && (attention_case.injection.count < 1 ||
                   attention_case.injection.count > kEncodedMaxInjections)) {
    return fail<Bytes>(why, "injection count outside 1..16");
  }
  if (!usable_scale(attention_case.softmax_scale, attention_case.head_dim))
    return fail<Bytes>(why, "softmax_scale unusable");
  if (attention_case.kernel.size() > 255 || !usable_kernel_name(attention_case.kernel)) {
    return fail<Bytes>(why, "kernel name too long or with odd characters");
  }
  const bool wide = needs_wide_extents(attention_case);
  const bool variants = wide || has_variants(attention_case);
  if (attention_case.page_size > kEncodedMaxSeqLen) return fail<Bytes>(why, "page_size over 16384");
  if (attention_case.window_left > kEncodedMaxWindow ||
      attention_case.window_right > kEncodedMaxWindow) {
    return fail<Bytes>(why, "window extent over 65534");
  }
  if (attention_case.softcap / kSoftcapStep != std::floor(attention_case.softcap / kSoftcapStep) ||
      attention_case.softcap / kSoftcapStep > 65535.0) {
    return fail<Bytes>(why, "softcap not a multiple of 1/16 up to 4095.9375");
  }
  if (auto inconsistency = find_inconsistency(attention_case))
    return fail<Bytes>(why, inconsistency->message);

  ByteWriter out;
  for (char m : kCaseMagic) out.put(static_cast<std::uint8_t>(m), 1);
  // A dense case keeps the version 1 bytes that saved corpora hold; the variants need version 2,
  // and a shape past its limits version 3 (whose narrow batch-1 and seq_len_q-1 are written 0).
  out.put(wide       ? kCaseEncodingVersionWide
          : variants ? kCaseEncodingVersionWithVariants
                     : kCaseEncodingVersion,
          1);
  out.put(wide ? 0 : static_cast<std::uint64_t>(attention_case.seq_len_q - 1), 2);
  out.put(static_cast<std::uint64_t>(attention_case.seq_len_k - 1), 2);
  out.put((attention_case.causal ? 1u : 0u) | (attention_case.layout == Layout::bhsd ? 2u : 0u) |
              static_cast<unsigned>(attention_case.placement) << kPlacementShift,
          1);
  out.put(wide ? 0 : static_cast<std::uint64_t>(attention_case.batch - 1), 1);
  out.put(static_cast<std::uint64_t>(attention_case.kv_heads - 1), 1);
  out.put(static_cast<std::uint64_t>(group - 1), 1);
  out.put(static_cast<std::uint64_t>(head_dim_index - std::begin(kEncodedHeadDims)), 1);
  out.put(static_cast<std::uint64_t>(attention_case.dtype), 1);
  out.put(static_cast<std::uint64_t>(attention_case.row_padding), 1);
  out.put(static_cast<std::uint64_t>(attention_case.data), 1);
  out.put(attention_case.seed, 8);
  out.put(static_cast<std::uint64_t>(attention_case.injection.value), 1);
  out.put(injected ? static_cast<std::uint64_t>(attention_case.injection.tensor) : 0, 1);
  out.put(injected ? static_cast<std::uint64_t>(attention_case.injection.count - 1) : 0, 1);
  out.put_double(attention_case.softmax_scale);
  if (variants) {
    out.put((attention_case.alibi ? kFlagAlibi : 0u) |
                (attention_case.return_lse ? kFlagReturnLse : 0u) |
                (attention_case.backward ? kFlagBackward : 0u) |
                (attention_case.seq_lens_q.empty() ? 0u : kFlagVarlenQ) |
                (attention_case.seq_lens_k.empty() ? 0u : kFlagVarlenK) |
                (has_fp8_fields(attention_case) ? kFlagFp8Inputs : 0u),
            1);
    out.put(static_cast<std::uint64_t>(attention_case.page_size), 2);
    out.put(static_cast<std::uint64_t>(attention_case.window_left + 1), 2);
    out.put(static_cast<std::uint64_t>(attention_case.window_right + 1), 2);
    out.put(static_cast<std::uint64_t>(attention_case.softcap / kSoftcapStep), 2);
    if (wide) {
      out.put(static_cast<std::uint64_t>(attention_case.batch - 1), 3);
      out.put(static_cast<std::uint64_t>(attention_case.seq_len_q - 1), 3);
    }
    const int length_bytes = wide ? 3 : 2;  // version 3's lengths reach its wide seq_len_q
    for (const std::int64_t length : attention_case.seq_lens_q)
      out.put(static_cast<std::uint64_t>(length), length_bytes);
    for (const std::int64_t length : attention_case.seq_lens_k)
      out.put(static_cast<std::uint64_t>(length), length_bytes);
  }
  out.put(attention_case.kernel.size(), 1);
  for (char ch : attention_case.kernel) out.put(static_cast<std::uint8_t>(ch), 1);
  if (has_fp8_fields(attention_case)) {
    out.put(static_cast<std::uint64_t>(attention_case.q_storage) |
                static_cast<std::uint64_t>(attention_case.k_storage) << 2 |
                static_cast<std::uint64_t>(attention_case.v_storage) << 4 |
                static_cast<std::uint64_t>(attention_case.descale) << 6,
            1);
  }
  return out.take();
}

namespace {

// A usable scale from any eight bytes: 1/sqrt(head_dim) times 2^e, e in [-8, 8) with sixteen bits
// of fraction, so that folded scales fall off the fp16 and bf16 grids as well as on powers of two.
double folded_scale(std::uint64_t bits, std::int64_t head_dim) {
  const double exponent =
      static_cast<double>(bits % 16) - 8.0 + static_cast<double>((bits >> 4) & 0xFFFFu) / 65536.0;
  return std::exp2(exponent) / std::sqrt(static_cast<double>(head_dim));
}

// Fits the case under the work cap when it is over, saying so in `fitted`.
void fit_if_over_cap(AttentionCase& attention_case, bool* fitted) {
  if (case_work(attention_case) <= kCaseWorkCap) return;
  attention_case = fit_to_work_cap(attention_case);
  if (fitted != nullptr) *fitted = true;
}

// decode_case's work. With `any_bytes`, what the exact form rejects is read as a case instead
// (decode_any_bytes); `repaired` then says whether anything was.
std::optional<AttentionCase> decode_fields(std::span<const std::uint8_t> bytes, bool any_bytes,
                                           std::string* why, bool* fitted, bool* repaired) {
  std::uint8_t version = kCaseEncodingVersion;
  std::span<const std::uint8_t> body;
  const bool valid_header = bytes.size() >= kHeaderBytes && starts_with_case_magic(bytes) &&
                            bytes[3] >= kCaseEncodingVersion &&
                            bytes[3] <= kCaseEncodingVersionWide;
  if (valid_header) {
    version = bytes[3];
    body = bytes.subspan(kHeaderBytes);
  } else if (any_bytes) {
    // The version modulo 3 picks the form (1 and 2 as named, 0 the wide 3); the fields start
    // where they would.
    if (bytes.size() >= kHeaderBytes) version = bytes[3] % 3 == 0 ? 3 : bytes[3] % 3;
    body = bytes.subspan(std::min(bytes.size(), kHeaderBytes));
    if (repaired != nullptr) *repaired = true;
  } else if (bytes.size() < kHeaderBytes) {
    return fail<AttentionCase>(why, "too short for a case (" + std::to_string(bytes.size()) +
                                        " bytes, the header alone has 4)");
  } else if (!starts_with_case_magic(bytes)) {
    return fail<AttentionCase>(why, "not a case: the first bytes are not \"AFZ\"");
  } else {
    return fail<AttentionCase>(why, "case encoding version " + std::to_string(bytes[3]) +
                                        " is not supported (this build reads versions " +
                                        std::to_string(kCaseEncodingVersion) + " to " +
                                        std::to_string(kCaseEncodingVersionWide) + ")");
  }
  ByteReader in(body);
  AttentionCase attention_case;
  attention_case.seq_len_q = 1 + static_cast<std::int64_t>(in.get(2) % kEncodedMaxSeqLen);
  const bool has_seq_len_k = !in.exhausted();
  attention_case.seq_len_k = 1 + static_cast<std::int64_t>(in.get(2) % kEncodedMaxSeqLen);
  if (!has_seq_len_k) attention_case.seq_len_k = attention_case.seq_len_q;
  const std::uint64_t flags = in.get(1);
  attention_case.causal = (flags & 1u) != 0;
  attention_case.layout = (flags & 2u) != 0 ? Layout::bhsd : Layout::bshd;
  attention_case.placement = static_cast<Placement>((flags >> kPlacementShift) % kPlacementCount);
  attention_case.batch = 1 + static_cast<std::int64_t>(in.get(1) % kEncodedMaxBatch);
  attention_case.kv_heads = 1 + static_cast<std::int64_t>(in.get(1) % kEncodedMaxKvHeads);
  attention_case.heads =
      attention_case.kv_heads * (1 + static_cast<std::int64_t>(in.get(1) % kEncodedMaxGroup));
  attention_case.head_dim = kEncodedHeadDims[in.get(1) % std::size(kEncodedHeadDims)];
  attention_case.dtype = static_cast<Dtype>(in.get(1) % kOutputDtypeCount);
  // Version 3's batch and seq_len_q come later, in its wide fields: its fit waits for them.
  const bool over_cap =
      version != kCaseEncodingVersionWide && case_work(attention_case) > kCaseWorkCap;
  if (over_cap) attention_case = fit_to_work_cap(attention_case);
  if (fitted != nullptr) *fitted = over_cap;
  attention_case.row_padding = static_cast<std::int64_t>(in.get(1) % (kEncodedMaxRowPadding + 1));
  attention_case.data = static_cast<DataDistribution>(in.get(1) % kDistributionCount);
  attention_case.seed = in.get(8);
  attention_case.injection.value = static_cast<SpecialValue>(in.get(1) % kSpecialValueCount);
  attention_case.injection.tensor = static_cast<TensorRole>(in.get(1) % 3);
  attention_case.injection.count = 1 + static_cast<std::int64_t>(in.get(1) % kEncodedMaxInjections);
  if (attention_case.injection.value == SpecialValue::none) attention_case.injection = {};
  const std::uint64_t scale_bits = in.get(8);
  std::memcpy(&attention_case.softmax_scale, &scale_bits, sizeof scale_bits);
  if (!usable_scale(attention_case.softmax_scale, attention_case.head_dim)) {
    if (!any_bytes) {
      return fail<AttentionCase>(why,
                                 "softmax scale is not finite, positive and within 2^8 of "
                                 "1/sqrt(head_dim)");
    }
    attention_case.softmax_scale = folded_scale(scale_bits, attention_case.head_dim);
    if (repaired != nullptr) *repaired = true;
  }
  bool fp8_flag = false;
  if (version >= kCaseEncodingVersionWithVariants) {
    const std::uint64_t flags = in.get(1);
    attention_case.alibi = (flags & kFlagAlibi) != 0;
    attention_case.return_lse = (flags & kFlagReturnLse) != 0;
    attention_case.backward = (flags & kFlagBackward) != 0;
    attention_case.page_size = static_cast<std::int64_t>(in.get(2) % (kEncodedMaxSeqLen + 1));
    attention_case.window_left = static_cast<std::int64_t>(in.get(2) % (kEncodedMaxWindow + 1)) - 1;
    attention_case.window_right =
        static_cast<std::int64_t>(in.get(2) % (kEncodedMaxWindow + 1)) - 1;
    attention_case.softcap = static_cast<double>(in.get(2)) * kSoftcapStep;
    if (version == kCaseEncodingVersionWide) {
      // Each wide field is fitted as it comes, so that no product of them leaves int64.
      attention_case.batch = 1 + static_cast<std::int64_t>(in.get(3) % kEncodedMaxWideBatch);
      fit_if_over_cap(attention_case, fitted);
      attention_case.seq_len_q = 1 + static_cast<std::int64_t>(in.get(3) % kEncodedMaxWideSeqLenQ);
      fit_if_over_cap(attention_case, fitted);
    }
    // Each length wraps into 0 .. seq_len: every value is a valid sequence.
    const int length_bytes = version == kCaseEncodingVersionWide ? 3 : 2;
    if ((flags & kFlagVarlenQ) != 0) {
      for (std::int64_t b = 0; b < attention_case.batch; ++b) {
        attention_case.seq_lens_q.push_back(
            static_cast<std::int64_t>(in.get(length_bytes) % (attention_case.seq_len_q + 1)));
      }
    }
    if ((flags & kFlagVarlenK) != 0) {
      for (std::int64_t b = 0; b < attention_case.batch; ++b) {
        attention_case.seq_lens_k.push_back(
            static_cast<std::int64_t>(in.get(length_bytes) % (attention_case.seq_len_k + 1)));
      }
    }
    fp8_flag = (flags & kFlagFp8Inputs) != 0;
  }
  // A large page over a few keys: its pool is fitted under the cap as the work is.
  if (page_pool_elements(attention_case) > kCaseWorkCap) {
    attention_case = fit_to_work_cap(attention_case);
    if (fitted != nullptr) *fitted = true;
  }
  const std::size_t name_length = in.get(1);
  // The fp8 byte after the name, when flagged and there (see kFlagFp8Inputs).
  const bool fp8_byte = fp8_flag && in.remaining() == name_length + 1;
  if (fp8_byte) {
    const std::uint64_t fp8 = bytes.back();
    attention_case.q_storage = static_cast<InputStorage>((fp8 & 3u) % kInputStorageCount);
    attention_case.k_storage = static_cast<InputStorage>((fp8 >> 2 & 3u) % kInputStorageCount);
    attention_case.v_storage = static_cast<InputStorage>((fp8 >> 4 & 3u) % kInputStorageCount);
    attention_case.descale = static_cast<Descale>((fp8 >> 6 & 3u) % kDescaleCount);
    bytes = bytes.first(bytes.size() - 1);
  }
  if (in.remaining() != name_length + (fp8_byte ? 1 : 0)) {
    if (!any_bytes) {
      return fail<AttentionCase>(why, std::to_string(in.remaining()) +
                                          " bytes follow the kernel name length " +
                                          std::to_string(name_length) + ": they must match");
    }
    if (repaired != nullptr) *repaired = true;
    return attention_case;  // the default kernel
  }
  attention_case.kernel.assign(bytes.end() - static_cast<std::ptrdiff_t>(name_length), bytes.end());
  if (!usable_kernel_name(attention_case.kernel)) {
    if (!any_bytes) {
      return fail<AttentionCase>(why, "kernel name has characters outside [A-Za-z0-9_.-]");
    }
    attention_case.kernel.clear();
    if (repaired != nullptr) *repaired = true;
  }
  return attention_case;
}

}  // namespace

std::optional<AttentionCase> decode_case(std::span<const std::uint8_t> bytes, std::string* why,
                                         bool* fitted) {
  return decode_fields(bytes, false, why, fitted, nullptr);
}

AttentionCase decode_any_bytes(std::span<const std::uint8_t> bytes, bool* fitted, bool* repaired) {
  if (repaired != nullptr) *repaired = false;
  // With any_bytes every path returns a case: a failure added to decode_fields must say so here.
  std::optional<AttentionCase> decoded = decode_fields(bytes, true, nullptr, fitted, repaired);
  if (!decoded) throw std::logic_error("decode_any_bytes: bytes read as no case");
  return *std::move(decoded);
}

nlohmann::json case_keys_to_json(const AttentionCase& attention_case) {
  nlohmann::json keys = nlohmann::json::object();
  for_each_case_field([&](auto field) {
    using Field = decltype(field);
    const auto& value = attention_case.*Field::member;
    if (!Field::Codec::unset(value)) keys[std::string(Field::key)] = Field::Codec::write(value);
  });
  return keys;
}

AttentionCase case_from_keys_json(const nlohmann::json& keys) {
  if (!keys.is_object()) throw std::invalid_argument("a case is a JSON object of its keys");
  AttentionCase attention_case;
  std::size_t known = 0;
  for_each_case_field([&](auto field) {
    using Field = decltype(field);
    const auto found = keys.find(std::string(Field::key));
    if (found == keys.end()) return;
    ++known;
    try {
      attention_case.*Field::member = Field::Codec::read(*found);
    } catch (const FieldProblem& problem) {
      throw std::invalid_argument("case key \"" + std::string(Field::key) +
                                  "\": " + problem.message);
    }
  });
  if (known != keys.size()) {
    for (const auto& item : keys.items()) {
      const std::string& name = item.key();
      bool is_field = false;
      for_each_case_field([&](auto field) { is_field = is_field || name == decltype(field)::key; });
      if (!is_field) throw std::invalid_argument("unknown case key \"" + name + "\"");
    }
  }
  if (const auto inconsistency = find_inconsistency(attention_case)) {
    throw std::invalid_argument(inconsistency->message);
  }
  return attention_case;
}

std::string case_to_matrix_text(const AttentionCase& attention_case, const std::string& name) {
  return cases_to_matrix_text({attention_case}, name);
}

std::string cases_to_matrix_text(const std::vector<AttentionCase>& cases, const std::string& name) {
  nlohmann::json keys = nlohmann::json::array();
  for (const AttentionCase& attention_case : cases)
    keys.push_back(case_keys_to_json(attention_case));
  const nlohmann::json matrix = {{"name", name}, {"cases", keys}};
  return matrix.dump(2) + "\n";
}

}  // namespace attnfuzz
