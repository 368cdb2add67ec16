// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/plugin_kernel.h"

#include <dlfcn.h>

#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/fenced_buffer.h"
#include "core/problem_features.h"
#include "core/text.h"
#include "kernels/kernel_registry.h"

#if ATTNFUZZ_HAVE_CUDA
#include "core/cuda_check.h"
#endif

namespace attnfuzz {

// The ABI's dtype codes are the dtype table's rows (core/dtype.h), and its descale codes the
// Descale rows (core/fp8_inputs.h).
static_assert(ATTNFUZZ_DTYPE_FP16 == static_cast<int>(Dtype::fp16) &&
              ATTNFUZZ_DTYPE_BF16 == static_cast<int>(Dtype::bf16) &&
              ATTNFUZZ_DTYPE_E4M3 == static_cast<int>(Dtype::e4m3) &&
              ATTNFUZZ_DTYPE_E5M2 == static_cast<int>(Dtype::e5m2));
static_assert(ATTNFUZZ_DESCALE_NONE == static_cast<int>(Descale::none) &&
              ATTNFUZZ_DESCALE_PER_TENSOR == static_cast<int>(Descale::per_tensor) &&
              ATTNFUZZ_DESCALE_PER_KV_HEAD == static_cast<int>(Descale::per_kv_head));

namespace {
std::int32_t abi_dtype_of(Dtype dtype) {
  return static_cast<std::int32_t>(dtype);
}
}  // namespace

attnfuzz_problem abi_problem_of(const AttentionProblem& problem) {
  const auto strides = [](const TensorStrides& s) {
    return attnfuzz_strides{s.batch, s.seq, s.head};
  };
  attnfuzz_problem abi{};
  abi.batch = problem.batch;
  abi.heads = problem.heads;
  abi.kv_heads = problem.kv_heads;
  abi.seq_len_q = problem.seq_len_q;
  abi.seq_len_k = problem.seq_len_k;
  abi.head_dim = problem.head_dim;
  abi.dtype = abi_dtype_of(problem.dtype);
  abi.causal = problem.causal ? 1 : 0;
  abi.softmax_scale = problem.softmax_scale;
  abi.q_strides = strides(problem.q_strides);
  abi.k_strides = strides(problem.k_strides);
  abi.v_strides = strides(problem.v_strides);
  abi.o_strides = strides(problem.o_strides);
  return abi;
}

attnfuzz_problem_v2 abi_problem_v2_of(const AttentionProblem& problem) {
  attnfuzz_problem_v2 abi{};
  abi.base = abi_problem_of(problem);
  abi.window_left = problem.window_left;
  abi.window_right = problem.window_right;
  abi.softcap = problem.softcap;
  abi.alibi = problem.alibi ? 1 : 0;
  abi.return_lse = problem.return_lse ? 1 : 0;
  abi.varlen_q = problem.varlen_q ? 1 : 0;
  abi.varlen_k = problem.varlen_k ? 1 : 0;
  abi.total_q = problem.total_q;
  abi.total_k = problem.total_k;
  abi.page_size = problem.page_size;
  abi.pages = problem.pages;
  abi.pages_per_sequence = problem.pages_per_sequence;
  abi.lse_strides = {problem.lse_strides.batch, problem.lse_strides.seq, problem.lse_strides.head};
  return abi;
}

attnfuzz_problem_v4 abi_problem_v4_of(const AttentionProblem& problem) {
  attnfuzz_problem_v4 abi{};
  abi.v2 = abi_problem_v2_of(problem);
  abi.q_dtype = abi_dtype_of(problem.q_dtype());
  abi.k_dtype = abi_dtype_of(problem.k_dtype());
  abi.v_dtype = abi_dtype_of(problem.v_dtype());
  abi.descale = static_cast<std::int32_t>(problem.descale);
  return abi;
}

// The ABI's feature bits are the harness's own (core/problem_features.h).
static_assert(ATTNFUZZ_FEATURE_VARLEN == static_cast<std::uint32_t>(ProblemFeature::varlen));
static_assert(ATTNFUZZ_FEATURE_PAGED_KV == static_cast<std::uint32_t>(ProblemFeature::paged_kv));
static_assert(ATTNFUZZ_FEATURE_SLIDING_WINDOW ==
              static_cast<std::uint32_t>(ProblemFeature::sliding_window));
static_assert(ATTNFUZZ_FEATURE_SOFTCAP == static_cast<std::uint32_t>(ProblemFeature::softcap));
static_assert(ATTNFUZZ_FEATURE_ALIBI == static_cast<std::uint32_t>(ProblemFeature::alibi));
static_assert(ATTNFUZZ_FEATURE_RETURN_LSE ==
              static_cast<std::uint32_t>(ProblemFeature::return_lse));
static_assert(ATTNFUZZ_FEATURE_FP8_INPUTS ==
              static_cast<std::uint32_t>(ProblemFeature::fp8_inputs));
// Version 3's bits say what the backward is, beside the variants'.
static_assert(((ATTNFUZZ_FEATURE_BACKWARD | ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD) &
               kAllProblemFeatures) == 0);

attnfuzz_backward_problem abi_backward_problem_of(const AttentionProblem& problem,
                                                  bool deterministic) {
  attnfuzz_backward_problem abi{};
  abi.forward = abi_problem_v2_of(problem);
  // The harness lays each gradient out as its partner (run/backward_check.h).
  abi.grad_output_strides = abi.forward.base.o_strides;
  abi.dq_strides = abi.forward.base.q_strides;
  abi.dk_strides = abi.forward.base.k_strides;
  abi.dv_strides = abi.forward.base.v_strides;
  abi.deterministic = deterministic ? 1 : 0;
  return abi;
}

namespace {

// A message buffer the plugin writes into; whatever it leaves there is cut at its end. The ABI asks
// for one line: every control character, newlines included, comes back escaped ("\n", "\u001b"),
// so that a message can neither forge rows of a report nor drive a terminal.
struct MessageBuffer {
  std::vector<char> text = std::vector<char>(1024, '\0');
  std::string str() const {
    return escape_control_characters(
        std::string_view(text.data(), strnlen(text.data(), text.size())));
  }
};

// An fp8 input as the ABI hands it: one byte per element, where the harness keeps each pattern in
// the low byte of a 16-bit word. The copy spans the harness's whole buffer, guard tail included,
// between fences (core/fenced_buffer.h), so a read past it faults naming the input; a write into
// it is found after the call and fails the call naming the element.
class BytePackedInput {
 public:
  BytePackedInput(const std::uint16_t* words, std::size_t count, std::int64_t span,
                  std::string_view name)
      : words_(words), bytes_(count, 0), span_(static_cast<std::size_t>(span)), name_(name) {
    for (std::size_t i = 0; i < count; ++i) bytes_.data()[i] = static_cast<std::uint8_t>(words[i]);
    bytes_.label(name_, 0, static_cast<std::size_t>(span));
  }
  const std::uint16_t* pointer() const {
    return reinterpret_cast<const std::uint16_t*>(bytes_.data());
  }
  // What the plugin changed in it (its bytes, their guard tail, the slack up to the fence), or
  // nothing.
  std::optional<std::string> change() const {
    for (std::size_t i = 0; i < bytes_.size(); ++i) {
      const std::uint8_t before = static_cast<std::uint8_t>(words_[i]);
      if (bytes_.data()[i] != before) {
        return "the plugin changed " + name_ + ", byte " + std::to_string(i) +
               (i >= span_ ? " (past the tensor's " + std::to_string(span_) +
                                 " elements, in its guard tail)"
                           : "") +
               " (from " + std::to_string(before) + " to " + std::to_string(bytes_.data()[i]) + ")";
      }
    }
    if (const std::optional<std::ptrdiff_t> slack = bytes_.first_changed_slack_byte()) {
      return "the plugin wrote outside " + name_ + "'s bytes: " +
             (*slack >= 0
                  ? "byte " + std::to_string(*slack + 1) + " past their end (beyond the guard tail)"
                  : "byte " + std::to_string(-*slack) + " before their start");
    }
    return std::nullopt;
  }

