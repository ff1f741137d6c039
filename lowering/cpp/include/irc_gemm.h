// ---- irc GEMM engine (lowering/cpp/include/irc_gemm.h; needs irc_math.h) -----------------
typedef float irc_v8f __attribute__((vector_size(32)));
// IRC_NR (16 or 32) and IRC_MR (the register tile's rows, <= 14) are defined by the emitter: the
// panel width and height the IR was packed for (the Target's gemm_width and gemm_rows).
#ifndef IRC_MR
#define IRC_MR 6
#endif
#define IRC_L (IRC_NR / 2)  // floats per vector: the tile row is two vectors
typedef float irc_vf __attribute__((vector_size(IRC_L * 4)));

static inline irc_vf irc_fmav(irc_vf a, irc_vf b, irc_vf c) {
#if IRC_L == 16 && defined(__AVX512F__)
  return __builtin_ia32_vfmaddps512_mask(a, b, c, (unsigned short)-1, 4);
#elif IRC_L == 8 && defined(__FMA__)
  return __builtin_ia32_vfmaddps256(a, b, c);
#else
  return a * b + c;
#endif
}
static inline irc_v8f irc_bcast8(float x) { return irc_v8f{x, x, x, x, x, x, x, x}; }
static inline irc_vf irc_bcastv(float x) {
#if IRC_L == 16
  return irc_vf{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#else
  return irc_vf{x, x, x, x, x, x, x, x};
#endif
}
static inline irc_v8f irc_load8(const float* p) { irc_v8f v; __builtin_memcpy(&v, p, 32); return v; }
static inline void irc_store8(float* p, irc_v8f v) { __builtin_memcpy(p, &v, 32); }
static inline irc_vf irc_loadv(const float* p) { irc_vf v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void irc_storev(float* p, irc_vf v) { __builtin_memcpy(p, &v, sizeof v); }

// Epilogue operand access, for V = float (ragged edges) or irc_v8f (8 columns).
template <class V> static inline V irc_splat(float x);
template <> inline float irc_splat<float>(float x) { return x; }
template <> inline irc_v8f irc_splat<irc_v8f>(float x) { return irc_bcast8(x); }
template <class V> static inline V irc_ld(const float* p);
template <> inline float irc_ld<float>(const float* p) { return *p; }
template <> inline irc_v8f irc_ld<irc_v8f>(const float* p) { return irc_load8(p); }
template <class V> static inline V irc_gather(const float* p, int64_t stride);
template <> inline float irc_gather<float>(const float* p, int64_t) { return *p; }
template <> inline irc_v8f irc_gather<irc_v8f>(const float* p, int64_t s) {
  return irc_v8f{p[0], p[s], p[2 * s], p[3 * s], p[4 * s], p[5 * s], p[6 * s], p[7 * s]};
}

struct irc_panels { const float* p; int64_t stride; };  // panel q starts at p + q*stride

static float* irc_scratch(int slot, int64_t n) {  // slots: 0 packed A, 1 packed B, 2 attention scores
  static thread_local struct Slots {
    float* p[3] = {nullptr, nullptr, nullptr};
    int64_t n[3] = {0, 0, 0};
    ~Slots() { std::free(p[0]); std::free(p[1]); std::free(p[2]); }
  } s;
  if (s.n[slot] < n) {
    std::free(s.p[slot]);
    s.p[slot] = static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64));
    s.n[slot] = n;
  }
  return s.p[slot];
}

// Panels packed at compile time (irt.pack): [panels][K][R].
template <int R> struct irc_prepacked {
  const float* p; int64_t K;
  irc_prepacked at(int64_t offset) const { return {p + offset, K}; }  // a batched product's n-th operand
  irc_panels get(int, int64_t i0, int64_t, int64_t p0, int64_t) const { return {p + (i0 / R) * K * R + p0 * R, K * R}; }
};

