// SPDX-License-Identifier: BSD-3-Clause
// The dense twin of a case: the same shape without packing, pages, padding or another layout, for
// naive loops that know nothing of them. A packed or paged case draws its data in this shape and
// then moves it (case/data_distribution.h), so both read the same logical rows.
#pragma once

#include "case/attention_case.h"

namespace attnfuzz {

inline AttentionCase dense_version(AttentionCase c) {
  c.seq_lens_q.clear();
  c.seq_lens_k.clear();
  c.page_size = 0;
  c.layout = Layout::bshd;
  c.row_padding = 0;
  return c;
}

}  // namespace attnfuzz
