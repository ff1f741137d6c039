// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1}' --split-input-file | filecheck %s

// A parameter (argument after the one input) is packed: nn.Linear's [N, K] by rows, the
// contraction becomes `irt.contract packed` with the linear's bias as its epilogue.

// CHECK-LABEL: func.func @linear
// CHECK-NEXT:    %w_packed = irt.pack %w "rows" 16 : (tensor<20x8xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:    %y = irt.contract packed %x, %w_packed epilogue(%b : tensor<20xf32>) : (tensor<4x8xf32>, tensor<2x8x16xf32>) -> tensor<4x20xf32> attributes {irc.fused = ["irt.linear"]} {
// CHECK-NEXT:    ^bb0(%0: f32, %1: f32):
// CHECK-NEXT:      %2 = arith.addf %0, %1 : f32
// CHECK-NEXT:      irt.yield %2 : f32
// CHECK-NEXT:    }
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<20x8xf32>, %b: tensor<20xf32>) -> tensor<4x20xf32> {
  %y = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<20x8xf32>, tensor<20xf32>) -> tensor<4x20xf32>
  func.return %y : tensor<4x20xf32>
}

// -----

// A matmul's [K, N] rhs computed from parameters only (a transpose) is packed by columns;
// a fused epilogue and its provenance are kept.

// CHECK-LABEL: func.func @matmul_of_transposed_weight
// CHECK:         %wt_packed = irt.pack %wt "cols" 16 : (tensor<8x5xf32>) -> tensor<1x8x16xf32>
// CHECK-NEXT:    %y = irt.contract packed %x, %wt_packed : (tensor<3x8xf32>, tensor<1x8x16xf32>) -> tensor<3x5xf32> attributes {irc.fused = ["irt.matmul", "irt.relu"]} {
// CHECK:           arith.maximumf
func.func @matmul_of_transposed_weight(%x: tensor<3x8xf32>, %w: tensor<5x8xf32>) -> tensor<3x5xf32> {
  %wt = irt.transpose %w [1, 0] : (tensor<5x8xf32>) -> tensor<8x5xf32>
  %y = irt.contract matmul %x, %wt : (tensor<3x8xf32>, tensor<8x5xf32>) -> tensor<3x5xf32> attributes {irc.fused = ["irt.matmul", "irt.relu"]} {
  ^bb0(%a: f32):
    %z = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %a, %z : f32
    irt.yield %r : f32
  }
  func.return %y : tensor<3x5xf32>
}

// -----

// A run-time rhs (the input itself, or computed from it) is not packed: packing it would cost a
// kernel per call. The GEMM engine packs such operands on the fly.

// CHECK-LABEL: func.func @runtime_rhs
// CHECK-NOT:     irt.pack
// CHECK:         irt.matmul %w, %x
func.func @runtime_rhs(%x: tensor<8x5xf32>, %w: tensor<3x8xf32>) -> tensor<3x5xf32> {
  %y = irt.matmul %w, %x : (tensor<3x8xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>
  func.return %y : tensor<3x5xf32>
}
