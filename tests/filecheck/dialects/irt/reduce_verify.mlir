// RUN: irc-opt %s --verify-diagnostics --split-input-file

// Each verifier of the reduce family names the op, what is wrong, and the shapes involved.

func.func @reduce_result(%x: tensor<3x4x5xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.reduce: reducing 3x4x5 over [0, 2] with keepdim gives 1x4x1, not 4}}
  %0 = irt.reduce sum %x [0, 2] keepdim : (tensor<3x4x5xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @reduce_dims(%x: tensor<3x4x5xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{irt.reduce: dims [2, 1] must be sorted, distinct and within 0..2 for input 3x4x5}}
  %0 = irt.reduce mean %x [2, 1] : (tensor<3x4x5xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @reduce_dim_range(%x: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {
  // expected-error @+1 {{irt.reduce: dims [3] must be sorted, distinct and within 0..2 for input 3x4x5}}
  %0 = irt.reduce max %x [3] : (tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  func.return %0 : tensor<3x4x5xf32>
}

// -----

func.func @softmax_dim(%x: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {
  // expected-error @+1 {{irt.softmax: dim 3 is out of range for a rank-3 tensor}}
  %0 = irt.softmax %x dim 3 : tensor<3x4x5xf32>
  func.return %0 : tensor<3x4x5xf32>
}

// -----

func.func @log_softmax_type(%x: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{irt.log_softmax: the input must be a tensor of f32, got tensor<3xi32>}}
  %0 = irt.log_softmax %x dim 0 : tensor<3xi32>
  func.return %0 : tensor<3xi32>
}

// -----

func.func @layer_norm_weight(%x: tensor<3x4x5xf32>, %w: tensor<4xf32>) -> tensor<3x4x5xf32> {
  // expected-error @+1 {{irt.layer_norm: weight of shape 4 should have the normalized shape 5 (the last 1 dim(s) of 3x4x5)}}
  %0 = irt.layer_norm %x : tensor<3x4x5xf32> weight %w : tensor<4xf32> dims 1 eps 1.0e-05 -> tensor<3x4x5xf32>
  func.return %0 : tensor<3x4x5xf32>
}

// -----

func.func @layer_norm_dims(%x: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {
  // expected-error @+1 {{irt.layer_norm: dims 4 must be between 1 and the rank of the input 3x4x5}}
  %0 = irt.layer_norm %x : tensor<3x4x5xf32> dims 4 eps 1.0e-05 -> tensor<3x4x5xf32>
  func.return %0 : tensor<3x4x5xf32>
}

// -----

func.func @bmm_k(%a: tensor<2x4x8xf32>, %b: tensor<2x7x16xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{irt.batch_matmul: contracting dimensions differ: lhs 2x4x8 has 8, rhs 2x7x16 has 7 (matmul expects rhs as [..., K, N])}}
  %0 = irt.batch_matmul matmul %a, %b : (tensor<2x4x8xf32>, tensor<2x7x16xf32>) -> tensor<2x4x16xf32>
  func.return %0 : tensor<2x4x16xf32>
}

// -----

func.func @bmm_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x16xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{irt.batch_matmul: batch dimensions of 2x4x8 and 3x8x16 do not broadcast}}
  %0 = irt.batch_matmul matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x4x16xf32>
  func.return %0 : tensor<2x4x16xf32>
}

// -----

func.func @bmm_result(%a: tensor<2x4x8xf32>, %b: tensor<2x16x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{irt.batch_matmul: result shape 2x4x8 should be 2x4x16}}
  %0 = irt.batch_matmul linear %a, %b : (tensor<2x4x8xf32>, tensor<2x16x8xf32>) -> tensor<2x4x8xf32>
  func.return %0 : tensor<2x4x8xf32>
}

// -----

func.func @attention_head_dim(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x32x6xf32>, %v: tensor<1x4x32x6xf32>) -> tensor<1x4x16x6xf32> {
  // expected-error @+1 {{irt.attention: q 1x4x16x8 and k 1x4x32x6 have different head dims (8 vs 6)}}
  %0 = irt.attention %q, %k, %v scale 0.125 : (tensor<1x4x16x8xf32>, tensor<1x4x32x6xf32>, tensor<1x4x32x6xf32>) -> tensor<1x4x16x6xf32>
  func.return %0 : tensor<1x4x16x6xf32>
}

// -----

func.func @attention_lengths(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x32x8xf32>, %v: tensor<1x4x30x6xf32>) -> tensor<1x4x16x6xf32> {
  // expected-error @+1 {{irt.attention: k 1x4x32x8 and v 1x4x30x6 have different lengths (32 vs 30)}}
  %0 = irt.attention %q, %k, %v scale 0.125 : (tensor<1x4x16x8xf32>, tensor<1x4x32x8xf32>, tensor<1x4x30x6xf32>) -> tensor<1x4x16x6xf32>
  func.return %0 : tensor<1x4x16x6xf32>
}

// -----

func.func @attention_mask(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x32x8xf32>, %v: tensor<1x4x32x6xf32>, %m: tensor<16x31xf32>) -> tensor<1x4x16x6xf32> {
  // expected-error @+1 {{irt.attention: mask of shape 16x31 does not broadcast to the scores shape 1x4x16x32}}
  %0 = irt.attention %q, %k, %v mask %m scale 0.125 : (tensor<1x4x16x8xf32>, tensor<1x4x32x8xf32>, tensor<1x4x32x6xf32>, tensor<16x31xf32>) -> tensor<1x4x16x6xf32>
  func.return %0 : tensor<1x4x16x6xf32>
}

// -----

func.func @attention_result(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x32x8xf32>, %v: tensor<1x4x32x6xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{irt.attention: result shape 1x4x16x8 should be 1x4x16x6}}
  %0 = irt.attention %q, %k, %v scale 0.125 : (tensor<1x4x16x8xf32>, tensor<1x4x32x8xf32>, tensor<1x4x32x6xf32>) -> tensor<1x4x16x8xf32>
  func.return %0 : tensor<1x4x16x8xf32>
}