 private:
  const std::uint16_t* words_;
  FencedBuffer<std::uint8_t> bytes_;
  std::size_t span_;  // the tensor's bytes; the rest of the copy is its guard tail
  std::string name_;
};

struct PluginSymbols {
  decltype(&attnfuzz_plugin_abi_version) abi_version;
  decltype(&attnfuzz_plugin_name) name;
  decltype(&attnfuzz_plugin_site) site;
  decltype(&attnfuzz_plugin_supports) supports;
  decltype(&attnfuzz_plugin_forward) forward;
  // Version 2's, or null when the plugin does not export them.
  decltype(&attnfuzz_plugin_features) features;
  decltype(&attnfuzz_plugin_supports_v2) supports_v2;
  decltype(&attnfuzz_plugin_forward_v2) forward_v2;
  // Version 3's, or null when the plugin does not export them.
  decltype(&attnfuzz_plugin_supports_backward) supports_backward;
  decltype(&attnfuzz_plugin_backward) backward;
};

class PluginKernel final : public AttentionKernel {
 public:
  PluginKernel(std::filesystem::path path, void* handle, PluginSymbols symbols, int version,
               std::uint32_t features, std::string name, ExecutionSite site)
      : path_(std::move(path)),
        handle_(handle),
        version_(version),
        features_(features),
        symbols_(symbols),
        name_(std::move(name)),
        summary_("plugin " + path_.string()),
        site_(site) {}
  ~PluginKernel() override { dlclose(handle_); }

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  std::string capabilities() const override {
    return "what attnfuzz_plugin_supports() accepts, case by case";
  }
  ExecutionSite site() const override { return site_; }
  std::span<const PlantedBug> plants() const override { return {}; }

