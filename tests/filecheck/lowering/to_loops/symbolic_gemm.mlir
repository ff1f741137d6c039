// RUN: irc-opt %s -p irc-fuse,irc-to-loops | filecheck %s
// RUN: irc-opt %s -p 'irc-fuse,irc-to-loops{strict=true}' | filecheck %s --check-prefix=STRICT
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize,irc-parallelize -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize,irc-parallelize -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp
// RUN: irc-opt %s -p 'irc-fuse,irc-to-loops{threads=1}' -t cpp -o %t1.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t1.cpp

!X = tensor<?x?x48xf32, #irt.dims<"s0", "s1">>
!Y = tensor<?x?x40xf32, #irt.dims<"s0", "s1">>
!MK = tensor<?x?xf32, #irt.dims<"s0", "s1">>
!KN = tensor<?x?xf32, #irt.dims<"s1", "s2">>
!MN = tensor<?x?xf32, #irt.dims<"s0", "s2">>

// Run-time M (a language model's batch x sequence rows; N and K are the weight's): the lhs and
// the result are seen as [s0 * s1, K] and [s0 * s1, N] (views with a run-time size), the sizes
// list holds M as an index value, and the tiles that depend on M (MC; NC and MS, which split the
// work between the 2 threads by rows or by columns) are computed by arith ops at call time with
// the same rule the static sizes use (KC: static, K = 48 is one step whatever M is; a
// longer K's step would depend on M too, see C_PASS_WEIGHT). Whether the
// product runs on threads (2MNK >= 400000 FLOPs) is decided at call time: `parallel 1 if %p`.
// CHECK-LABEL: func.func @rows(%s0: index, %s1: index, %x: memref<?x?x48xf32, #irt.dims<"s0", "s1">>,
// CHECK:         %[[M:.*]] = arith.muli %s0, %s1 : index
// CHECK:         %[[FLOPS:.*]] = arith.muli %{{.*}}, %c3840 : index
// CHECK:         %[[C:.*]] = memref.reinterpret_cast %out0 to offset: [0], sizes: [%[[M]], 40], strides: [40, 1] : memref<?x?x40xf32, #irt.dims<"s0", "s1">> to memref<?x40xf32, #irt.dims<"s0 * s1">>
// CHECK:         %[[A:.*]] = memref.reinterpret_cast %x to offset: [0], sizes: [%[[M]], 48], strides: [48, 1]
// CHECK:         %[[MC:.*]] = arith.minsi %{{.*}}, %c852 : index
// CHECK:         %[[NC:.*]] = arith.maxsi %{{.*}}, %c16 : index
// CHECK:         %[[MS:.*]] = arith.maxsi %{{.*}}, %c1 : index
// CHECK-NEXT:    %[[P:.*]] = arith.cmpi sge, %[[FLOPS]], %c400000 : index
// CHECK-NEXT:    irl.gemm nk %[[A]], %w -> %[[C]] epilogue(%b : memref<40xf32>) sizes [%[[M]], 40, 48] tiles [%[[MC]], %[[NC]], 48, %[[MS]]] strides [0, 0, 1] parallel 1 if %[[P]] : memref<?x48xf32, #irt.dims<"s0 * s1">>, memref<40x48xf32>, memref<?x40xf32, #irt.dims<"s0 * s1">> attributes {irc.kernel = "irt.contract linear (irt.linear + irt.relu) -> s0xs1x40"} {
// CPP-LABEL: extern "C" void rows(const int64_t s0, const int64_t s1, float* __restrict__ x, float* __restrict__ w, float* __restrict__ b, float* __restrict__ out0)
// CPP:         const bool [[P:.*]] = [[FLOPS:.*]] >= 400000;
// CPP:         const irc_dense<IRC_MMR, false> irc_a{[[A:.*]], 48, [[M:.*]]};
// CPP:         irc_gemm([[M]], 40, 48, irc_a, irc_b, irc_c, 40, irc_epi, [[MC:.*]], [[NC:.*]], 48, [[MS:.*]], [[P]]);
func.func @rows(%x: !X, %w: tensor<40x48xf32>, %b: tensor<40xf32>) -> !Y {
  %y = irt.linear %x, %w, %b : (!X, tensor<40x48xf32>, tensor<40xf32>) -> !Y
  %r = irt.relu %y : !Y
  func.return %r : !Y
}

// Every size a symbol (attention's q @ k^T and p @ v): every tile is computed at call time; the
// residual of the result's shape is read with a run-time row stride (N = s2).
// CHECK-LABEL: func.func @all_runtime(%s0: index, %s1: index, %s2: index,
// CHECK:         irl.gemm kn %a, %c -> %out0 epilogue(%r : memref<?x?xf32, #irt.dims<"s0", "s2">>) sizes [%s0, %s2, %s1] tiles [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] strides [0, %s2, 1] parallel 1 if %{{.*}} :
// CPP-LABEL: extern "C" void all_runtime(const int64_t s0, const int64_t s1, const int64_t s2,
// CPP:         const auto irc_b = irc_dense<IRC_NR, true>{c, s2, s2};
// CPP:         const V [[E:.*]] = irc_ld<V>(r + irc_row*s2 + j);
// CPP:         irc_gemm(s0, s2, s1, irc_a, irc_b, irc_c, s2, irc_epi,
// In a strict build the product stays on the scalar nest, its bounds the size arguments.
// STRICT-LABEL: func.func @all_runtime(
// STRICT:         "scf.parallel"(%c0, %c0, %s0, %s2, %c1, %c1)
// STRICT:           scf.for %k = %c0 to %s1 step %c1 iter_args(%acc = %{{.*}}) -> (f32) {
func.func @all_runtime(%a: !MK, %c: !KN, %r: !MN) -> !MN {
  %z = irt.matmul %a, %c : (!MK, !KN) -> !MN
  %s = irt.add %z, %r : (!MN, !MN) -> !MN
  func.return %s : !MN
}

// Static sizes are decided at compile time, as before: constant tiles, `parallel 0|1`.
// CHECK-LABEL: func.func @fixed
// CHECK:         irl.gemm nk %x, %w -> %out0 sizes [128, 256, 256] tiles [132, 128, 256, 128] strides [] parallel 1 :
func.func @fixed(%x: tensor<128x256xf32>, %w: tensor<256x256xf32>) -> tensor<128x256xf32> {
  %y = irt.linear %x, %w : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
  func.return %y : tensor<128x256xf32>
}
