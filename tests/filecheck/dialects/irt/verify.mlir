// RUN: irc-opt %s --verify-diagnostics --split-input-file

// Each verifier names the op, what is wrong, and the shapes involved.

func.func @contracting(%x: tensor<4x8xf32>, %w: tensor<16x9xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{irt.linear: contracting dimensions differ: lhs 4x8 has 8, rhs 16x9 has 9 (linear expects rhs as [N, K])}}
  %0 = irt.linear %x, %w : (tensor<4x8xf32>, tensor<16x9xf32>) -> tensor<4x16xf32>
  func.return %0 : tensor<4x16xf32>
}

// -----

func.func @matmul_result(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x15xf32> {
  // expected-error @+1 {{irt.matmul: result shape 4x15 should be 4x16}}
  %0 = irt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x15xf32>
  func.return %0 : tensor<4x15xf32>
}

// -----

func.func @no_broadcast(%x: tensor<4x8xf32>, %y: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{irt.add: operand shapes 4x8, 3 do not broadcast}}
  %0 = irt.add %x, %y : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @broadcast_result(%x: tensor<4x1xf32>, %y: tensor<8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{irt.mul: result shape 4x1 does not match the broadcast operand shape 4x8}}
  %0 = irt.mul %x, %y : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  func.return %0 : tensor<4x1xf32>
}

// -----

func.func @not_f32(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{irt.add: lhs must be a tensor of f32 or i64, got tensor<4xi32>}}
  %0 = irt.add %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

func.func @perm(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{irt.transpose: [1, 1] is not a permutation of 2 dimensions}}
  %0 = irt.transpose %x [1, 1] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

func.func @reshape(%x: tensor<4x8xf32>) -> tensor<30xf32> {
  // expected-error @+1 {{irt.reshape: cannot reshape 4x8 (32 elements) to 30 (30 elements)}}
  %0 = irt.reshape %x : (tensor<4x8xf32>) -> tensor<30xf32>
  func.return %0 : tensor<30xf32>
}

// -----

func.func @bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{irt.linear: bias must be 1-D, got 4x16}}
  %0 = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %0 : tensor<4x16xf32>
}

// -----

func.func @body_args(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.elementwise: the scalar body must take 2 f32 argument(s), got (f32)}}
  %0 = irt.elementwise ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32):
    irt.yield %a : f32
  }
  func.return %0 : tensor<4xf32>
}

// -----

func.func @epilogue_shape(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %r: tensor<5x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{irt.contract: epilogue input 0 of shape 5x16 does not broadcast to the result shape 4x16}}
  %0 = irt.contract linear %x, %w epilogue(%r : tensor<5x16xf32>) : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> {
  ^bb0(%acc: f32, %res: f32):
    %s = arith.addf %acc, %res : f32
    irt.yield %s : f32
  }
  func.return %0 : tensor<4x16xf32>
}

// -----

func.func @pack_shape(%w: tensor<20x8xf32>) -> tensor<1x8x16xf32> {
  // expected-error @+1 {{irt.pack: result shape should be 2x8x16, got 1x8x16}}
  %p = irt.pack %w "rows" 16 : (tensor<20x8xf32>) -> tensor<1x8x16xf32>
  func.return %p : tensor<1x8x16xf32>
}

// -----

func.func @pack_winograd_kernel(%w: tensor<20x8x5x5xf32>) -> tensor<16x2x8x14xf32> {
  // expected-error @+1 {{irt.pack: "winograd" transforms a 3x3 conv weight [O, C, 3, 3] in panels of width >= 1, got 20x8x5x5 in panels of 14}}
  %p = irt.pack %w "winograd" 14 : (tensor<20x8x5x5xf32>) -> tensor<16x2x8x14xf32>
  func.return %p : tensor<16x2x8x14xf32>
}

// -----

func.func @pack_winograd_shape(%w: tensor<20x8x3x3xf32>) -> tensor<16x1x8x14xf32> {
  // expected-error @+1 {{irt.pack: result shape should be 16x2x8x14, got 16x1x8x14}}
  %p = irt.pack %w "winograd" 14 : (tensor<20x8x3x3xf32>) -> tensor<16x1x8x14xf32>
  func.return %p : tensor<16x1x8x14xf32>
}

// -----

func.func @packed_n(%x: tensor<4x8xf32>, %p: tensor<2x8x16xf32>) -> tensor<4x40xf32> {
  // expected-error @+1 {{irt.contract: packed rhs 2x8x16 does not hold a [K=8, N=40] matrix in panels of 16 columns}}
  %y = irt.contract packed %x, %p : (tensor<4x8xf32>, tensor<2x8x16xf32>) -> tensor<4x40xf32> {
  ^bb0(%a: f32):
    irt.yield %a : f32
  }
  func.return %y : tensor<4x40xf32>
}