  SupportVerdict supports(const AttentionProblem& problem) const override {
    const std::uint32_t features = features_;
    if (auto reason = unsupported_feature_reason(name_ + " (plugin)", problem, features)) {
      return SupportVerdict::no(*reason + (symbols_.features != nullptr
                                               ? ""
                                               : ": it exports no attnfuzz_plugin_features() "
                                                 "(plugin ABI version 2)"));
    }
    if (problem.fp8_inputs() && site_ == ExecutionSite::cuda_device) {
      return SupportVerdict::no(
          name_ +
          " (plugin): fp8 inputs reach plugins on the host only so far (their "
          "byte-packed tensors and descale factors are not staged to the "
          "CUDA device yet)");
    }
    MessageBuffer reason;
    int supported = 0;
    if (symbols_.supports_v2 != nullptr && version_ >= 4) {
      const attnfuzz_problem_v4 abi = abi_problem_v4_of(problem);
      supported = symbols_.supports_v2(&abi.v2, reason.text.data(), reason.text.size());
    } else if (symbols_.supports_v2 != nullptr) {
      const attnfuzz_problem_v2 abi = abi_problem_v2_of(problem);
      supported = symbols_.supports_v2(&abi, reason.text.data(), reason.text.size());
    } else {
      const attnfuzz_problem abi = abi_problem_of(problem);
      supported = symbols_.supports(&abi, reason.text.data(), reason.text.size());
    }
    if (supported != 0) return SupportVerdict::yes();
    const std::string text = reason.str();
    return SupportVerdict::no(name_ + " (plugin): " + (text.empty() ? "not supported" : text));
  }

  SupportVerdict backward_support(const AttentionProblem& problem) const override {
    const std::uint32_t features = features_;
    if ((features & ATTNFUZZ_FEATURE_BACKWARD) == 0) {
      return SupportVerdict::no(
          name_ + " (plugin) has no backward pass: it declares no ATTNFUZZ_FEATURE_BACKWARD" +
          (symbols_.backward != nullptr
               ? " among its features, though it exports attnfuzz_plugin_backward"
               : " (plugin ABI version 3)"));
    }
    if (problem.fp8_inputs()) {
      return SupportVerdict::no(name_ +
                                " (plugin)'s backward: no plugin ABI version hands a backward pass "
                                "fp8 inputs (version 4 carries them to the forward only)");
    }
    // The backward reads the log-sum-exp it is handed: that needs no declaration.
    if (auto reason = unsupported_feature_reason(name_ + " (plugin)", problem,
                                                 features | ATTNFUZZ_FEATURE_RETURN_LSE)) {
      return SupportVerdict::no(*reason);
    }
    MessageBuffer reason;
    const attnfuzz_backward_problem abi = abi_backward_problem_of(problem, true);
    if (symbols_.supports_backward(&abi, reason.text.data(), reason.text.size()) != 0) {
      return SupportVerdict::yes();
    }
    const std::string text = reason.str();
    return SupportVerdict::no(name_ +
                              " (plugin)'s backward: " + (text.empty() ? "not supported" : text));
  }

