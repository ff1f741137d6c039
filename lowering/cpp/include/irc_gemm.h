// ---- irc GEMM engine (lowering/cpp/include/irc_gemm.h; needs irc_math.h) -----------------
// IRC_NR (16 or 32) and IRC_MR (the register tile's rows, <= 14) are defined by the emitter: the
// panel width and height the IR was packed for (the Target's gemm_width and gemm_rows; IRC_MR is
// the convolutions' tile height, their weights packed in IRC_MR-row panels). IRC_MMR: the register
// tile's rows for matrix products (linear layers, matmuls, attention), whose lhs is read in place
// (the Target's matmul_rows): a lhs type's tile height is its `tile_rows` (irc_gemm_task).
#ifndef IRC_MR
#define IRC_MR 6
#endif
#ifndef IRC_MMR
#define IRC_MMR IRC_MR
#endif
#define IRC_L (IRC_NR / 2)  // floats per vector: the tile row is two vectors
#ifndef IRC_PF_K
#define IRC_PF_K 64  // how many K steps ahead the first reader of a weights panel prefetches
#endif
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
static inline irc_vf irc_bcastv(float x) {
#if IRC_L == 16
  return irc_vf{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#else
  return irc_vf{x, x, x, x, x, x, x, x};
#endif
}
static inline irc_vf irc_loadv(const float* p) { irc_vf v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void irc_storev(float* p, irc_vf v) { __builtin_memcpy(p, &v, sizeof v); }

// Epilogue operand access, for V = float (ragged edges) or irc_vec (IRC_VL columns).
template <class V> static inline V irc_splat(float x);
template <> inline float irc_splat<float>(float x) { return x; }
template <> inline irc_vec irc_splat<irc_vec>(float x) { return irc_vsplat(x); }
template <class V> static inline V irc_ld(const float* p);
template <> inline float irc_ld<float>(const float* p) { return *p; }
template <> inline irc_vec irc_ld<irc_vec>(const float* p) { return irc_vload(p); }
template <class V> static inline V irc_gather(const float* p, int64_t stride);
template <> inline float irc_gather<float>(const float* p, int64_t) { return *p; }
template <> inline irc_vec irc_gather<irc_vec>(const float* p, int64_t s) {
  irc_vec v;
  for (int q = 0; q < IRC_VL; ++q) v[q] = p[q * s];
  return v;
}

struct irc_panels { const float* p; int64_t stride; };  // panel q starts at p + q*stride

// slots: 0 packed A, 1 packed B, 2 attention scores, 3 a padded image, 4 attention keys
static float* irc_scratch(int slot, int64_t n) {
  static thread_local struct Slots {
    float* p[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
    int64_t n[5] = {0, 0, 0, 0, 0};
    ~Slots() { for (float* q : p) std::free(q); }
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
  static constexpr int tile_rows = R;  // as the lhs: its panels' height, the register tile's rows
  static constexpr bool rows_in_place = false;
  static constexpr bool in_memory = true;  // not packed just now: its first reader prefetches it
  const float* p; int64_t K;
  irc_prepacked at(int64_t offset) const { return {p + offset, K}; }  // a batched product's n-th operand
  irc_panels get(int, int64_t i0, int64_t, int64_t p0, int64_t) const { return {p + (i0 / R) * K * R + p0 * R, K * R}; }
};

// A row-major matrix packed into R-wide panels on the fly. !cols: panels of R rows of x[rows][ld]
// (A, or an nn.Linear-layout B); cols: panels of R columns of x[K][ld] (a [K, N] B).
template <int R, bool cols> struct irc_dense {
  static constexpr int tile_rows = R;  // as the lhs (!cols): the register tile's rows
  const float* x; int64_t ld; int64_t extent;
  irc_dense at(int64_t offset) const { return {x + offset, ld, extent}; }  // a batched product's n-th operand
  // As the lhs (R = IRC_MMR or IRC_MR, !cols), the register tile reads the rows where they are (one
  // broadcast per row and k, a cache line per row serving 16 k): packing them is a transpose
  // that cost 5-6% of a 128 x 256 x 256 product. Also at 12 rows, though there the K loop alone
  // on a packed A runs 178-181 GFLOP/s against 160 in place (Intel Xeon, one thread, data in
  // L1): packed, mlp-medium took 1398 us against 1280 in place, transformer-encoder 1720
  // against 1443, mlp-large 136 ms against 130.
  static constexpr bool rows_in_place = !cols;
  static constexpr bool in_memory = false;  // packed into scratch just before use
  irc_panels rows(int64_t i0, int64_t p0) const { return {x + i0 * ld + p0, R * ld}; }
  irc_panels get(int slot, int64_t i0, int64_t n, int64_t p0, int64_t kc) const {
    float* buf = irc_scratch(slot, (n + R - 1) / R * R * kc);
    pack(buf, i0, n, p0, kc);
    return {buf, kc * R};
  }
  // Rows or columns [i0, i0 + n) x [p0, p0 + kc) as ceil(n / R) panels of kc x R at buf.
  void pack(float* buf, int64_t i0, int64_t n, int64_t p0, int64_t kc) const {
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
  }
};

// The im2col matrix of one NCHW image (C channels): B[(c, kh, kw)][(oh, ow)], packed into
// IRC_NR-column panels; padded taps read as 0. A panel's columns are cut into runs on one output
// row. The walk is tap-major: for each kernel tap (kh, kw) the runs' clamped column ranges and
// source offsets are worked out once (the divisions), then every channel's row of that tap is a
// plain (strided) row copy.
struct irc_im2col {
  static constexpr bool in_memory = false;  // packed into scratch just before use
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

// The register tile, K loop: ROWS x IRC_NR accumulated over kc in 2*ROWS vectors. A's element
// (k, r) is a[k*P + r] in a packed panel P rows high, a[r*lda + k] read in place (P = 0: rows of
// a row-major A). It does not depend on the epilogue, so a translation unit compiles it once per
// row count and A layout, not once per GEMM (noinline: compile time).
// PF: this tile is the first to read its B panel, compiled in with the weights (irc_prepacked):
// it runs with the panel still in memory, and prefetches the panel's rows IRC_PF_K steps ahead
// (past the panel's end, the next panel's first rows). The hardware prefetcher stops at every
// 4 KiB page (32 steps of the panel), so without this the first tile waits on memory every page.
// Measured on an Intel Xeon, one thread, weights evicted between calls (as in `irc bench`):
// 64x1024x1024 1.59 -> 1.33 ms, 1x1024x1024 0.63 -> 0.52 ms, mlp-medium 2.06 -> 1.89 ms. Tiles that
// are neither whole nor one row do not prefetch: each PF height is one more K loop to compile.
template <int ROWS, int P, bool PF = false>
__attribute__((noinline)) static void irc_accumulate(int64_t kc, const float* __restrict__ a, int64_t lda,
                                                      const float* __restrict__ b, irc_vf (*acc)[2]) {
  static_assert(P == 0 || ROWS <= P, "a tile reads at most its packed panel's rows");
  // U independent partial sums per accumulator, so that even one row keeps 8 FMA chains in
  // flight (FMA latency 4 x 2 ports); summed at the end.
  constexpr int U = ROWS >= 4 ? 1 : ROWS == 3 ? 2 : 4 / ROWS;
  const auto at = [&](int64_t k, int r) { return P == 0 ? a[r * lda + k] : a[k * P + r]; };
  irc_vf part[U][ROWS][2];
  for (int u = 0; u < U; ++u)
    for (int r = 0; r < ROWS; ++r) part[u][r][0] = part[u][r][1] = irc_vf{};
  int64_t k = 0;
#pragma GCC unroll 4
  for (; k + U <= kc; k += U)
    for (int u = 0; u < U; ++u) {
      if constexpr (PF && IRC_PF_K > 0) {
        __builtin_prefetch(b + (k + u + IRC_PF_K) * IRC_NR, 0, 3);
        if constexpr (IRC_NR * 4 > 64) __builtin_prefetch(b + (k + u + IRC_PF_K) * IRC_NR + 16, 0, 3);
      }
      const irc_vf b0 = irc_loadv(b + (k + u) * IRC_NR), b1 = irc_loadv(b + (k + u) * IRC_NR + IRC_L);
      for (int r = 0; r < ROWS; ++r) {
        const irc_vf ar = irc_bcastv(at(k + u, r));
        part[u][r][0] = irc_fmav(ar, b0, part[u][r][0]);
        part[u][r][1] = irc_fmav(ar, b1, part[u][r][1]);
      }
    }
  for (; k < kc; ++k) {
    const irc_vf b0 = irc_loadv(b + k * IRC_NR), b1 = irc_loadv(b + k * IRC_NR + IRC_L);
    for (int r = 0; r < ROWS; ++r) {
      const irc_vf ar = irc_bcastv(at(k, r));
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

// The tallest ragged tile compiled as one K loop. A tile of rows < IRC_MR (a ragged bottom edge)
// taller than this runs as IRC_RAGGED rows, then the rest the same way (another pass over its B
// panel each: 13 of 14 rows as 6 + 6 + 1), so that a 12-row tile compiles K loops for 12 and
// 1..6 rows rather than all twelve heights (each is a noinline function per A layout and per
// conv's taps: 12 heights added 0.2 s to a small MLP's cold build, 0.48 -> 0.66 s).
#define IRC_RAGGED 6

// irc_accumulate<rows, P> for a run-time `rows` in [1, R] (rows < R only on a ragged bottom edge).
template <int R, int P>
static inline void irc_accumulate_rows(int64_t rows, int64_t kc, const float* __restrict__ a, int64_t lda,
                                       const float* __restrict__ b, irc_vf (*acc)[2]) {
  if constexpr (R > IRC_RAGGED) {
    if (rows < R) {
      if (rows <= IRC_RAGGED) return irc_accumulate_rows<IRC_RAGGED, P>(rows, kc, a, lda, b, acc);
      irc_accumulate<IRC_RAGGED, P>(kc, a, lda, b, acc);  // row r of A: a[k*P + r] or a[r*lda + k]
      return irc_accumulate_rows<R - IRC_RAGGED, P>(rows - IRC_RAGGED, kc, P == 0 ? a + IRC_RAGGED * lda : a + IRC_RAGGED,
                                                    lda, b, acc + IRC_RAGGED);
    }
  } else if constexpr (R > 1) {
    if (rows < R) return irc_accumulate_rows<R - 1, P>(rows, kc, a, lda, b, acc);
  }
  irc_accumulate<R, P>(kc, a, lda, b, acc);
}

// One register tile of `rows` (<= MR) x `cols`: the K loop, then (on the last K step) the
// epilogue on the accumulators before the tile's one store. P: A's layout (irc_accumulate).
template <int MR, int P, class Epi>
static inline void irc_tile(int64_t rows, int64_t kc, const float* __restrict__ a, int64_t lda, const float* __restrict__ b,
                            float* __restrict__ c, int64_t ldc, int64_t cols, bool first, bool last,
                            const Epi& epi, int64_t i0, int64_t j0, bool pf = false) {
  irc_vf acc[MR][2];
  for (int64_t r = 0; r < rows; ++r) __builtin_prefetch(c + r * ldc, 1);
  // The first reader of a panel prefetches it when it is a whole tile or one row (a GEMV).
  if (pf && rows == MR) irc_accumulate<MR, P, true>(kc, a, lda, b, acc);
  else if (pf && rows == 1) irc_accumulate<1, P, true>(kc, a, lda, b, acc);
  else irc_accumulate_rows<MR, P>(rows, kc, a, lda, b, acc);
  if (cols == IRC_NR) {
    for (int64_t r = 0; r < rows; ++r) {
      float* cr = c + r * ldc;
      irc_vf v[2] = {acc[r][0], acc[r][1]};
      if (!first) { v[0] += irc_loadv(cr); v[1] += irc_loadv(cr + IRC_L); }
      if (last) {  // the epilogue runs on IRC_VL-float pieces of the row, still in registers
        irc_vec h[IRC_NR / IRC_VL];
        __builtin_memcpy(h, v, sizeof h);
        for (int q = 0; q < IRC_NR / IRC_VL; ++q) irc_vstore(cr + IRC_VL * q, epi(h[q], i0 + r, j0 + IRC_VL * q));
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
      constexpr bool in_place = PA::rows_in_place;
      constexpr int MR = PA::tile_rows;
      irc_panels A;
      int64_t lda = 0;
      if constexpr (in_place) A = pa.rows(ic, p0), lda = pa.ld;
      else A = pa.get(0, ic, mc, p0, kc);
      for (int64_t jr = 0; jr < nc; jr += IRC_NR)
        for (int64_t ir = 0; ir < mc; ir += MR)
          irc_tile<MR, in_place ? 0 : MR>(mc - ir < MR ? mc - ir : MR, kc, A.p + (ir / MR) * A.stride, lda,
                        B.p + (jr / IRC_NR) * B.stride, c + (ic + ir) * ldc + j0 + jr, ldc,
                        nc - jr < IRC_NR ? nc - jr : IRC_NR, p0 == 0, p0 + kc >= K, epi, ic + ir, j0 + jr,
                        PB::in_memory && ic == i0 && ir == 0);
    }
  }
}

// The product as tasks of MS rows x NC columns, shared among OpenMP threads when `parallel`.
// Rows are split only to share the work: on one thread the task takes all M rows, so the B
// panels (an im2col matrix, say) are packed once rather than once per row task. Sizes known
// only at call time may be 0 (no task for M or N = 0; see irc_gemm_task for K); the tiles are
// then >= 1 all the same (lowering/to_loops/gemm.py clamps them).
// Whether a product's tasks all run on the calling thread: not `parallel`, or one OpenMP thread
// (then a task takes all rows: packed B panels are not packed again per row block).
static inline bool irc_one_thread(bool parallel) {
#ifdef _OPENMP
  return !parallel || omp_get_max_threads() == 1;
#else
  (void)parallel;
  return true;
#endif
}

template <class PA, class PB, class Epi>
static void irc_gemm(int64_t M, int64_t N, int64_t K, const PA& pa, const PB& pb, float* c, int64_t ldc,
                     const Epi& epi, int64_t MC, int64_t NC, int64_t KC, int64_t MS, bool parallel) {
  if (M <= 0 || N <= 0) return;
  if (irc_one_thread(parallel)) MS = M;
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
  if (irc_one_thread(parallel)) MS = M;
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

// ---- a convolution read in place ("direct"): B is never packed ---------------------------
// x: one image's group of C channels of H x W. Output (oh, ow) reads input row
// oh*SH - PH + kh*DH and column ow*SW - PW + kw*DW. The image is used as it is when the conv
// has stride 1 and no padding; otherwise it is first copied once (irc_conv_direct), zeros for
// the padding included, into SH x SW phase planes of Hq x Wq = ceil(Hp/SH) x ceil(Wp/SW) per
// channel (Hp = H + 2PH, Wp = W + 2PW): phase (a, b) holds padded [i*SH + a][j*SW + b] at [i][j].
// Then tap (kh, kw) of output (oh, ow) is phase ((kh*DH) % SH, (kw*DW) % SW) at
// [oh + kh*DH/SH][ow + kw*DW/SW]: on the "virtual" columns v = oh*Wq + ow (ow in [0, Wq); the
// real ones are ow < OW), row k = (c, kh, kw) of B is channel c's planes from a fixed offset
// toff[kh*KW + kw]. A tile of IRC_NR virtual columns is two vector loads per k, straight from
// the image; the virtual columns past OW in a row are computed and dropped. The columns run to
// V = (OH - 1)*Wq + OW, the last real one, and no column v < V reads past the last real
// column's taps: exactly the full tiles [v0, v0 + IRC_NR) with v0 + IRC_NR <= V read inside the
// image, so only a ragged last tile is packed (bounds checked) and goes through irc_accumulate.
// K is never split: a tile sums all of it before its one store.
struct irc_direct { const float* x; int64_t C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW; };

// What the tiles read: channel c's planes at x + c*cstride, tap t at toff[t], virtual rows of ld.
// (The pixels layout reads output pixel (oh, ow) at (oh - oh0)*vh + ow*vw: its image is not
// split in phases, see irc_padded_image, and may be a band of it from output row oh0 on, see
// irc_padded_band.)
struct irc_direct_b {
  const float* x; int64_t C, taps, cstride, ld, OH, OW, V; const int64_t* toff; int64_t vh, vw, oh0 = 0;
  const irc_direct* g = nullptr;  // the conv, where its image is padded (the pixels layout's: irc_row_taps)
};

// The register tile's K loop over all K = C x taps for virtual columns starting at x (TAPS: the
// taps per channel when fixed at compile time, 0 when only `taps` says), into part.
template <int ROWS, int TAPS>
__attribute__((always_inline)) static inline void irc_direct_k(int64_t C, int64_t taps, const int64_t* __restrict__ toff,
                                                               int64_t plane, const float* __restrict__ a,
                                                               const float* __restrict__ x, irc_vf (*part)[2]) {
  for (int r = 0; r < ROWS; ++r) part[r][0] = part[r][1] = irc_vf{};
  const int64_t nt = TAPS > 0 ? TAPS : taps;
  for (int64_t c = 0; c < C; ++c, x += plane)
#pragma GCC unroll 9
    for (int64_t t = 0; t < nt; ++t, a += IRC_MR) {
      const float* b = x + toff[t];
      const irc_vf b0 = irc_loadv(b), b1 = irc_loadv(b + IRC_L);
      for (int r = 0; r < ROWS; ++r) {
        const irc_vf ar = irc_bcastv(a[r]);
        part[r][0] = irc_fmav(ar, b0, part[r][0]);
        part[r][1] = irc_fmav(ar, b1, part[r][1]);
      }
    }
}

// irc_direct_k as a function of its own per row count, for the tiles stored through
// irc_direct_store (noinline: compiled once per row count, not once per epilogue).
template <int ROWS, int TAPS>
__attribute__((noinline)) static void irc_accumulate_direct(int64_t C, int64_t taps, const int64_t* __restrict__ toff,
                                                             int64_t plane, const float* __restrict__ a,
                                                             const float* __restrict__ x, irc_vf (*acc)[2]) {
  irc_vf part[ROWS][2];
  irc_direct_k<ROWS, TAPS>(C, taps, toff, plane, a, x, part);
  for (int r = 0; r < ROWS; ++r) { acc[r][0] = part[r][0]; acc[r][1] = part[r][1]; }
}

// (a ragged tile taller than IRC_RAGGED in pieces, as irc_accumulate_rows; row r of its weights: a[r])
template <int R, int TAPS>
static inline void irc_accumulate_direct_rows(int64_t rows, int64_t C, int64_t taps, const int64_t* toff, int64_t plane,
                                              const float* a, const float* x, irc_vf (*acc)[2]) {
  if constexpr (R > IRC_RAGGED) {
    if (rows < R) {
      if (rows <= IRC_RAGGED) return irc_accumulate_direct_rows<IRC_RAGGED, TAPS>(rows, C, taps, toff, plane, a, x, acc);
      irc_accumulate_direct<IRC_RAGGED, TAPS>(C, taps, toff, plane, a, x, acc);
      return irc_accumulate_direct_rows<R - IRC_RAGGED, TAPS>(rows - IRC_RAGGED, C, taps, toff, plane, a + IRC_RAGGED,
                                                              x, acc + IRC_RAGGED);
    }
  } else if constexpr (R > 1) {
    if (rows < R) return irc_accumulate_direct_rows<R - 1, TAPS>(rows, C, taps, toff, plane, a, x, acc);
  }
  irc_accumulate_direct<R, TAPS>(C, taps, toff, plane, a, x, acc);
}

// Where a tile of `cols` virtual columns from v0 goes in C: runs of real columns, the u-th from
// the tile's column s[u] to C's column j[u], n[u] long. Runs on consecutive output rows that are
// adjacent in C too (every virtual column real: W == OW, an unpadded 1x1 conv) are one run.
// Worked out once per column tile, for all its row tiles.
struct irc_runs {
  int64_t s[IRC_NR], j[IRC_NR], n[IRC_NR], count = 0;
  irc_runs(int64_t v0, int64_t cols, int64_t W, int64_t OW) {
    if (W == OW) {  // no dropped columns: the tile is one run, v = j
      s[0] = 0; j[0] = v0; n[0] = cols; count = 1;
      return;
    }
    int64_t oh = v0 / W, ow = v0 - oh * W;
    for (int64_t at = 0; at < cols; ++oh, ow = 0) {
      const int64_t left = W - ow < cols - at ? W - ow : cols - at;
      if (ow < OW) { s[count] = at; j[count] = oh * OW + ow; n[count] = OW - ow < left ? OW - ow : left; ++count; }
      at += left;
    }
  }
};

// Lanes [o, o + IRC_VL) of a tile row (its IRC_NR accumulators, then zeros), o in [0, IRC_NR):
// taken in registers where a tile row is two vectors of IRC_VL (a two-source permute), else
// through memory. Loaded from a copy in memory at an offset that is not a multiple of the
// vector, the window spans two stores, which the CPU cannot forward to the load: a 3 -> 32
// channel 3x3 on 56x56, most of whose tiles span two output rows, took 71 us rather than 66
// (Intel Xeon, one thread; cnn 71 -> 69 us, MobileNet-v2 863 -> 853).
static inline irc_vec irc_tile_window(const irc_vf* row, int64_t o) {
#if IRC_L == IRC_VL
  irc_veci lane;
  for (int q = 0; q < IRC_VL; ++q) lane[q] = q;
  const irc_veci at = lane + (int32_t)o;
  const irc_vec v = __builtin_shuffle(row[0], row[1], at);  // indices mod 2*IRC_VL
  return at < 2 * IRC_VL ? v : irc_vec{};
#else
  float t[IRC_NR + IRC_VL] = {};
  irc_storev(t, row[0]);
  irc_storev(t + IRC_L, row[1]);
  return irc_vload(t + o);
#endif
}

// The epilogue and store of a tile of virtual columns (its runs): each run's columns go to C
// IRC_VL floats at a time. A run's last < IRC_VL floats go through the epilogue as one vector
// too when its reads stay inside the row of ldc columns (the epilogue reads its inputs at the
// columns j..j+IRC_VL-1 of C's [rows, ldc] shape), and only the run's lanes are stored; at the
// row's end they are done one by one.
template <class Epi>
static inline void irc_direct_store(int64_t rows, irc_vf (*acc)[2], float* __restrict__ c, int64_t ldc, const Epi& epi,
                                    int64_t i0, const irc_runs& runs) {
  if (runs.count == 1 && runs.n[0] == IRC_NR) {  // a whole tile: the epilogue on the accumulators, as irc_tile's
    for (int64_t r = 0; r < rows; ++r) {
      float* cr = c + (i0 + r) * ldc + runs.j[0];
      irc_vec h[IRC_NR / IRC_VL];
      __builtin_memcpy(h, acc[r], sizeof h);
      for (int q = 0; q < IRC_NR / IRC_VL; ++q) irc_vstore(cr + IRC_VL * q, epi(h[q], i0 + r, runs.j[0] + IRC_VL * q));
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* cr = c + (i0 + r) * ldc;
    for (int64_t u = 0; u < runs.count; ++u) {
      const int64_t j = runs.j[u], n = runs.n[u], o = runs.s[u];
      int64_t e = 0;
      for (; e + IRC_VL <= n; e += IRC_VL) irc_vstore(cr + j + e, epi(irc_tile_window(acc[r], o + e), i0 + r, j + e));
      if (e < n && j + e + IRC_VL <= ldc) {  // lanes past the run are computed and never stored
        irc_vstore_n(cr + j + e, epi(irc_tile_window(acc[r], o + e), i0 + r, j + e), n - e);
        continue;
      }
      for (; e < n; ++e) cr[j + e] = epi(acc[r][(o + e) / IRC_L][(o + e) % IRC_L], i0 + r, j + e);
    }
  }
}

// A whole tile (IRC_MR rows, IRC_NR real columns in one run from C's column j0): the K loop, the
// epilogue on the accumulators still in registers and the one store, in one body. With a short K
// (a 1x1 conv of 16-32 channels) the accumulators' round trip through memory between
// irc_accumulate_direct and irc_direct_store was a quarter of the tile's time. (Tiles spanning
// output rows stay out of it: with their store in this body too, a 16 -> 96 channel 1x1 on 56x56,
// all whole tiles, went 83 -> 92 us.)
template <int TAPS, class Epi>
static inline void irc_direct_whole(int64_t C, int64_t taps, const int64_t* __restrict__ toff, int64_t plane,
                                    const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ c,
                                    int64_t ldc, const Epi& epi, int64_t i0, int64_t j0) {
  irc_vf part[IRC_MR][2];
  irc_direct_k<IRC_MR, TAPS>(C, taps, toff, plane, a, x, part);
  for (int r = 0; r < IRC_MR; ++r) {
    float* cr = c + (i0 + r) * ldc + j0;
    irc_vec h[IRC_NR / IRC_VL];
    __builtin_memcpy(h, part[r], sizeof h);
    for (int q = 0; q < IRC_NR / IRC_VL; ++q) irc_vstore(cr + IRC_VL * q, epi(h[q], i0 + r, j0 + IRC_VL * q));
  }
}

// A ragged last tile of at most IRC_L columns (b: K x IRC_L, packed): one vector per row, half
// the FMAs of a whole tile's K loop; acc[r][1] is zero. All IRC_MR rows of the weights' panel
// (a[k*IRC_MR + r]), whose rows past M are zeros. Each column sums its K products in the order a
// whole tile does, one FMA after another: the same bits whichever tile a column falls in.
__attribute__((noinline)) static void irc_accumulate_half(int64_t K, const float* __restrict__ a,
                                                          const float* __restrict__ b, irc_vf (*acc)[2]) {
  irc_vf part[IRC_MR];
  for (int r = 0; r < IRC_MR; ++r) part[r] = irc_vf{};
  for (int64_t k = 0; k < K; ++k) {
    const irc_vf bk = irc_loadv(b + k * IRC_L);
    for (int r = 0; r < IRC_MR; ++r) part[r] = irc_fmav(irc_bcastv(a[k * IRC_MR + r]), bk, part[r]);
  }
  for (int r = 0; r < IRC_MR; ++r) { acc[r][0] = part[r]; acc[r][1] = irc_vf{}; }
}

// One task: C rows [i0, i0 + ms) x virtual columns [v0, v0 + nv).
template <int TAPS, class PA, class Epi>
static void irc_direct_task(const irc_direct_b& d, const PA& pa, float* c, const Epi& epi, int64_t i0, int64_t ms,
                            int64_t v0, int64_t nv, int64_t MC) {
  const int64_t K = d.C * d.taps, ldc = d.OH * d.OW;
  for (int64_t ic = i0; ic < i0 + ms; ic += MC) {
    const int64_t mc = i0 + ms - ic < MC ? i0 + ms - ic : MC;
    const irc_panels A = pa.get(0, ic, mc, 0, K);
    // Rows of whole tiles: where the output row is a multiple of IRC_NR, the tiles start at each
    // row's first column and skip its dropped ones, so none spans two rows (a tile that does is
    // stored run by run, after a K loop of its own: cnn's 3 -> 16 channel 3x3 on 32x32, 19.3 ->
    // 14.5 us). Elsewhere the tiles run on through the virtual columns: rows cut into tiles of
    // their own (56: 32 + 24) measured no better (a 3 -> 32 channel 3x3 on 56x56: 69.5 -> 69.4 us).
    const bool by_rows = d.ld != d.OW && d.OW % IRC_NR == 0;
    for (int64_t jr = v0, cols; jr < v0 + nv; jr += cols) {
      cols = v0 + nv - jr < IRC_NR ? v0 + nv - jr : IRC_NR;
      if (by_rows) {
        const int64_t ow = jr % d.ld;
        if (ow >= d.OW) {  // the row's dropped columns
          cols = d.ld - ow;
          continue;
        }
        if (d.OW - ow < cols) cols = d.OW - ow;  // a task that starts mid-row: up to the row's end
      }
      const float* panel = nullptr;
      const bool half = jr + IRC_NR > d.V && cols <= IRC_L;  // a ragged tile of one vector's columns
      if (jr + IRC_NR > d.V) {  // the ragged last tile: packed, zeros past the last column
        const int64_t w = half ? IRC_L : IRC_NR;
        float* buf = irc_scratch(1, K * w);
        for (int64_t cc = 0; cc < d.C; ++cc)
          for (int64_t t = 0; t < d.taps; ++t) {
            const float* src = d.x + cc * d.cstride + d.toff[t] + jr;
            float* dst = buf + (cc * d.taps + t) * w;
            // whole vectors by masked loads (nothing past the last column read): element by
            // element this copy was 12% of a grouped conv's time (RegNet's 440 channels in 55
            // groups on 7x7, whose second tile of 29 columns is ragged, Zen 4, one thread)
            int64_t e = 0;
            for (; e + IRC_VL <= w; e += IRC_VL)
              irc_vstore(dst + e, irc_vload_n(src + e, cols - e <= 0 ? 0 : cols - e < IRC_VL ? cols - e : IRC_VL));
            for (; e < w; ++e) dst[e] = e < cols ? src[e] : 0.0f;
          }
        panel = buf;
      }
      const irc_runs runs(jr, cols, d.ld, d.OW);  // one run of IRC_NR columns: stored by irc_direct_whole
      const bool whole = !panel && runs.count == 1 && runs.n[0] == IRC_NR;
      for (int64_t ir = 0; ir < mc; ir += IRC_MR) {
        const int64_t rows = mc - ir < IRC_MR ? mc - ir : IRC_MR;
        const float* a = A.p + (ir / IRC_MR) * A.stride;
        if (whole && rows == IRC_MR) {
          irc_direct_whole<TAPS>(d.C, d.taps, d.toff, d.cstride, a, d.x + jr, c, ldc, epi, ic + ir, runs.j[0]);
          continue;
        }
        irc_vf acc[IRC_MR][2];
        if (half) irc_accumulate_half(K, a, panel, acc);  // every row of the panel: padded to IRC_MR
        else if (panel) irc_accumulate_rows<IRC_MR, IRC_MR>(rows, K, a, 0, panel, acc);
        else irc_accumulate_direct_rows<IRC_MR, TAPS>(rows, d.C, d.taps, d.toff, d.cstride, a, d.x + jr, acc);
        irc_direct_store(rows, acc, c, ldc, epi, ic + ir, runs);
      }
    }
  }
}

// dst[0, n) = 0, in whole vectors and a masked tail.
static inline void irc_zero_row(float* __restrict__ dst, int64_t n) {
  int64_t j = 0;
  for (; j + IRC_VL <= n; j += IRC_VL) irc_vstore(dst + j, irc_vec{});
  if (j < n) irc_vstore_n(dst + j, irc_vec{}, n - j);
}

// One row of a zero-padded image: dst[0, pw) = 0, dst[pw, pw + w) = src[0, w), dst[pw + w, wp)
// = 0 (pw + w <= wp), in whole vectors, the copy's masked tail carrying the first zeros after it;
// nothing outside src[0, w) is read. (Element by element, with a memset call per run of zeros
// and GCC's memmove per row, the copy took 12% of a 128 -> 32 channel 3x3 conv on 8x8. Scalar
// stores for the pads and an overlapping last vector, no masks, copied faster alone, but a conv
// on 16 or 32 columns ran 1-2% slower.)
static inline void irc_pad_row(float* __restrict__ dst, const float* __restrict__ src, int64_t pw, int64_t w,
                               int64_t wp) {
  irc_zero_row(dst, pw);
  int64_t i = 0;
  for (; i + IRC_VL <= w; i += IRC_VL) {
    irc_vstore(dst + pw + i, irc_vload(src + i));
    __asm__("" : : : "memory");  // not a plain copy loop, which GCC makes a memmove call per row
  }
  if (i < w) {
    const int64_t n = wp - pw - i < IRC_VL ? wp - pw - i : IRC_VL;
    irc_vstore_n(dst + pw + i, irc_vload_n(src + i, w - i), n);
    i += n;
  }
  irc_zero_row(dst + pw + i, wp - pw - i);
}

// Rows [r0, r0 + rows) of an H x W plane, zero-padded to wp columns (pw zeros on the left), into
// dst[rows][wp]; rows outside [0, H) are zeros. A block of at most IRC_PAD_BLOCK floats, or rows
// shorter than a vector: the whole block zeroed in whole vectors first, then each row's data
// copied over it with unmasked vectors (the last one overlapping the one before it), a masked
// load and store only for a row shorter than a vector. Masked stores are slow (a 512-bit one on
// a Zen 4, AVX2's vmaskmovps everywhere): one per pad, as row by row, took most of a copy of
// narrow rows. Zen 4, the copy alone, hot in cache, at 16 / 8 lanes: 128 planes of 16x16 padded
// by 1 8.9 -> 4.0 / 22.4 -> 4.0-5.8 us, 16 of 32x32 2.6 -> 1.6 / 5.5 -> 1.7, 64 of 56x56 27.1 ->
// 22.8 / 41.1 -> 21.3; 128 of 8x8 (whole block zeroed before too) 2.2 / 11.5 -> 2.3. A larger
// block goes row by row (zeroing it first wrote it twice: 3 planes of 224x224 padded by 3 16.0 ->
// 19.8 us).
#ifndef IRC_PAD_BLOCK
#define IRC_PAD_BLOCK 8192
#endif
static inline void irc_pad_rows(float* __restrict__ dst, const float* __restrict__ src, int64_t r0, int64_t rows,
                                int64_t H, int64_t W, int64_t pw, int64_t wp) {
  if (W < IRC_VL || rows * wp <= IRC_PAD_BLOCK) {
    irc_zero_row(dst, rows * wp);
    const int64_t lo = r0 < 0 ? -r0 : 0, hi = H - r0 < rows ? H - r0 : rows;
    for (int64_t i = lo; i < hi && W > 0; ++i) {
      float* __restrict__ d = dst + i * wp + pw;
      const float* __restrict__ s = src + (r0 + i) * W;
      if (W < IRC_VL) {
        irc_vstore_n(d, irc_vload_n(s, W), W);
        continue;
      }
      int64_t j = 0;
      for (; j + IRC_VL <= W; j += IRC_VL) {
        irc_vstore(d + j, irc_vload(s + j));
        __asm__("" : : : "memory");  // not a plain copy loop, which GCC makes a memmove call per row
      }
      if (j < W) irc_vstore(d + W - IRC_VL, irc_vload(s + W - IRC_VL));
    }
    return;
  }
  for (int64_t i = 0; i < rows; ++i) {
    if (r0 + i < 0 || r0 + i >= H) irc_zero_row(dst + i * wp, wp);
    else irc_pad_row(dst + i * wp, src + (r0 + i) * W, pw, W, wp);
  }
}

// dst[j] = src[2j] for j in [lo, hi) while the two vectors read, src[2j, 2j + 2*IRC_VL), end at
// or before src[n] (lanes past src[2(hi - 1)] are read and dropped); returns the first j not
// done. A stride-2 phase plane's row, deinterleaved in registers: the strided scalar loop was a
// third of a small strided conv's time.
template <int... J>
static inline int64_t irc_even_lanes(float* __restrict__ dst, const float* __restrict__ src, int64_t lo, int64_t hi,
                                     int64_t n, irc_lanes<J...>) {
  int64_t j = lo;
  for (; j + IRC_VL <= hi && 2 * (j + IRC_VL) <= n; j += IRC_VL)
    irc_vstore(dst + j, __builtin_shufflevector(irc_vload(src + 2 * j), irc_vload(src + 2 * j + IRC_VL), (2 * J)...));
  return j;
}

// What the tiles of `g` read (irc_direct_b), the tap offsets written to offs[KH*KW]: the image
// itself (stride 1, no padding) or its padded phase planes, copied here into scratch slot 3 (on
// OpenMP threads when `parallel`).
static irc_direct_b irc_direct_image(const irc_direct& g, int64_t* offs, bool parallel) {
  irc_direct_b d{g.x, g.C, g.KH * g.KW, g.H * g.W, g.W, g.OH, g.OW, 0, offs, 0, 1};
  if (g.SH == 1 && g.SW == 1 && g.PH == 0 && g.PW == 0) {
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) offs[kh * g.KW + kw] = kh * g.DH * g.W + kw * g.DW;
  } else {  // the padded image in phase planes, [C][SH][SW][Hq][Wq], read by every task
    const int64_t hp = g.H + 2 * g.PH, wp = g.W + 2 * g.PW;
    const int64_t hq = (hp + g.SH - 1) / g.SH, wq = (wp + g.SW - 1) / g.SW, pq = hq * wq;
    float* planes = irc_scratch(3, g.C * g.SH * g.SW * pq);
    bool used[64] = {};  // the phases some tap reads (SH*SW <= 64: irl's DIRECT_MAX_PHASES)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) used[((kh * g.DH) % g.SH) * g.SW + (kw * g.DW) % g.SW] = true;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
    for (int64_t ch = 0; ch < g.C; ++ch)
      for (int64_t ph = 0; ph < g.SH * g.SW; ++ph) {
        if (!used[ph]) continue;
        const int64_t a = ph / g.SW, b = ph % g.SW;
        float* dst = planes + (ch * g.SH * g.SW + ph) * pq;
        const float* src = g.x + ch * g.H * g.W;
        // columns j*SW + b - PW in [0, W): j in [lo, hi) (per phase, not per row: divisions)
        const int64_t off = b - g.PW, lo = off >= 0 ? 0 : (-off + g.SW - 1) / g.SW;
        const int64_t hi = g.W - off <= 0 ? 0 : (g.W - off + g.SW - 1) / g.SW < wq ? (g.W - off + g.SW - 1) / g.SW : wq;
        for (int64_t i = 0; i < hq; ++i) {
          const int64_t r = i * g.SH + a - g.PH;  // the input row, outside [0, H): padding
          float* row = dst + i * wq;
          if (r < 0 || r >= g.H) {
            irc_zero_row(row, wq);
            continue;
          }
          const float* in = src + r * g.W;
          if (g.SW == 1) {
            irc_pad_row(row, in, g.PW, g.W, wq);
          } else {
            for (int64_t j = 0; j < lo && j < wq; ++j) row[j] = 0.0f;
            int64_t j = lo;
            if (g.SW == 2)  // its odd lanes may read the next rows: up to the end of the image's channels
              j = irc_even_lanes(row, in + off, lo, hi, (g.C - ch) * g.H * g.W - r * g.W - off,
                                 typename irc_make_lanes<IRC_VL>::type{});
            for (; j < hi; ++j) row[j] = in[j * g.SW + off];
            for (int64_t j = hi > lo ? hi : lo; j < wq; ++j) row[j] = 0.0f;
          }
        }
      }
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t dy = kh * g.DH, dx = kw * g.DW;
        offs[kh * g.KW + kw] = ((dy % g.SH) * g.SW + dx % g.SW) * pq + (dy / g.SH) * wq + dx / g.SW;
      }
    d.x = planes; d.cstride = g.SH * g.SW * pq; d.ld = wq;
  }
  d.V = (d.OH - 1) * d.ld + d.OW;
  d.vh = d.ld;
  return d;
}

// The pixels layout's image (irc_conv_pixels): the image itself when unpadded, whatever the
// stride, else a zero-padded copy [C][H + 2PH][W + 2PW] in scratch slot 3 (rows copied whole,
// on OpenMP threads when `parallel`). Output pixel (oh, ow) reads tap t of channel c at
// c*cstride + toff[t] + oh*vh + ow*vw: no phase planes, whose strided deinterleaving cost a
// small conv a quarter of its time (cnn's 16 -> 32 3x3/s2 on 32x32: 38.7 -> 31.8 us with the
// deinterleave vectorized, 27 without it).
static irc_direct_b irc_padded_image(const irc_direct& g, int64_t* offs, bool parallel) {
  const int64_t wp = g.W + 2 * g.PW, hp = g.H + 2 * g.PH;
  irc_direct_b d{g.x, g.C, g.KH * g.KW, g.H * g.W, g.W, g.OH, g.OW, 0, offs, g.SH * g.W, g.SW, 0, &g};
  if (g.PH || g.PW) {
    float* planes = irc_scratch(3, g.C * hp * wp);
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t ch = 0; ch < g.C; ++ch) {
      float* dst = planes + ch * hp * wp;
      const float* src = g.x + ch * g.H * g.W;
      irc_pad_rows(dst, src, -g.PH, hp, g.H, g.W, g.PW, wp);
    }
    d.x = planes; d.cstride = hp * wp; d.ld = wp; d.vh = g.SH * wp;
  }
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw) offs[kh * g.KW + kw] = kh * g.DH * d.ld + kw * g.DW;
  return d;
}

// The pixels layout's image for output rows [oh0, oh1) of a padded conv only: the input rows
// their windows read, zero-padded, [C][rows][W + 2PW] in this thread's scratch slot 3, read from
// output row oh0 on (irc_direct_b::oh0), the tap offsets written to offs[KH*KW].
static irc_direct_b irc_padded_band(const irc_direct& g, int64_t* offs, int64_t oh0, int64_t oh1) {
  const int64_t wp = g.W + 2 * g.PW, r0 = oh0 * g.SH - g.PH, rows = (oh1 - oh0 - 1) * g.SH + (g.KH - 1) * g.DH + 1;
  float* band = irc_scratch(3, g.C * rows * wp);
  for (int64_t ch = 0; ch < g.C; ++ch) irc_pad_rows(band + ch * rows * wp, g.x + ch * g.H * g.W, r0, rows, g.H, g.W, g.PW, wp);
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw) offs[kh * g.KW + kw] = kh * g.DH * wp + kw * g.DW;
  return {band, g.C, g.KH * g.KW, rows * wp, wp, g.OH, g.OW, 0, offs, g.SH * wp, g.SW, oh0, &g};
}

// The taps [t0, t1) that output row oh of `g` reads inside the image, whole kernel rows
// (t = kh*KW + kw): kernel row kh reads input row oh*SH - PH + kh*DH, inside [0, H) for kh in
// [ceil((PH - oh*SH) / DH), ceil((H + PH - oh*SH) / DH)); the others read padding (zeros) from
// every pixel of the row, and the pixels layout's one-row tiles skip them (irc_pixels_task).
// t1 == t0: the row reads padding alone. Returns whether the row reads every tap.
static inline int64_t irc_ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }
static inline bool irc_row_taps(const irc_direct& g, int64_t oh, int64_t& t0, int64_t& t1) {
  const int64_t lo = irc_ceil_div(g.PH - oh * g.SH, g.DH), hi = irc_ceil_div(g.H + g.PH - oh * g.SH, g.DH);
  t0 = (lo > 0 ? lo : 0) * g.KW;
  t1 = (hi < g.KH ? hi : g.KH) * g.KW;
  if (t1 < t0) t1 = t0;
  return t0 == 0 && t1 == g.KH * g.KW;
}

// C[M, OH*OW] = epilogue(A x B) for the direct B of `image`: tasks of MS rows x NC virtual
// columns shared among OpenMP threads when `parallel`, as irc_gemm's.
template <int TAPS, class PA, class Epi>
static void irc_conv_direct(int64_t M, const PA& pa, const irc_direct& g, float* c, const Epi& epi, int64_t MC,
                            int64_t NC, int64_t MS, bool parallel) {
  const int64_t taps = g.KH * g.KW;
  int64_t toff[64];
  int64_t* offs = taps <= 64 ? toff : static_cast<int64_t*>(std::malloc(taps * sizeof(int64_t)));
  const irc_direct_b d = irc_direct_image(g, offs, parallel);
  if (irc_one_thread(parallel)) MS = M;
  const int64_t mb = (M + MS - 1) / MS, nb = (d.V + NC - 1) / NC;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t bj = 0; bj < nb; ++bj)
    for (int64_t bi = 0; bi < mb; ++bi) {
      const int64_t i0 = bi * MS, v0 = bj * NC;
      irc_direct_task<TAPS>(d, pa, c, epi, i0, M - i0 < MS ? M - i0 : MS, v0, d.V - v0 < NC ? d.V - v0 : NC, MC);
    }
  if (offs != toff) std::free(offs);
}

// ---- a convolution with output pixels as the tile's rows ("pixels") ------------------------
// The image read in place as above (irc_padded_image), but the register tile is up to IRC_PR
// output pixels x IRC_NR output channels: per k = (c, tap), one load of the weights' B panel
// (two vectors of channels) and a broadcast per pixel from the image, x[c*plane + toff[tap] +
// voff[pixel]]. On a small plane the columns of the direct layout waste a quarter of the tile
// (7x7: 64 virtual columns for 49 real ones); pixels waste none (balanced tiles of up to IRC_PR
// rows), and the weights' panel (K x IRC_NR) stays in L2 while every pixel tile reads it. The
// tile is transposed on its store (irc_pixels_store): the epilogue runs on vectors of
// consecutive pixels of one channel.
#ifndef IRC_PR
#define IRC_PR (IRC_NR == 32 ? 12 : 6)  // the emitter defines it (irc/target.py PIXEL_ROWS)
#endif
#ifndef IRC_PT
#define IRC_PT (IRC_NR == 32 ? 14 : 6)  // the most pixels of a two-row tile (irc/target.py PIXEL_PAIR_ROWS)
#endif

// The next weights panel fetched into L2 while this one is used: a tile fetches `left` channels
// (taps x IRC_NR floats each) from p on, one every `every` of its own channels. A task's tiles of
// one panel share out the next panel's channels by their pixels (irc_pixels_task), so that the
// next panel's first tile does not wait on memory: the panels of weights compiled in come from
// L3 or memory in a model (ResNet-18's 512-channel 3x3: 590 KB a panel, 9.4 MB the conv).
struct irc_ahead { const float* p = nullptr; int64_t left = 0, every = 1; };
static inline irc_ahead irc_ahead_share(const float* next, int64_t C, int64_t taps, int64_t done, int64_t px,
                                        int64_t np) {
  if (!next || np <= 0) return {};
  const int64_t lo = done * C / np, hi = (done + px) * C / np;
  return {next + lo * taps * IRC_NR, hi - lo, hi > lo ? (C / (hi - lo) > 0 ? C / (hi - lo) : 1) : 1};
}

// COLS: a conv whose output rows are each one run tile (a plane at most IRC_PT wide), its first and
// last pixels' taps that read column padding skipped. Output column ow's tap kw reads input column
// ow*SW - PW + kw*DW: the row's j-th pixel reads padding with kw*DW < PW - j*SW, its j-th from the
// end with kw*DW >= ER + j*SW (ER = W + PW - (OW - 1)*SW). Emitted only where the K loop unrolls a
// channel's taps whole (TAPS <= 9: which pixel reads padding with which tap is then known at
// compile time, the FMAs left out) and some edge pixel reads padding; irc_no_cols elsewhere.
// Zen 4, one thread, alternating in one process, the native call alone: ResNet-18's 512-channel
// 3x3 on 7x7 2028 -> 1880 us (its 42 of 441 pixel-taps per panel, 21 of the rows' 441 pixel-taps
// times two edges, left out); ResNet-18 39.1 -> 38.1 ms, cnn 63.7 -> 62.3 us (a loaded machine).
// Skipping them at the first and last tiles of wider rows too (a K loop per edge): ResNet-18 level
// with this (38.2 ms), its build 0.6 s of CPU more.
// SIDES = 0 (`halves`, as emitted): rows of exactly two run tiles of at most 8 pixels (14 = 7 + 7
// in two-row tiles, 16 = 8 + 8; the emitter's PIXEL_EDGE_HALF_ROWS), whose first tile skips its
// first pixels' taps (`first`, SIDES = 1) and whose second its last pixels' (`last`, SIDES = 2):
// with a 3x3, 4% of each tile's FMAs (DenseNet's 128 -> 32 channel 3x3 on 16x16: 171 -> 167 us).
template <int KW, int DW, int PW, int ER, int SIDES = 3> struct irc_cols {
  static constexpr bool any = true, halves = SIDES == 0;
  using first = irc_cols<KW, DW, PW, ER, 1>;
  using last = irc_cols<KW, DW, PW, ER, 2>;
  static constexpr bool zero(int64_t j, int64_t n, int64_t t, int64_t sw) {  // pixel j of a tile of n, tap t
    return ((SIDES & 1) && (t % KW) * DW < PW - j * sw) || ((SIDES & 2) && (t % KW) * DW >= ER + (n - 1 - j) * sw);
  }
};
struct irc_no_cols {
  static constexpr bool any = false, halves = false;
  static constexpr bool zero(int64_t, int64_t, int64_t, int64_t) { return false; }
};

// RUN > 0: the tile's pixels lie in one output row of a conv with column stride RUN
// (voff[r] = voff[0] + RUN*r), so every broadcast is addressed from one pointer: with a pointer
// per pixel, 12 of them, GCC reloads them from the stack, a load per broadcast (measured on an
// Intel Xeon, one thread, ResNet-18's 3x3 convs: 6-10% faster from one pointer; a 3 -> 32
// channel 3x3/2 on 224x224: 380 -> 355 us).
// pf (RUN = 0 only): how far ahead of b the weights panel is prefetched: IRC_PF_K steps in the
// panel's first tile, which always runs with RUN = 0 (irc_pixels_task), else 0 (a prefetch of the
// line being read, which hits: no branch, and no second copy of the twelve tile heights to
// compile). RUN tiles, most of a large plane's, have no prefetch at all: with one in every tile
// ResNet-18's 64-channel 3x3 on 56x56 was 3% slower. The first tile's prefetch: its 512-channel
// 3x3 on 7x7 (five tiles a panel) 2430 -> 2160 us, one thread, weights evicted between calls.
// S (RUN > 0 only): the tile is S runs of ROWS / S pixels, run s in output row s of the tile's
// rows (voff[s * ROWS/S] its start), a pointer per run: two-row tiles (irc_pixels_task), which
// also fetch their share of the next weights panel into L2 (ahead, irc_ahead). One-row tiles do
// not: the check between channels took registers from their K loop (spills in it), and the
// large planes they run on use each panel long enough for the hardware prefetcher.
template <int ROWS, int H, int TAPS, int RUN, class COLS = irc_no_cols>
__attribute__((always_inline)) static inline void irc_pixels_channel(int64_t nt, const int64_t* __restrict__ toff,
                                                                     int64_t base, const float* const* px,
                                                                     const float* __restrict__& b, irc_vf (*part)[2],
                                                                     int64_t pf) {
#pragma GCC unroll 9
  for (int64_t t = 0; t < nt; ++t, b += IRC_NR) {
    const int64_t o = base + toff[t];
    if constexpr ((!RUN || TAPS == 0) && IRC_PF_K > 0) {
      __builtin_prefetch(b + pf, 0, 3);
      if constexpr (IRC_NR * 4 > 64) __builtin_prefetch(b + pf + 16, 0, 3);
    }
    const irc_vf b0 = irc_loadv(b), b1 = irc_loadv(b + IRC_L);
    for (int r = 0; r < ROWS; ++r) {
      if constexpr (COLS::any)  // (t is a constant here: the loop is unrolled whole)
        if (COLS::zero(r % H, H, t, RUN)) continue;
      const irc_vf ar = irc_bcastv(RUN ? px[r / H * H][o + RUN * (r % H)] : px[r][o]);
      part[r][0] = irc_fmav(ar, b0, part[r][0]);
      part[r][1] = irc_fmav(ar, b1, part[r][1]);
    }
  }
}

// TAPS = 0: `taps` of each channel's, from toff[0] and b on, then `rest` more skipped in b (those
// of the kernel rows a tile's pixels read padding with, irc_row_taps): a K loop of a run-time trip
// count, 2-3% slower than a compiled one (ResNet-18's 512-channel 3x3 on 7x7, Zen 4), taken only
// by tiles that skip taps. The panel's first tile (pf > 0) still fetches the skipped weights.
template <int ROWS, int TAPS, int RUN, int S = 1, class COLS = irc_no_cols>
__attribute__((noinline)) static void irc_accumulate_pixels(int64_t C, int64_t taps, const int64_t* __restrict__ toff,
                                                             int64_t plane, const int64_t* __restrict__ voff,
                                                             const float* __restrict__ x, const float* __restrict__ b,
                                                             irc_vf (*acc)[2], int64_t pf = 0, irc_ahead ahead = {},
                                                             int64_t rest = 0) {
  static_assert(ROWS % S == 0 && (S == 1 || RUN > 0), "runs of equal length, each addressed from one pointer");
  static_assert(!COLS::any || (RUN > 0 && TAPS > 0 && TAPS <= 9), "edge pixels' taps skipped in a K loop unrolled whole");
  constexpr int H = ROWS / S;  // pixels per run
  irc_vf part[ROWS][2];
  const float* px[ROWS];
  for (int r = 0; r < ROWS; ++r) { part[r][0] = part[r][1] = irc_vf{}; px[r] = x + (RUN ? voff[r / H * H] : voff[r]); }
  const int64_t nt = TAPS > 0 ? TAPS : taps;
  if constexpr (TAPS == 0) {
    static_assert(S == 1, "two-row tiles skip no taps");
    for (int64_t c = 0, base = 0; c < C; ++c, base += plane) {
      irc_pixels_channel<ROWS, H, TAPS, RUN>(nt, toff, base, px, b, part, pf);
      if (pf)
        for (int64_t q = 0; q < rest * IRC_NR; q += 64 / sizeof(float)) __builtin_prefetch(b + pf + q, 0, 3);
      b += rest * IRC_NR;
    }
  } else if constexpr (S == 1) {
    for (int64_t c = 0, base = 0; c < C; ++c, base += plane)
      irc_pixels_channel<ROWS, H, TAPS, RUN, COLS>(nt, toff, base, px, b, part, pf);
  } else {
    for (int64_t c = 0, base = 0, stop; c < C;) {
      stop = C;
      if (ahead.left > 0) {  // one channel of the next panel, then `every` of this one's
        for (int64_t q = 0; q < nt * IRC_NR; q += 64 / sizeof(float)) __builtin_prefetch(ahead.p + q, 0, 2);
        ahead.p += nt * IRC_NR;
        --ahead.left;
        if (c + ahead.every < C) stop = c + ahead.every;
      }
      for (; c < stop; ++c, base += plane) irc_pixels_channel<ROWS, H, TAPS, RUN, COLS>(nt, toff, base, px, b, part, pf);
    }
  }
  for (int r = 0; r < ROWS; ++r) { acc[r][0] = part[r][0]; acc[r][1] = part[r][1]; }
}

template <int R, int TAPS, int RUN>
static inline void irc_accumulate_pixels_rows(int64_t rows, int64_t C, int64_t taps, const int64_t* toff, int64_t plane,
                                              const int64_t* voff, const float* x, const float* b, irc_vf (*acc)[2],
                                              int64_t pf) {
  if constexpr (R > 1)
    if (rows < R) return irc_accumulate_pixels_rows<R - 1, TAPS, RUN>(rows, C, taps, toff, plane, voff, x, b, acc, pf);
  irc_accumulate_pixels<R, TAPS, RUN>(C, taps, toff, plane, voff, x, b, acc, pf);
}

// irc_accumulate_pixels for a run tile, COLS::halves: the first or the second tile of its row
// (`second`), each skipping the taps at its own edge of the row (irc_cols).
template <int ROWS, int TAPS, int RUN, int S, class COLS>
static inline void irc_accumulate_run(bool second, int64_t C, int64_t taps, const int64_t* toff, int64_t plane,
                                      const int64_t* voff, const float* x, const float* b, irc_vf (*acc)[2],
                                      irc_ahead ahead = {}) {
  if constexpr (COLS::halves) {
    if (second) irc_accumulate_pixels<ROWS, TAPS, RUN, S, typename COLS::last>(C, taps, toff, plane, voff, x, b, acc, 0, ahead);
    else irc_accumulate_pixels<ROWS, TAPS, RUN, S, typename COLS::first>(C, taps, toff, plane, voff, x, b, acc, 0, ahead);
  } else {
    irc_accumulate_pixels<ROWS, TAPS, RUN, S, COLS>(C, taps, toff, plane, voff, x, b, acc, 0, ahead);
  }
}

// A tile of at most half a vector of pixels and a whole panel of two vectors of channels
// (IRC_NR = 2 * IRC_VL) takes one transpose, not two half-empty ones: rows [0, VL/2) of the block
// are the pixels' first VL channels and rows [VL/2, VL) their next VL, so that after the transpose
// vector q holds channel q's pixels in its low half and channel VL + q's in its high half (the
// epilogue runs on each, the halves swapped for the second, and only the pixels' lanes are
// stored; a plain half-vector store where the tile has exactly half a vector of pixels). Zen 4,
// one thread, alternating in one process: the cnn's 16 -> 32 channel 3x3/2 on 32x32 (8-pixel
// tiles) 27.9 -> 26.8 us, its 32 -> 64 3x3 on 8x8 24.1 -> 23.6, the whole cnn 67.1 -> 64.4 (the
// native call alone).
template <class Epi>
static inline void irc_pixels_store_halves(int64_t n, const float (*t)[IRC_NR], float* __restrict__ c, int64_t ldc,
                                           const Epi& epi, int64_t i0, int64_t j, int64_t limit) {
  irc_vec v[IRC_VL];
  for (int i = 0; i < IRC_VL / 2; ++i) {
    v[i] = i < n ? irc_vload(t[i]) : irc_vec{};
    v[IRC_VL / 2 + i] = i < n ? irc_vload(t[i] + IRC_VL) : irc_vec{};
  }
  irc_transpose_block<IRC_VL / 2>(v);
  for (int64_t q = 0; q < IRC_VL; ++q) {
    const irc_vec lo = epi(v[q], i0 + q, j), hi = epi(irc_swap_halves(v[q]), i0 + IRC_VL + q, j);
    float* a = c + (i0 + q) * ldc + j;
    float* b = c + (i0 + IRC_VL + q) * ldc + j;
    if (n == IRC_VL / 2 || j + IRC_VL / 2 <= limit) {  // a plain store of the low half (irc_pixels_store)
      __builtin_memcpy(a, &lo, IRC_VL / 2 * sizeof(float));
      __builtin_memcpy(b, &hi, IRC_VL / 2 * sizeof(float));
    } else {
      irc_vstore_n(a, lo, n);
      irc_vstore_n(b, hi, n);
    }
  }
}

// The tile's `rows` pixels from p0 x `cols` channels from i0 (acc[r]: pixel p0 + r's channels)
// into C[channel][pixel] (ldc = OH*OW), through the epilogue: IRC_VL x IRC_VL blocks of the tile
// are transposed in registers (irc_transpose_block), so that the epilogue runs on a vector of
// consecutive pixels per channel, stored with the tile's pixels only. Where the vector's columns
// would pass the end of the row (the epilogue reads its inputs at them), the vector is the
// row's last IRC_VL columns instead, the tile's pixels in its last lanes (shift > 0); only in a
// row shorter than a vector do the block's elements go one by one. (One by one, the last two of
// a 7x7 plane's seven tiles: a 64 -> 384 channel 1x1 conv 25.5 us rather than 23.7, in C.)
// HALVES: tiles of at most half a vector of pixels go through irc_pixels_store_halves.
// limit: where a store may run past the tile's pixels, a plain store rather than a masked one (a
// masked 512-bit store costs several cycles more on a Zen 4): pixels [p0 + rows, limit) of every
// channel are the caller's to store after this tile, in order (0: none are). Those lanes hold
// other values until then. Zen 4, one thread, the native call alone, alternating in one process:
// MobileNet-v2 (its 1x1 convs on 14x14 and 7x7: 14-pixel tiles, of which only a plane's last is
// masked) 816 -> 811 and 839 -> 821 us; DenseNet -10, +35, -6, -22, +12 us of 1.51 ms in five runs;
// ResNet-18 level. (Its 64 -> 384 channel 1x1 on 7x7 alone: within the noise, 31-34 us either way;
// with every store plain, the plane's last tile's too, wrong results timed only, 28-29 us.)
template <bool HALVES, class Epi>
static inline void irc_pixels_store(int64_t rows, irc_vf (*acc)[2], float* __restrict__ c, int64_t ldc, const Epi& epi,
                                    int64_t i0, int64_t cols, int64_t p0, int64_t limit = 0) {
  float t[IRC_PT][IRC_NR];
  for (int64_t r = 0; r < rows; ++r) { irc_storev(t[r], acc[r][0]); irc_storev(t[r] + IRC_L, acc[r][1]); }
  for (int64_t pb = 0; pb < rows; pb += IRC_VL) {
    const int64_t n = rows - pb < IRC_VL ? rows - pb : IRC_VL;
    const int64_t shift = p0 + pb + IRC_VL > ldc ? p0 + pb + IRC_VL - ldc : 0, j = p0 + pb - shift;
    if constexpr (HALVES && IRC_NR == 2 * IRC_VL)
      if (n <= IRC_VL / 2 && shift == 0 && cols == IRC_NR) {
        irc_pixels_store_halves(n, t + pb, c, ldc, epi, i0, j, limit);
        continue;
      }
    for (int64_t cb = 0; cb < cols; cb += IRC_VL) {
      const int64_t m = cols - cb < IRC_VL ? cols - cb : IRC_VL;
      if (j < 0) {
        for (int64_t q = 0; q < m; ++q)
          for (int64_t r = 0; r < n; ++r)
            c[(i0 + cb + q) * ldc + p0 + pb + r] = epi(t[pb + r][cb + q], i0 + cb + q, p0 + pb + r);
        continue;
      }
      irc_vec v[IRC_VL];
      for (int i = 0; i < IRC_VL; ++i) v[i] = i >= shift && i < shift + n ? irc_vload(t[pb + i - shift] + cb) : irc_vec{};
      irc_transpose_block<IRC_VL / 2>(v);
      const bool plain = shift == 0 && j + IRC_VL <= limit;
      for (int64_t q = 0; q < m; ++q) {
        const irc_vec e = epi(v[q], i0 + cb + q, j);
        if (plain) irc_vstore(c + (i0 + cb + q) * ldc + j, e);
        else irc_vstore_lanes(c + (i0 + cb + q) * ldc + j, e, shift, shift + n);
      }
    }
  }
}

// One task: channels [i0, i0 + ms) (i0 a multiple of IRC_NR) x pixels [p0, p0 + np), per panel of
// IRC_NR channels. RH > 0: the pixels of each output row in [p0, p0 + np) are cut into
// ceil(n / IRC_PR) tiles of balanced heights, RH or RH - 1 on a whole row (the emitter's
// pixel_run_rows(OW)), so that every tile is one run of a row: a tile straddling two rows reads
// through a pointer per pixel (irc_accumulate_pixels's RUN = 0). RH > IRC_PR (up to IRC_PT, and
// EVEN): rows that tiles of RH cut evenly and tiles of IRC_PR do not, in ceil(n / RH) tiles
// (56 = 4 x 14, not 12 + 4 x 11: the K loop alone, Intel Xeon, one thread, 11 pixels ran
// 163-169 GFLOP/s, 14 pixels 174-176). RH = 0: ceil(np / IRC_PR)
// balanced tiles over the whole range, of heights IRC_PR or one less. SW: the conv's column
// stride, which its run tiles are compiled for. EVEN: a whole row's tiles are all RH (the
// emitter's OW is a multiple of them): no K loop for RH - 1 is compiled (build time).
// S = 2 (RH <= IRC_PT / 2, the emitter's pixel_run_segments): where a row and the next are both
// whole in the range, each tile takes the same columns of both rows, two runs of RH or RH - 1
// pixels (irc_accumulate_pixels's S): on a plane 7 or 14 wide a one-row tile has 7 pixels, 14 of
// the 24 accumulators that 12 pixels would use. The K loop alone (Intel Xeon, one thread, data in
// L2): 7 pixels 155 GFLOP/s, 14 pixels 173.
// EDGES (the emitter's PH > 0): the one-row run tiles of an output row whose windows reach into
// the padding above or below the image skip the kernel rows that read padding alone
// (irc_row_taps). Two-row tiles skip none: on a 7x7 plane at one thread the first row is a tile
// of its own (the panel's first) and the last is in a pair; taken out of it, ResNet-18's
// 512-channel 3x3 ran level (1996 against 2002 us). Zen 4, one thread, alternating in one
// process, the native call alone: that conv 2089 -> 1996 us; cnn 63.3 -> 61.4, DenseNet 1579 ->
// 1541, ResNet-18 34.6 -> 33.7 ms (two threads: 47.1 -> 45.8 us, 941 -> 924 us, 17.6 -> 17.0 ms).
template <int TAPS, int SW, int RH, int S, bool EVEN, bool EDGES, class COLS, class PB, class Epi>
static void irc_pixels_task(const irc_direct_b& d, const PB& pb, float* c, const Epi& epi, int64_t i0, int64_t ms,
                            int64_t p0, int64_t np, bool fetch = true) {
  const bool in_memory = PB::in_memory && fetch;  // weights compiled in, not read yet by this task
  const int64_t K = d.C * d.taps;
  const irc_panels B = pb.get(1, i0, ms, 0, K);
  constexpr int H = RH > 0 ? RH : IRC_PR;
  constexpr int HL = EVEN ? H : H - 1;  // the shorter run tile compiled (EVEN: every one is H)
  constexpr int TALL = H > IRC_PR ? H : IRC_PR;  // the most pixels of a tile (RH > IRC_PR: EVEN rows)
  // run tiles of at most half a vector of pixels, one row each: the store's one-transpose path
  // (irc_pixels_store_halves), compiled only for them (it costs build time: 0.6 s of ResNet-18's,
  // whose tiles are mostly 14 pixels)
  constexpr bool HALVES = RH > 0 && RH <= IRC_VL / 2 && S == 1;
  static_assert(TALL <= IRC_PT && (H <= IRC_PR || EVEN), "taller run tiles than IRC_PR cut rows evenly");
  static_assert(!COLS::any || (EVEN && RH > 0), "irc_cols: rows of one or two run tiles each, all of height RH");
  // segments [s, e) of the range: its rows' pieces (RH > 0), or the whole range
  const auto segment_end = [&](int64_t s) {
    const int64_t e = RH > 0 ? (s / d.OW + 1) * d.OW : p0 + np;
    return e < p0 + np ? e : p0 + np;
  };
  // [s, e) and the next row, both whole: two-row tiles (S = 2), every one of a height compiled for
  const auto pairs = [&](int64_t s, int64_t e, bool first) {
    const int64_t n = e - s, tiles = (n + TALL - 1) / TALL;
    return S == 2 && !first && d.vw == SW && s % d.OW == 0 && n == d.OW && e + d.OW <= p0 + np &&
           (n + tiles - 1) / tiles <= H && n / tiles >= HL && (!COLS::any || n == (COLS::halves ? 2 : 1) * H);
  };
  int64_t paired = 0;  // pixels in two-row tiles, per panel: they share out fetching the next one
  if constexpr (S == 2)
    for (int64_t s = p0, e; s < p0 + np; s = e) {
      e = segment_end(s);
      if (pairs(s, e, in_memory && s == p0)) paired += 2 * (e - s), e += d.OW;
    }
  for (int64_t jr = 0; jr < ms; jr += IRC_NR) {
    const int64_t cols = ms - jr < IRC_NR ? ms - jr : IRC_NR;
    const float* b = B.p + (jr / IRC_NR) * B.stride;
    bool first = in_memory;  // the panel's first reader: it prefetches the panel
    // the next panel, fetched into L2 by this one's two-row tiles (irc_ahead): compiled-in weights
    const float* next = in_memory && jr + IRC_NR < ms ? b + B.stride : nullptr;
    int64_t done = 0;  // pixels of this panel's two-row tiles done
    for (int64_t s = p0, e; s < p0 + np; s = e) {
      e = segment_end(s);
      const int64_t n = e - s, tiles = (n + TALL - 1) / TALL;
      const bool pair = pairs(s, e, first);
      for (int64_t u = 0; u < tiles; ++u) {
        const int64_t pr = s + u * n / tiles, rows = s + (u + 1) * n / tiles - pr;
        int64_t voff[IRC_PT];  // where the pixels' windows start in a channel of the image
        for (int64_t r = 0, oh = pr / d.OW, ow = pr - oh * d.OW; r < rows; ++r) {
          voff[r] = (oh - d.oh0) * d.vh + ow * d.vw;
          if (++ow == d.OW) { ow = 0; ++oh; }
        }
        irc_vf acc[IRC_PT][2];
        // what the store writes: `runs` runs of run_rows pixels, d.OW apart (one call site: each
        // is the epilogue inlined, a large part of a conv's build time)
        int64_t runs = 1, run_rows = rows;
        if (S == 2 && 2 * H <= IRC_PT && pair && (rows == H || rows == HL)) {
          for (int64_t r = 0; r < rows; ++r) voff[rows + r] = voff[r] + d.vh;  // the same columns, a row down
          const irc_ahead ahead = irc_ahead_share(next, d.C, d.taps, done, 2 * rows, paired);
          done += 2 * rows;
          if constexpr (S == 2 && 2 * H <= IRC_PT) {
            if (rows == H)
              irc_accumulate_run<2 * H, TAPS, SW, 2, COLS>(pr % d.OW != 0, d.C, d.taps, d.toff, d.cstride, voff, d.x, b, acc, ahead);
            else if constexpr (HL < H && HL > 0)
              irc_accumulate_pixels<2 * HL, TAPS, SW, 2>(d.C, d.taps, d.toff, d.cstride, voff, d.x, b, acc, 0, ahead);
          }
          if (rows == d.OW) run_rows = 2 * rows;  // whole rows: the two runs are consecutive pixels
          else runs = 2;
        } else {
          // EDGES (a conv padded above or below): a run tile of an edge row skips the kernel rows
          // its pixels read padding alone with (irc_row_taps), in a K loop of the others
          // (TAPS = 0, `rest` skipped); the panel's first tile among them prefetches the panel
          int64_t t0 = 0, t1 = d.taps;
          // (COLS: a run tile must be a whole row, or half of one (COLS::halves), else it takes the
          // pointer per pixel below)
          const bool run = d.vw == SW && (rows == H || rows == HL) && pr % d.OW + rows <= d.OW &&
                           (!COLS::any || ((pr % d.OW == 0 || pr % d.OW + rows == d.OW) &&
                                           rows * (COLS::halves ? 2 : 1) == d.OW));
          const bool every = !EDGES || !run || !d.g || irc_row_taps(*d.g, pr / d.OW, t0, t1);
          const int64_t nt = t1 - t0, rest = d.taps - nt, *toff = d.toff + t0, pf = first ? IRC_PF_K * IRC_NR : 0;
          const float* bt = b + t0 * IRC_NR;
          if (run && (!first || !every)) {
            // one run of consecutive pixels of a row, of one of the two heights compiled for it
            // (each height costs build time)
            if (rows == H) {
              if (every) irc_accumulate_run<H, TAPS, SW, 1, COLS>(pr % d.OW != 0, d.C, d.taps, d.toff, d.cstride, voff, d.x, b, acc);
              else if constexpr (EDGES) irc_accumulate_pixels<H, 0, SW>(d.C, nt, toff, d.cstride, voff, d.x, bt, acc, pf, {}, rest);
            } else if constexpr (HL < H && HL > 0) {
              if (every) irc_accumulate_pixels<HL, TAPS, SW>(d.C, d.taps, d.toff, d.cstride, voff, d.x, b, acc);
              else if constexpr (EDGES) irc_accumulate_pixels<HL, 0, SW>(d.C, nt, toff, d.cstride, voff, d.x, bt, acc, pf, {}, rest);
            }
          } else {
            // a tile of other pixels (the panel's first, prefetching it; a row's piece at a task's
            // ends), its pixels through a pointer each: at most IRC_PR of them per K loop
            const int64_t head = rows < IRC_PR ? rows : IRC_PR;
            irc_accumulate_pixels_rows<IRC_PR, TAPS, 0>(head, d.C, d.taps, d.toff, d.cstride, voff, d.x, b, acc, pf);
            if constexpr (TALL > IRC_PR)
              if (rows > head)
                irc_accumulate_pixels_rows<TALL - IRC_PR, TAPS, 0>(rows - head, d.C, d.taps, d.toff, d.cstride,
                                                                   voff + head, d.x, b, acc + head, 0);
          }
        }
        first = false;
        // one run: the tiles store their pixels in increasing order, up to p0 + np (two runs, a
        // row's piece and the same piece of the next row, do not)
        for (int64_t q = 0; q < runs; ++q)
          irc_pixels_store<HALVES>(run_rows, acc + q * run_rows, c, d.OH * d.OW, epi, i0 + jr, cols, pr + q * d.OW,
                                   runs == 1 ? p0 + np : 0);
      }
      if (pair) e += d.OW;  // the next row was done with this one
    }
  }
}

// C[M, OH*OW] = epilogue(A x B) for the direct B of `image`, with the register tile over IRC_PR
// output pixels x IRC_NR output channels (pb: the weights as B panels [ceil(M/NR)][K][NR]): tasks
// of MS channels x NP pixels shared among OpenMP threads when `parallel`. SW: g.SW, as the
// emitter knows it (irc_pixels_task).
// BH < OH (a padded conv, weights packed at compile time, MS = M): each task takes whole output
// rows and copies its padded image in bands of at most BH of them (irc_padded_band), each band
// used by all the channels before the next: the copy stays in cache where a whole padded image
// went to memory and back (ResNet-18's 64-channel 3x3 on 56x56: 861 KB). So do tasks that share
// out the pixels (NP < P, MS = M) of a padded image of any size, where whole output rows share out
// evenly enough (`even`, below), in one band each: a task's rows
// are then copied by its own thread, into its own core's cache, where one whole copy shared out
// by channels left each task reading the other core's half (and took a parallel region of its
// own). Zen 4, two threads, the native call alone: DenseNet's 128 -> 32 channel 3x3 on 8x8
// 26.9 -> 21.4 us (one thread 39.0).
template <int TAPS, int SW = 1, int RH = 0, int S = 1, bool EVEN = false, bool EDGES = false, class COLS = irc_no_cols,
          class PB, class Epi>
static void irc_conv_pixels(int64_t M, const PB& pb, const irc_direct& g, float* c, const Epi& epi, int64_t BH,
                            int64_t NP, int64_t MS, bool parallel) {
  const int64_t taps = g.KH * g.KW, P = g.OH * g.OW;
  if (irc_one_thread(parallel)) MS = M, NP = P;
  const int64_t mb = (M + MS - 1) / MS, nb = (P + NP - 1) / NP;
  // whole rows shared out evenly enough among the tasks for each to copy its own (the largest
  // task's rows at most 7/6 of the mean). Two threads, banded against the pixels split: a 128 ->
  // 32 channel 3x3 on 7x7 (rows 4 and 3) 22.1 -> 18.4 us, 9x9 31.9 -> 28.9, 8x8 25.8 -> 20.6; a
  // 64 -> 32 on 1x200 (one task: the row) 18.0 -> 27.6, 3x100 48.5 -> 60.2, 5x40 37.0 -> 38.6
  // (rows 3 and 2: left split, as one and three rows are; a 128 -> 32 on 5x5 loses 12% by it)
  const bool even = 6 * ((g.OH + nb - 1) / nb) * nb <= 7 * g.OH;
  const bool banded = PB::in_memory && (BH < g.OH || (NP < P && even)) && (g.PH || g.PW) && MS >= M;
  int64_t toff[64];
  int64_t* offs = taps <= 64 ? toff : static_cast<int64_t*>(std::malloc(taps * sizeof(int64_t)));
  const irc_direct_b whole = banded ? irc_direct_b{} : irc_padded_image(g, offs, parallel);
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t bi = 0; bi < mb; ++bi)
    for (int64_t bj = 0; bj < nb; ++bj) {
      const int64_t i0 = bi * MS, ms = M - i0 < MS ? M - i0 : MS;
      // banded: the task's whole output rows [r0, r1), in balanced bands of at most BH; else
      // its NP pixels from the whole image, as one "band". (One call of irc_pixels_task: a
      // second one was a second copy of it per conv, 2 s of ResNet-18's build.)
      const int64_t r0 = bj * g.OH / nb, r1 = (bj + 1) * g.OH / nb, bands = banded ? (r1 - r0 + BH - 1) / BH : 1;
      int64_t band_toff[64];
      int64_t* band_offs = !banded || taps <= 64 ? band_toff : static_cast<int64_t*>(std::malloc(taps * sizeof(int64_t)));
      for (int64_t b = 0; b < bands; ++b) {
        const int64_t oh0 = r0 + b * (r1 - r0) / bands, oh1 = r0 + (b + 1) * (r1 - r0) / bands;
        const int64_t p0 = banded ? oh0 * g.OW : bj * NP, np = banded ? (oh1 - oh0) * g.OW : P - p0 < NP ? P - p0 : NP;
        // a band after the task's first finds the weights in L2 (banded: they take at most half
        // of it), read by the first band's tiles: no tile of it reads through a pointer per
        // pixel to prefetch them (a 64 -> 128 channel 3x3/s2 on 56x56 in bands of 3 output rows:
        // a sixth of its tiles did)
        const irc_direct_b image = banded ? irc_padded_band(g, band_offs, oh0, oh1) : whole;
        irc_pixels_task<TAPS, SW, RH, S, EVEN, EDGES, COLS>(image, pb, c, epi, i0, ms, p0, np, b == 0);
      }
      if (band_offs != band_toff) std::free(band_offs);
    }
  if (offs != toff) std::free(offs);
}

// Lane shuffles of the Winograd transforms (irc_conv_winograd): the even and odd lanes of two
// vectors read one after the other, and lanes [h*VL, h*VL + VL) of y0 and y1 interleaved.
template <int... J>
static inline irc_vec irc_wino_even(irc_vec p, irc_vec q, irc_lanes<J...>) { return __builtin_shufflevector(p, q, (2 * J)...); }
template <int... J>
static inline irc_vec irc_wino_odd(irc_vec p, irc_vec q, irc_lanes<J...>) { return __builtin_shufflevector(p, q, (2 * J + 1)...); }
template <int... J>
static inline irc_vec irc_wino_zip(irc_vec y0, irc_vec y1, irc_lanes<J...>, int h) {
  return h == 0 ? __builtin_shufflevector(y0, y1, ((J % 2) * IRC_VL + J / 2)...)
                : __builtin_shufflevector(y0, y1, ((J % 2) * IRC_VL + (J + IRC_VL) / 2)...);
}

// ---- Winograd F(2x2, 3x3): a 3x3 stride-1 conv as 16 products over the input channels ----
// Output tile (i, j), rows 2i, 2i + 1 and columns 2j, 2j + 1, reads the 4x4 input window from row
// 2i - PH and column 2j - PW. Per channel and tile, V = B^T d B (16 values xi = 4a + b); per xi,
// M_xi[o][t] = sum_c U_xi[o][c] V_xi[c][t], U = G g G^T of each 3x3 weight g (packed when
// compiling: irt.pack "winograd", [16][ceil(M/IRC_PT)][C][IRC_PT], `irc_wino`'s U: IRC_PT output
// channels a GEMM tile, the pixels layout's two-row tile height); then the 2x2 outputs
// y = A^T M A, through the epilogue:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// 16 products of C terms per 4 outputs, where the direct conv sums 9 C per output: 2.25 x fewer
// FMAs, for transforms that add and subtract. Tiles are vector lanes: a block of R tile rows
// holds tile (i0 + r, j) at lane r*TW + j of rows NB lanes long (NB: a multiple of IRC_NR, the
// GEMM tile's two vectors), V [16][C][NB + IRC_VL] and M [16][panels*IRC_PT][NB + IRC_VL] in the
// task's scratch slots 0 and 1, so that the 2*4 output columns of VL tiles come out of a row of
// M as consecutive output pixels (two interleaved vectors). Lanes past a row's TW tiles hold the
// next row's tiles, or values never stored.
struct irc_wino { const float* U; int64_t R, OS; };  // U: the packed weights; R tile rows a block, OS panels a task

// ev[k] = row[2k - PW], od[k] = row[2k + 1 - PW] for k in [0, TW] (zeros outside the row, or for
// a row of padding: row == nullptr), zeros on to k = TW + IRC_VL (lanes read past the row's
// tiles). Deinterleaved in vectors where their reads stay in the row (the last one overlapping).
static inline void irc_wino_phases(float* ev, float* od, const float* row, int64_t W, int64_t PW, int64_t TW) {
  irc_vstore(ev + TW + 1, irc_vec{}), irc_vstore(od + TW + 1, irc_vec{});
  if (row == nullptr) {
    for (int64_t k = 0; k <= TW; k += IRC_VL) irc_vstore(ev + k, irc_vec{}), irc_vstore(od + k, irc_vec{});
    return;
  }
  const auto scalar = [&](int64_t k) {
    const int64_t a = 2 * k - PW;
    ev[k] = a >= 0 && a < W ? row[a] : 0.0f;
    od[k] = a + 1 >= 0 && a + 1 < W ? row[a + 1] : 0.0f;
  };
  const int64_t lo = (PW + 1) / 2, hi = (W + PW - 2 * IRC_VL) / 2;  // vector starts k in [lo, hi]
  if (W + PW < 2 * IRC_VL || hi < lo || hi + IRC_VL > TW + 1) {
    for (int64_t k = 0; k <= TW; ++k) scalar(k);
    return;
  }
  for (int64_t k = 0; k < lo; ++k) scalar(k);
  for (int64_t k = lo;; k += IRC_VL) {
    if (k > hi) k = hi;  // the last vector overlaps the one before it
    const irc_vec p = irc_vload(row + 2 * k - PW), q = irc_vload(row + 2 * k - PW + IRC_VL);
    irc_vstore(ev + k, irc_wino_even(p, q, typename irc_make_lanes<IRC_VL>::type{}));
    irc_vstore(od + k, irc_wino_odd(p, q, typename irc_make_lanes<IRC_VL>::type{}));
    if (k == hi) break;
  }
  for (int64_t k = hi + IRC_VL; k <= TW; ++k) scalar(k);
}

// V of tile rows [i0, i0 + R) of every channel (tile rows past the image are left as they are).
static void irc_wino_input(const irc_direct& g, int64_t i0, int64_t R, int64_t TH, int64_t TW, float* V, int64_t NS,
                           float* phases) {
  const int64_t span = TW + 1 + IRC_VL;
  for (int64_t ch = 0; ch < g.C; ++ch) {
    const float* x = g.x + ch * g.H * g.W;
    for (int64_t r = 0; r < R && i0 + r < TH; ++r) {
      float* ev[4]; float* od[4];
      for (int a = 0; a < 4; ++a) {
        const int64_t ih = 2 * (i0 + r) - g.PH + a;
        ev[a] = phases + 2 * a * span, od[a] = ev[a] + span;
        irc_wino_phases(ev[a], od[a], ih >= 0 && ih < g.H ? x + ih * g.W : nullptr, g.W, g.PW, TW);
      }
      for (int64_t j = 0; j < TW; j += IRC_VL) {
        irc_vec t[4][4];  // B^T d, d[a][q] = window row a, column q
        for (int q = 0; q < 4; ++q) {
          irc_vec d[4];
          for (int a = 0; a < 4; ++a) d[a] = irc_vload((q & 1 ? od[a] : ev[a]) + j + q / 2);
          t[0][q] = d[0] - d[2], t[1][q] = d[1] + d[2], t[2][q] = d[2] - d[1], t[3][q] = d[1] - d[3];
        }
        float* v = V + ch * NS + r * TW + j;
        const int64_t xi = g.C * NS;  // from one xi's rows to the next
        for (int a = 0; a < 4; ++a) {
          irc_vstore(v + (4 * a + 0) * xi, t[a][0] - t[a][2]);
          irc_vstore(v + (4 * a + 1) * xi, t[a][1] + t[a][2]);
          irc_vstore(v + (4 * a + 2) * xi, t[a][2] - t[a][1]);
          irc_vstore(v + (4 * a + 3) * xi, t[a][1] - t[a][3]);
        }
      }
    }
  }
}

// M_xi rows [p0*IRC_PT, p1*IRC_PT) (output channel panels [p0, p1)) = U_xi V_xi, over lanes
// [0, NB): register tiles of IRC_PT output channels x two vectors of tiles, over the C channels.
__attribute__((noinline)) static void irc_wino_products(const float* U, const float* V, float* Mx, int64_t C,
                                                        int64_t panels, int64_t p0, int64_t p1, int64_t NB, int64_t NS) {
  for (int xi = 0; xi < 16; ++xi) {
    const float* u = U + xi * panels * C * IRC_PT;
    const float* v = V + xi * C * NS;
    float* m = Mx + xi * panels * IRC_PT * NS;
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t t = 0; t < NB; t += IRC_NR) {
        irc_vf acc[IRC_PT][2];
        for (int r = 0; r < IRC_PT; ++r) acc[r][0] = acc[r][1] = irc_vf{};
        const float* a = u + p * C * IRC_PT;
        for (int64_t k = 0; k < C; ++k) {
          const irc_vf b0 = irc_loadv(v + k * NS + t), b1 = irc_loadv(v + k * NS + t + IRC_L);
          for (int r = 0; r < IRC_PT; ++r) {
            const irc_vf ar = irc_bcastv(a[k * IRC_PT + r]);
            acc[r][0] = irc_fmav(ar, b0, acc[r][0]);
            acc[r][1] = irc_fmav(ar, b1, acc[r][1]);
          }
        }
        for (int r = 0; r < IRC_PT; ++r) {
          irc_storev(m + (p * IRC_PT + r) * NS + t, acc[r][0]);
          irc_storev(m + (p * IRC_PT + r) * NS + t + IRC_L, acc[r][1]);
        }
      }
  }
}

// The outputs of channels [o0, o1) and tile rows [i0, i0 + R) from M, through the epilogue: per
// VL tiles of a tile row, two output rows of 2*VL pixels, each two vectors.
template <class Epi>
static void irc_wino_output(const irc_direct& g, const float* Mx, int64_t panels, int64_t NS, int64_t o0, int64_t o1,
                            int64_t i0, int64_t R, int64_t TH, int64_t TW, float* c, const Epi& epi) {
  const int64_t P = g.OH * g.OW, xi = panels * IRC_PT * NS;
  for (int64_t o = o0; o < o1; ++o)
    for (int64_t r = 0; r < R && i0 + r < TH; ++r)
      for (int64_t j = 0; j < TW; j += IRC_VL) {
        const float* m = Mx + o * NS + r * TW + j;
        irc_vec s[2][4];
        for (int b = 0; b < 4; ++b) {
          const irc_vec m0 = irc_vload(m + b * xi), m1 = irc_vload(m + (4 + b) * xi);
          const irc_vec m2 = irc_vload(m + (8 + b) * xi), m3 = irc_vload(m + (12 + b) * xi);
          s[0][b] = m0 + m1 + m2, s[1][b] = m1 - m2 - m3;
        }
        const int64_t ow = 2 * j, n = g.OW - ow < 2 * IRC_VL ? g.OW - ow : 2 * IRC_VL;
        for (int a = 0; a < 2 && 2 * (i0 + r) + a < g.OH; ++a) {
          const irc_vec y0 = s[a][0] + s[a][1] + s[a][2], y1 = s[a][1] - s[a][2] - s[a][3];
          const irc_vec half[2] = {irc_wino_zip(y0, y1, typename irc_make_lanes<IRC_VL>::type{}, 0),
                                   irc_wino_zip(y0, y1, typename irc_make_lanes<IRC_VL>::type{}, 1)};
          const int64_t p = (2 * (i0 + r) + a) * g.OW + ow;
          for (int h = 0; h < 2; ++h) {
            const int64_t count = n - h * IRC_VL < IRC_VL ? n - h * IRC_VL : IRC_VL, at = p + h * IRC_VL;
            if (count <= 0) break;
            float* dst = c + o * P + at;
            if (at + IRC_VL <= P) {  // the epilogue's reads stay in the channel's plane
              const irc_vec v = epi(half[h], o, at);
              if (count == IRC_VL) irc_vstore(dst, v);
              else irc_vstore_n(dst, v, count);
            } else {
              for (int64_t q = 0; q < count; ++q) dst[q] = epi(half[h][q], o, at + q);
            }
          }
        }
      }
}

// C[M, OH*OW] = epilogue(conv(image)) for a 3x3 stride-1 conv, groups of one (irt.pack "winograd"
// packed w.U): tasks of w.R tile rows x w.OS output channel panels (all of them on one thread),
// shared among OpenMP threads when `parallel`.
template <class Epi>
static void irc_conv_winograd(int64_t M, const irc_wino& w, const irc_direct& g, float* c, const Epi& epi, bool parallel) {
  const int64_t TH = (g.OH + 1) / 2, TW = (g.OW + 1) / 2, panels = (M + IRC_PT - 1) / IRC_PT;
  const int64_t R = w.R < 1 ? TH : w.R, OS = irc_one_thread(parallel) || w.OS < 1 ? panels : w.OS;
  const int64_t NB = (R * TW + IRC_NR - 1) / IRC_NR * IRC_NR, NS = NB + IRC_VL;
  const int64_t nb = (TH + R - 1) / R, no = (panels + OS - 1) / OS;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t bi = 0; bi < nb; ++bi)
    for (int64_t bo = 0; bo < no; ++bo) {
      float* V = irc_scratch(0, 16 * g.C * NS);
      float* Mx = irc_scratch(1, 16 * panels * IRC_PT * NS);
      float* phases = irc_scratch(2, 8 * (TW + 1 + IRC_VL));
      const int64_t p0 = bo * OS, p1 = p0 + OS < panels ? p0 + OS : panels;
      irc_wino_input(g, bi * R, R, TH, TW, V, NS, phases);
      irc_wino_products(w.U, V, Mx, g.C, panels, p0, p1, NB, NS);
      irc_wino_output(g, Mx, panels, NS, p0 * IRC_PT, p1 * IRC_PT < M ? p1 * IRC_PT : M, bi * R, R, TH, TW, c, epi);
    }
}

// ---- attention on the engine: per (head, block of queries) two GEMMs around a row softmax ----
template <class V> static inline V irc_causal(V x, int64_t row, int64_t j);
template <> inline float irc_causal<float>(float x, int64_t row, int64_t j) { return j > row ? -__builtin_inff() : x; }
template <> inline irc_vec irc_causal<irc_vec>(irc_vec x, int64_t row, int64_t j) {
  irc_veci lane;
  for (int q = 0; q < IRC_VL; ++q) lane[q] = q;
  return lane + (int32_t)(j - row) > 0 ? irc_vsplat(-__builtin_inff()) : x;
}

// exp(x) for the x = s - max(s) <= 0 of a softmax (or NaN): irc_exp_normal, which is irc_exp bit
// for bit where the result is a normal float, and 0 below that (x < -87.3, where irc_exp gives a
// subnormal under 1.2e-38: a share of the row's sum float32 cannot hold). One multiply, two
// integer min/max and a select shorter than irc_exp: BERT's 128-key rows (Zen 4, one thread)
// 36 -> 27.5 us per 512 rows. -inf (a masked score) gives exactly 0, NaN stays NaN.
static inline irc_vec irc_exp_nonpositive(irc_vec x) {
#ifdef IRC_LIBM
  return irc_exp(x);  // strict builds: libm's exp
#else
  const irc_vec p = irc_exp_normal(x);
  return x < -87.3f ? irc_vec{} : p;
#endif
}

// s[0, n) = exp(s - max(s)), in IRC_VL-float vectors; returns 1 / their sum (the caller scales;
// 0 for an empty row). s[valid, n) is masked (-inf: a causal row's future): set to exactly 0
// without its exp. A row masked whole is NaN, as torch's softmax is; with `safe` it is 0 (its
// max is -inf: zeros, and 0 returned), as torch's scaled_dot_product_attention gives.
static inline float irc_softmax_row(float* s, int64_t n, int64_t valid, bool safe = false) {
  for (int64_t j = valid; j < n; ++j) s[j] = 0.0f;
  n = valid;
  irc_vec mv = irc_vsplat(-__builtin_inff()), mw = mv;  // two chains: a max is ~7 cycles deep
  int64_t j = 0;
  for (; j + 2 * IRC_VL <= n; j += 2 * IRC_VL) {
    mv = irc_maxf(irc_vload(s + j), mv);
    mw = irc_maxf(irc_vload(s + j + IRC_VL), mw);
  }
  mv = irc_maxf(mv, mw);
  for (; j + IRC_VL <= n; j += IRC_VL) mv = irc_maxf(irc_vload(s + j), mv);
  float mx = irc_fold(mv, [](auto a, auto b) { const auto m = a > b ? a : b; return a != a ? a : m; });  // irc_maxf
  for (; j < n; ++j) mx = irc_maxf(s[j], mx);
  if (safe && mx == -__builtin_inff()) {
    for (j = 0; j < n; ++j) s[j] = 0.0f;
    return 0.0f;
  }
  irc_vec sv = irc_vec{};
  const irc_vec mm = irc_vsplat(mx);
  for (j = 0; j + IRC_VL <= n; j += IRC_VL) {
    const irc_vec p = irc_exp_nonpositive(irc_vload(s + j) - mm);
    irc_vstore(s + j, p);
    sv += p;
  }
  float sum = irc_fold(sv, [](auto a, auto b) { return a + b; });
  for (; j < n; ++j) { s[j] = irc_exp(s[j] - mx); sum += s[j]; }
  return n > 0 ? 1.0f / sum : 0.0f;  // no keys at all (a run-time Lk of 0): zeros, not 0 * inf
}

// o[r][0, NV*IRC_VL) = inv[r] * sum_{j < n} p[r][j] v[j][...] for R rows: P v straight from the
// rows of P (broadcasts) and of v (vector loads), nothing packed; R x NV accumulators.
template <int NV, int R>
static inline void irc_pv_tile(int64_t n, const float* __restrict__ p, int64_t ldp, const float* __restrict__ v,
                               int64_t ldv, float* __restrict__ o, int64_t ldo, const float* inv) {
  irc_vec acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NV; ++c) acc[r][c] = irc_vec{};
  for (int64_t j = 0; j < n; ++j) {
    irc_vec b[NV];
    for (int c = 0; c < NV; ++c) b[c] = irc_vload(v + j * ldv + c * IRC_VL);
    for (int r = 0; r < R; ++r) {
      const irc_vec a = irc_vsplat(p[r * ldp + j]);
      for (int c = 0; c < NV; ++c) acc[r][c] = irc_fma(a, b[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NV; ++c) irc_vstore(o + r * ldo + c * IRC_VL, acc[r][c] * irc_vsplat(inv[r]));
}

// The m rows of a block of queries starting at q0 (causal: row i reads keys [0, q0 + i + 1)).
template <int NV>
static void irc_pv(int64_t m, int64_t n, int64_t q0, bool causal, const float* p, int64_t ldp, const float* v,
                   int64_t ldv, float* o, int64_t ldo, const float* inv) {
  // R x NV accumulators, NV loads of v and a broadcast per key: 24 of AVX-512's 32 registers
  // (12 of AVX2's 16), at most 8 rows.
  constexpr int ACC = IRC_VL == 16 ? 24 : 12, R = ACC / NV > 8 ? 8 : ACC / NV;
  int64_t i = 0;
  for (; i + R <= m; i += R) {
    const int64_t keys = causal && q0 + i + R < n ? q0 + i + R : n;
    irc_pv_tile<NV, R>(keys, p + i * ldp, ldp, v, ldv, o + i * ldo, ldo, inv + i);
  }
  constexpr int R2 = R / 2 > 1 ? R / 2 : 1;  // the rest: half tiles, then single rows
  for (; R2 > 1 && i + R2 <= m; i += R2) {
    const int64_t keys = causal && q0 + i + R2 < n ? q0 + i + R2 : n;
    irc_pv_tile<NV, R2>(keys, p + i * ldp, ldp, v, ldv, o + i * ldo, ldo, inv + i);
  }
  for (; i < m; ++i) {
    const int64_t keys = causal && q0 + i + 1 < n ? q0 + i + 1 : n;
    irc_pv_tile<NV, 1>(keys, p + i * ldp, ldp, v, ldv, o + i * ldo, ldo, inv + i);
  }
}

static inline int64_t irc_k_step(int64_t k) { return (k + (k + 319) / 320 - 1) / ((k + 319) / 320); }

// q [batch][lq][e], k [batch][lk][e], v [batch][lk][ev] -> o [batch][lq][ev].
// score(acc, b, row, j): the scaled, masked score from the dot product `acc` (V = float or irc_vec).
// Per block of `rows` queries: the scores on the GEMM engine, a softmax per row, then P v: read
// in place by irc_pv when ev is NV = 1 to 4 vectors (the normalization folded into its store),
// else (NV = 0) on the engine; NV = -1 picks at run time (ev known only then). The emitter gives
// NV when ev is a constant, so a translation unit compiles only the P v it uses. causal: score() masks every j > row, so a block of queries [q0, q0 + m) reads
// only the keys [0, q0 + m): the scores, the softmax and P v skip the rest (exactly 0 in P).
static inline int irc_pv_vectors(int64_t ev) { return ev % IRC_VL == 0 && ev <= 4 * IRC_VL ? (int)(ev / IRC_VL) : 0; }

template <int NV, class Score>
static void irc_attention(int64_t batch, int64_t lq, int64_t lk, int64_t e, int64_t ev, const float* q, const float* k,
                          const float* v, float* o, const Score& score, int64_t rows, bool causal, bool parallel,
                          bool safe = false) {
  const int64_t blocks = (lq + rows - 1) / rows;
  const int nv = NV >= 0 ? NV : irc_pv_vectors(ev);  // 0: P v on the engine
#pragma omp parallel if (parallel)
  {
  // The keys of head `kfor` packed so far, [0, kn): a thread's consecutive blocks of one head
  // share them (a causal block appends the panels its longer rows reach), not one pack per block.
  const float* kfor = nullptr;
  int64_t kn = 0;
  float* kp = irc_scratch(4, (lk + IRC_NR - 1) / IRC_NR * IRC_NR * e);
#pragma omp for collapse(2) schedule(static)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t q0 = blk * rows, m = lq - q0 < rows ? lq - q0 : rows;
      const int64_t n = causal && q0 + m < lk ? q0 + m : lk;  // the keys any row of the block sees
      float* s = irc_scratch(2, rows * lk + rows);
      float* inv = s + rows * lk;
      const irc_dense<IRC_MMR, false> qa{q + (b * lq + q0) * e, e, m};
      const irc_dense<IRC_NR, false> kb{k + b * lk * e, e, lk};
      if (kb.x != kfor) kfor = kb.x, kn = 0;
      if (n > kn) {  // from the panel holding key kn (a ragged one is packed again, whole)
        const int64_t p = kn / IRC_NR * IRC_NR;
        kb.pack(kp + p * e, p, n - p, 0, e);
        kn = n;
      }
      const irc_prepacked<IRC_NR> kpanels{kp, e};
      const auto epi = [&](auto acc, int64_t i, int64_t j) { return score(acc, b, q0 + i, j); };
      irc_gemm_task(e, qa, kpanels, s, n, epi, 0, m, 0, n, rows, irc_k_step(e));
      for (int64_t i = 0; i < m; ++i) inv[i] = irc_softmax_row(s + i * n, n, causal && q0 + i + 1 < n ? q0 + i + 1 : n, safe);
      const float* vb = v + b * lk * ev;
      float* ob = o + (b * lq + q0) * ev;
      switch (nv) {
        case 1: if constexpr (NV < 0 || NV == 1) irc_pv<1>(m, n, q0, causal, s, n, vb, ev, ob, ev, inv); break;
        case 2: if constexpr (NV < 0 || NV == 2) irc_pv<2>(m, n, q0, causal, s, n, vb, ev, ob, ev, inv); break;
        case 3: if constexpr (NV < 0 || NV == 3) irc_pv<3>(m, n, q0, causal, s, n, vb, ev, ob, ev, inv); break;
        case 4: if constexpr (NV < 0 || NV == 4) irc_pv<4>(m, n, q0, causal, s, n, vb, ev, ob, ev, inv); break;
        default: if constexpr (NV <= 0) {
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) s[i * n + j] *= inv[i];
          const irc_dense<IRC_MMR, false> pa{s, n, m};
          const irc_dense<IRC_NR, true> vd{vb, ev, ev};
          const auto same = [](auto acc, int64_t, int64_t) { return acc; };
          irc_gemm_task(n, pa, vd, ob, ev, same, 0, m, 0, ev, rows, irc_k_step(n));
        }
      }
    }
  }
}
// ---- end of the GEMM engine ----------------------------------------------------------------
