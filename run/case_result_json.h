// SPDX-License-Identifier: BSD-3-Clause
// One case's result as JSON, both ways: written into reports, streamed as JSON Lines while a run
// goes on, sent from a worker process to its supervisor, and read back by --resume.
#pragma once

#include <nlohmann/json.hpp>

#include "run/case_result.h"

namespace attnfuzz {

// JSON has no NaN or infinity: a non-finite figure is written as null. (nlohmann would do so
// anyway; saying so here keeps the rule visible and independent of the library's default.)
nlohmann::json number_or_null(double value);

// One case as JSON, keeping the field names of the earlier harness (config.batch_size,
// config.num_heads, config.seq_len, config.head_dim, config.dtype; correctness.passed,
// correctness.max_abs_error, correctness.mean_abs_error, correctness.correlation; kernel_name,
// timestamp) plus status, reason, error_ratio and the failing element. Non-finite numbers are
// written as null.
nlohmann::json case_to_json(const CaseResult& result);

// The result that case_to_json wrote for `attention_case` (whose id and config the record must
// carry: a record of another case, or of the same id with another shape, is refused). Nulls read
// back as NaN. Throws std::runtime_error naming the field on a malformed record.
CaseResult case_result_from_json(const nlohmann::json& record, const AttentionCase& attention_case);

}  // namespace attnfuzz