  bool backward_deterministic() const override {
    const std::uint32_t features = features_;
    return (features & ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD) == 0;
  }

  void backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                const BackwardTensors& gradients,
                PlantedBug /*plant: none carried*/) const override {
    if (symbols_.backward == nullptr) {
      throw std::logic_error(name_ + " (plugin) exports no attnfuzz_plugin_backward");
    }
    const attnfuzz_backward_problem abi = abi_backward_problem_of(problem, gradients.deterministic);
    const attnfuzz_tensors_v2 abi_tensors = abi_tensors_of(tensors);
    const attnfuzz_backward_tensors abi_gradients{gradients.grad_output, gradients.dq, gradients.dk,
                                                  gradients.dv};
    MessageBuffer error;
    const int status =
        symbols_.backward(&abi, &abi_tensors, &abi_gradients, error.text.data(), error.text.size());
    throw_unless_ok(status, error);
  }

  void forward(const AttentionProblem& problem, const AttentionTensors& tensors,
               PlantedBug /*plant: none carried*/) const override {
    const attnfuzz_tensors abi_tensors{tensors.q, tensors.k, tensors.v, tensors.o, nullptr};
    MessageBuffer error;
    int status = ATTNFUZZ_STATUS_ERROR;
    if (symbols_.forward_v2 != nullptr && version_ >= 4) {
      forward_v4(problem, tensors);
      return;
    }
    if (symbols_.forward_v2 != nullptr) {
      const attnfuzz_problem_v2 abi = abi_problem_v2_of(problem);
      const attnfuzz_tensors_v2 abi_tensors_v2 = abi_tensors_of(tensors);
      status = symbols_.forward_v2(&abi, &abi_tensors_v2, error.text.data(), error.text.size());
    } else {
      const attnfuzz_problem abi = abi_problem_of(problem);
      status = symbols_.forward(&abi, &abi_tensors, error.text.data(), error.text.size());
    }
    throw_unless_ok(status, error);
  }

 private:
  // A version 4 plugin's forward: its problem and tensors, fp8 inputs handed as bytes.
  void forward_v4(const AttentionProblem& problem, const AttentionTensors& tensors) const {
    const attnfuzz_problem_v4 abi = abi_problem_v4_of(problem);
    attnfuzz_tensors_v4 abi_tensors{abi_tensors_of(tensors), tensors.q_descale, tensors.k_descale,
                                    tensors.v_descale};
    std::optional<BytePackedInput> packed[3];
    const struct {
      Dtype dtype;
      const std::uint16_t* words;
      std::size_t count;
      std::int64_t span;
      const char* name;
      const std::uint16_t** handed;
    } inputs[] = {{problem.q_dtype(), tensors.q, tensors.q_elements, q_span(problem), "the input Q",
                   &abi_tensors.v2.base.q},
                  {problem.k_dtype(), tensors.k, tensors.k_elements, k_span(problem), "the input K",
                   &abi_tensors.v2.base.k},
                  {problem.v_dtype(), tensors.v, tensors.v_elements, v_span(problem), "the input V",
                   &abi_tensors.v2.base.v}};
    for (std::size_t i = 0; i < std::size(inputs); ++i) {
      if (!is_fp8(inputs[i].dtype)) continue;
      if (site_ != ExecutionSite::host || inputs[i].count == 0) {
        throw std::logic_error(std::string(inputs[i].name) +
                               " is fp8 but cannot be byte-packed here (a device site, or a "
                               "buffer of unknown size)");
      }
      packed[i].emplace(inputs[i].words, inputs[i].count, inputs[i].span, inputs[i].name);
      *inputs[i].handed = packed[i]->pointer();
    }
    MessageBuffer error;
    const int status =
        symbols_.forward_v2(&abi.v2, &abi_tensors.v2, error.text.data(), error.text.size());
    throw_unless_ok(status, error);
    for (const std::optional<BytePackedInput>& input : packed) {
      if (!input) continue;
      if (std::optional<std::string> change = input->change()) throw std::runtime_error(*change);
    }
  }

