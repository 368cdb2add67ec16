// SPDX-License-Identifier: BSD-3-Clause
// Cases as bytes and as JSON: round trips, and every byte string either decodes to a valid case
// or is rejected with a reason.
#include "case/case_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <span>

#include "core/harness_error.h"
#include "fuzz/case_generator.h"
#include "matrix/matrix_file.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

AttentionCase without_id(AttentionCase attention_case) {
  attention_case.id.clear();
  return attention_case;
}

std::vector<std::uint8_t> encoded(const AttentionCase& attention_case) {
  std::string why;
  const auto bytes = encode_case(attention_case, &why);
  EXPECT_TRUE(bytes.has_value()) << why;
  return bytes.value_or(std::vector<std::uint8_t>{});
}

RC_GTEST_PROP(CaseCodec, DecodingAnEncodedCaseGivesTheSameCase, ()) {
  AttentionCase attention_case =
      *small_case({.max_seq_len = 4096, .distributions = {}, .injections = true});
  attention_case.kernel = *rc::gen::element<std::string>("", "cpu_flash", "my-kernel.v2");
  attention_case.softmax_scale = *rc::gen::element(0.0, 0.125, 0.3);
  attention_case = fit_to_work_cap(attention_case);
  const auto bytes = encode_case(attention_case);
  RC_ASSERT(bytes.has_value());
  std::string why;
  const std::optional<AttentionCase> decoded = decode_case(*bytes, &why);
  RC_ASSERT(decoded.has_value());
  RC_ASSERT(*decoded == without_id(attention_case));
}

RC_GTEST_PROP(CaseCodec, AnyByteStringDecodesToAValidCaseOrIsRejectedWithAReason, ()) {
  std::vector<std::uint8_t> bytes = *rc::gen::arbitrary<std::vector<std::uint8_t>>();
  if (*rc::gen::arbitrary<bool>()) {  // half the time, a valid header and a plausible length
    bytes.resize(4 + bytes.size() % 40);
    bytes[0] = 'A', bytes[1] = 'F', bytes[2] = 'Z', bytes[3] = kCaseEncodingVersion;
    if (bytes.size() >= 36) bytes[35] = static_cast<std::uint8_t>(bytes.size() - 36);
  }
  std::string why;
  const std::optional<AttentionCase> decoded = decode_case(bytes, &why);
  if (!decoded) {
    RC_ASSERT(!why.empty());
    return;
  }
  const AttentionCase& c = *decoded;
  RC_ASSERT(c.batch >= 1 && c.kv_heads >= 1 && c.heads % c.kv_heads == 0);
  RC_ASSERT(c.seq_len_q >= 1 && c.seq_len_k >= 1 && c.head_dim >= 1 && c.row_padding >= 0);
  RC_ASSERT(case_work(c) <= kCaseWorkCap);
  // Decoding is canonical: what it produced encodes and decodes back to itself.
  const auto again = encode_case(c);
  RC_ASSERT(again.has_value());
  RC_ASSERT(decode_case(*again) == decoded);
}

// What libFuzzer's mutator does with every mutation: any bytes are a case, the same case
// decode_case reads wherever it reads one, and written back in the exact form they decode exactly
// to it.
RC_GTEST_PROP(CaseCodec, AnyByteStringIsACaseThatEncodesAndDecodesExactlyBackToItself, ()) {
  std::vector<std::uint8_t> bytes = *rc::gen::arbitrary<std::vector<std::uint8_t>>();
  if (*rc::gen::arbitrary<bool>()) {  // half the time, a valid header and a plausible length
    bytes.resize(4 + bytes.size() % 60);
    bytes[0] = 'A', bytes[1] = 'F', bytes[2] = 'Z';
    bytes[3] = *rc::gen::element(kCaseEncodingVersion, kCaseEncodingVersionWithVariants,
                                 kCaseEncodingVersionWide);
  }
  bool repaired = true;
  const AttentionCase any = decode_any_bytes(bytes, nullptr, &repaired);
  const std::optional<AttentionCase> exact = decode_case(bytes);
  RC_ASSERT(repaired == !exact.has_value());
  if (exact) RC_ASSERT(*exact == any);
  RC_ASSERT(!find_inconsistency(any).has_value());
  for_each_case_field([&](auto field) {
    using Field = decltype(field);
    RC_ASSERT(!Field::Codec::outside_limits(any.*Field::member).has_value());
  });
  const std::optional<std::vector<std::uint8_t>> written = encode_case(any);
  RC_ASSERT(written.has_value());
  RC_ASSERT(decode_case(*written) == std::optional<AttentionCase>(any));
}