// A row-major matrix packed into R-wide panels on the fly. !cols: panels of R rows of x[rows][ld]
// (A, or an nn.Linear-layout B); cols: panels of R columns of x[K][ld] (a [K, N] B).
template <int R, bool cols> struct irc_dense {
  const float* x; int64_t ld; int64_t extent;
  irc_dense at(int64_t offset) const { return {x + offset, ld, extent}; }  // a batched product's n-th operand
  irc_panels get(int slot, int64_t i0, int64_t n, int64_t p0, int64_t kc) const {
    float* buf = irc_scratch(slot, (n + R - 1) / R * R * kc);
    for (int64_t q = 0; q * R < n; ++q) {
      float* dst = buf + q * kc * R;
      const int64_t w = n - q * R < R ? n - q * R : R;
      if (!cols) {
        for (int64_t r = 0; r < w; ++r) {
          const float* src = x + (i0 + q * R + r) * ld + p0;
          for (int64_t k = 0; k < kc; ++k) dst[k * R + r] = src[k];
        }
        for (int64_t r = w; r < R; ++r)
          for (int64_t k = 0; k < kc; ++k) dst[k * R + r] = 0.0f;
      } else {
        for (int64_t k = 0; k < kc; ++k) {
          const float* src = x + (p0 + k) * ld + i0 + q * R;
          for (int64_t r = 0; r < R; ++r) dst[k * R + r] = r < w ? src[r] : 0.0f;
        }
      }
    }
    return {buf, kc * R};
  }
};

// The im2col matrix of one NCHW image (C channels): B[(c, kh, kw)][(oh, ow)], packed into
// IRC_NR-column panels; padded taps read as 0. A panel's columns are cut into runs on one output
// row. The walk is tap-major: for each kernel tap (kh, kw) the runs' clamped column ranges and
// source offsets are worked out once (the divisions), then every channel's row of that tap is a
// plain (strided) row copy.
struct irc_im2col {
  const float* x; int64_t C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OW;
  irc_panels get(int slot, int64_t j0, int64_t n, int64_t p0, int64_t kc) const {
    float* buf = irc_scratch(slot, (n + IRC_NR - 1) / IRC_NR * IRC_NR * kc);
    const int64_t taps = KH * KW, HW = H * W;
    const int64_t c_first = p0 / taps, t_first = p0 % taps, c_end = (p0 + kc) / taps, t_end = (p0 + kc) % taps;
    for (int64_t q = 0; q * IRC_NR < n; ++q) {
      float* dst = buf + q * kc * IRC_NR;
      const int64_t w = n - q * IRC_NR < IRC_NR ? n - q * IRC_NR : IRC_NR;
      int64_t run_r[IRC_NR + 1], run_oh[IRC_NR], run_ow[IRC_NR], runs = 0;
      for (int64_t r = 0; r < w;) {
        const int64_t p = j0 + q * IRC_NR + r, oh = p / OW, ow = p % OW;
        run_r[runs] = r; run_oh[runs] = oh; run_ow[runs] = ow; ++runs;
        r += OW - ow < w - r ? OW - ow : w - r;
      }
      run_r[runs] = w;
      for (int64_t t = 0, kh = 0, kw = 0; t < taps; ++t, kw = kw + 1 == KW ? 0 : kw + 1, kh += kw == 0) {
        // the channels whose row k = c*taps + t falls in [p0, p0 + kc) (no division: it is slow
        // next to a small conv's copies)
        const int64_t c_lo = c_first + (t < t_first), c_hi = c_end + (t < t_end);
        if (c_lo >= c_hi) continue;
        int64_t off[IRC_NR], lo[IRC_NR], hi[IRC_NR];  // per run: source offset in a channel, copied [lo, hi)
        for (int64_t u = 0; u < runs; ++u) {
          const int64_t len = run_r[u + 1] - run_r[u], ih = run_oh[u] * SH - PH + kh * DH;
          const int64_t iw0 = run_ow[u] * SW - PW + kw * DW;
          int64_t a, b;
          if (SW == 1) { a = iw0 >= 0 ? 0 : -iw0; b = W - iw0; }
          else { a = iw0 >= 0 ? 0 : (-iw0 + SW - 1) / SW; b = iw0 >= W ? 0 : (W - iw0 + SW - 1) / SW; }
          if (ih < 0 || ih >= H) a = b = 0;
          a = a < len ? a : len;
          b = b < len ? b : len;
          lo[u] = a; hi[u] = b > a ? b : a; off[u] = ih * W + iw0;
        }
        for (int64_t c = c_lo; c < c_hi; ++c) {
          float* d = dst + (c * taps + t - p0) * IRC_NR;
          const float* xc = x + c * HW;
          for (int64_t u = 0; u < runs; ++u) {
            float* dr = d + run_r[u];
            const int64_t len = run_r[u + 1] - run_r[u];
            const float* src = xc + off[u];
            for (int64_t e = 0; e < lo[u]; ++e) dr[e] = 0.0f;
            if (SW == 1) { for (int64_t e = lo[u]; e < hi[u]; ++e) dr[e] = src[e]; }
            else { for (int64_t e = lo[u]; e < hi[u]; ++e) dr[e] = src[e * SW]; }
            for (int64_t e = hi[u]; e < len; ++e) dr[e] = 0.0f;
          }
          for (int64_t e = w; e < IRC_NR; ++e) d[e] = 0.0f;
        }
      }
    }
    return {buf, kc * IRC_NR};
  }
};

