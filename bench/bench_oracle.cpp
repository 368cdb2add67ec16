// Benchmark of the float64 oracle against the machine's own DGEMM, measured in the same run.
//
// The oracle's figure counts the attention's 4 * B * H * Sq * Sk * D floating-point operations
// per second; DGEMM's figure is OpenBLAS on an n x n x n product using every core. The goal is an
// oracle at >= 0.5x DGEMM: the softmax's exponentials and the extra |V| product (the tolerance's
// error scale) are the overhead on top of the two matrix products. A second column compares the
// oracle with plain DGEMMs of its own two products, on the same shapes and threads: the part of
// the gap that is the shapes' (a K of head_dim = 64 keeps DGEMM well below its square-matrix
// rate) rather than the oracle's.
//
//   bench_oracle [--repeats N]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/parallel_for.h"
#include "fuzz/attention_case.h"
#include "fuzz/data_distribution.h"
#include "oracle/reference_attention.h"

namespace {

double median_seconds(int repeats, const std::function<void()>& body) {
  std::vector<double> times;
  body();  // warm-up: page in buffers, spin up threads
  for (int run = 0; run < repeats; ++run) {
    const auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double dgemm_gflops(int n, int repeats) {
  std::vector<double> a(static_cast<std::size_t>(n) * n, 1.0 / 3.0), b(a), c(a.size());
  openblas_set_num_threads(attnfuzz::default_thread_count());
  const double seconds = median_seconds(repeats, [&] {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n,
                0.0, c.data(), n);
  });
  openblas_set_num_threads(1);
  return 2.0 * n * n * static_cast<double>(n) / seconds / 1e9;
}

// The attention's two products alone, as plain DGEMMs on the same shapes and the same threads
// (one head per item, single-threaded OpenBLAS inside): what the oracle cannot avoid doing.
double bare_products_seconds(const attnfuzz::AttentionProblem& problem, int repeats) {
  const int seq_q = static_cast<int>(problem.seq_len_q),
            seq_k = static_cast<int>(problem.seq_len_k);
  const int dim = static_cast<int>(problem.head_dim);
  const std::int64_t heads = problem.batch * problem.heads;
  return median_seconds(repeats, [&] {
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

}  // namespace

int main(int argc, char** argv) {
  using namespace attnfuzz;
  int repeats = 5;
  for (int arg = 1; arg + 1 < argc; ++arg) {
    if (std::strcmp(argv[arg], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[arg + 1]));
  }
  std::printf("oracle benchmark: %d threads, %s\n", default_thread_count(),
              blas_description().c_str());
  const double dgemm = dgemm_gflops(2048, repeats);
  std::printf("OpenBLAS DGEMM 2048^3, all threads: %.1f GFLOP/s\n\n", dgemm);
  std::printf("%-42s %8s %9s %9s %14s\n", "shape", "seconds", "GFLOP/s", "vs DGEMM",
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
  for (const Shape& shape : shapes) {
    AttentionCase attention_case;
    attention_case.batch = shape.batch;
    attention_case.heads = attention_case.kv_heads = shape.heads;
    attention_case.seq_len_q = attention_case.seq_len_k = shape.seq_len;
    attention_case.head_dim = shape.head_dim;
    attention_case.causal = shape.causal;
    const AttentionProblem problem = problem_of(attention_case);
    const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
    const AttentionTensors tensors{inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr};
    const double seconds =
        median_seconds(repeats, [&] { (void)reference_attention(problem, tensors); });
    // A causal problem does the same products (masked scores are computed, then zeroed).
    const double gflops = attention_flops(problem) / seconds / 1e9;
    const double bare_seconds = bare_products_seconds(problem, repeats);
    worst_ratio = std::min(worst_ratio, gflops / dgemm);
    std::printf("%-42s %8.3f %9.1f %8.2fx %13.2fx\n", describe_shape(problem).c_str(), seconds,
                gflops, gflops / dgemm, bare_seconds / seconds);
  }
  std::printf(
      "\nvs DGEMM: the oracle's attention GFLOP/s over square DGEMM's. vs own DGEMMs: the time of\n"
      "its two matrix products alone (plain DGEMMs, same shapes and threads) over its whole time.\n"
      "worst oracle / DGEMM ratio: %.2fx (goal >= 0.50x)\n",
      worst_ratio);
  return 0;
}
