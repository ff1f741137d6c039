// RUN: irc-opt %s --verify-diagnostics --split-input-file

// Verifier errors of slice, concat and expand name the op, the problem and the shapes.

func.func @slice_rank(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{irt.slice: input 4x8, result 4x3, 1 offsets and 2 strides must all have the same rank}}
  %0 = irt.slice %x offsets [0] strides [1, 1] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @slice_out_of_range(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{irt.slice: dimension 1 takes 3 element(s) from offset 4 with stride 2, outside the input's size 8 (input 4x8, result 4x3)}}
  %0 = irt.slice %x offsets [0, 4] strides [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @slice_stride(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{irt.slice: stride 0 in dimension 1 must be >= 1}}
  %0 = irt.slice %x offsets [0, 0] strides [1, 0] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_other_dim(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x7xf32> {
  // expected-error @+1 {{irt.concat: inputs 2x3, 3x4 must match the result 2x7 in every dimension but 1}}
  %0 = irt.concat %a, %b dim 1 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x7xf32>
  func.return %0 : tensor<2x7xf32>
}

// -----

func.func @concat_sum(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{irt.concat: inputs 2x3, 2x4 add up to 7 in dimension 1, the result 2x8 has 8}}
  %0 = irt.concat %a, %b dim 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}

// -----

func.func @concat_dim(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x7xf32> {
  // expected-error @+1 {{irt.concat: dim 2 is out of range for the result 2x7}}
  %0 = irt.concat %a, %b dim 2 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
  func.return %0 : tensor<2x7xf32>
}

// -----

func.func @expand(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{irt.expand: input 3x2 does not broadcast to the result 3x4}}
  %0 = irt.expand %x : (tensor<3x2xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @expand_rank(%x: tensor<2x3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{irt.expand: input 2x3x4 does not broadcast to the result 3x4}}
  %0 = irt.expand %x : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @embedding_float_indices(%idx: tensor<2x5xf32>, %w: tensor<10x8xf32>) -> tensor<2x5x8xf32> {
  // expected-error @+1 {{irt.embedding: the indices must be a tensor of i64, got tensor<2x5xf32>}}
  %0 = irt.embedding %idx, %w : (tensor<2x5xf32>, tensor<10x8xf32>) -> tensor<2x5x8xf32>
  func.return %0 : tensor<2x5x8xf32>
}

// -----

func.func @embedding_weight_rank(%idx: tensor<2x5xi64>, %w: tensor<10x8x2xf32>) -> tensor<2x5x8xf32> {
  // expected-error @+1 {{irt.embedding: the weight 10x8x2 must be 2-D (rows x embedding size)}}
  %0 = irt.embedding %idx, %w : (tensor<2x5xi64>, tensor<10x8x2xf32>) -> tensor<2x5x8xf32>
  func.return %0 : tensor<2x5x8xf32>
}

// -----

func.func @embedding_result_shape(%idx: tensor<2x5xi64>, %w: tensor<10x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{irt.embedding: indices 2x5 and weight 10x8 give a result of shape 2x5x8, not 2x8}}
  %0 = irt.embedding %idx, %w : (tensor<2x5xi64>, tensor<10x8xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}
