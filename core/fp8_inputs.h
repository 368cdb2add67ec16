// SPDX-License-Identifier: BSD-3-Clause
// fp8 inputs, as inference runs attention on them: each of Q, K and V stored in the case's own
// dtype or in an fp8 format (core/fp8.h), and the descale factors that turn an fp8 tensor's
// patterns into values. FlashAttention 3's fp8 forward takes Q, K and V in e4m3 with
// q/k/v_descale of shape (batch, KV heads); an fp8 KV cache (vLLM, FlashInfer) keeps K and V in
// e4m3 or e5m2 with one k_scale and one v_scale. Element x of an fp8 tensor has the value
// decode(x) * descale[b, kv head]: for Q, the KV head of its query head's group.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"
#include "core/host_device.h"

namespace attnfuzz {

// How one input tensor is stored: in the case's dtype ("same", the default) or an fp8 format.
// X(id, name)
#define ATTNFUZZ_INPUT_STORAGES(X) X(same, "same") X(e4m3, "e4m3") X(e5m2, "e5m2")

enum class InputStorage : std::uint8_t {
#define ATTNFUZZ_INPUT_STORAGE_ENUM(id, name) id,
  ATTNFUZZ_INPUT_STORAGES(ATTNFUZZ_INPUT_STORAGE_ENUM)
#undef ATTNFUZZ_INPUT_STORAGE_ENUM
};
inline constexpr std::string_view kInputStorageNames[] = {
#define ATTNFUZZ_INPUT_STORAGE_NAME(id, name) name,
    ATTNFUZZ_INPUT_STORAGES(ATTNFUZZ_INPUT_STORAGE_NAME)
#undef ATTNFUZZ_INPUT_STORAGE_NAME
};
inline std::string_view input_storage_name(InputStorage storage) {
  return kInputStorageNames[static_cast<int>(storage)];
}
// A storage's name ("same", "e4m3", "e5m2"); nullopt for anything else.
std::optional<InputStorage> parse_input_storage(std::string_view name);

// The dtype of a tensor stored as `storage` in a case whose outputs are `output`.
ATTNFUZZ_HOST_DEVICE inline Dtype storage_dtype(InputStorage storage, Dtype output) {
  switch (storage) {
    case InputStorage::same:
      return output;
    case InputStorage::e4m3:
      return Dtype::e4m3;
    case InputStorage::e5m2:
      return Dtype::e5m2;
  }
  return output;
}

// How the fp8 tensors are scaled; the others never are. X(id, name, what it is)
#define ATTNFUZZ_DESCALES(X)                                                                \
  X(none, "none", "no descale: an fp8 pattern's value is its own")                          \
  X(per_tensor, "per_tensor", "one factor per tensor (an fp8 KV cache's k_scale, v_scale)") \
  X(per_kv_head, "per_kv_head",                                                             \
    "one factor per (batch, KV head) and tensor (FlashAttention 3's q/k/v_descale)")

enum class Descale : std::uint8_t {
#define ATTNFUZZ_DESCALE_ENUM(id, name, what) id,
  ATTNFUZZ_DESCALES(ATTNFUZZ_DESCALE_ENUM)
#undef ATTNFUZZ_DESCALE_ENUM
};
struct DescaleInfo {
  Descale descale;
  std::string_view name;
  std::string_view what;
};
inline constexpr DescaleInfo kDescales[] = {
#define ATTNFUZZ_DESCALE_ROW(id, name, what) {Descale::id, name, what},
    ATTNFUZZ_DESCALES(ATTNFUZZ_DESCALE_ROW)
#undef ATTNFUZZ_DESCALE_ROW
};
inline std::string_view descale_name(Descale descale) {
  return kDescales[static_cast<int>(descale)].name;
}
std::optional<Descale> parse_descale(std::string_view name);

// The factor of (batch b, KV head kv_head) in a tensor's descale array ([batch][kv_heads] floats,
// every entry equal when per tensor), or 1 when the tensor has none (null).
ATTNFUZZ_HOST_DEVICE inline float descale_at(const float* descale, std::int64_t kv_heads,
                                             std::int64_t b, std::int64_t kv_head) {
  return descale != nullptr ? descale[b * kv_heads + kv_head] : 1.0f;
}

}  // namespace attnfuzz
