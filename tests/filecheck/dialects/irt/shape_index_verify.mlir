// RUN: irc-opt %s --verify-diagnostics --split-input-file

// What the index ops' verifiers check (sizes the symbols decide are left to run time).

func.func @arange_2d() -> tensor<2x3xi64> {
  // expected-error @+1 {{irt.arange: the result must be 1-D, got 2x3}}
  %0 = irt.arange start 0.0 step 1.0 : tensor<2x3xi64>
  func.return %0 : tensor<2x3xi64>
}

// -----

func.func @arange_fraction() -> tensor<4xi64> {
  // expected-error @+1 {{irt.arange: an i64 result needs an integral start and step, got 0.0 and 0.5}}
  %0 = irt.arange start 0.0 step 0.5 : tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

func.func @arange_bool() -> tensor<4xi1> {
  // expected-error @+1 {{irt.arange: the result must be a tensor of f32 or i64, got tensor<4xi1>}}
  %0 = irt.arange start 0.0 step 1.0 : tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @gather_rank(%x: tensor<4x8xf32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{irt.gather: indices 3 must have the rank of the input 4x8, and the result 3 their shape}}
  %0 = irt.gather %x, %i dim 1 : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @gather_larger(%x: tensor<4x8xf32>, %i: tensor<5x2xi64>) -> tensor<5x2xf32> {
  // expected-error @+1 {{irt.gather: indices 5x2 are larger than the input 4x8 in dim 0}}
  %0 = irt.gather %x, %i dim 1 : (tensor<4x8xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  func.return %0 : tensor<5x2xf32>
}

// -----

func.func @gather_float_indices(%x: tensor<4x8xf32>, %i: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{irt.gather: the indices must be a tensor of i64, got tensor<4x2xf32>}}
  %0 = irt.gather %x, %i dim 1 : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

func.func @index_select_shape(%x: tensor<4x8xf32>, %i: tensor<?xi64, #irt.dims<"s0">>) -> tensor<4x8xf32> {
  // expected-error @+1 {{irt.index_select: 1-D indices s0 into dim 0 of 4x8 give s0x8, not 4x8}}
  %0 = irt.index_select %x, %i dim 0 : (tensor<4x8xf32>, tensor<?xi64, #irt.dims<"s0">>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @index_select_dim(%x: tensor<4x8xf32>, %i: tensor<2xi64>) -> tensor<4x2xf32> {
  // expected-error @+1 {{irt.index_select: dim 2 is out of range for a rank-2 tensor}}
  %0 = irt.index_select %x, %i dim 2 : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

func.func @tril_vector(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{irt.tril: needs an input of rank >= 2 and a result of its shape, got 4 -> 4}}
  %0 = irt.tril %x diagonal 0 : tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @cumsum_bool(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{irt.cumsum: the input must be a tensor of f32 or i64, got tensor<4xi1>}}
  %0 = irt.cumsum %x dim 0 : tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @cumsum_dim(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{irt.cumsum: dim 1 is out of range for a rank-1 tensor}}
  %0 = irt.cumsum %x dim 1 : tensor<4xi64>
  func.return %0 : tensor<4xi64>
}