TEST(CaseCodec, BytesThatAreNotACaseAreReadAsTheCaseTheirFieldsSay) {
  AttentionCase base;
  base.seq_len_q = 70;
  base.seq_len_k = 130;
  base.head_dim = 128;
  base.kernel = "cpu_flash";
  std::vector<std::uint8_t> bytes = encoded(base);
  // A wrong magic: the fields are read where they are.
  std::vector<std::uint8_t> no_magic = bytes;
  no_magic[0] = 'X';
  bool repaired = false;
  AttentionCase read = decode_any_bytes(no_magic, nullptr, &repaired);
  EXPECT_TRUE(repaired);
  EXPECT_EQ(read, without_id(base));
  // An unusable scale is folded within 2^8 of the default.
  std::vector<std::uint8_t> nan_scale = bytes;
  const double nan = std::nan("");
  std::memcpy(&nan_scale[27], &nan, sizeof nan);
  read = decode_any_bytes(nan_scale, nullptr, &repaired);
  EXPECT_TRUE(repaired);
  const double ratio = read.softmax_scale * std::sqrt(128.0);
  EXPECT_GE(ratio, 0x1p-8);
  EXPECT_LT(ratio, 0x1p8);
  // A byte inserted into the name: the default kernel, the rest as it was.
  std::vector<std::uint8_t> inserted = bytes;
  inserted.insert(inserted.end() - 3, 'z');
  read = decode_any_bytes(inserted, nullptr, &repaired);
  EXPECT_TRUE(repaired);
  EXPECT_EQ(read.kernel, "");
  EXPECT_EQ(read.seq_len_k, 130);
  // Nothing at all: the case of the header alone, every field at the binary form's default.
  read = decode_any_bytes({}, nullptr, &repaired);
  EXPECT_TRUE(repaired);
  const std::uint8_t header[] = {'A', 'F', 'Z', kCaseEncodingVersion};
  EXPECT_EQ(read, decode_case(header));
}

TEST(CaseCodec, AShapePastTheGridLimitsIsWrittenInTheWideFormAndReadBackExactly) {
  AttentionCase pairs;
  pairs.batch = 2049;
  pairs.heads = 32;
  pairs.kv_heads = 8;
  pairs.seq_len_q = 1;
  pairs.seq_len_k = 3;
  pairs.head_dim = 32;
  AttentionCase rows = pairs;
  rows.batch = rows.heads = rows.kv_heads = 1;
  rows.seq_len_q = 65537;
  rows.seq_lens_q = {65537};
  rows.seq_lens_k = {2};
  for (const AttentionCase& wide : {pairs, rows}) {
    const std::vector<std::uint8_t> bytes = encoded(wide);
    EXPECT_EQ(bytes[3], kCaseEncodingVersionWide);
    std::string why;
    EXPECT_EQ(decode_case(bytes, &why), std::optional<AttentionCase>(without_id(wide))) << why;
    EXPECT_EQ(first_field_cut_off(bytes), std::nullopt);
    EXPECT_EQ(first_field_cut_off(std::span(bytes).first(46)), "wide batch");
    EXPECT_EQ(first_field_cut_off(std::span(bytes).first(49)), "wide seq_len_q");
  }
  // Both wide fields at their largest over 64 heads, 1024 keys and D 256: a product past int64,
  // fitted under the cap field by field.
  AttentionCase heavy = pairs;
  heavy.batch = 9;
  heavy.heads = 64;
  heavy.head_dim = 256;
  std::vector<std::uint8_t> bytes = encoded(heavy);
  bytes[6] = 0xFF, bytes[7] = 0x03;  // seq_len_k 1024
  for (const std::size_t field : {44, 47})
    bytes[field] = bytes[field + 1] = 0xFF, bytes[field + 2] = 0x0F;
  bool fitted = false;
  const std::optional<AttentionCase> fitted_case = decode_case(bytes, nullptr, &fitted);
  ASSERT_TRUE(fitted_case.has_value());
  EXPECT_TRUE(fitted);
  EXPECT_LE(case_work(*fitted_case), kCaseWorkCap);
  EXPECT_TRUE(encode_case(*fitted_case).has_value());
  // A case within the narrow limits keeps its version 1 or 2 bytes.
  AttentionCase narrow = pairs;
  narrow.batch = 8;
  narrow.heads = 64;
  EXPECT_EQ(encoded(narrow)[3], kCaseEncodingVersion);
}

