// cpu_flash: a CPU twin of the FlashAttention-2 forward algorithm.
//
// It walks the problem exactly as the CUDA kernel does, one (batch, head, query tile) at a time:
//   for each key/value tile of block_n rows (stopping at the causal diagonal):
//     S = Q_tile K_tile^T                fp32 accumulation of exact fp16/bf16 products
//     S = S * scale, masked to -inf       (tail columns past seq_len_k, causal mask)
//     m_new = max(m, rowmax(S)); P = exp(S - m_new); l = l * exp(m - m_new) + rowsum(P)
//     acc = acc * exp(m - m_new) + round_to_dtype(P) V_tile     (P in the input dtype, as the
//                                                                tensor cores take it; fp32 acc)
//   O = round_to_dtype(acc / l), 0 for rows that saw no key.
// Tile sizes come from flash_tile_traits.h, shared with the CUDA kernel.
//
// Planted bugs (kernels/planted_bug.h) are switched by the `plant` argument; cpu_flash carries
// every bug of the algorithm (the GPU-only ones have no CPU counterpart). Each changes a line or
// two of the algorithm, the way the real bug would.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "core/dtype_bulk.h"
#include "core/parallel_for.h"
#include "kernels/flash_tile_traits.h"
#include "kernels/kernel_registry.h"

namespace attnfuzz {
namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTNFUZZ_KERNEL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATTNFUZZ_KERNEL_CLONES
#endif

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();
constexpr int kMaxBlockM = 64;
constexpr int kMaxBlockN = 64;

constexpr PlantedBug kCpuFlashPlants[] = {
#define ATTNFUZZ_CPU_FLASH_PLANT(id, effect, origin) PlantedBug::id,
    ATTNFUZZ_ALGORITHM_PLANTED_BUGS(ATTNFUZZ_CPU_FLASH_PLANT)
#undef ATTNFUZZ_CPU_FLASH_PLANT
};

// Per-thread working set of one query tile, laid out so the inner loops run over contiguous floats.
struct TileWorkspace {
  std::vector<float> query;        // [block_m][head_dim]
  std::vector<float> key_t;        // [head_dim][block_n], transposed for the score loop
  std::vector<float> value;        // [block_n][head_dim]
  std::vector<float> accumulator;  // [block_m][head_dim]
  std::array<float, kMaxBlockN> scores{};
  std::array<float, kMaxBlockM> row_max{};
  std::array<float, kMaxBlockM> row_sum{};
};

class CpuFlashKernel final : public AttentionKernel {
 public:
  std::string_view name() const override { return "cpu_flash"; }
  std::string_view summary() const override {
    return "CPU twin of the FlashAttention-2 forward pass (online softmax, P in the input dtype)";
  }
  std::string capabilities() const override { return flash_capabilities(); }
  ExecutionSite site() const override { return ExecutionSite::host; }
  std::span<const PlantedBug> plants() const override { return kCpuFlashPlants; }

  SupportVerdict supports(const AttentionProblem& problem) const override {
    if (find_tile_config(problem.head_dim) == nullptr) {
      return SupportVerdict::no(no_tile_config_reason(name(), problem.head_dim));
    }
    return SupportVerdict::yes();
  }

  void forward(const AttentionProblem& problem, const AttentionTensors& tensors,
               PlantedBug plant) const override {
    const FlashTileConfig& tiles = *find_tile_config(problem.head_dim);
    const std::int64_t query_tiles = plant == PlantedBug::partial_last_query_tile_unwritten
                                         ? problem.seq_len_q / tiles.block_m
                                         : (problem.seq_len_q + tiles.block_m - 1) / tiles.block_m;
    const std::int64_t items = problem.batch * problem.heads * query_tiles;
    parallel_for(items, [&](std::int64_t item) {
      thread_local TileWorkspace workspace;
      const std::int64_t query_tile = item % query_tiles;
      const std::int64_t head = (item / query_tiles) % problem.heads;
      const std::int64_t batch = item / (query_tiles * problem.heads);
      run_query_tile(problem, tensors, plant, tiles, batch, head, query_tile, workspace);
    });
  }

