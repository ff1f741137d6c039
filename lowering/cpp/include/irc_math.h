// ---- vectorizable float math (lowering/cpp/include/irc_math.h): branch-free, float and irc_vec alike ----
// FP exceptions are never inspected: without this, GCC (on AVX2, no AVX-512 masks) refuses to
// if-convert a select whose condition is a float compare, and the loop stays scalar.
#pragma GCC optimize("no-trapping-math")
// irc_vec values never cross a non-inline ABI boundary: no warning when built without AVX.
#pragma GCC diagnostic ignored "-Wpsabi"
// IRC_VL: float32 lanes of one vector, the Target's vector width (16 with AVX-512, 8 with AVX2,
// 4 portable), defined by the emitter so the code does not depend on the build flags; `irc_vec`
// is one such vector (GCC vector extensions: a width the CPU lacks is still computed right, in
// narrower pieces).
#ifndef IRC_VL
#if defined(__AVX512F__)
#define IRC_VL 16
#elif defined(__AVX__)
#define IRC_VL 8
#else
#define IRC_VL 4
#endif
#endif
#if IRC_VL != 4 && IRC_VL != 8 && IRC_VL != 16
#error "IRC_VL (the vector width in float32 lanes) must be 4, 8 or 16"
#endif
// The scalar forms are called inside `omp simd` loops, which vectorize only where every call is
// inlined: GCC's inliner stops at its growth limits in a large function (EfficientNet-B0's
// forward: irc_exp stayed a call in a SiLU epilogue, and its 5x5 depthwise kernels ran scalar, 8x
// slower), so these are always inlined.
#define IRC_MATH static inline __attribute__((always_inline))
typedef float irc_vec __attribute__((vector_size(IRC_VL * 4)));
typedef int32_t irc_veci __attribute__((vector_size(IRC_VL * 4)));

// maximum/minimum that propagate NaN, as arith.maximumf/minimumf (and torch.maximum) do; a tie
// gives b. `a > b ? a : b` is one vmaxps (it returns b when either is NaN), then a's NaN is put
// back: 3 instructions. (`a != a || a > b ? a : b` was 1.3x slower, in mask logic.)
IRC_MATH float irc_maxf(float a, float b) { const float m = a > b ? a : b; return a != a ? a : m; }
IRC_MATH float irc_minf(float a, float b) { const float m = a < b ? a : b; return a != a ? a : m; }
IRC_MATH irc_vec irc_maxf(irc_vec a, irc_vec b) { const irc_vec m = a > b ? a : b; return a != a ? a : m; }
IRC_MATH irc_vec irc_minf(irc_vec a, irc_vec b) { const irc_vec m = a < b ? a : b; return a != a ? a : m; }
// The same against a bound k that is not NaN (a constant: relu, relu6, clamp): one vmaxps/vminps,
// `k > a ? k : a`, NaN in a propagating. A tie gives a, so relu(-0.0) is -0.0, as torch's clamp
// family gives (irc_maxf gives k). The emitter passes k through irc_opaque once per function:
// GCC folds a literal bound into compare-and-blend chains (relu6: 4x the cost).
IRC_MATH float irc_maxk(float a, float k) { return k > a ? k : a; }
IRC_MATH float irc_mink(float a, float k) { return k < a ? k : a; }
IRC_MATH irc_vec irc_maxk(irc_vec a, irc_vec k) { return k > a ? k : a; }
IRC_MATH irc_vec irc_mink(irc_vec a, irc_vec k) { return k < a ? k : a; }
// x, but a value the compiler cannot fold (the bounds above): no instruction.
IRC_MATH float irc_opaque(float x) { __asm__("" : "+r"(x)); return x; }

