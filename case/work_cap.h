// SPDX-License-Identifier: BSD-3-Clause
// The work cap: how large a case the binary form (case/case_codec.h) holds, and so how large a
// case libFuzzer runs. Fuzzing wants many fast cases (milliseconds each), yet the bugs that live in
// long rows, GQA groups and wide heads must stay within its reach: a case over the cap is not
// dropped but fitted, made smaller along the axes that matter least, so that its long rows, tail
// tiles and head grouping survive wherever the cap leaves room for them.
#pragma once

#include <cstdint>

#include "case/attention_case.h"

namespace attnfuzz {

// Work of a case: batch x heads x seq_len_q x seq_len_k x head_dim, the multiply-adds of Q K^T
// (and again of P V). 2^24 is one head of 64 query rows over 4096 keys at head_dim 64: about
// 10 ms for cpu_flash and the oracle together on one core. With one head of 16 query rows at
// head_dim 64, rows of up to 16384 keys (the binary form's longest) fit.
inline constexpr std::int64_t kCaseWorkCap = std::int64_t{1} << 24;

std::int64_t case_work(const AttentionCase& attention_case);

// Elements of a paged case's K (or V) page pool: (batch x pages per sequence + 1) pages of
// page_size rows of kv_heads x head_dim; 0 when the case is not paged. A large page over a few
// keys holds far more than its work says (pages of 16384 rows over one key, eight kv heads of 256:
// 2^26 elements a tensor), so the pool has a cap of its own, kCaseWorkCap elements.
std::int64_t page_pool_elements(const AttentionCase& attention_case);

// The case itself when its work is within `cap`; otherwise the same case made smaller, each step
// taken only as far as needed to fit and the next only when that was not enough:
//   1. batch, down to 1;
//   2. query heads per kv head, then kv heads, each down to 2 (GQA stays GQA) or what it was;
//   3. seq_len_q, keeping its remainder modulo 64 (the tail tile: 1025 keeps a one-row last tile,
//      1023 a 63-row one) down to that remainder;
//   4. heads down to one kv head of one query head; seq_len_q down to 1;
//   5. seq_len_k last, long rows being what the cap must not cost: by whole tiles down to its
//      remainder modulo 64, then down to 1.
// Everything else (dtype, layout, data, seed, scale, head_dim) is kept, but for a page pool over
// the cap: its page_size is halved until the pool fits, and when pages of one row are still too
// many (work close to the cap), steps 1 to 5 run again to the cap less one spare row, and then
// (a packed placement widening each pooled row past kv_heads x head_dim) to half the work, and
// half again, until the pool fits. The default cap is always met, the pool's too (any cap of at
// least 4096 is).
AttentionCase fit_to_work_cap(AttentionCase attention_case, std::int64_t cap = kCaseWorkCap);

}  // namespace attnfuzz
