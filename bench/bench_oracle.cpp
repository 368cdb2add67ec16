// Benchmark of the float64 oracle against the machine's own DGEMM, measured in the same run.
//
// The oracle's figure counts the attention's 4 * B * H * Sq * Sk * D floating-point operations
// per second; DGEMM's figure is OpenBLAS on an n x n x n product using every core. The goal is an
// oracle at >= 0.5x DGEMM: the softmax's exponentials and the extra |V| product (the tolerance's
// error scale) are the overhead on top of the two matrix products.
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
  std::printf("%-38s %10s %12s %10s\n", "shape", "seconds", "GFLOP/s", "vs DGEMM");

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
    worst_ratio = std::min(worst_ratio, gflops / dgemm);
    std::printf("%-38s %10.3f %12.1f %9.2fx\n", describe_shape(problem).c_str(), seconds, gflops,
                gflops / dgemm);
  }
  std::printf("\nworst oracle / DGEMM ratio: %.2fx (goal >= 0.50x)\n", worst_ratio);
  return 0;
}