IRC_MATH int32_t irc_bits(float x) { int32_t i; __builtin_memcpy(&i, &x, 4); return i; }
IRC_MATH irc_veci irc_bits(irc_vec x) { return (irc_veci)x; }
IRC_MATH float irc_float(int32_t i) { float x; __builtin_memcpy(&x, &i, 4); return x; }
IRC_MATH irc_vec irc_float(irc_veci i) { return (irc_vec)i; }
IRC_MATH float irc_i2f(int32_t i) { return (float)i; }
IRC_MATH irc_vec irc_i2f(irc_veci i) { return __builtin_convertvector(i, irc_vec); }
IRC_MATH float irc_fma(float a, float b, float c) {
#ifdef __FMA__
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
IRC_MATH irc_vec irc_fma(irc_vec a, irc_vec b, irc_vec c) {
#if IRC_VL == 16 && defined(__AVX512F__)
  return __builtin_ia32_vfmaddps512_mask(a, b, c, (unsigned short)-1, 4);
#elif IRC_VL == 8 && defined(__FMA__)
  return __builtin_ia32_vfmaddps256(a, b, c);
#elif IRC_VL == 4 && defined(__FMA__)
  return __builtin_ia32_vfmaddps(a, b, c);
#else
  return a * b + c;
#endif
}
// x in every lane: a broadcast (`irc_vec{} + x` was one too, plus an add of 0 that GCC must keep,
// because 0 + -0 is +0: an extra vaddps on the FMA ports per splat, and -0 turned into +0).
IRC_MATH irc_vec irc_vsplat(float x) {
#if IRC_VL == 16
  return irc_vec{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#elif IRC_VL == 8
  return irc_vec{x, x, x, x, x, x, x, x};
#else
  return irc_vec{x, x, x, x};
#endif
}
IRC_MATH irc_vec irc_vload(const float* p) { irc_vec v; __builtin_memcpy(&v, p, sizeof v); return v; }
IRC_MATH void irc_vstore(float* p, irc_vec v) { __builtin_memcpy(p, &v, sizeof v); }
// The first n (0 <= n <= IRC_VL) lanes of v to p[0, n); nothing past them is read or written
// (another thread may own it): one masked store where the CPU has them.
IRC_MATH void irc_vstore_n(float* p, irc_vec v, int64_t n) {
#if IRC_VL == 16 && defined(__AVX512F__)
  __builtin_ia32_storeups512_mask(p, v, (unsigned short)((1u << n) - 1));
#elif IRC_VL == 8 && defined(__AVX__)
  irc_veci lane = {0, 1, 2, 3, 4, 5, 6, 7};
  __builtin_ia32_maskstoreps256((irc_vec*)p, (irc_veci)(lane < (int32_t)n), v);
#else
  for (int64_t q = 0; q < n; ++q) p[q] = v[q];
#endif
}
// v's halves swapped.
IRC_MATH irc_vec irc_swap_halves(irc_vec v) {
#if IRC_VL == 16
  return __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
#elif IRC_VL == 8
  return __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3);
#else
  return __builtin_shufflevector(v, v, 2, 3, 0, 1);
#endif
}
// p[0, n) in the first n (0 <= n <= IRC_VL) lanes, zeros in the others; nothing past p + n is
// read (it may be unmapped): one masked load where the CPU has them.
IRC_MATH irc_vec irc_vload_n(const float* p, int64_t n) {
#if IRC_VL == 16 && defined(__AVX512F__)
  return __builtin_ia32_loadups512_mask(p, irc_vec{}, (unsigned short)((1u << n) - 1));
#elif IRC_VL == 8 && defined(__AVX__)
  irc_veci lane = {0, 1, 2, 3, 4, 5, 6, 7};
  return __builtin_ia32_maskloadps256((const irc_vec*)p, (irc_veci)(lane < (int32_t)n));
#else
  irc_vec v = irc_vec{};
  for (int64_t q = 0; q < n; ++q) v[q] = p[q];
  return v;
#endif
}
// Lanes [lo, hi) of v (0 <= lo <= hi <= IRC_VL) to p[lo, hi); nothing else is read or written.
IRC_MATH void irc_vstore_lanes(float* p, irc_vec v, int64_t lo, int64_t hi) {
#if IRC_VL == 16 && defined(__AVX512F__)
  __builtin_ia32_storeups512_mask(p, v, (unsigned short)(((1u << hi) - 1) & ~((1u << lo) - 1)));
#elif IRC_VL == 8 && defined(__AVX__)
  irc_veci lane = {0, 1, 2, 3, 4, 5, 6, 7};
  __builtin_ia32_maskstoreps256((irc_vec*)p, (irc_veci)((lane >= (int32_t)lo) & (lane < (int32_t)hi)), v);
#else
  for (int64_t q = lo; q < hi; ++q) p[q] = v[q];
#endif
}
template <class F> IRC_MATH F irc_k(float c) { return F{} + c; }  // c in every lane
// op over a vector's lanes, folded in halves: log2(IRC_VL) dependent steps, not IRC_VL - 1
// (a softmax row of 128 spent as long folding its max and sum lane by lane as on its exps).
// op takes two floats or two narrower vectors of floats (a generic lambda).
template <class Op> IRC_MATH float irc_fold(irc_vec v, const Op& op) {
#if IRC_VL == 16
  const auto w8 = op(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7),
                     __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
  const auto w = op(__builtin_shufflevector(w8, w8, 0, 1, 2, 3), __builtin_shufflevector(w8, w8, 4, 5, 6, 7));
#elif IRC_VL == 8
  const auto w = op(__builtin_shufflevector(v, v, 0, 1, 2, 3), __builtin_shufflevector(v, v, 4, 5, 6, 7));
#else
  const auto w = v;
#endif
  return op(op(w[0], w[2]), op(w[1], w[3]));
}

// dst[b*ldd + a] = src[a*lds + b] for b < nb, a < na: a transpose tile, IRC_VL x IRC_VL blocks
// in registers (log2(IRC_VL) stages of two-vector shuffles; stage h swaps bit h of the row and
// the column index), the ragged edges element by element. NHWC -> NCHW on 28x28x64 in 16 x 64
// tiles, one thread, standalone: 10.8 us as scalar loops, 6.7 us here (AVX2: 15.3 -> 5.6).
template <int... J> struct irc_lanes {};
template <int N, int... J> struct irc_make_lanes : irc_make_lanes<N - 1, N - 1, J...> {};
template <int... J> struct irc_make_lanes<0, J...> { using type = irc_lanes<J...>; };
template <int H, int... J> static inline void irc_swap_bit(irc_vec& x, irc_vec& y, irc_lanes<J...>) {
  const irc_vec lo = __builtin_shufflevector(x, y, ((J & H) ? IRC_VL + J - H : J)...);
  const irc_vec hi = __builtin_shufflevector(x, y, ((J & H) ? IRC_VL + J : J + H)...);
  x = lo;
  y = hi;
}
template <int H> static inline void irc_transpose_block(irc_vec* r) {
  for (int i = 0; i < IRC_VL; ++i)
    if (!(i & H)) irc_swap_bit<H>(r[i], r[i + H], typename irc_make_lanes<IRC_VL>::type{});
  if constexpr (H > 1) irc_transpose_block<H / 2>(r);
}
static inline void irc_transpose(const float* __restrict__ src, int64_t lds, float* __restrict__ dst, int64_t ldd,
                                 int64_t nb, int64_t na) {
  int64_t b0 = 0;
  for (; b0 + IRC_VL <= nb; b0 += IRC_VL) {
    int64_t a0 = 0;
    for (; a0 + IRC_VL <= na; a0 += IRC_VL) {
      irc_vec r[IRC_VL];
      for (int i = 0; i < IRC_VL; ++i) r[i] = irc_vload(src + (a0 + i) * lds + b0);
      irc_transpose_block<IRC_VL / 2>(r);
      for (int i = 0; i < IRC_VL; ++i) irc_vstore(dst + (b0 + i) * ldd + a0, r[i]);
    }
    for (int64_t b = b0; b < b0 + IRC_VL; ++b)
      for (int64_t a = a0; a < na; ++a) dst[b * ldd + a] = src[a * lds + b];
  }
  for (int64_t b = b0; b < nb; ++b)
    for (int64_t a = 0; a < na; ++a) dst[b * ldd + a] = src[a * lds + b];
}

// c0 + x * (c1 + x * (c2 + ...)), Horner with FMAs
template <class F> IRC_MATH F irc_poly(F, float c) { return irc_k<F>(c); }
template <class F, class... R> IRC_MATH F irc_poly(F x, float c, R... rest) {
  return irc_fma(irc_poly(x, rest...), x, irc_k<F>(c));
}
template <class F> IRC_MATH F irc_absf(F x) { return irc_float(irc_bits(x) & 0x7fffffff); }
template <class F> IRC_MATH F irc_copysign(F x, F s) {  // |x| with the sign of s
  return irc_float((irc_bits(x) & 0x7fffffff) | (irc_bits(s) & (int32_t)0x80000000));
}

#ifndef IRC_LIBM
// exp's core, shared by irc_exp and irc_exp_normal: x = n ln2 + r, |r| <= ln2/2 (n, unclamped,
// into `n`); returns exp(r) by Cephes' degree-6 polynomial, its inner part evaluated
// Estrin-style (three independent pairs, so the chain is 3 FMAs deep, not 5).
template <class F, class I> IRC_MATH F irc_exp_core(F x, I& n) {
  const F shifter = irc_k<F>(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  F kf = irc_fma(x, irc_k<F>(1.44269504088896341f), shifter);
  n = irc_bits(kf) - 0x4b400000;
  kf = kf - shifter;
  F r = irc_fma(kf, irc_k<F>(-0.693359375f), x);
  r = irc_fma(kf, irc_k<F>(2.12194440e-4f), r);
  const F r2 = r * r;
  const F a = irc_fma(irc_k<F>(1.6666665459e-1f), r, irc_k<F>(5.0000001201e-1f));
  const F b = irc_fma(irc_k<F>(8.3334519073e-3f), r, irc_k<F>(4.1665795894e-2f));
  const F c = irc_fma(irc_k<F>(1.9875691500e-4f), r, irc_k<F>(1.3981999507e-3f));
  const F q = irc_fma(irc_fma(c, r2, b), r2, a);
  return irc_fma(q, r2, r) + 1.0f;
}

// exp: irc_exp_core times 2^n in two steps so results in the subnormal range round once. Above
// 88.8 the result is inf and below -104 it is 0 (where the formula itself gives inf and 0):
// those selects come last and only n is clamped (integer min/max, so the shifts stay defined),
// off the critical path of the polynomial. A NaN compares false, flows through the arithmetic
// and comes out NaN.
template <class F> IRC_MATH F irc_exp(F x) {
  decltype(irc_bits(x)) n;
  const F p = irc_exp_core(x, n);
  n = n > 128 ? decltype(n){} + 128 : n;
  n = n < -150 ? decltype(n){} - 150 : n;
  const auto n1 = n >> 1;
  const auto n2 = n - n1;
  F y = p * irc_float((n1 + 127) << 23) * irc_float((n2 + 127) << 23);
  y = x > 88.8f ? irc_k<F>(__builtin_inff()) : y;
  return x < -104.0f ? irc_k<F>(0.0f) : y;
}

// exp where the result is a normal float and n <= 127 (x in [-87.3, 88.3]): irc_exp_core times
// 2^n in one step, without the inf/0 selects (bit for bit irc_exp there). Elsewhere it returns
// some finite value or NaN that the caller must not use (n is clamped so the shift is defined).
template <class F> IRC_MATH F irc_exp_normal(F x) {
  decltype(irc_bits(x)) n;
  const F p = irc_exp_core(x, n);
  n = n > 127 ? decltype(n){} + 127 : n;
  n = n < -126 ? decltype(n){} - 126 : n;
  return p * irc_float((n + 127) << 23);
}

// log: x = m 2^e with m in [sqrt(1/2), sqrt(2)); log(m) by Cephes' degree-9 polynomial in m - 1.
template <class F> IRC_MATH F irc_log(F x) {
  const F xs = x < 1.17549435e-38f ? x * 8388608.0f : x;  // subnormal: scale by 2^23 first
  const F eadj = x < 1.17549435e-38f ? -23.0f : 0.0f;
  const auto bits = irc_bits(xs);
  F e = irc_i2f(((bits >> 23) & 0xff) - 126) + eadj;
  F m = irc_float((bits & 0x007fffff) | 0x3f000000);  // [0.5, 1)
  const auto small = m < 0.707106781186547524f;
  e = small ? e - 1.0f : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  const F z = m * m;
  F y = irc_poly(m, 3.3333331174e-1f, -2.4999993993e-1f, 2.0000714765e-1f, -1.6668057665e-1f,
                 1.4249322787e-1f, -1.2420140846e-1f, 1.1676998740e-1f, -1.1514610310e-1f,
                 7.0376836292e-2f) * m * z;
  y = irc_fma(e, irc_k<F>(-2.12194440e-4f), y);
  y = irc_fma(z, irc_k<F>(-0.5f), y);
  F r = irc_fma(e, irc_k<F>(0.693359375f), m + y);
  r = x > 3.40282347e38f ? x : r;                   // +inf
  r = x == 0.0f ? -__builtin_inff() : r;            // log(±0) = -inf
  r = x < 0.0f ? __builtin_nanf("") : r;            // log(negative) = NaN
  return x != x ? x : r;
}

// tanh: |x| < 0.625: Cephes' odd polynomial; else 1 - 2 / (exp(2|x|) + 1); with x's sign.
template <class F> IRC_MATH F irc_tanh(F x) {
  const F a = irc_absf(x);
  const F z = x * x;
  const F small = irc_fma(irc_poly(z, -3.33332819422e-1f, 1.33314422036e-1f, -5.37397155531e-2f,
                                   2.06390887954e-2f, -5.70498872745e-3f) * z, x, x);
  const F large = 1.0f - 2.0f / (irc_exp(a + a) + 1.0f);
  return irc_copysign(a < 0.625f ? small : large, x);  // odd; and tanh(-0) = -0
}

// erf: |x| < 0.9277: x + x P(x^2); else 1 - exp(t Q(t) - t), t = |x|, with x's sign; erf is
// 1 from t = 4 on (where it rounds to 1). Q's degree-7 polynomial is split in two halves that
// run in parallel, and t is not clamped before it (the select for t >= 4 comes last), so the
// chain before the exp is 4 FMAs deep. Below t = 4, t Q(t) - t is in [-17, -0.9], where
// irc_exp_normal is irc_exp bit for bit, one multiply and two selects shorter.
template <class F> IRC_MATH F irc_erf(F x) {
  const F s = x * x;
  const F small = irc_fma(irc_poly(s, 1.28379166e-1f, -3.76125336e-1f, 1.12819925e-1f,
                                   -2.67681349e-2f, 4.99119423e-3f, -5.96761703e-4f), x, x);
  const F t = irc_absf(x);
  const F t2 = t * t;
  F q = irc_fma(irc_fma(irc_k<F>(-1.72853470e-5f), t, irc_k<F>(3.83197126e-4f)), t2,
                irc_fma(irc_k<F>(-3.88396438e-3f), t, irc_k<F>(2.42546219e-2f)));
  const F lo = irc_fma(irc_fma(irc_k<F>(-1.06777877e-1f), t, irc_k<F>(-6.34846687e-1f)), t,
                       irc_k<F>(-1.28717512e-1f));
  q = irc_fma(q, t2 * t, lo);
  q = irc_fma(q, t, -t);
  F large = 1.0f - irc_exp_normal(q);
  large = t < 4.0f ? large : irc_k<F>(1.0f);
  return t > 0.927734375f ? irc_copysign(large, x) : small;  // NaN: small, which is NaN
}
#else
IRC_MATH float irc_exp(float x) { return __builtin_expf(x); }
IRC_MATH float irc_log(float x) { return __builtin_logf(x); }
IRC_MATH float irc_tanh(float x) { return __builtin_tanhf(x); }
IRC_MATH float irc_erf(float x) { return __builtin_erff(x); }
#define IRC_LANEWISE(f) \
  IRC_MATH irc_vec f(irc_vec x) { irc_vec r; for (int i = 0; i < IRC_VL; ++i) r[i] = f(x[i]); return r; }
IRC_LANEWISE(irc_exp) IRC_LANEWISE(irc_log) IRC_LANEWISE(irc_tanh) IRC_LANEWISE(irc_erf)
#undef IRC_LANEWISE
#endif
IRC_MATH float irc_sqrt(float x) { return __builtin_sqrtf(x); }
IRC_MATH irc_vec irc_sqrt(irc_vec x) { irc_vec r; for (int i = 0; i < IRC_VL; ++i) r[i] = __builtin_sqrtf(x[i]); return r; }
// ---- end of vectorizable float math ----
