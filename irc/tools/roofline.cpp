#include <cstdint>
#include <cstdlib>
#ifdef _OPENMP
#include <omp.h>
#endif
// IRC_LANES may be defined ahead of this file (irc/tools/roofline.py: a Target's vector width).
#ifndef IRC_LANES
#ifdef __AVX512F__
#define IRC_LANES 16
#else
#define IRC_LANES 8
#endif
#endif
typedef float vf __attribute__((vector_size(IRC_LANES * 4)));

extern "C" int irc_peak_lanes() { return IRC_LANES; }

// 12 independent FMA chains of IRC_LANES lanes per thread: 2 * IRC_LANES * 12 FLOPs per iteration.
extern "C" float irc_peak(int64_t iters, int threads) {
  float total = 0;
  #pragma omp parallel num_threads(threads) reduction(+:total)
  {
    vf a[12];
    for (int i = 0; i < 12; ++i) a[i] = (vf){} + 1.0f + i * 1e-3f;
    const vf x = (vf){} + 0.999999f, y = (vf){} + 1e-7f;
    for (int64_t n = 0; n < iters; ++n)
      for (int i = 0; i < 12; ++i) a[i] = a[i] * x + y;
    for (int i = 0; i < 12; ++i) for (int l = 0; l < IRC_LANES; ++l) total += a[i][l];
  }
  return total;
}

extern "C" float irc_stream(const float* __restrict__ p, int64_t n, int threads) {
  float total = 0;
  #pragma omp parallel for simd num_threads(threads) reduction(+:total) schedule(static)
  for (int64_t i = 0; i < n; ++i) total += p[i];
  return total;
}