TEST(CaseCodec, Fp8InputsAreTheLastByteAndAnEarlierInputWithAStrayFlagDecodesAsItDid) {
  AttentionCase fp8;
  fp8.heads = 4;
  fp8.kv_heads = 2;
  fp8.seq_len_q = 3;
  fp8.seq_len_k = 9;
  fp8.kernel = "cpu_flash";
  fp8.q_storage = InputStorage::e4m3;
  fp8.k_storage = InputStorage::e5m2;
  fp8.v_storage = InputStorage::e5m2;
  fp8.descale = Descale::per_kv_head;
  const std::vector<std::uint8_t> bytes = encoded(fp8);
  EXPECT_EQ(bytes[3], kCaseEncodingVersionWithVariants);
  EXPECT_EQ(bytes[35] & 32u, 32u);
  EXPECT_EQ(bytes.back(), 1u | 2u << 2 | 2u << 4 | 2u << 6);
  std::string why;
  EXPECT_EQ(decode_case(bytes, &why), std::optional<AttentionCase>(without_id(fp8))) << why;
  EXPECT_EQ(first_field_cut_off(bytes), std::nullopt);
  // Cut before it: the fp8 inputs take their defaults, and a reader says which field was lost.
  const std::span<const std::uint8_t> cut = std::span(bytes).first(bytes.size() - 1);
  AttentionCase without_fp8 = without_id(fp8);
  without_fp8.q_storage = without_fp8.k_storage = without_fp8.v_storage = InputStorage::same;
  without_fp8.descale = Descale::none;
  EXPECT_EQ(decode_case(cut, &why), std::optional<AttentionCase>(without_fp8)) << why;
  EXPECT_EQ(first_field_cut_off(cut), "fp8 inputs");
  // An earlier build's input with a kernel name, whose mutated flags hold 32 (meaningless then),
  // ends at its name: it reads as it did.
  AttentionCase earlier = without_fp8;
  earlier.alibi = true;
  std::vector<std::uint8_t> stray = encoded(earlier);
  stray[35] |= 32u;
  EXPECT_EQ(decode_case(stray, &why), std::optional<AttentionCase>(earlier)) << why;
}

TEST(CaseCodec, RejectsAWrongMagicAnOtherVersionAndAShortInput) {
  AttentionCase attention_case;
  std::vector<std::uint8_t> bytes = encoded(attention_case);
  std::string why;

  std::vector<std::uint8_t> wrong_magic = bytes;
  wrong_magic[0] = 'X';
  EXPECT_FALSE(decode_case(wrong_magic, &why));
  EXPECT_THAT(why, HasSubstr("AFZ"));

  std::vector<std::uint8_t> other_version = bytes;
  other_version[3] = kCaseEncodingVersionWide + 1;
  EXPECT_FALSE(decode_case(other_version, &why));
  EXPECT_THAT(why, HasSubstr("version 4 is not supported"));

  EXPECT_FALSE(decode_case(std::span(bytes).first(3), &why));
  EXPECT_THAT(why, HasSubstr("too short"));

  bytes.push_back(0);
  EXPECT_FALSE(decode_case(bytes, &why));
  EXPECT_THAT(why, HasSubstr("must match"));
}

TEST(CaseCodec, CuttingBytesOffTheEndLeavesTheRestAtTheirSimplestValues) {
  AttentionCase attention_case;
  attention_case.seq_len_q = 113;
  attention_case.seq_len_k = 203;
  attention_case.causal = true;
  attention_case.heads = 4;
  attention_case.kv_heads = 2;
  attention_case.head_dim = 128;
  attention_case.dtype = Dtype::bf16;
  attention_case.data = DataDistribution::peaked_softmax;
  const std::vector<std::uint8_t> bytes = encoded(attention_case);

  const std::optional<AttentionCase> only_seq_len_q = decode_case(std::span(bytes).first(6));
  ASSERT_TRUE(only_seq_len_q.has_value());
  EXPECT_EQ(only_seq_len_q->seq_len_q, 113);
  EXPECT_EQ(only_seq_len_q->seq_len_k, 113);  // defaults to seq_len_q
  EXPECT_FALSE(only_seq_len_q->causal);
  EXPECT_EQ(only_seq_len_q->heads, 1);
  EXPECT_EQ(only_seq_len_q->head_dim, 64);
  EXPECT_EQ(only_seq_len_q->dtype, Dtype::fp16);

  const std::optional<AttentionCase> shape_only = decode_case(std::span(bytes).first(15));
  ASSERT_TRUE(shape_only.has_value());
  EXPECT_EQ(shape_only->seq_len_k, 203);
  EXPECT_TRUE(shape_only->causal);
  EXPECT_EQ(shape_only->heads, 4);
  EXPECT_EQ(shape_only->head_dim, 128);
  EXPECT_EQ(shape_only->dtype, Dtype::bf16);
  EXPECT_EQ(shape_only->data, DataDistribution::normal);  // cut off: the simplest data
  EXPECT_EQ(shape_only->seed, 0u);
}