// The register tile, K loop: ROWS (<= IRC_MR) x IRC_NR accumulated over kc in 2*ROWS vectors. It
// does not depend on the epilogue, so a translation unit compiles it once per row count, not
// once per GEMM (noinline: compile time).
template <int ROWS>
__attribute__((noinline)) static void irc_accumulate(int64_t kc, const float* __restrict__ a,
                                                      const float* __restrict__ b, irc_vf (*acc)[2]) {
  // U independent partial sums per accumulator, so that even one row keeps 8 FMA chains in
  // flight (FMA latency 4 x 2 ports); summed at the end.
  constexpr int U = ROWS >= 4 ? 1 : ROWS == 3 ? 2 : 4 / ROWS;
  irc_vf part[U][ROWS][2];
  for (int u = 0; u < U; ++u)
    for (int r = 0; r < ROWS; ++r) part[u][r][0] = part[u][r][1] = irc_vf{};
  int64_t k = 0;
#pragma GCC unroll 4
  for (; k + U <= kc; k += U)
    for (int u = 0; u < U; ++u) {
      const irc_vf b0 = irc_loadv(b + (k + u) * IRC_NR), b1 = irc_loadv(b + (k + u) * IRC_NR + IRC_L);
      for (int r = 0; r < ROWS; ++r) {
        const irc_vf ar = irc_bcastv(a[(k + u) * IRC_MR + r]);
        part[u][r][0] = irc_fmav(ar, b0, part[u][r][0]);
        part[u][r][1] = irc_fmav(ar, b1, part[u][r][1]);
      }
    }
  for (; k < kc; ++k) {
    const irc_vf b0 = irc_loadv(b + k * IRC_NR), b1 = irc_loadv(b + k * IRC_NR + IRC_L);
    for (int r = 0; r < ROWS; ++r) {
      const irc_vf ar = irc_bcastv(a[k * IRC_MR + r]);
      part[0][r][0] = irc_fmav(ar, b0, part[0][r][0]);
      part[0][r][1] = irc_fmav(ar, b1, part[0][r][1]);
    }
  }
  for (int r = 0; r < ROWS; ++r) {
    acc[r][0] = part[0][r][0];
    acc[r][1] = part[0][r][1];
    for (int u = 1; u < U; ++u) { acc[r][0] += part[u][r][0]; acc[r][1] += part[u][r][1]; }
  }
}

// irc_accumulate<rows> for a run-time `rows` in [1, R] (rows < IRC_MR only on a ragged bottom edge).
template <int R>
static inline void irc_accumulate_rows(int64_t rows, int64_t kc, const float* __restrict__ a,
                                       const float* __restrict__ b, irc_vf (*acc)[2]) {
  if constexpr (R > 1)
    if (rows < R) return irc_accumulate_rows<R - 1>(rows, kc, a, b, acc);
  irc_accumulate<R>(kc, a, b, acc);
}

// One register tile of `rows` x `cols`: the K loop, then (on the last K step) the epilogue on
// the accumulators before the tile's one store.
template <class Epi>
static inline void irc_tile(int64_t rows, int64_t kc, const float* __restrict__ a, const float* __restrict__ b,
                            float* __restrict__ c, int64_t ldc, int64_t cols, bool first, bool last,
                            const Epi& epi, int64_t i0, int64_t j0) {
  irc_vf acc[IRC_MR][2];
  for (int64_t r = 0; r < rows; ++r) __builtin_prefetch(c + r * ldc, 1);
  irc_accumulate_rows<IRC_MR>(rows, kc, a, b, acc);
  if (cols == IRC_NR) {
    for (int64_t r = 0; r < rows; ++r) {
      float* cr = c + r * ldc;
      irc_vf v[2] = {acc[r][0], acc[r][1]};
      if (!first) { v[0] += irc_loadv(cr); v[1] += irc_loadv(cr + IRC_L); }
      if (last) {  // the epilogue runs on 8-float pieces of the row, still in registers
        irc_v8f h[IRC_NR / 8];
        __builtin_memcpy(h, v, sizeof h);
        for (int q = 0; q < IRC_NR / 8; ++q) irc_store8(cr + 8 * q, epi(h[q], i0 + r, j0 + 8 * q));
      } else {
        irc_storev(cr, v[0]);
        irc_storev(cr + IRC_L, v[1]);
      }
    }
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      float t[IRC_NR];
      irc_storev(t, acc[r][0]);
      irc_storev(t + IRC_L, acc[r][1]);
      float* cr = c + r * ldc;
      for (int64_t q = 0; q < cols; ++q) {
        const float v = first ? t[q] : t[q] + cr[q];
        cr[q] = last ? epi(v, i0 + r, j0 + q) : v;
      }
    }
  }
}

