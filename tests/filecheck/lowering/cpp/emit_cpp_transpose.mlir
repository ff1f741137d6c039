// RUN: irc-opt %s -p 'irc-to-loops' | irc-opt -t cpp | filecheck %s
// RUN: irc-opt %s -p 'irc-to-loops' | irc-opt -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// A transpose tile (irc-to-loops marks its `b` loop irc.transpose) is one irc_transpose call:
// IRC_VL x IRC_VL blocks transposed in registers, the ragged edges element by element. NHWC ->
// NCHW on 1x20x15x3 is [1, 300, 3] -> [1, 3, 300] through views, in tiles of 3 rows x 60 columns.

// CHECK:       static inline void irc_transpose(const float* __restrict__ src, int64_t lds, float* __restrict__ dst, int64_t ldd,
// CHECK-LABEL: extern "C" void nhwc_to_nchw(
// CHECK:         // kernel 0: irt.transpose -> 1x3x20x15
// CHECK-NEXT:    #pragma omp parallel for collapse(3) schedule(static)
// CHECK-NEXT:    for (int64_t i0 = 0; i0 < 1; ++i0)
// CHECK-NEXT:    for (int64_t i1 = 0; i1 < 1; ++i1)
// CHECK-NEXT:    for (int64_t i2 = 0; i2 < 5; ++i2)
// CHECK-NEXT:    {
// CHECK-NEXT:      {{.*}}const int64_t [[B0:v[0-9]+]] = i1 * 3;
// CHECK-NEXT:      {{.*}}const int64_t [[B1:v[0-9]+]] = [[B0]] + 3;
// CHECK-NEXT:      {{.*}}const int64_t [[A0:v[0-9]+]] = i2 * 60;
// CHECK-NEXT:      {{.*}}const int64_t [[A1:v[0-9]+]] = [[A0]] + 60;
// CHECK-NEXT:      irc_transpose(&{{view[0-9]*}}[i0*900 + [[A0]]*3 + [[B0]]], 3, &{{view[0-9]*}}[i0*900 + [[B0]]*300 + [[A0]]], 300, [[B1]] - [[B0]], [[A1]] - [[A0]]);
// CHECK-NEXT:    }
func.func @nhwc_to_nchw(%x: tensor<1x20x15x3xf32>) -> tensor<1x3x20x15xf32> {
  %t = irt.transpose %x [0, 3, 1, 2] : (tensor<1x20x15x3xf32>) -> tensor<1x3x20x15xf32>
  func.return %t : tensor<1x3x20x15xf32>
}

// An output row of 16 columns (one 16-float vector) is walked untiled, element by element.
// CHECK-LABEL: extern "C" void narrow(
// CHECK-NOT:     irc_transpose(
// CHECK:         out0[i0*16 + i1] = {{.*}};
func.func @narrow(%x: tensor<16x40xf32>) -> tensor<40x16xf32> {
  %t = irt.transpose %x [1, 0] : (tensor<16x40xf32>) -> tensor<40x16xf32>
  func.return %t : tensor<40x16xf32>
}
