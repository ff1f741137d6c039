// RUN: irc-opt %s -p irc-to-loops | filecheck %s
// RUN: irc-opt %s -p irc-to-loops,irc-vectorize,irc-parallelize -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-to-loops,irc-vectorize,irc-parallelize -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

!C = tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
!N = tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>
!T = tensor<?x4x?x16xf32, #irt.dims<"s0", "s1 + s2">>
!X = tensor<?x?x8xf32, #irt.dims<"s0", "s1">>
!I = tensor<?x?xi64, #irt.dims<"s0", "s2">>
!L = tensor<?x?x4xf32, #irt.dims<"s0", "s1 - 1">>
!F = tensor<?x1x8xf32, #irt.dims<"s0">>
!E = tensor<?x?x8xf32, #irt.dims<"s0", "s2">>
!R = tensor<8x?x?xf32, #irt.dims<"s1", "s0">>

// The KV-cache concat along the sequence: one copy kernel per input over its own run-time
// sizes; the second writes at offset s1 (the cache's length), into a result of s1 + s2 rows.
// CHECK-LABEL: func.func @f(%s0: index, %s1: index, %s2: index,
// CHECK:         %[[L:.*]] = arith.addi %s1, %c-1 : index
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %c0, %s0, %c4, %s1, %c16, %c1, %c1, %c1, %c1)
// CHECK:         }) {irc.kernel = "irt.concat -> s0x4x(s1 + s2)x16 (input 0 at 0)"}
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %c0, %s0, %c4, %s2, %c16, %c1, %c1, %c1, %c1)
// CHECK:           %[[AT:.*]] = arith.addi %i2_1, %s1 : index
// CHECK-NEXT:      memref.store %{{.*}}, %out0[%i0_1, %i1_1, %[[AT]], %i3_1] : memref<?x4x?x16xf32, #irt.dims<"s0", "s1 + s2">>
// CHECK:         }) {irc.kernel = "irt.concat -> s0x4x(s1 + s2)x16 (input 1 at s1)"}
// A slice of s1 - 1 rows from row 1 (its size computed at entry), then one row of a run-time dim.
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %s0, %[[L]], %c4, %c1, %c1, %c1)
// CHECK:         }) {irc.kernel = "irt.slice -> s0x(s1 - 1)x4"}
// CHECK:         }) {irc.kernel = "irt.slice -> s0x1x8"}
// The embedding over a run-time index shape, the expand along s1, the transpose.
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %s0, %s2, %c8, %c1, %c1, %c1)
// CHECK:         }) {irc.kernel = "irt.embedding -> s0xs2x8"}
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %s0, %s1, %c8, %c1, %c1, %c1)
// CHECK:           memref.load %e[%{{.*}}, %c0, %{{.*}}] : memref<?x1x8xf32, #irt.dims<"s0">>
// CHECK:         }) {irc.kernel = "irt.expand -> s0xs1x8"}
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %c8, %s1, %s0, %c1, %c1, %c1)
// CHECK:         }) {irc.kernel = "irt.transpose -> 8xs1xs0"}
// In C++ the strides of run-time shapes are expressions of the sizes.
// CPP:         extern "C" void f(const int64_t s0, const int64_t s1, const int64_t s2, float* __restrict__ cache, float* __restrict__ [[NEW:new_[0-9]+]],
// CPP:         // kernel 1: irt.concat -> s0x4x(s1 + s2)x16 (input 1 at s1)
// CPP:           const float [[V:.*]] = [[NEW]][{{.*}}*(64 * s2) + {{.*}}*(16 * s2) + {{.*}}*16 + {{.*}}];
// CPP:           out0[{{.*}}*(64 * s1 + 64 * s2) + {{.*}}*(16 * s1 + 16 * s2) + {{.*}}*16 + {{.*}}] = [[V]];
func.func @f(%cache: !C, %new: !N, %x: !X, %idx: !I, %w: tensor<10x8xf32>, %e: !F) -> (!T, !L, !F, !E, !X, !R) {
  %t = irt.concat %cache, %new dim 2 : (!C, !N) -> !T
  %s = irt.slice %x offsets [0, 1, 2] strides [1, 1, 1] : (!X) -> !L
  %first = irt.slice %x offsets [0, 0, 0] strides [1, 1, 1] : (!X) -> !F
  %em = irt.embedding %idx, %w : (!I, tensor<10x8xf32>) -> !E
  %ex = irt.expand %e : (!F) -> !X
  %tr = irt.transpose %x [2, 1, 0] : (!X) -> !R
  func.return %t, %s, %first, %em, %ex, %tr : !T, !L, !F, !E, !X, !R
}

// A decode step's row of GPT-2's causal table: row s1 (the cache's length) and its first s1 + 1
// columns, the row's offset a symbol (`dims`, for the -1 in `offsets`), read at entry's s1.
// CHECK-LABEL: func.func @row(%s0: index, %s1: index,
// CHECK:         %[[N:.*]] = arith.addi %s1, %c1 : index
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %c1, %c1, %[[N]], %c1, %c1, %c1)
// CHECK:           memref.load %t[%c0, %s1, %{{.*}}] : memref<1x128x128xi1>
// CHECK:         }) {irc.kernel = "irt.slice -> 1x1x(s1 + 1)"}
// CPP-LABEL:     extern "C" void row(const int64_t s0, const int64_t s1,
// CPP:           = t[0*16384 + s1*128 + i2];
func.func @row(%x: tensor<?x?xf32, #irt.dims<"s0", "s1">>, %t: tensor<1x128x128xi1>) -> tensor<1x1x?xi1, #irt.dims<"s1 + 1">> {
  %r = irt.slice %t offsets [0, -1, 0] dims <"s1"> strides [1, 1, 1] : (tensor<1x128x128xi1>) -> tensor<1x1x?xi1, #irt.dims<"s1 + 1">>
  func.return %r : tensor<1x1x?xi1, #irt.dims<"s1 + 1">>
}
