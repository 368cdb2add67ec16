// SPDX-License-Identifier: BSD-3-Clause
// Where each field of a case shows in the HTML report's heatmap. A case's error may depend on any
// field, so cases that differ in one never share a cell: a field is a row or a column of the
// grid, a group (a heading over panels), or a panel axis (each value the run varies gets panels of
// its own, named in their titles); only the seed, which redraws the same shape's data, shares a
// cell (the cell shows the worst of its cases). Every row of the case schema (case/case_schema.h)
// must be placed: a field added there and not here fails to compile.
#pragma once

#include <cstddef>

#include "case/case_schema.h"

namespace attnfuzz {

enum class HeatmapPlace { grid_row, grid_column, group, panel_axis, same_cell, unplaced };

constexpr HeatmapPlace heatmap_place(CaseField field) {
  switch (field) {
    case CaseField::seq_len_q:
    case CaseField::seq_len_k:
      return HeatmapPlace::grid_row;
    case CaseField::batch:
    case CaseField::heads:
    case CaseField::kv_heads:
      return HeatmapPlace::grid_column;
    case CaseField::dtype:
    case CaseField::kernel:  // the kernel that ran (the case's, else the run's), with the plant
      return HeatmapPlace::group;
    case CaseField::seed:
      return HeatmapPlace::same_cell;
    case CaseField::head_dim:
    case CaseField::causal:
    case CaseField::data:
    case CaseField::layout:
    case CaseField::row_padding:
    case CaseField::placement:
    case CaseField::softmax_scale:
    case CaseField::injection:
    case CaseField::seq_lens_q:
    case CaseField::seq_lens_k:
    case CaseField::page_size:
    case CaseField::window_left:
    case CaseField::window_right:
    case CaseField::softcap:
    case CaseField::alibi:
    case CaseField::return_lse:
    case CaseField::backward:
    case CaseField::q_storage:
    case CaseField::k_storage:
    case CaseField::v_storage:
    case CaseField::descale:
      return HeatmapPlace::panel_axis;
  }
  return HeatmapPlace::unplaced;
}

constexpr bool every_case_field_has_a_heatmap_place() {
  for (std::size_t field = 0; field < kCaseFieldCount; ++field) {
    if (heatmap_place(static_cast<CaseField>(field)) == HeatmapPlace::unplaced) return false;
  }
  return true;
}
static_assert(every_case_field_has_a_heatmap_place(),
              "a field of ATTNFUZZ_CASE_FIELDS has no place in the heatmap (heatmap_place)");

}  // namespace attnfuzz