// One task: C rows [i0, i0+ms) x columns [j0, j0+nc), all of K in KC steps. K = 0 (a size
// known only at call time) sums nothing: each element is the epilogue of 0.
template <class PA, class PB, class Epi>
static inline void irc_gemm_task(int64_t K, const PA& pa, const PB& pb, float* c, int64_t ldc, const Epi& epi,
                                 int64_t i0, int64_t ms, int64_t j0, int64_t nc, int64_t MC, int64_t KC) {
  if (K <= 0) {
    for (int64_t i = i0; i < i0 + ms; ++i)
      for (int64_t j = j0; j < j0 + nc; ++j) c[i * ldc + j] = epi(0.0f, i, j);
    return;
  }
  for (int64_t p0 = 0; p0 < K; p0 += KC) {
    const int64_t kc = K - p0 < KC ? K - p0 : KC;
    const irc_panels B = pb.get(1, j0, nc, p0, kc);
    for (int64_t ic = i0; ic < i0 + ms; ic += MC) {
      const int64_t mc = i0 + ms - ic < MC ? i0 + ms - ic : MC;
      const irc_panels A = pa.get(0, ic, mc, p0, kc);
      for (int64_t jr = 0; jr < nc; jr += IRC_NR)
        for (int64_t ir = 0; ir < mc; ir += IRC_MR)
          irc_tile(mc - ir < IRC_MR ? mc - ir : IRC_MR, kc, A.p + (ir / IRC_MR) * A.stride,
                        B.p + (jr / IRC_NR) * B.stride, c + (ic + ir) * ldc + j0 + jr, ldc,
                        nc - jr < IRC_NR ? nc - jr : IRC_NR, p0 == 0, p0 + kc >= K, epi, ic + ir, j0 + jr);
    }
  }
}

// The product as tasks of MS rows x NC columns, shared among OpenMP threads when `parallel`.
// Rows are split only to share the work: on one thread the task takes all M rows, so the B
// panels (an im2col matrix, say) are packed once rather than once per row task. Sizes known
// only at call time may be 0 (no task for M or N = 0; see irc_gemm_task for K); the tiles are
// then >= 1 all the same (lowering/to_loops/gemm.py clamps them).
template <class PA, class PB, class Epi>
static void irc_gemm(int64_t M, int64_t N, int64_t K, const PA& pa, const PB& pb, float* c, int64_t ldc,
                     const Epi& epi, int64_t MC, int64_t NC, int64_t KC, int64_t MS, bool parallel) {
  if (M <= 0 || N <= 0) return;
#ifdef _OPENMP
  if (!parallel || omp_get_max_threads() == 1) MS = M;
#else
  MS = M;
#endif
  const int64_t mb = (M + MS - 1) / MS, nb = (N + NC - 1) / NC;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t bj = 0; bj < nb; ++bj)
    for (int64_t bi = 0; bi < mb; ++bi) {
      const int64_t i0 = bi * MS, j0 = bj * NC;
      irc_gemm_task(K, pa, pb, c, ldc, epi, i0, M - i0 < MS ? M - i0 : MS, j0, N - j0 < NC ? N - j0 : NC, MC, KC);
    }
}

// `batch` products, the n-th reading A, B and C sa, sb, sc elements further on (0: shared): the
// tasks of all of them (batch x column blocks x row blocks) shared among the threads. The
// epilogue takes the batch entry: epi(acc, n, i, j).
template <class PA, class PB, class Epi>
static void irc_gemm_batched(int64_t batch, int64_t sa, int64_t sb, int64_t sc, int64_t M, int64_t N, int64_t K,
                             const PA& pa, const PB& pb, float* c, int64_t ldc, const Epi& epi, int64_t MC, int64_t NC,
                             int64_t KC, int64_t MS, bool parallel) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