 private:
  // Compiled for AVX-512, AVX2 and baseline x86-64, picked at load time. Products of fp16/bf16
  // values are exact in fp32, and the kernels library builds with -ffp-contract=off, so every
  // clone computes bit-identical results.
  ATTNFUZZ_KERNEL_CLONES
  static void run_query_tile(const AttentionProblem& problem, const AttentionTensors& tensors,
                             PlantedBug plant, const FlashTileConfig& tiles, std::int64_t batch,
                             std::int64_t head, std::int64_t query_tile, TileWorkspace& work) {
    const std::int64_t dim = problem.head_dim;
    const int block_n = tiles.block_n;
    const std::int64_t kv_head =
        plant == PlantedBug::gqa_modulo ? head % problem.kv_heads : head / problem.group_size();
    const std::span<const float> widen = widening_table(problem.dtype);
    const std::int64_t first_row = query_tile * tiles.block_m;
    const int rows =
        static_cast<int>(std::min<std::int64_t>(tiles.block_m, problem.seq_len_q - first_row));
    // How far past the causal diagonal a row may look: 0 is correct, 1 is the off-by-one plant.
    const std::int64_t causal_slack = plant == PlantedBug::causal_off_by_one ? 1 : 0;
    const std::int64_t diagonal_offset =
        (plant == PlantedBug::causal_top_left ? 0 : problem.seq_len_k - problem.seq_len_q) +
        causal_slack;
    // Where batch b starts in a tensor: its stride, or the compact size of one batch (the plant).
    const auto batch_start = [&](const TensorStrides& strides, std::int64_t seq_len,
                                 std::int64_t heads) {
      return batch *
             (plant == PlantedBug::batch_stride_unpadded ? seq_len * heads * dim : strides.batch);
    };

    work.query.assign(static_cast<std::size_t>(tiles.block_m * dim), 0.0f);
    work.key_t.assign(static_cast<std::size_t>(dim * block_n), 0.0f);
    work.value.assign(static_cast<std::size_t>(block_n * dim), 0.0f);
    work.accumulator.assign(static_cast<std::size_t>(tiles.block_m * dim), 0.0f);
    const float initial_max = plant == PlantedBug::running_max_init_zero ? 0.0f : kNegativeInfinity;
    std::fill_n(work.row_max.begin(), rows, initial_max);
    std::fill_n(work.row_sum.begin(), rows, 0.0f);

    const std::uint16_t* q_base = tensors.q +
                                  batch_start(problem.q_strides, problem.seq_len_q, problem.heads) +
                                  head * problem.q_strides.head;
    for (int row = 0; row < rows; ++row) {
      const std::uint16_t* q_row = q_base + (first_row + row) * problem.q_strides.seq;
      for (std::int64_t d = 0; d < dim; ++d) work.query[row * dim + d] = widen[q_row[d]];
    }

    // Key tiles this query tile needs: all of them, or up to the diagonal of its last row.
    std::int64_t keys_needed = problem.seq_len_k;
    if (problem.causal) {
      keys_needed = std::clamp<std::int64_t>(first_row + rows - 1 + diagonal_offset + 1, 0,
                                             problem.seq_len_k);
    }
    std::int64_t key_tiles = (keys_needed + block_n - 1) / block_n;
    if (plant == PlantedBug::drop_last_key_tile) key_tiles = keys_needed / block_n;
    // Keys the tiles mask at: seq_len_k, or every row of the last tile (the plant).
    const std::int64_t key_end =
        plant == PlantedBug::read_past_seq_len_k ? key_tiles * block_n : problem.seq_len_k;

    const std::uint16_t* k_base =
        tensors.k + batch_start(problem.k_strides, problem.seq_len_k, problem.kv_heads) +
        kv_head * problem.k_strides.head;
    const std::uint16_t* v_base =
        tensors.v + batch_start(problem.v_strides, problem.seq_len_k, problem.kv_heads) +
        kv_head * problem.v_strides.head;
    for (std::int64_t key_tile = 0; key_tile < key_tiles; ++key_tile) {
      const std::int64_t first_key = key_tile * block_n;
      const int cols = static_cast<int>(std::min<std::int64_t>(block_n, key_end - first_key));
      // Stage the K tile (transposed) and V tile in fp32; columns past `cols` stay zero.
      for (int col = 0; col < block_n; ++col) {
        const bool inside = col < cols;
        const std::uint16_t* k_row = k_base + (first_key + col) * problem.k_strides.seq;
        const std::uint16_t* v_row = v_base + (first_key + col) * problem.v_strides.seq;
        for (std::int64_t d = 0; d < dim; ++d) {
          work.key_t[d * block_n + col] = inside ? widen[k_row[d]] : 0.0f;
          work.value[col * dim + d] = inside ? widen[v_row[d]] : 0.0f;
        }
      }

      for (int row = 0; row < rows; ++row) {
        float* scores = work.scores.data();
        std::fill_n(scores, block_n, 0.0f);
        const float* q_row = &work.query[row * dim];
        for (std::int64_t d = 0; d < dim; ++d) {
          const float q_value = q_row[d];
          const float* k_column = &work.key_t[d * block_n];
          for (int col = 0; col < block_n; ++col) scores[col] += q_value * k_column[col];
        }

        const std::int64_t last_key =
            problem.causal ? first_row + row + diagonal_offset : key_end - 1;
        const float scale = plant == PlantedBug::scale_hardcoded_64
                                ? 0.125f
                                : static_cast<float>(problem.softmax_scale);
        float tile_max = kNegativeInfinity;
        for (int col = 0; col < block_n; ++col) {
          const bool visible = col < cols && first_key + col <= last_key;
          scores[col] = visible ? scores[col] * scale : kNegativeInfinity;
          tile_max = std::max(tile_max, scores[col]);
        }

        const float old_max = work.row_max[row];
        const float new_max =
            plant == PlantedBug::no_max_subtraction ? 0.0f : std::max(old_max, tile_max);
        // A row that has seen only masked keys keeps max -inf; exponentiate against 0 instead so
        // that exp(-inf - -inf) never makes a NaN (FlashAttention's Check_inf).
        const float safe_max = new_max == kNegativeInfinity ? 0.0f : new_max;
        const float correction = std::exp(old_max - safe_max);
        work.row_max[row] = new_max;

        float tile_sum = 0.0f;
        for (int col = 0; col < block_n; ++col) {
          scores[col] = std::exp(scores[col] - safe_max);
          tile_sum += scores[col];
        }
        round_to_dtype_in_place(scores, block_n, problem.dtype);
        // The stale_row_sum plant adds the last tile's sum only after the final division.
        if (plant != PlantedBug::stale_row_sum || key_tile + 1 < key_tiles) {
          work.row_sum[row] = work.row_sum[row] * correction + tile_sum;
        }

        float* accumulator = &work.accumulator[row * dim];
        if (plant != PlantedBug::skip_rescale) {
          for (std::int64_t d = 0; d < dim; ++d) accumulator[d] *= correction;
        }
        for (int col = 0; col < cols; ++col) {
          const float probability = scores[col];
          const float* v_row = &work.value[col * dim];
          for (std::int64_t d = 0; d < dim; ++d) accumulator[d] += probability * v_row[d];
        }
        if (plant == PlantedBug::pv_fp16_accumulation) {
          for (std::int64_t d = 0; d < dim; ++d) {
            accumulator[d] = round_to_dtype(accumulator[d], problem.dtype);
          }
        }
      }
    }

    std::uint16_t* o_base = tensors.o +
                            batch_start(problem.o_strides, problem.seq_len_q, problem.heads) +
                            head * problem.o_strides.head;
    for (int row = 0; row < rows; ++row) {
      const float row_sum = work.row_sum[row];
      const bool saw_no_key = !(row_sum > 0.0f);
      const float inverse = 1.0f / row_sum;
      std::uint16_t* o_row = o_base + (first_row + row) * problem.o_strides.seq;
      for (std::int64_t d = 0; d < dim; ++d) {
        float value = work.accumulator[row * dim + d] * inverse;
        if (saw_no_key && plant != PlantedBug::masked_row_nan) value = 0.0f;
        o_row[d] = float_to_dtype(value, problem.dtype);
      }
    }
  }
};

}  // namespace

const AttentionKernel& cpu_flash_kernel() {
  static const CpuFlashKernel kernel;
  return kernel;
}

}  // namespace attnfuzz
