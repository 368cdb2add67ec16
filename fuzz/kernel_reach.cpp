// SPDX-License-Identifier: BSD-3-Clause
#include "fuzz/kernel_reach.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "core/text.h"

namespace attnfuzz {
namespace {

// A small dense case of `head_dim` and `dtype`, two query heads over `kv_heads`: what each probe
// varies one axis of.
AttentionCase probe_case(std::int64_t head_dim, Dtype dtype, std::int64_t kv_heads = 2) {
  AttentionCase attention_case;
  attention_case.id = "reach-probe";
  attention_case.batch = 2;
  attention_case.heads = 2;
  attention_case.kv_heads = kv_heads;
  attention_case.seq_len_q = 5;
  attention_case.seq_len_k = 7;
  attention_case.head_dim = head_dim;
  attention_case.dtype = dtype;
  return attention_case;
}

// `base` with `feature` in each of the forms the generator draws (with_variants), so that a kernel
// that runs only some of them (pages of 256, key-side varlen, a causal window) is still offered
// the feature. The switch has no default: a new feature row fails the build here until it has its
// probes.
std::vector<AttentionCase> with_feature(const AttentionCase& base, ProblemFeature feature) {
  std::vector<AttentionCase> probes;
  const auto add = [&](auto change) {
    AttentionCase probe = base;
    change(probe);
    probes.push_back(probe);
  };
  switch (feature) {
    case ProblemFeature::varlen:
      add([](AttentionCase& c) { c.seq_lens_q = {3, 5}; });
      add([](AttentionCase& c) { c.seq_lens_k = {7, 4}; });
      add([](AttentionCase& c) {
        c.seq_lens_q = {3, 5};
        c.seq_lens_k = {7, 4};
      });
      break;
    case ProblemFeature::paged_kv:
      for (const std::int64_t page_size : {16, 64, 256, 5}) {
        add([page_size](AttentionCase& c) { c.page_size = page_size; });
      }
      break;
    case ProblemFeature::sliding_window:
      for (const bool causal : {false, true}) {
        add([causal](AttentionCase& c) {
          c.window_left = 2;
          c.window_right = 1;
          c.causal = causal;
        });
        add([causal](AttentionCase& c) {
          c.window_left = 2;
          c.causal = causal;
        });
        add([](AttentionCase& c) { c.window_right = 1; });
      }
      break;
    case ProblemFeature::softcap:
      add([](AttentionCase& c) { c.softcap = 30.0; });
      break;
    case ProblemFeature::alibi:
      add([](AttentionCase& c) { c.alibi = true; });
      add([](AttentionCase& c) {
        c.alibi = true;
        c.causal = true;
      });
      break;
    case ProblemFeature::return_lse:
      add([](AttentionCase& c) { c.return_lse = true; });
      break;
    case ProblemFeature::fp8_inputs:
      add([](AttentionCase& c) { c.q_storage = c.k_storage = c.v_storage = InputStorage::e4m3; });
      add([](AttentionCase& c) {
        c.k_storage = c.v_storage = InputStorage::e5m2;
        c.descale = Descale::per_tensor;
      });
      break;
  }
  return probes;
}

// Every head dim the generator draws: the built-in kernels' and the others.
std::vector<std::int64_t> drawn_head_dims() {
  std::vector<std::int64_t> dims(std::begin(kBuiltInHeadDims), std::end(kBuiltInHeadDims));
  dims.insert(dims.end(), std::begin(kOtherHeadDims), std::end(kOtherHeadDims));
  return dims;
}

template <typename Value>
void add_once(std::vector<Value>& values, Value value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

template <typename Value>
bool holds(const std::vector<Value>& values, Value value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

KernelReach probe_kernel_reach(const CaseRunner& runner) {
  const auto runs = [&runner](const AttentionCase& attention_case) {
    return runner.choose_kernel(attention_case).kernel != nullptr;
  };
  KernelReach reach;
  reach.features = 0;
  for (const std::int64_t head_dim : drawn_head_dims()) {
    for (const DtypeTraits& traits : output_dtypes()) {
      if (!runs(probe_case(head_dim, traits.dtype))) continue;
      add_once(reach.head_dims, head_dim);
      add_once(reach.dtypes, traits.dtype);
    }
  }
  if (reach.head_dims.empty()) return KernelReach{};  // runs nothing here: offered everything
  // Grouped heads and the variants, each on any head dim it runs with the first dtype.
  const Dtype dtype = reach.dtypes.front();
  reach.grouped_heads = false;
  for (const std::int64_t head_dim : reach.head_dims) {
    if (runs(probe_case(head_dim, dtype, 1))) reach.grouped_heads = true;
    for (const ProblemFeatureInfo& info : kProblemFeatures) {
      const auto bit = static_cast<std::uint32_t>(info.feature);
      if ((reach.features & bit) != 0) continue;
      for (const AttentionCase& probe : with_feature(probe_case(head_dim, dtype), info.feature)) {
        if (runs(probe)) {
          reach.features |= bit;
          break;
        }
      }
    }
  }
  // The backward pass, asked of a dense case the kernel runs.
  AttentionCase backward_probe = probe_case(reach.head_dims.front(), dtype);
  backward_probe.backward = true;
  reach.backward = runs(backward_probe);
  return reach;
}

std::string describe_unreached(const KernelReach& reach) {
  std::vector<std::string> parts;
  std::string head_dims;
  for (const std::int64_t head_dim : drawn_head_dims()) {
    if (!reach.head_dims.empty() && !holds(reach.head_dims, head_dim)) {
      head_dims += " " + std::to_string(head_dim);
    }
  }
  if (!head_dims.empty()) parts.push_back("head dims" + head_dims);
  for (const DtypeTraits& traits : output_dtypes()) {
    if (!reach.dtypes.empty() && !holds(reach.dtypes, traits.dtype)) {
      parts.push_back("dtype " + std::string(traits.name));
    }
  }
  if (!reach.grouped_heads) parts.push_back("grouped heads (GQA, MQA)");
  if (!reach.backward) parts.push_back("the backward pass");
  for (const ProblemFeatureInfo& info : kProblemFeatures) {
    if ((reach.features & static_cast<std::uint32_t>(info.feature)) == 0) {
      parts.push_back(std::string(info.name));
    }
  }
  return join_names(parts);
}

KernelReach kernel_reach_from_json(const nlohmann::json& json) {
  KernelReach reach;
  reach.features = json.at("features").get<std::uint32_t>();
  reach.head_dims = json.at("head_dims").get<std::vector<std::int64_t>>();
  for (const std::string& name : json.at("dtypes").get<std::vector<std::string>>()) {
    const std::optional<Dtype> dtype = parse_dtype(name);
    if (!dtype || !holds_outputs(*dtype))
      throw std::invalid_argument("unknown dtype in a kernel reach: " + name);
    reach.dtypes.push_back(*dtype);
  }
  reach.grouped_heads = json.at("grouped_heads").get<bool>();
  reach.backward = json.at("backward").get<bool>();
  return reach;
}

nlohmann::json kernel_reach_to_json(const KernelReach& reach) {
  nlohmann::json dtypes = nlohmann::json::array();
  for (const Dtype dtype : reach.dtypes) dtypes.push_back(std::string(dtype_name(dtype)));
  return {{"features", reach.features},
          {"head_dims", reach.head_dims},
          {"dtypes", dtypes},
          {"grouped_heads", reach.grouped_heads},
          {"backward", reach.backward}};
}

}  // namespace attnfuzz
