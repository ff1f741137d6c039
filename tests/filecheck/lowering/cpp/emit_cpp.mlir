// RUN: irc-opt %s -p 'irc-fuse,irc-to-loops{strict=true},irc-vectorize' | irc-opt -t cpp | filecheck %s
// RUN: irc-opt %s -p 'irc-fuse,irc-to-loops{strict=true},irc-vectorize' | irc-opt -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// The scalar loop nests (irc-to-loops{strict=true} lowers contractions to them instead of the GEMM
// engine, see to_loops/gemm.mlir) with irc-vectorize's marks, emitted by the default (non-strict) target.

// Both functions form one module (one translation unit, one prelude).

// A two-layer MLP: one extern "C" entry, one fused kernel per Linear+ReLU, OpenMP on the
// parallel dimensions, a SIMD reduction over K, the intermediate allocated and freed.

// CHECK:       #define IRC_VL 8
// CHECK:       #include <cstdint>
// CHECK-NOT:   #include <{{(vector|algorithm|cmath|iostream)}}>
// CHECK:       typedef float irc_vec __attribute__((vector_size(IRC_VL * 4)));
// CHECK:       template <class F> IRC_MATH F irc_exp(F x) {
// ReLU's bound 0 is declared once per function through irc_opaque, and each ReLU is
// irc_maxk against it (one vmaxps: GCC folds a literal bound into compare and mask logic).
// CHECK-LABEL: extern "C" void mlp(float* __restrict__ x, float* __restrict__ w1, float* __restrict__ b1, float* __restrict__ w2, float* __restrict__ b2, float* __restrict__ out0)
// CHECK-NEXT:  {
// CHECK-NEXT:    const float [[ZERO:irc_bound0]] = irc_opaque(0.0f);
// CHECK-NOT:     irc_opaque
// CHECK:         float* __restrict__ h = static_cast<float*>(std::aligned_alloc(64, 128));
// CHECK-NEXT:    // kernel 0: irt.contract linear (irt.linear + irt.relu) -> 2x16
// CHECK-NEXT:    #pragma omp parallel for collapse(2) schedule(static)
// CHECK-NEXT:    for (int64_t i0 = 0; i0 < 2; ++i0)
// CHECK-NEXT:    for (int64_t i1 = 0; i1 < 16; ++i1)
// CHECK-NEXT:    {
// CHECK-NEXT:      float acc = 0.0f;
// CHECK-NEXT:      #pragma omp simd reduction(+:acc)
// CHECK-NEXT:      for (int64_t k = 0; k < 8; ++k)
// CHECK-NEXT:      {
// CHECK-NEXT:        const float [[X:v[0-9]+]] = x[i0*8 + k];
// CHECK-NEXT:        const float [[W:v[0-9]+]] = w1[i1*8 + k];
// CHECK-NEXT:        const float [[P:v[0-9]+]] = [[X]] * [[W]];
// CHECK-NEXT:        const float [[S:v[0-9]+]] = acc + [[P]];
// CHECK-NEXT:        acc = [[S]];
// CHECK-NEXT:      }
// CHECK-NEXT:      const float [[B:v[0-9]+]] = b1[i1];
// CHECK-NEXT:      const float [[Y:v[0-9]+]] = acc + [[B]];
// CHECK-NEXT:      const float [[R:v[0-9]+]] = irc_maxk([[Y]], [[ZERO]]);
// CHECK-NEXT:      h[i0*16 + i1] = [[R]];
// CHECK-NEXT:    }
// CHECK-NEXT:    // kernel 1: irt.contract linear (irt.linear + irt.relu) -> 2x4
// CHECK-NEXT:    #pragma omp parallel for collapse(2) schedule(static)
// CHECK:           out0[i0_{{[0-9]+}}*4 + i1_{{[0-9]+}}] =
// CHECK:         std::free(h);
// CHECK-NEXT:    return;
// CHECK-NEXT:  }
// The twins: one array of pointers (the wrapper's call), and every buffer's dtype and shape in
// order, which irc.load checks an artifact's manifest and weights against.
// CHECK-NEXT:  extern "C" void mlp__argv(void* const* a) { mlp(static_cast<float*>(a[0]), {{.*}}, static_cast<float*>(a[5])); }
// CHECK-NEXT:  extern "C" const char* mlp__signature() { return "{\"args\":{{\[\[}}\"float32\",{{\[}}2,8]],{{\[}}\"float32\",{{\[}}16,8]],{{\[}}\"float32\",{{\[}}16]],{{\[}}\"float32\",{{\[}}4,16]],{{\[}}\"float32\",{{\[}}4]],{{\[}}\"float32\",{{\[}}2,4]]]}"; }
func.func @mlp(%x: tensor<2x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<4x16xf32>, %b2: tensor<4xf32>) -> tensor<2x4xf32> {
  %l1 = irt.linear %x, %w1, %b1 : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %h = irt.relu %l1 : tensor<2x16xf32>
  %l2 = irt.linear %h, %w2, %b2 : (tensor<2x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %y = irt.relu %l2 : tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// Elementwise math calls the prelude's inline, vectorizable irc_erf/irc_tanh/irc_exp (no <cmath>,
// no libm call); views are pointer aliases.

// CHECK-LABEL: extern "C" void act(float* __restrict__ x, float* __restrict__ out0)
// CHECK:         {{\[\[maybe_unused\]\]}} float* __restrict__ {{.*}} = out0 + 0;  // view as memref<4x4xf32>
// CHECK:         // kernel 2: irt.elementwise (irt.gelu + irt.tanh + irt.sigmoid) -> 4x4
// CHECK:         irc_erf(
// CHECK:         irc_tanh(
// CHECK:         irc_exp(
func.func @act(%x: tensor<4x4xf32>) -> tensor<16xf32> {
  %g = irt.gelu %x : tensor<4x4xf32>
  %t = irt.tanh %g : tensor<4x4xf32>
  %s = irt.sigmoid %t : tensor<4x4xf32>
  %f = irt.reshape %s : (tensor<4x4xf32>) -> tensor<16xf32>
  func.return %f : tensor<16xf32>
}

// A long reduction (300 iterations, constant bounds: irc-vectorize marks it `irc.chunk = 64`,
// see emit_cpp_schedule.mlir for the printing alone) keeps 64 partial results, filled a chunk
// of 64 iterations at a time under `omp simd` (independent vector accumulators instead of one
// that waits on the add's latency), combines them, then runs the 44 remaining iterations.
// Softmax's row max starts its partial results at -inf and combines them with irc_maxf.

// CHECK-LABEL: extern "C" void long_rows(
// CHECK:         float [[ACC:acc[0-9_]*]] = 0.0f;
// CHECK-NEXT:    float [[P:acc[0-9_]*_parts]][64];
// CHECK-NEXT:    for (int irc_j = 0; irc_j < 64; ++irc_j) [[P]][irc_j] = 0.0f;
// CHECK-NEXT:    for (int64_t [[C:chunk[0-9_]*]] = 0; [[C]] < 256; [[C]] += 64)
// CHECK:           #pragma omp simd
// CHECK-NEXT:      for (int64_t [[I:[a-z0-9_]+]] = [[C]]; [[I]] < [[C]] + 64; ++[[I]])
// CHECK:             [[P]][[[I]] - [[C]]] = {{v[0-9]+}};
// CHECK:         #pragma omp simd reduction(+:[[ACC]])
// CHECK-NEXT:    for (int irc_j = 0; irc_j < 64; ++irc_j) [[ACC]] = [[ACC]] + [[P]][irc_j];
// CHECK-NEXT:    #pragma omp simd reduction(+:[[ACC]])
// CHECK-NEXT:    for (int64_t {{[a-z0-9_]+}} = 256; {{[a-z0-9_]+}} < 300; ++{{[a-z0-9_]+}})
// CHECK:         float [[MP:acc[0-9_]*_parts]][64];
// CHECK-NEXT:    for (int irc_j = 0; irc_j < 64; ++irc_j) [[MP]][irc_j] = -__builtin_inff();
// CHECK:         #pragma omp simd reduction(max:[[MAX:acc[0-9_]*]])
// CHECK-NEXT:    for (int irc_j = 0; irc_j < 64; ++irc_j) [[MAX]] = irc_maxf([[MAX]], [[MP]][irc_j]);
func.func @long_rows(%x: tensor<4x300xf32>) -> (tensor<4xf32>, tensor<4x300xf32>) {
  %s = irt.reduce sum %x [1] : (tensor<4x300xf32>) -> tensor<4xf32>
  %p = irt.softmax %x dim -1 : tensor<4x300xf32>
  func.return %s, %p : tensor<4xf32>, tensor<4x300xf32>
}
