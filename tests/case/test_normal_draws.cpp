// SPDX-License-Identifier: BSD-3-Clause
// The bulk normal draws (case/normal_draws.h) are the stream's one-by-one draws, bit for bit, by
// every loop this CPU runs, whatever the run's start and length: vector bodies, their remainders,
// and indices that wrap.
#include "case/normal_draws.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/splitmix.h"

namespace attnfuzz {
namespace {

TEST(NormalDraws, EveryValueOfARunIsTheStreamsOwnNormalDrawBitForBit) {
  std::uint64_t state = 17;
  for (int run = 0; run < 400; ++run) {
    const InputStream stream{splitmix64_step(state++)};
    // Starts anywhere, near 0 and near 2^64 (first + i wraps as the one-by-one index does).
    const std::uint64_t first = run % 4 == 0   ? static_cast<std::uint64_t>(run)
                                : run % 4 == 1 ? ~std::uint64_t{0} - 20
                                               : splitmix64_step(state++);
    std::vector<double> values(static_cast<std::size_t>(run % 131));  // 0 to 130 long
    for (const NormalsLoop& loop : normals_loops_this_cpu_runs()) {
      std::fill(values.begin(), values.end(), std::nan(""));  // so that a skipped write shows
      loop.draw(stream, first, values);
      for (std::size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(std::bit_cast<std::uint64_t>(values[i]),
                  std::bit_cast<std::uint64_t>(stream.normal(first + i)))
            << loop.instruction_set << ": run " << run << " first " << first << " element " << i;
      }
    }
    std::fill(values.begin(), values.end(), std::nan(""));
    draw_normals(stream, first, values);  // the fastest of them
    for (std::size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint64_t>(values[i]),
                std::bit_cast<std::uint64_t>(stream.normal(first + i)));
    }
  }
}

}  // namespace
}  // namespace attnfuzz