TEST(CaseCodec, ACaseCutShortNamesTheFirstFieldItLacksAndAWholeOneNone) {
  AttentionCase attention_case;
  attention_case.kernel = "cpu_flash";
  const std::vector<std::uint8_t> bytes = encoded(attention_case);
  EXPECT_EQ(first_field_cut_off(bytes), std::nullopt);
  EXPECT_EQ(first_field_cut_off(std::span(bytes).first(kWholeCaseMinBytes)), std::nullopt);
  EXPECT_EQ(first_field_cut_off(std::span(bytes).first(6)), "seq_len_k");
  EXPECT_EQ(first_field_cut_off(std::span(bytes).first(20)), "seed");  // in the middle of it
  EXPECT_EQ(first_field_cut_off(std::span(bytes).first(kWholeCaseMinBytes - 1)),
            "kernel name length");
}

TEST(CaseCodec, CaseKeysJsonReadsBackAsTheSameCaseAndRefusesUnknownKeys) {
  rc::check("case_from_keys_json(case_keys_to_json(c)) == c", [] {
    AttentionCase attention_case = *small_case();
    attention_case.id = "";
    RC_ASSERT(case_from_keys_json(case_keys_to_json(attention_case)) == attention_case);
  });
  EXPECT_THROW(case_from_keys_json(nlohmann::json{{"sequence", 3}}), std::invalid_argument);
  EXPECT_THROW(case_from_keys_json(nlohmann::json{{"batch", "two"}}), std::invalid_argument);
}

TEST(CaseCodec, RejectsAScaleThatIsNotFinitePositiveAndNearTheDefault) {
  AttentionCase attention_case;
  std::vector<std::uint8_t> bytes = encoded(attention_case);
  for (const double scale : {std::nan(""), -0.125, 1e300, 1e-300}) {
    std::memcpy(&bytes[27], &scale, sizeof scale);
    std::string why;
    EXPECT_FALSE(decode_case(bytes, &why)) << scale;
    EXPECT_THAT(why, HasSubstr("softmax scale"));
  }
}

TEST(CaseCodec, AShapeOverTheWorkCapDecodesFittedUnderItAndSaysSo) {
  // Two batches of 6 heads, 113 x 203 at head_dim 128: 35M of work, twice the cap. Its bytes
  // (written here by hand: encode refuses it) decode to the case fit_to_work_cap makes of it.
  AttentionCase large;
  large.batch = 2;
  large.heads = 6;
  large.kv_heads = 2;
  large.seq_len_q = 113;
  large.seq_len_k = 203;
  large.head_dim = 128;
  AttentionCase small_twin = large;
  small_twin.batch = 1;
  small_twin.heads = 2;
  std::vector<std::uint8_t> bytes = encoded(small_twin);
  bytes[9] = 1;   // batch - 1
  bytes[11] = 2;  // query heads per kv head - 1
  bool fitted = false;
  const std::optional<AttentionCase> decoded = decode_case(bytes, nullptr, &fitted);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_TRUE(fitted);
  EXPECT_EQ(*decoded, fit_to_work_cap(large));
  EXPECT_LE(case_work(*decoded), kCaseWorkCap);
  EXPECT_FALSE(encode_case(large).has_value());

  decode_case(encoded(small_twin), nullptr, &fitted);
  EXPECT_FALSE(fitted);
}

TEST(CaseCodec, RefusesToEncodeWhatTheBinaryFormCannotHold) {
  AttentionCase too_many_heads;
  too_many_heads.heads = too_many_heads.kv_heads = 9;
  AttentionCase odd_head_dim;
  odd_head_dim.head_dim = 72;
  AttentionCase too_large;
  too_large.batch = 8;
  too_large.heads = too_large.kv_heads = 8;
  too_large.seq_len_q = too_large.seq_len_k = 4096;
  too_large.head_dim = 256;
  for (const AttentionCase& attention_case : {too_many_heads, odd_head_dim, too_large}) {
    std::string why;
    EXPECT_FALSE(encode_case(attention_case, &why)) << describe_case(attention_case);
    EXPECT_FALSE(why.empty());
  }
}

RC_GTEST_PROP(CaseCodec, TheJsonFormIsAOneCaseMatrixThatParsesBackToTheCase, ()) {
  AttentionCase attention_case =
      *small_case({.max_seq_len = 300, .distributions = {}, .injections = true});
  attention_case.kernel = *rc::gen::element<std::string>("", "cpu_flash");
  const std::string text = case_to_matrix_text(attention_case, "saved");
  const CaseMatrix matrix = parse_matrix_text(text, "saved.json", [](const std::string& name) {
    throw HarnessError("no includes expected: " + name);
    return std::string();
  });
  RC_ASSERT(matrix.cases.size() == 1u);
  RC_ASSERT(without_id(matrix.cases[0]) == without_id(attention_case));
}

}  // namespace
}  // namespace attnfuzz
