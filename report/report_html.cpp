// SPDX-License-Identifier: BSD-3-Clause
// The HTML report: one self-contained page (inline CSS and SVG, no scripts, nothing fetched) with
// the verdict, an error_ratio heatmap for each kernel and dtype (panels split by every other case
// field the run varies, cells over seq lens x heads x batch), the failures with their replay
// commands, the skips by reason and the environment. Every piece of text from the report is escaped
// and the markup is well-formed XML, so the page also parses as XHTML.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "case/data_distribution.h"
#include "core/attention_problem.h"
#include "core/number_text.h"
#include "core/text.h"
#include "report/heatmap_place.h"
#include "report/report_writers.h"

namespace attnfuzz {
namespace {

// The colour scale. Passing cells run from cool (error_ratio at or below kPassScaleFloor) to warm
// (error_ratio 1, the limit); failing cells are red, darker the further past 1, up to
// kFailScaleCeiling. Both halves are logarithmic.
constexpr double kPassScaleFloor = 1e-2;
constexpr double kFailScaleCeiling = 1e4;

// Cell geometry of the heatmap panels, in pixels.
constexpr int kCellWidth = 74;
constexpr int kCellHeight = 32;
constexpr int kCellGap = 3;
constexpr int kPanelTitleHeight = 22;
constexpr int kColumnHeaderHeight = 20;
constexpr int kLabelCharWidth = 8;  // of the 12 px label font, generously
constexpr int kMaxCasesInTooltip = 20;
constexpr int kScaleBarWidth = 240;  // each half of the legend's colour scale
constexpr std::size_t kMaxReasonInTooltip = 200;

// Text for XML, in content and in attributes alike: printable (control characters other than tab
// and line breaks cannot appear in XML 1.0 at all, escaped or not, and bytes that are not UTF-8
// become U+FFFD, so the page stays well-formed), then the markup characters as entities.
std::string escape(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : printable_text(text, KeptControls::tab_newline_and_return)) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&#39;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

// At most two significant digits and a short exponent ("0.21", "3.6e4"), to fit in a cell.
std::string short_figure(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "NaN" : "inf";
  if (value == 0.0) return "0";
  const double magnitude = std::fabs(value);
  if (magnitude >= 0.01 && magnitude < 100.0) return significant_digits(value, 2);
  int exponent = static_cast<int>(std::floor(std::log10(magnitude)));
  double mantissa = std::round(value / std::pow(10.0, exponent) * 10.0) / 10.0;
  if (std::fabs(mantissa) >= 10.0) {  // 9.96 rounds up to the next power of ten
    mantissa /= 10.0;
    ++exponent;
  }
  std::string text = fixed_decimals(mantissa, 1);
  if (text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
  return text + "e" + std::to_string(exponent);
}

struct Colour {
  double red, green, blue;  // 0..255
};

std::string hex(const Colour& colour) {
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", static_cast<int>(std::lround(colour.red)),
                static_cast<int>(std::lround(colour.green)),
                static_cast<int>(std::lround(colour.blue)));
  return text;
}

// Piecewise-linear interpolation through evenly spaced anchors, position in [0, 1].
Colour along(const std::vector<Colour>& anchors, double position) {
  position = std::clamp(position, 0.0, 1.0) * static_cast<double>(anchors.size() - 1);
  const std::size_t index = std::min(static_cast<std::size_t>(position), anchors.size() - 2);
  const double t = position - static_cast<double>(index);
  const Colour& a = anchors[index];
  const Colour& b = anchors[index + 1];
  return {a.red + (b.red - a.red) * t, a.green + (b.green - a.green) * t,
          a.blue + (b.blue - a.blue) * t};
}

// Where a passing error_ratio sits on the pass half of the scale: 0 at the floor, 1 at 1.
double pass_position(double error_ratio) {
  if (!(error_ratio > kPassScaleFloor)) return 0.0;
  return std::log10(std::min(error_ratio, 1.0) / kPassScaleFloor) / -std::log10(kPassScaleFloor);
}

// Where a failing error_ratio sits on the fail half: 0 at 1, 1 at the ceiling and beyond (also
// for a failure with no finite figure: not run, NaN).
double fail_position(double error_ratio) {
  if (std::isnan(error_ratio)) return 1.0;
  if (!(error_ratio > 1.0)) return 0.0;
  return std::min(1.0, std::log10(error_ratio) / std::log10(kFailScaleCeiling));
}

// Deep blue through teal and green to yellow: cool far below the limit, warm near it.
Colour pass_colour(double error_ratio) {
  static const std::vector<Colour> anchors = {
      {49, 54, 149}, {44, 123, 182}, {33, 161, 140}, {120, 198, 98}, {240, 220, 60}};
  return along(anchors, pass_position(error_ratio));
}

// Red, darker the further past the limit: no passing colour comes near it.
Colour fail_colour(double error_ratio) {
  static const std::vector<Colour> anchors = {{232, 72, 85}, {190, 20, 60}, {110, 0, 40}};
  return along(anchors, fail_position(error_ratio));
}

const Colour kSkipColour = {214, 214, 214};

// Whether text drawn on this colour should be white (WCAG relative luminance, sRGB).
bool is_dark(const Colour& colour) {
  const auto linear = [](double channel) {
    channel /= 255.0;
    return channel <= 0.04045 ? channel / 12.92 : std::pow((channel + 0.055) / 1.055, 2.4);
  };
  const double luminance =
      0.2126 * linear(colour.red) + 0.7152 * linear(colour.green) + 0.0722 * linear(colour.blue);
  return luminance < 0.30;
}

// The figure a case is ranked and coloured by: error_ratio when it ran, NaN when it has none.
double ratio_of(const CaseResult& result) {
  return result.ran ? result.comparison.error_ratio : std::nan("");
}

// Whether `a` is worse than `b`: a failure over a pass over a known failure over a skip; among
// failures a missing or non-finite figure first, then the larger error_ratio.
bool is_worse(const CaseResult& a, const CaseResult& b) {
  const auto rank = [](CaseStatus status) {
    switch (status) {
      case CaseStatus::fail:
        return 3;
      case CaseStatus::pass:
        return 2;
      case CaseStatus::known:
        return 1;
      case CaseStatus::skip:
        return 0;
    }
    return 0;
  };
  if (rank(a.status) != rank(b.status)) return rank(a.status) > rank(b.status);
  const double ratio_a = ratio_of(a);
  const double ratio_b = ratio_of(b);
  const bool unknown_a = !std::isfinite(ratio_a);
  const bool unknown_b = !std::isfinite(ratio_b);
  if (unknown_a != unknown_b) return a.status == CaseStatus::fail ? unknown_a : unknown_b;
  return ratio_a > ratio_b;
}

// One grid point of a panel: every case at these seq lens, heads and batch (and the panel's kernel,
// dtype and split-axis values).
struct GridCell {
  std::vector<const CaseResult*> cases;