  static attnfuzz_tensors_v2 abi_tensors_of(const AttentionTensors& tensors) {
    return {{tensors.q, tensors.k, tensors.v, tensors.o, nullptr},
            tensors.cu_seqlens_q,
            tensors.cu_seqlens_k,
            tensors.block_table,
            tensors.alibi_slopes,
            tensors.lse};
  }

  // A call's end: an error status thrown with the plugin's message; a CUDA plugin's work waited
  // for (the ABI lets it return before its kernels finish).
  void throw_unless_ok(int status, const MessageBuffer& error) const {
    if (status != ATTNFUZZ_STATUS_OK) {
      const std::string text = error.str();
      throw std::runtime_error("plugin returned status " + std::to_string(status) + ": " +
                               (text.empty() ? "(no message)" : text));
    }
#if ATTNFUZZ_HAVE_CUDA
    if (site_ == ExecutionSite::cuda_device) ATTNFUZZ_CUDA_CHECK(cudaStreamSynchronize(nullptr));
#endif
  }

  std::filesystem::path path_;
  void* handle_;
  int version_;  // the ABI version the plugin was built for
  // What attnfuzz_plugin_features() said on loading, less the bits of versions after the one the
  // plugin was built for; 0 without version 2's functions.
  std::uint32_t features_;
  PluginSymbols symbols_;
  std::string name_;
  std::string summary_;
  ExecutionSite site_;
};

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// A symbol the plugin may leave out: null when it does.
template <typename Function>
Function find_optional_symbol(void* handle, const char* symbol) {
  dlerror();
  return reinterpret_cast<Function>(dlsym(handle, symbol));
}

template <typename Function>
Function find_symbol(void* handle, const char* symbol, const std::filesystem::path& path) {
  dlerror();
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    dlclose(handle);
    throw std::runtime_error("plugin " + path.string() + " does not export " + symbol +
                             " (include/attnfuzz/attnfuzz_plugin.h lists the five symbols a "
                             "plugin defines, with C linkage)");
  }
  return reinterpret_cast<Function>(address);
}

}  // namespace

