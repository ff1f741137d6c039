// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t 'cpp{vector_width=16}' | filecheck %s
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t 'cpp{vector_width=16}' -o %t16.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t16.cpp
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t 'cpp{vector_width=4}' -o %t4.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t4.cpp

// A max or min against a constant that is not NaN (relu's 0, relu6's 0 and 6, a clamp's bounds)
// is irc_maxk/irc_mink: one vmaxps/vminps, NaN in the other operand propagating. Each distinct
// bound is declared once at the top of the function through irc_opaque, which GCC cannot fold
// (a literal bound, it turns into compare-and-mask chains: relu6 cost 4x). -0.0 is a bound of its
// own (clamp's max -0.0 must not become +0.0). A max of two run-time values (the max pool's
// window) stays irc_maxf, which propagates NaN from both.

// CHECK-LABEL: extern "C" void bounds(
// CHECK-NEXT:  {
// CHECK-DAG:     const float [[ZERO:irc_bound[0-9]+]] = irc_opaque(0.0f);
// CHECK-DAG:     const float [[SIX:irc_bound[0-9]+]] = irc_opaque(6.0f);
// CHECK-DAG:     const float [[MINUS:irc_bound[0-9]+]] = irc_opaque(-1.0f);
// CHECK-DAG:     const float [[NEGZERO:irc_bound[0-9]+]] = irc_opaque(-0.0f);
// CHECK-NOT:     irc_opaque
// CHECK:         // kernel 0: irt.elementwise (irt.relu6 + irt.clamp)
// CHECK:           const float [[R0:v[0-9]+]] = irc_maxk({{v[0-9]+}}, [[ZERO]]);
// CHECK-NEXT:      const float [[R1:v[0-9]+]] = irc_mink([[R0]], [[SIX]]);
// CHECK-NEXT:      const float [[C0:v[0-9]+]] = irc_maxk([[R1]], [[MINUS]]);
// CHECK-NEXT:      const float {{v[0-9]+}} = irc_mink([[C0]], [[NEGZERO]]);
// GEMM epilogues run on the engine's vectors (a generic lambda): the bound is splat.
// CHECK:         // kernel 1: irt.contract linear (irt.linear + irt.relu)
// CHECK:           const V {{v[0-9]+}} = irc_maxk(acc, irc_splat<V>([[ZERO]]));
// CHECK:         // kernel 2: irt.max_pool2d
// CHECK-NOT:     irc_maxk
// CHECK:           const float {{v[0-9]+}} = irc_maxf({{v[0-9]+}}, {{v[0-9]+}});
// CHECK-LABEL: extern "C" void bounds__argv(
func.func @bounds(%x: tensor<4x40xf32>, %w: tensor<24x40xf32>, %img: tensor<1x2x8x8xf32>) -> (tensor<4x40xf32>, tensor<4x24xf32>, tensor<1x2x4x4xf32>) {
  %r = irt.relu6 %x : tensor<4x40xf32>
  %c = irt.clamp %r min -1.000000e+00 max -0.000000e+00 : tensor<4x40xf32>
  %l = irt.linear %x, %w : (tensor<4x40xf32>, tensor<24x40xf32>) -> tensor<4x24xf32>
  %h = irt.relu %l : tensor<4x24xf32>
  %p = irt.max_pool2d %img kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  func.return %c, %h, %p : tensor<4x40xf32>, tensor<4x24xf32>, tensor<1x2x4x4xf32>
}
