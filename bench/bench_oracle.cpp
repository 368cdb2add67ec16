// SPDX-License-Identifier: BSD-3-Clause
// Benchmark of the float64 oracle against the machine's own DGEMM, measured in the same run.
//
// The oracle's figure counts the attention's 4 * D floating-point operations per (query, visible
// key) pair, 4 * B * H * Sq * Sk * D without a mask, about half that with the causal one, per
// second; DGEMM's figure is OpenBLAS on an n x n x n product using every core. The goal is an
// oracle at >= 0.5x DGEMM: the softmax's exponentials and the float SGEMM of P |V| (the
// tolerance's error scale) are the overhead on top of the two matrix products.
//
// Each repeat times DGEMM right before the oracle and takes their ratio, so that a machine whose
// speed drifts (shared cores) shifts both; the table shows medians. A last column compares the
// oracle with plain DGEMMs of its own two products, on the same shapes and threads: the part of
// the gap that is the shapes' (a K of head_dim = 64 keeps DGEMM well below its square-matrix
// rate) rather than the oracle's.
//
// With --backward it compares the backward oracle (oracle/reference_backward.h) with the forward
// one instead, side by side on each shape (GQA and MQA included: its work items are (batch, kv
// head) pairs): the backward's rate counts 2.5 times the forward's operations (its five products
// of the forward's two, FlashAttention's convention), and the goal is a rate within 2x of the
// forward's (>= 0.50x).
//
//   bench_oracle [--repeats N] [--backward]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "core/clock.h"
#include "core/parallel_for.h"
#include "oracle/reference_attention.h"
#include "oracle/reference_backward.h"

namespace {

double seconds_of(const std::function<void()>& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return attnfuzz::seconds_since(start);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// After a threaded call OpenBLAS's worker threads spin, waiting for more work, for 2^28 TSC cycles
// (THREAD_TIMEOUT; about 0.1 s at 2.5 GHz) before they sleep. An oracle run that starts within
// that time shares its cores with them (on 2 cores it ran about 15% slower): the bench waits
// them out, so that each figure is of its own code alone.
constexpr std::chrono::milliseconds kBlasWorkersSettle{400};

// OpenBLAS DGEMM on n x n x n, every core: the machine's float64 peak as BLAS reaches it.
class SquareDgemm {
 public:
  explicit SquareDgemm(int n)
      : n_(n), a_(static_cast<std::size_t>(n) * n, 1.0 / 3.0), b_(a_), c_(a_.size()) {}
  double gflops() {
    openblas_set_num_threads(attnfuzz::default_thread_count());
    const double seconds = seconds_of([&] {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n_, n_, n_, 1.0, a_.data(), n_,
                  b_.data(), n_, 0.0, c_.data(), n_);
    });
    openblas_set_num_threads(1);
    std::this_thread::sleep_for(kBlasWorkersSettle);
    return 2.0 * n_ * n_ * static_cast<double>(n_) / seconds / 1e9;
  }

 private:
  int n_;
  std::vector<double> a_, b_, c_;
};

// 4 * head_dim operations per (query row, key it may see) pair.
double visible_attention_flops(const attnfuzz::AttentionProblem& problem) {
  double pairs = 0.0;
  for (std::int64_t row = 0; row < problem.seq_len_q; ++row) {
    const attnfuzz::KeyRange keys = problem.visible_keys_of(0, row);
    pairs += static_cast<double>(std::max<std::int64_t>(keys.end - keys.first, 0));
  }
  return 4.0 * static_cast<double>(problem.batch * problem.heads * problem.head_dim) * pairs;
}

// The attention's two products alone, as plain DGEMMs on the same shapes and the same threads
// (one head per item, single-threaded OpenBLAS inside): what the oracle cannot avoid doing.
double bare_products_seconds(const attnfuzz::AttentionProblem& problem) {
  const int seq_q = static_cast<int>(problem.seq_len_q),
            seq_k = static_cast<int>(problem.seq_len_k);
  const int dim = static_cast<int>(problem.head_dim);
  const std::int64_t heads = problem.batch * problem.heads;
  return seconds_of([&] {
    attnfuzz::parallel_for(heads, [&](std::int64_t) {
      thread_local std::vector<double> q, k, s, o;
      q.assign(static_cast<std::size_t>(seq_q) * dim, 0.5);
      k.assign(static_cast<std::size_t>(seq_k) * dim, 0.25);
      s.resize(static_cast<std::size_t>(seq_q) * seq_k);
      o.resize(static_cast<std::size_t>(seq_q) * dim);
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, seq_q, seq_k, dim, 1.0, q.data(), dim,
                  k.data(), dim, 0.0, s.data(), seq_k);
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, seq_q, dim, seq_k, 1.0, s.data(),
                  seq_k, k.data(), dim, 0.0, o.data(), dim);
    });
  });
}