const AttentionKernel& load_plugin_kernel(const std::filesystem::path& path,
                                          std::string_view suffix_when_taken) {
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error("plugin " + path.string() + ": no such file");
  }
  // An explicit path: dlopen would search the library path for a bare file name.
  const std::filesystem::path absolute = std::filesystem::absolute(path);
  void* handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw std::runtime_error("plugin " + path.string() + " cannot be loaded: " + dlerror());
  }
  PluginSymbols symbols{};
  symbols.abi_version =
      find_symbol<decltype(symbols.abi_version)>(handle, "attnfuzz_plugin_abi_version", path);
  symbols.name = find_symbol<decltype(symbols.name)>(handle, "attnfuzz_plugin_name", path);
  symbols.site = find_symbol<decltype(symbols.site)>(handle, "attnfuzz_plugin_site", path);
  symbols.supports =
      find_symbol<decltype(symbols.supports)>(handle, "attnfuzz_plugin_supports", path);
  symbols.forward = find_symbol<decltype(symbols.forward)>(handle, "attnfuzz_plugin_forward", path);
  symbols.features =
      find_optional_symbol<decltype(symbols.features)>(handle, "attnfuzz_plugin_features");
  symbols.supports_v2 =
      find_optional_symbol<decltype(symbols.supports_v2)>(handle, "attnfuzz_plugin_supports_v2");
  symbols.forward_v2 =
      find_optional_symbol<decltype(symbols.forward_v2)>(handle, "attnfuzz_plugin_forward_v2");
  symbols.supports_backward = find_optional_symbol<decltype(symbols.supports_backward)>(
      handle, "attnfuzz_plugin_supports_backward");
  symbols.backward =
      find_optional_symbol<decltype(symbols.backward)>(handle, "attnfuzz_plugin_backward");

  const auto fail = [&](const std::string& problem) {
    dlclose(handle);
    throw std::runtime_error("plugin " + path.string() + ": " + problem);
  };
  const int version = symbols.abi_version();
  if (version < ATTNFUZZ_PLUGIN_ABI_OLDEST_VERSION || version > ATTNFUZZ_PLUGIN_ABI_VERSION) {
    fail("built for plugin ABI version " + std::to_string(version) + ", this harness speaks " +
         std::to_string(ATTNFUZZ_PLUGIN_ABI_OLDEST_VERSION) + " to " +
         std::to_string(ATTNFUZZ_PLUGIN_ABI_VERSION) +
         ": rebuild it against this harness's "
         "attnfuzz_plugin.h");
  }
  const int v2_symbols = (symbols.features != nullptr) + (symbols.supports_v2 != nullptr) +
                         (symbols.forward_v2 != nullptr);
  if (v2_symbols != 0 && v2_symbols != 3) {
    fail(
        "exports only some of version 2's attnfuzz_plugin_features, attnfuzz_plugin_supports_v2 "
        "and attnfuzz_plugin_forward_v2: all three or none");
  }
  std::uint32_t features = symbols.features != nullptr ? symbols.features() : 0;
  // Versions before 4 have no dtype codes or descale pointers for fp8 inputs: whatever their bit
  // 256 says, fp8 cases skip, naming the feature.
  if (version < 4) features &= ~static_cast<std::uint32_t>(ProblemFeature::fp8_inputs);
  if (version < 3) {
    // Built before the backward: its bits and symbols mean nothing (and a version 2 plugin whose
    // features() set bits past the variants' loads as it did).
    features &= kAllProblemFeatures;
    symbols.supports_backward = nullptr;
    symbols.backward = nullptr;
  }
  // Version 3: the backward's two symbols whenever the features declare a backward. Exported
  // without the bit they are not called (a bridge to another language exports them for every
  // function it hosts; the bit says which has a backward), and backward cases say so when skipped.
  const int v3_symbols = (symbols.supports_backward != nullptr) + (symbols.backward != nullptr);
  const bool declares_backward = (features & ATTNFUZZ_FEATURE_BACKWARD) != 0;
  if (v3_symbols == 1) {
    fail(
        "exports only one of version 3's attnfuzz_plugin_supports_backward and "
        "attnfuzz_plugin_backward: both or neither");
  }
  if (declares_backward && v3_symbols == 0) {
    fail(
        "declares ATTNFUZZ_FEATURE_BACKWARD but exports neither attnfuzz_plugin_supports_backward "
        "nor attnfuzz_plugin_backward");
  }
  if (!declares_backward && (features & ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD) != 0) {
    fail(
        "declares ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD without ATTNFUZZ_FEATURE_BACKWARD: "
        "a backward it does not have");
  }
  const char* reported = symbols.name();
  const std::string name = reported == nullptr ? "" : reported;
  if (!valid_name(name)) {
    fail("attnfuzz_plugin_name() returned '" + name +
         "': a name is 1 to 64 letters, digits, '_' or '-'");
  }
  std::string registered = name;
  if (find_kernel(registered) != nullptr && !suffix_when_taken.empty()) {
    registered += suffix_when_taken;
  }
  if (find_kernel(registered) != nullptr) {
    fail("a kernel named '" + registered + "' is already registered");
  }
  const int site = symbols.site();
  if (site != ATTNFUZZ_SITE_HOST && site != ATTNFUZZ_SITE_CUDA_DEVICE) {
    fail("attnfuzz_plugin_site() returned " + std::to_string(site) +
         " (ATTNFUZZ_SITE_HOST is 0, ATTNFUZZ_SITE_CUDA_DEVICE is 1)");
  }
  auto kernel = std::make_unique<PluginKernel>(
      path, handle, symbols, version, features, registered,
      site == ATTNFUZZ_SITE_HOST ? ExecutionSite::host : ExecutionSite::cuda_device);
  return add_kernel(std::move(kernel));
}

}  // namespace attnfuzz