  const CaseResult& worst() const {
    return **std::min_element(
        cases.begin(), cases.end(),
        [](const CaseResult* a, const CaseResult* b) { return is_worse(*a, *b); });
  }
};

using SeqLens = std::pair<std::int64_t, std::int64_t>;  // (seq_len_q, seq_len_k)

// A panel's column: heads first, so that the columns of one head count sit side by side under one
// heading, then the batch size.
struct Column {
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;
  std::int64_t batch = 1;
  auto operator<=>(const Column&) const = default;
  bool same_heads(const Column& other) const {
    return heads == other.heads && kv_heads == other.kv_heads;
  }
  // "H=8", or "H=8 kv=2" for grouped-query attention.
  std::string heads_label() const {
    return "H=" + std::to_string(heads) +
           (kv_heads == heads ? "" : " kv=" + std::to_string(kv_heads));
  }
};

// The fields that split panels (report/heatmap_place.h), in the schema's order: each axis the run
// varies gives each of its values panels of their own, and a panel's title names its values.
// `order` sorts the panels; titles leave out the `usual` values (a variant switched off, data
// normal, layout bshd, no row padding) to stay short.
struct PanelAxis {
  CaseField field;
  std::string_view key;
  // An enum's place in its table (dtype, data, layout), any other value as a case's JSON has it.
  nlohmann::json (*order)(const AttentionCase&);
  nlohmann::json (*value)(const AttentionCase&);  // as a case's JSON has it
  bool (*unset)(const AttentionCase&);            // the codec's "not chosen" (left out of JSON)
};

std::vector<PanelAxis> make_panel_axes() {
  std::vector<PanelAxis> axes;
  for_each_case_field([&](auto field) {
    using Field = decltype(field);
    if (heatmap_place(Field::case_field) != HeatmapPlace::panel_axis) return;
    axes.push_back({Field::case_field, Field::key,
                    [](const AttentionCase& attention_case) -> nlohmann::json {
                      const auto& value = attention_case.*Field::member;
                      if constexpr (std::is_enum_v<std::decay_t<decltype(value)>>) {
                        return static_cast<std::int64_t>(value);
                      } else {
                        return Field::Codec::write(value);
                      }
                    },
                    [](const AttentionCase& attention_case) -> nlohmann::json {
                      return Field::Codec::write(attention_case.*Field::member);
                    },
                    [](const AttentionCase& attention_case) {
                      return Field::Codec::unset(attention_case.*Field::member);
                    }});
  });
  return axes;
}

const std::vector<PanelAxis>& panel_axes() {
  static const std::vector<PanelAxis> axes = make_panel_axes();
  return axes;
}

// A panel axis's value as a title names it: "causal", "D=128", "data large_scores",
// "softcap 50", "softcap off", "softmax_scale default".
std::string axis_label(const PanelAxis& axis, const AttentionCase& attention_case) {
  switch (axis.field) {
    case CaseField::causal:
      return attention_case.causal ? "causal" : "not causal";
    case CaseField::head_dim:
      return "D=" + std::to_string(attention_case.head_dim);
    case CaseField::row_padding:
      return "row padding " + std::to_string(attention_case.row_padding);
    case CaseField::placement:
      return "placement " + std::string(placement_name(attention_case.placement));
    default:
      break;
  }
  const std::string key(axis.key);
  if (axis.unset(attention_case)) {
    return key + (axis.field == CaseField::softmax_scale ? " default" : " off");
  }
  const nlohmann::json value = axis.value(attention_case);
  if (value.is_string()) return key + " " + value.get<std::string>();
  if (value.is_number_float()) return key + " " + significant_digits(value.get<double>(), 6);
  return key + " " + value.dump();
}

// Whether a title may leave the value out: causal and the head dim are always named.
bool axis_usual(const PanelAxis& axis, const AttentionCase& attention_case) {
  switch (axis.field) {
    case CaseField::causal:
    case CaseField::head_dim:
      return false;
    case CaseField::data:
      return attention_case.data == DataDistribution::normal;
    case CaseField::layout:
      return attention_case.layout == Layout::bshd;
    case CaseField::row_padding:
      return attention_case.row_padding == 0;
    default:
      return axis.unset(attention_case);
  }
}

// Which of panel_axes() take more than one value among the run's cases.
std::vector<bool> varying_axes(const RunReport& report) {
  const std::vector<PanelAxis>& axes = panel_axes();
  std::vector<bool> varies(axes.size(), false);
  if (report.results.empty()) return varies;
  const AttentionCase& first = report.results.front().attention_case;
  for (const CaseResult& result : report.results) {
    for (std::size_t axis = 0; axis < axes.size(); ++axis) {
      varies[axis] =
          varies[axis] || axes[axis].order(result.attention_case) != axes[axis].order(first);
    }
  }
  return varies;
}

// A panel of one (kernel, dtype) group: the cases sharing the values of the varying split axes;
// rows are seq lens, columns heads and batch sizes.
struct Panel {
  std::string title;  // the split axes' values, e.g. "D=128 · causal"; empty when none varies
  std::map<std::pair<SeqLens, Column>, GridCell> cells;
  std::set<SeqLens> rows;
  std::set<Column> columns;
};

struct GroupKey {
  std::string kernel;
  std::string plant;
  Dtype dtype;
  bool operator<(const GroupKey& other) const {
    return std::tie(kernel, plant, dtype) < std::tie(other.kernel, other.plant, other.dtype);
  }
  // "cpu_flash", or "cpu_flash with plant causal_off_by_one" when a planted bug was on.
  std::string kernel_and_plant() const {
    return plant == "none" ? kernel : kernel + " with plant " + plant;
  }
};

// A panel's place among its group's: the varying split axes' values, in panel_axes()' order.
using PanelKey = std::vector<nlohmann::json>;
using Heatmap = std::map<GroupKey, std::map<PanelKey, Panel>>;

Heatmap heatmap_of(const RunReport& report) {
  const std::vector<PanelAxis>& axes = panel_axes();
  const std::vector<bool> varies = varying_axes(report);
  Heatmap heatmap;
  for (const CaseResult& result : report.results) {
    const AttentionCase& attention_case = result.attention_case;
    PanelKey panel_key;
    std::vector<std::string> labels;  // of the varying axes
    std::string title;                // of those whose value is not the usual one
    for (std::size_t axis = 0; axis < axes.size(); ++axis) {
      if (!varies[axis]) continue;
      panel_key.push_back(axes[axis].order(attention_case));
      labels.push_back(axis_label(axes[axis], attention_case));
      if (axis_usual(axes[axis], attention_case)) continue;
      title += (title.empty() ? "" : " · ") + labels.back();
    }
    if (title.empty()) {  // all usual: name them, lest the panel look like the whole run
      for (const std::string& label : labels) title += (title.empty() ? "" : " · ") + label;
    }
    Panel& panel = heatmap[{result.kernel_name, result.plant, attention_case.dtype}][panel_key];
    panel.title = title;
    const SeqLens seq_lens{attention_case.seq_len_q, attention_case.seq_len_k};
    const Column column{attention_case.heads, attention_case.kv_heads, attention_case.batch};
    panel.cells[{seq_lens, column}].cases.push_back(&result);
    panel.rows.insert(seq_lens);
    panel.columns.insert(column);
  }
  return heatmap;
}

// Where a failing case's row is in the failures table: the cells holding it link there.
std::string failure_anchor(const RunReport& report, const CaseResult& result) {
  return "failure-" + std::to_string(&result - report.results.data());
}

std::string seq_lens_label(const SeqLens& seq_lens, bool show_both) {
  if (!show_both) return std::to_string(seq_lens.first);
  return std::to_string(seq_lens.first) + "→" + std::to_string(seq_lens.second);
}

// Length in characters as drawn: UTF-8 continuation bytes do not count.
int drawn_length(std::string_view text) {
  return static_cast<int>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// One line of a cell's tooltip per case (worst first), with its figures and reason.
std::string cell_tooltip(const GridCell& cell, const std::string& position) {
  std::vector<const CaseResult*> cases = cell.cases;
  std::stable_sort(cases.begin(), cases.end(),
                   [](const CaseResult* a, const CaseResult* b) { return is_worse(*a, *b); });
  std::string text = position + ": " + std::to_string(cases.size()) +
                     (cases.size() == 1 ? " case" : " cases") + "\n";
  int listed = 0;
  for (const CaseResult* result : cases) {
    if (listed++ == kMaxCasesInTooltip) {
      text += "… and " + std::to_string(cases.size() - kMaxCasesInTooltip) + " more\n";
      break;
    }
    text += result->attention_case.id + "  " + std::string(case_status_name(result->status));
    if (result->ran)
      text += "  error_ratio " + significant_digits(result->comparison.error_ratio, 3);
    text += "  " + describe_case(result->attention_case) + "\n";
    if (!result->reason.empty()) {
      std::string reason = result->reason;
      if (reason.size() > kMaxReasonInTooltip) {
        std::size_t cut = kMaxReasonInTooltip;  // not inside a UTF-8 sequence
        while (cut > 0 && (static_cast<unsigned char>(reason[cut]) & 0xC0) == 0x80) --cut;
        reason = reason.substr(0, cut) + "…";
      }
      text += "    " + reason + "\n";
    }
  }
  text.pop_back();
  return text;
}

// A cell: its colour from the worst case, the worst figure inside, a failure marked with a cross
// and a heavy outline, a skip hatched, and the number of cases when there is more than one.
// A failing cell links to its worst case's row in the failures table (`anchor`).
void write_cell(std::ostream& out, const GridCell& cell, const std::string& position,
                const std::string& anchor, int x, int y) {
  const CaseResult& worst = cell.worst();
  const double ratio = ratio_of(worst);
  const std::string status(case_status_name(worst.status));
  Colour fill = kSkipColour;
  if (worst.status == CaseStatus::pass) fill = pass_colour(ratio);
  if (worst.status == CaseStatus::fail) fill = fail_colour(ratio);
  // Inline style, not the fill attribute: the style sheet's rule for svg text would win over it.
  const std::string ink = is_dark(fill) ? "fill:#ffffff" : "fill:#1a1a1a";

  const bool linked = worst.status == CaseStatus::fail;
  if (linked) out << "<a href=\"#" << escape(anchor) << "\">";
  out << "<g class=\"cell cell-" << status << "\" data-status=\"" << status << "\" data-cases=\""
      << cell.cases.size() << "\" transform=\"translate(" << x << ',' << y << ")\">";
  out << "<title>" << escape(cell_tooltip(cell, position)) << "</title>";
  out << "<rect width=\"" << kCellWidth << "\" height=\"" << kCellHeight << "\" fill=\""
      << hex(fill) << "\"";
  if (worst.status == CaseStatus::fail) {
    out << " stroke=\"#000000\" stroke-width=\"3\"";
  } else {
    out << " stroke=\"#ffffff\" stroke-width=\"1\"";
  }
  out << "/>";

  const bool some_skipped =
      worst.status != CaseStatus::skip &&
      std::any_of(cell.cases.begin(), cell.cases.end(),
                  [](const CaseResult* result) { return result->status == CaseStatus::skip; });
  if (some_skipped) out << "<path class=\"some-skipped\" d=\"M0,0 H13 L0,13 Z\" fill=\"#9a9a9a\"/>";

  std::string label;
  if (worst.status == CaseStatus::skip) {
    out << "<rect width=\"" << kCellWidth << "\" height=\"" << kCellHeight
        << "\" fill=\"url(#skip-hatch)\"/>";
    label = "skip";
  } else if (worst.status == CaseStatus::known) {
    label = "known";
  } else if (worst.status == CaseStatus::fail) {
    label = "✕ " + (worst.ran ? short_figure(ratio) : std::string("error"));
  } else {
    label = short_figure(ratio);
  }
  const bool several = cell.cases.size() > 1;
  out << "<text class=\"cell-label\" x=\"" << (several ? kCellWidth / 2 - 6 : kCellWidth / 2)
      << "\" y=\"" << kCellHeight / 2 + 4 << "\" style=\"" << ink << "\">" << escape(label)
      << "</text>";
  if (several) {
    out << "<text class=\"cell-count\" x=\"" << kCellWidth - 3 << "\" y=\"" << kCellHeight - 4
        << "\" style=\"" << ink << "\">×" << cell.cases.size() << "</text>";
  }
  out << "</g>";
  if (linked) out << "</a>";
}

void write_panel(std::ostream& out, const RunReport& report, const GroupKey& key,
                 const Panel& panel) {
  const bool seq_lens_differ =
      std::any_of(panel.rows.begin(), panel.rows.end(),
                  [](const SeqLens& seq_lens) { return seq_lens.first != seq_lens.second; });
  const std::string corner_label = seq_lens_differ ? "Sq→Sk" : "Sq";
  int label_chars = drawn_length(corner_label);
  for (const SeqLens& seq_lens : panel.rows) {
    label_chars = std::max(label_chars, drawn_length(seq_lens_label(seq_lens, seq_lens_differ)));
  }
  const int label_width = label_chars * kLabelCharWidth + 14;
  const std::vector<Column> columns(panel.columns.begin(), panel.columns.end());
  const int rows = static_cast<int>(panel.rows.size());
  const int heads_top = kPanelTitleHeight;
  const int grid_top = kPanelTitleHeight + 2 * kColumnHeaderHeight;
  const std::string title = panel.title.empty() ? "every case" : panel.title;
  const int width =
      std::max({label_width + static_cast<int>(columns.size()) * (kCellWidth + kCellGap),
                drawn_length(title) * kLabelCharWidth + 4, 150});
  const int height = grid_top + rows * (kCellHeight + kCellGap);
  auto column_x = [&](std::size_t column) {
    return label_width + static_cast<int>(column) * (kCellWidth + kCellGap);
  };

  out << "<figure class=\"panel\"><svg class=\"heatmap\" width=\"" << width << "\" height=\""
      << height << "\" viewBox=\"0 0 " << width << ' ' << height << "\" role=\"img\">";
  out << "<text class=\"panel-title\" x=\"0\" y=\"15\">" << escape(title) << "</text>";
  out << "<text class=\"axis-title\" x=\"" << label_width - 8 << "\" y=\"" << grid_top - 6
      << "\" text-anchor=\"end\">" << escape(corner_label) << "</text>";
  // Two header rows: the head count over each run of columns that share it, then the batch size.
  for (std::size_t first = 0; first < columns.size();) {
    std::size_t last = first;
    while (last + 1 < columns.size() && columns[last + 1].same_heads(columns[first])) ++last;
    const int left = column_x(first);
    const int right = column_x(last) + kCellWidth;
    out << "<text class=\"heads-label\" x=\"" << (left + right) / 2 << "\" y=\""
        << heads_top + kColumnHeaderHeight - 6 << "\">" << escape(columns[first].heads_label())
        << "</text>";
    out << "<line class=\"heads-rule\" x1=\"" << left + 2 << "\" x2=\"" << right - 2 << "\" y1=\""
        << heads_top + kColumnHeaderHeight - 2 << "\" y2=\"" << heads_top + kColumnHeaderHeight - 2
        << "\" stroke=\"#9a9a9a\"/>";
    first = last + 1;
  }
  for (std::size_t column = 0; column < columns.size(); ++column) {
    out << "<text class=\"column-label\" x=\"" << column_x(column) + kCellWidth / 2 << "\" y=\""
        << grid_top - 6 << "\">B=" << columns[column].batch << "</text>";
  }
  int row = 0;
  for (const SeqLens& seq_lens : panel.rows) {
    const int y = grid_top + row++ * (kCellHeight + kCellGap);
    const std::string row_label = seq_lens_label(seq_lens, seq_lens_differ);
    out << "<text class=\"row-label\" x=\"" << label_width - 8 << "\" y=\""
        << y + kCellHeight / 2 + 4 << "\">" << escape(row_label) << "</text>";
    for (std::size_t column = 0; column < columns.size(); ++column) {
      const int x = column_x(column);
      const auto found = panel.cells.find({seq_lens, columns[column]});
      if (found == panel.cells.end()) {  // no case here: a faint outline keeps the grid legible
        out << "<rect class=\"empty\" x=\"" << x + 1 << "\" y=\"" << y + 1 << "\" width=\""
            << kCellWidth - 2 << "\" height=\"" << kCellHeight - 2
            << "\" fill=\"none\" stroke=\"#d8d8d8\" stroke-dasharray=\"3 3\"/>";
        continue;
      }
      const std::string position =
          key.kernel_and_plant() + " " + std::string(dtype_name(key.dtype)) +
          (panel.title.empty() ? "" : " " + panel.title) + " " + columns[column].heads_label() +
          " Sq=" + std::to_string(seq_lens.first) + " Sk=" + std::to_string(seq_lens.second) +
          " B=" + std::to_string(columns[column].batch);
      const GridCell& cell = found->second;
      write_cell(out, cell, position, failure_anchor(report, cell.worst()), x, y);
    }
  }
  out << "</svg></figure>\n";
}

struct Tick {
  double error_ratio;
  const char* label;
};

// One half of the colour scale as a gradient bar (`id` names its gradient), with its ticks below.
// `ratio_at` maps a position along the bar (0..1) to an error_ratio, `position_of` back.
void write_scale_bar(std::ostream& out, const char* id, int left, const char* title,
                     Colour (*colour_of)(double error_ratio), double (*ratio_at)(double position),
                     double (*position_of)(double error_ratio), std::initializer_list<Tick> ticks,
                     bool outlined) {
  constexpr int kBarHeight = 16;
  constexpr int kStops = 20;  // the scales are piecewise linear in position: a few stops suffice
  out << "<defs><linearGradient id=\"" << id << "\">";
  for (int stop = 0; stop <= kStops; ++stop) {
    const double position = static_cast<double>(stop) / kStops;
    out << "<stop offset=\"" << fixed_decimals(position, 3) << "\" stop-color=\""
        << hex(colour_of(ratio_at(position))) << "\"/>";
  }
  out << "</linearGradient></defs>";
  out << "<text class=\"legend-title\" x=\"" << left << "\" y=\"13\">" << title << "</text>";
  out << "<rect x=\"" << left << "\" y=\"20\" width=\"" << kScaleBarWidth << "\" height=\""
      << kBarHeight << "\" fill=\"url(#" << id << ")\"/>";
  if (outlined) {
    out << "<rect x=\"" << left << "\" y=\"20\" width=\"" << kScaleBarWidth << "\" height=\""
        << kBarHeight << "\" fill=\"none\" stroke=\"#000000\" stroke-width=\"2\"/>";
  }
  for (const Tick& tick : ticks) {
    const std::string x = fixed_decimals(left + position_of(tick.error_ratio) * kScaleBarWidth, 1);
    out << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"37\" y2=\"42\" stroke=\"#333333\"/>"
        << "<text class=\"tick\" x=\"" << x << "\" y=\"55\">" << tick.label << "</text>";
  }
}

// The legend: the pass half and the fail half of the colour scale, and the marks of a failing,
// a skipped, a known-failing and a shared cell.
void write_legend(std::ostream& out) {
  constexpr int kPassLeft = 18;  // room for the first tick's label
  constexpr int kFailLeft = kPassLeft + kScaleBarWidth + 40;
  constexpr int kMarksLeft = kFailLeft + kScaleBarWidth + 44;
  out << "<svg class=\"legend\" width=\"860\" height=\"124\" viewBox=\"0 0 860 124\" role=\"img\">";
  write_scale_bar(
      out, "pass-scale", kPassLeft, "pass: error_ratio ≤ 1, log scale", pass_colour,
      [](double position) { return kPassScaleFloor * std::pow(1.0 / kPassScaleFloor, position); },
      pass_position,
      {{kPassScaleFloor, "≤0.01"}, {0.03, "0.03"}, {0.1, "0.1"}, {0.3, "0.3"}, {1.0, "1"}}, false);
  write_scale_bar(
      out, "fail-scale", kFailLeft, "fail: error_ratio &gt; 1 (or none)", fail_colour,
      [](double position) { return std::pow(kFailScaleCeiling, position); }, fail_position,
      {{1.0, "1"}, {10.0, "10"}, {100.0, "100"}, {1e3, "1e3"}, {kFailScaleCeiling, "≥1e4"}}, true);

  const auto mark = [&](int row, const Colour& fill, bool outlined, bool hatched,
                        const std::string& inside, const std::string& meaning) {
    const int y = 2 + row * 24;
    out << "<rect x=\"" << kMarksLeft << "\" y=\"" << y << "\" width=\"40\" height=\"20\" fill=\""
        << hex(fill) << "\"";
    if (outlined) out << " stroke=\"#000000\" stroke-width=\"3\"";
    out << "/>";
    if (hatched) {
      out << "<rect x=\"" << kMarksLeft << "\" y=\"" << y
          << "\" width=\"40\" height=\"20\" fill=\"url(#skip-hatch)\"/>";
    }
    out << "<text class=\"cell-label\" x=\"" << kMarksLeft + 20 << "\" y=\"" << y + 14
        << "\" style=\"" << (is_dark(fill) ? "fill:#ffffff" : "fill:#1a1a1a") << "\">" << inside
        << "</text><text class=\"legend-note\" x=\"" << kMarksLeft + 50 << "\" y=\"" << y + 14
        << "\">" << meaning << "</text>";
  };
  mark(0, fail_colour(1e3), true, false, "✕", "failed: cross, heavy outline");
  mark(1, kSkipColour, false, true, "skip", "skipped: grey, hatched");
  mark(4, kSkipColour, false, false, "known", "known failure (--known-failures): grey");
  mark(2, pass_colour(0.2), false, false, "×3", "3 cases here, the worst shown");
  mark(3, pass_colour(0.2), false, false, "", "grey corner: some of them skipped");
  out << "<path d=\"M" << kMarksLeft << ',' << 2 + 3 * 24 << " h13 l-13,13 Z\" fill=\"#9a9a9a\"/>";
  out << "</svg>\n";
}

void write_heatmap(std::ostream& out, const RunReport& report) {
  const Heatmap heatmap = heatmap_of(report);
  out << "<section id=\"heatmap\"><h2>error_ratio by shape</h2>\n";
  out << "<p class=\"note\">One group per kernel and dtype; within it a panel per value of each of "
         "causal, head dim D, data distribution and layout that the run varies. Rows are sequence "
         "lengths (Sq, or Sq→Sk where they differ), columns head counts H (kv: the key/value heads "
         "of grouped-query attention) and batch sizes B. A cell holds every case at that point "
         "(other seeds, scales, injected values) and shows the worst; hover for the cases, click a "
         "failing cell for its row in the failures table. error_ratio is the largest error over "
         "what the tolerance allows: above 1 fails.</p>\n";
  write_legend(out);
  if (heatmap.empty()) out << "<p>No cases in this run.</p>\n";
  for (const auto& [key, panels] : heatmap) {
    int cases = 0;
    for (const auto& [panel_key, panel] : panels) {
      for (const auto& [position, cell] : panel.cells) cases += static_cast<int>(cell.cases.size());
    }
    out << "<h3>" << escape(key.kernel_and_plant()) << " · " << dtype_name(key.dtype)
        << " <span class=\"note\">(" << cases << (cases == 1 ? " case" : " cases")
        << ")</span></h3>\n<div class=\"panels\">\n";
    for (const auto& [panel_key, panel] : panels) write_panel(out, report, key, panel);
    out << "</div>\n";
  }
  out << "</section>\n";
}

void write_failures(std::ostream& out, const RunReport& report, const ReplayOf& replay_of) {
  out << "<section id=\"failures\"><h2>Failures (" << report.summary.failed << ")</h2>\n";
  if (report.summary.failed == 0) {
    out << "<p>None.</p></section>\n";
    return;
  }
  out << "<table class=\"failures\"><thead><tr><th>case</th><th>kernel</th>"
         "<th>shape</th><th>error_ratio</th><th>failing elements</th><th>reason</th>"
         "<th>replay</th></tr>"
         "</thead><tbody>\n";
  for (const CaseResult& result : report.results) {
    if (result.status != CaseStatus::fail) continue;
    const Comparison& comparison = result.comparison;
    out << "<tr class=\"failure\" id=\"" << escape(failure_anchor(report, result))
        << "\"><td class=\"case-id\">" << escape(result.attention_case.id)
        << "</td><td class=\"kernel\">" << escape(result.kernel_name) << "</td><td class=\"shape\">"
        << escape(describe_case(result.attention_case)) << "</td><td class=\"num\">"
        << (result.ran ? significant_digits(comparison.error_ratio, 3) : std::string("-"))
        << "</td><td class=\"num\">"
        << (result.ran ? std::to_string(comparison.failing_elements) + " of " +
                             std::to_string(comparison.elements)
                       : std::string("-"))
        << "</td><td class=\"reason\">" << escape(result.reason)
        << "</td><td class=\"replay\"><code>" << escape(replay_of(result)) << "</code></td></tr>\n";
  }
  out << "</tbody></table></section>\n";
}

// The cases --known-failures lists that failed as listed, only when there are some.
void write_known_failures(std::ostream& out, const RunReport& report) {
  if (report.summary.known == 0) return;
  out << "<section id=\"known\"><h2>Known failures (" << report.summary.known
      << ", --known-failures)</h2>\n<table class=\"known\"><thead><tr><th>case</th>"
         "<th>kernel</th><th>shape</th><th>known because</th><th>issue</th><th>it fails</th>"
         "</tr></thead><tbody>\n";
  for (const CaseResult& result : report.results) {
    if (!result.known_failure) continue;
    out << "<tr><td class=\"case-id\">" << escape(result.attention_case.id)
        << "</td><td class=\"kernel\">" << escape(result.kernel_name) << "</td><td class=\"shape\">"
        << escape(describe_case(result.attention_case)) << "</td><td class=\"reason\">"
        << escape(result.known_failure->reason) << "</td><td>"
        << escape(result.known_failure->issue) << "</td><td class=\"reason\">"
        << escape(result.reason) << "</td></tr>\n";
  }
  out << "</tbody></table></section>\n";
}

void write_skips(std::ostream& out, const RunReport& report) {
  const std::vector<std::pair<std::string, int>> reasons = skip_reasons_by_count(report);
  out << "<section id=\"skips\"><h2>Skipped, by reason (" << report.summary.skipped << ")</h2>\n";
  if (reasons.empty()) {
    out << "<p>None.</p></section>\n";
    return;
  }
  out << "<table class=\"skips\"><thead><tr><th>cases</th><th>reason</th></tr></thead><tbody>\n";
  for (const auto& [reason, count] : reasons) {
    out << "<tr><td class=\"num\">" << count << "</td><td class=\"reason\">"
        << escape(reason.empty() ? "(no reason given)" : reason) << "</td></tr>\n";
  }
  out << "</tbody></table></section>\n";
}

void write_environment(std::ostream& out, const RunReport& report) {
  const RunEnvironment& environment = report.environment;
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"harness version", environment.harness_version},
      {"git commit", environment.git_commit},
      {"compiler", environment.compiler},
      {"build type", environment.build_type},
      {"host CPU", environment.host_cpu},
      {"threads", std::to_string(environment.threads)},
      {"BLAS", environment.blas},
      {"backend", environment.backend},
      {"CUDA", environment.cuda},
  };
  out << "<section id=\"environment\"><h2>Environment</h2>\n<table class=\"environment\"><tbody>\n";
  for (const auto& [name, value] : fields) {
    out << "<tr><th>" << escape(name) << "</th><td>" << escape(value) << "</td></tr>\n";
  }
  out << "</tbody></table>\n<h3>Numerics</h3>\n<table class=\"environment\"><tbody>\n";
  for (const auto& [name, value] : environment.numerics) {
    out << "<tr><th>" << escape(name) << "</th><td>" << escape(value) << "</td></tr>\n";
  }
  out << "</tbody></table></section>\n";
}

// No '<' or '&' anywhere in here: the style sheet is XML character data as well.
constexpr std::string_view kStyle = R"(
body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; font-size: 14px;
       color: #1a1a1a; margin: 24px 32px; max-width: 1340px; }
h1 { font-size: 22px; margin: 0 0 8px 0; }
h2 { font-size: 18px; margin: 28px 0 8px 0; border-bottom: 1px solid #cccccc; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px 0; }
.verdict { padding: 10px 14px; border-radius: 4px; border-left: 8px solid; margin-bottom: 6px; }
.verdict-pass { background: #e6f4ea; border-color: #1e8e3e; }
.verdict-fail { background: #fce8e6; border-color: #b3261e; }
.verdict-skip { background: #eeeeee; border-color: #777777; }
.verdict .word { font-weight: bold; font-size: 18px; margin-right: 10px; }
.note { color: #555555; font-size: 13px; font-weight: normal; }
.panels { display: flex; flex-wrap: wrap; gap: 8px 28px; align-items: flex-start; }
figure.panel { margin: 0; }
svg text { font-family: "DejaVu Sans", Arial, sans-serif; font-size: 12px; fill: #1a1a1a; }
svg .panel-title { font-weight: bold; font-size: 13px; }
svg .axis-title { font-style: italic; fill: #555555; }
svg .column-label { text-anchor: middle; }
svg .heads-label { text-anchor: middle; font-weight: bold; }
svg .row-label { text-anchor: end; }
svg .cell-label { text-anchor: middle; font-size: 12px; font-weight: bold; }
svg .cell-count { text-anchor: end; font-size: 10px; }
svg .tick { text-anchor: middle; font-size: 11px; }
svg .legend-title { font-weight: bold; }
svg .legend-note { font-size: 12px; }
table { border-collapse: collapse; margin: 4px 0; }
th, td { border: 1px solid #d0d0d0; padding: 4px 8px; text-align: left; vertical-align: top; }
thead th { background: #f2f2f2; }
table.environment th { background: #f7f7f7; white-space: nowrap; font-weight: normal; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.case-id { font-family: "DejaVu Sans Mono", monospace; white-space: nowrap; }
td.reason { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; word-break: break-word;
            min-width: 260px; }
td.shape { min-width: 170px; }
table.failures { width: 100%; }
tr.failure td.case-id { font-weight: bold; }
tr.failure:target { outline: 3px solid #b3261e; }
td.replay code { font-size: 12px; word-break: break-all; }
)";

}  // namespace

std::string run_to_html(const RunReport& report, const ReplayOf& replay_of) {
  const RunSummary& summary = report.summary;
  const std::string verdict = summary.failed > 0 ? "fail" : summary.passed > 0 ? "pass" : "skip";
  std::string verdict_word = verdict;
  for (char& c : verdict_word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));

  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      << "<title>attnfuzz " << escape(summary.matrix_name) << ": " << verdict_word
      << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  // Shared SVG definitions: a zero-size SVG (not display:none, which would hide the pattern).
  out << "<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>"
         "<pattern id=\"skip-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
         "patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"6\" fill=\"#8a8a8a\"/>"
         "</pattern></defs></svg>\n";
  out << "<h1>attnfuzz report: " << escape(summary.matrix_name) << "</h1>\n";
  out << "<div class=\"verdict verdict-" << verdict << "\" id=\"verdict\"><span class=\"word\">"
      << verdict_word << "</span>" << summary.passed << " passed, " << summary.failed << " failed, "
      << summary.skipped << " skipped" << known_count_phrase(summary) << " of " << summary.total
      << " · exit code " << summary.exit_code << "</div>\n";
  out << "<p class=\"note\">matrix <code>" << escape(summary.matrix_source) << "</code> · "
      << fixed_decimals(summary.wall_seconds, 1) << " s wall · started "
      << escape(summary.started_at) << " · backend " << escape(report.environment.backend)
      << " · build " << escape(report.environment.git_commit);
  std::set<std::string> plants;
  for (const CaseResult& result : report.results) {
    if (result.plant != "none") plants.insert(result.plant);
  }
  for (const std::string& plant : plants) out << " · planted bug <b>" << escape(plant) << "</b>";
  out << "</p>\n";
  write_heatmap(out, report);
  write_failures(out, report, replay_of);
  write_known_failures(out, report);
  write_skips(out, report);
  write_environment(out, report);
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace attnfuzz