// The backward oracle beside the forward one, each repeat timing both on the same inputs.
int compare_backward_with_forward(int repeats) {
  using namespace attnfuzz;
  std::printf("%-42s %10s %10s %14s\n", "shape", "forward s", "backward s", "rate vs fwd");
  struct Shape {
    std::int64_t batch, heads, kv_heads, seq_len, head_dim;
    bool causal;
  };
  const Shape shapes[] = {{16, 8, 8, 512, 64, false},
                          {4, 8, 8, 1024, 128, false},
                          {4, 8, 8, 1024, 128, true},
                          {4, 8, 2, 1024, 64, false},
                          {1, 8, 1, 2048, 64, false}};
  double worst = 1e9;
  for (const Shape& shape : shapes) {
    AttentionCase attention_case;
    attention_case.batch = shape.batch;
    attention_case.heads = shape.heads;
    attention_case.kv_heads = shape.kv_heads;
    attention_case.seq_len_q = attention_case.seq_len_k = shape.seq_len;
    attention_case.head_dim = shape.head_dim;
    attention_case.causal = shape.causal;
    const AttentionProblem problem = problem_of(attention_case);
    const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
    const AttentionInputs grad_output = generate_inputs(problem, DataDistribution::normal, 2);
    const AttentionTensors tensors = input_tensors(inputs);
    ReferenceAttention reference;
    ReferenceGradients gradients;
    const auto run_forward = [&] { reference_attention(problem, tensors, reference); };
    // dO is Q's draw of another seed: O and Q share their shape and layout here.
    const auto run_backward = [&] {
      reference_backward(problem, tensors, grad_output.q.data(), gradients);
    };
    run_forward();  // warm-up
    run_backward();
    std::vector<double> forward_seconds, backward_seconds, rates;
    for (int run = 0; run < repeats; ++run) {
      forward_seconds.push_back(seconds_of(run_forward));
      backward_seconds.push_back(seconds_of(run_backward));
      rates.push_back(2.5 * forward_seconds.back() / backward_seconds.back());
    }
    const double rate = median(rates);
    worst = std::min(worst, rate);
    std::printf("%-42s %10.3f %10.3f %13.2fx\n", describe_shape(problem).c_str(),
                median(forward_seconds), median(backward_seconds), rate);
  }
  std::printf(
      "\nrate vs fwd: the backward oracle's operations per second (2.5 times the forward's\n"
      "count) over the forward oracle's, median of the pairs.\n"
      "worst backward / forward rate: %.2fx (goal >= 0.50x)\n",
      worst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnfuzz;
  int repeats = 5;
  bool backward = false;
  for (int arg = 1; arg < argc; ++arg) {
    if (std::strcmp(argv[arg], "--backward") == 0) backward = true;
    if (std::strcmp(argv[arg], "--repeats") == 0 && arg + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[arg + 1]));
    }
  }
  if (backward) {
    std::printf("backward oracle benchmark: %d threads, %s\n", default_thread_count(),
                blas_description().c_str());
    return compare_backward_with_forward(repeats);
  }
  std::printf("oracle benchmark: %d threads, %s\n", default_thread_count(),
              blas_description().c_str());
  SquareDgemm dgemm(2048);
  (void)dgemm.gflops();  // warm-up: page in, spin up threads
  std::printf("%-42s %8s %9s %9s %9s %14s\n", "shape", "seconds", "GFLOP/s", "DGEMM", "vs DGEMM",
              "vs own DGEMMs");

  struct Shape {
    std::int64_t batch, heads, seq_len, head_dim;
    bool causal;
  };
  const Shape shapes[] = {{16, 8, 512, 64, false},
                          {4, 8, 1024, 64, false},
                          {4, 8, 1024, 128, false},
                          {4, 8, 1024, 128, true},
                          {1, 4, 4096, 64, false}};
  double worst_ratio = 1e9;
  std::vector<double> all_dgemm;
  for (const Shape& shape : shapes) {
    AttentionCase attention_case;
    attention_case.batch = shape.batch;
    attention_case.heads = attention_case.kv_heads = shape.heads;
    attention_case.seq_len_q = attention_case.seq_len_k = shape.seq_len;
    attention_case.head_dim = shape.head_dim;
    attention_case.causal = shape.causal;
    const AttentionProblem problem = problem_of(attention_case);
    const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
    const AttentionTensors tensors = input_tensors(inputs);
    const double flops = visible_attention_flops(problem);
    // One result reused from run to run, as the harness reuses it from case to case.
    ReferenceAttention reference;
    const auto run_oracle = [&] { reference_attention(problem, tensors, reference); };
    run_oracle();  // warm-up
    std::vector<double> oracle_seconds, dgemm_gflops, ratios, bare_over_oracle;
    for (int run = 0; run < repeats; ++run) {
      dgemm_gflops.push_back(dgemm.gflops());
      oracle_seconds.push_back(seconds_of(run_oracle));
      ratios.push_back(flops / oracle_seconds.back() / 1e9 / dgemm_gflops.back());
      bare_over_oracle.push_back(bare_products_seconds(problem) / oracle_seconds.back());
    }
    all_dgemm.insert(all_dgemm.end(), dgemm_gflops.begin(), dgemm_gflops.end());
    const double ratio = median(ratios);
    worst_ratio = std::min(worst_ratio, ratio);
    std::printf("%-42s %8.3f %9.1f %9.1f %8.2fx %13.2fx\n", describe_shape(problem).c_str(),
                median(oracle_seconds), flops / median(oracle_seconds) / 1e9, median(dgemm_gflops),
                ratio, median(bare_over_oracle));
  }
  std::printf(
      "\nDGEMM: OpenBLAS 2048^3 on every core, GFLOP/s, timed right before each oracle run\n"
      "(median over the run: %.1f). vs DGEMM: the oracle's attention GFLOP/s over that DGEMM's,\n"
      "median of the pairs. vs own DGEMMs: the time of its two matrix products alone (plain\n"
      "unmasked DGEMMs, same shapes and threads) over its whole time.\n"
      "worst oracle / DGEMM ratio: %.2fx (goal >= 0.50x)\n",
      median(all_dgemm), worst_ratio);
  return 0;
}
