// RUN: irc-opt %s -p irc-to-loops --split-input-file | filecheck %s
// RUN: irc-opt %s -p irc-to-loops -t cpp --split-input-file | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// Zero-size tensors (an empty batch). An op whose results have no elements gets its buffers and
// no kernel: no loop, no GEMM call (the engine's blocking needs M, N, K >= 1).
// CHECK-LABEL: func.func @empty_batch
// CHECK-NOT:     irl.gemm
// CHECK-NOT:     scf.parallel
// CHECK:         func.return
// CPP-LABEL: void empty_batch(
// CPP-NOT:     irc_gemm(
// CPP-NOT:     for (
// CPP:         return;
func.func @empty_batch(%x: tensor<0x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %w2: tensor<4x16xf32>) -> tensor<0x4xf32> {
  %0 = irt.linear %x, %w, %b : (tensor<0x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<0x16xf32>
  %1 = irt.relu %0 : tensor<0x16xf32>
  %2 = irt.linear %1, %w2 : (tensor<0x16xf32>, tensor<4x16xf32>) -> tensor<0x4xf32>
  func.return %2 : tensor<0x4xf32>
}

// -----

// An empty contraction dimension (K = 0) with a non-empty result: the scalar nest, whose
// reduction runs zero times, stores the epilogue of 0 (here the bias), as eager does.
// CHECK-LABEL: func.func @empty_k
// CHECK-NOT:     irl.gemm
// CHECK:         "scf.parallel"
// CHECK:           scf.for %k = %c0 to %c0 step %c1 iter_args(%acc = %{{.*}}) -> (f32) {
// CPP-LABEL: void empty_k(
// CPP:         for (int64_t k{{.*}} = 0; k{{.*}} < 0; ++k{{.*}})
func.func @empty_k(%x: tensor<3x0xf32>, %w: tensor<5x0xf32>, %b: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = irt.linear %x, %w, %b : (tensor<3x0xf32>, tensor<5x0xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  func.return %0 : tensor<3x5xf32>
}

// -----

// The mean of no elements is 0/0: NaN, as in eager.
// CHECK-LABEL: func.func @mean_empty
// CHECK:         arith.constant 0x7fc00000 : f32
// CPP-LABEL: void mean_empty(
// CPP:         __builtin_nanf("")
func.func @mean_empty(%x: tensor<3x0xf32>) -> tensor<3xf32> {
  %0 = irt.reduce mean %x [1] : (tensor<3x0xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