#ifdef _OPENMP
  if (!parallel || omp_get_max_threads() == 1) MS = M;
#else
  MS = M;
#endif
  const int64_t mb = (M + MS - 1) / MS, nb = (N + NC - 1) / NC;
#pragma omp parallel for collapse(3) schedule(static) if (parallel)
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t bj = 0; bj < nb; ++bj)
      for (int64_t bi = 0; bi < mb; ++bi) {
        const int64_t i0 = bi * MS, j0 = bj * NC;
        const auto en = [&](auto acc, int64_t i, int64_t j) { return epi(acc, n, i, j); };
        irc_gemm_task(K, pa.at(n * sa), pb.at(n * sb), c + n * sc, ldc, en, i0, M - i0 < MS ? M - i0 : MS, j0,
                      N - j0 < NC ? N - j0 : NC, MC, KC);
      }
}

// ---- attention on the engine: per (head, block of queries) two GEMMs around a row softmax ----
template <class V> static inline V irc_causal(V x, int64_t row, int64_t j);
template <> inline float irc_causal<float>(float x, int64_t row, int64_t j) { return j > row ? -__builtin_inff() : x; }
template <> inline irc_v8f irc_causal<irc_v8f>(irc_v8f x, int64_t row, int64_t j) {
  typedef int32_t v8i __attribute__((vector_size(32)));
  const v8i after = v8i{0, 1, 2, 3, 4, 5, 6, 7} + (int32_t)(j - row);
  return after > 0 ? irc_bcast8(-__builtin_inff()) : x;
}

// s[0, n) = softmax(s): max, then exp(s - max) kept in place with its sum, then a scale.
static inline void irc_softmax_row(float* s, int64_t n) {
  irc_v8f mv = irc_bcast8(-__builtin_inff());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) mv = irc_maxf(irc_load8(s + j), mv);
  float mx = -__builtin_inff();
  for (int q = 0; q < 8; ++q) mx = irc_maxf(mv[q], mx);
  for (; j < n; ++j) mx = irc_maxf(s[j], mx);
  irc_v8f sv = irc_v8f{};
  const irc_v8f m8 = irc_bcast8(mx);
  for (j = 0; j + 8 <= n; j += 8) {
    const irc_v8f p = irc_exp(irc_load8(s + j) - m8);
    irc_store8(s + j, p);
    sv += p;
  }
  float sum = 0.0f;
  for (int q = 0; q < 8; ++q) sum += sv[q];
  for (; j < n; ++j) { s[j] = irc_exp(s[j] - mx); sum += s[j]; }
  const float inv = 1.0f / sum;
  for (j = 0; j < n; ++j) s[j] *= inv;
}

static inline int64_t irc_k_step(int64_t k) { return (k + (k + 319) / 320 - 1) / ((k + 319) / 320); }

// q [batch][lq][e], k [batch][lk][e], v [batch][lk][ev] -> o [batch][lq][ev].
// score(acc, b, row, j): the scaled, masked score from the dot product `acc` (V = float or 8 lanes).
template <class Score>
static void irc_attention(int64_t batch, int64_t lq, int64_t lk, int64_t e, int64_t ev, const float* q, const float* k,
                          const float* v, float* o, const Score& score, int64_t rows, bool parallel) {
  const int64_t blocks = (lq + rows - 1) / rows;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t q0 = blk * rows, m = lq - q0 < rows ? lq - q0 : rows;
      float* s = irc_scratch(2, rows * lk);
      const irc_dense<IRC_MR, false> qa{q + (b * lq + q0) * e, e, m};
      const irc_dense<IRC_NR, false> kb{k + b * lk * e, e, lk};
      const auto epi = [&](auto acc, int64_t i, int64_t j) { return score(acc, b, q0 + i, j); };
      irc_gemm_task(e, qa, kb, s, lk, epi, 0, m, 0, lk, rows, irc_k_step(e));
      for (int64_t i = 0; i < m; ++i) irc_softmax_row(s + i * lk, lk);
      const irc_dense<IRC_MR, false> pa{s, lk, m};
      const irc_dense<IRC_NR, true> vb{v + b * lk * ev, ev, ev};
      const auto same = [](auto acc, int64_t, int64_t) { return acc; };
      irc_gemm_task(lk, pa, vb, o + (b * lq + q0) * ev, ev, same, 0, m, 0, ev, rows, irc_k_step(lk));
    }
}
// ---- end of the GEMM engine ----------------------------------------------------------------
