// RUN: irc-opt %s --verify-diagnostics --split-input-file

// Verifier errors of the elementwise math ops name the op, the problem and the shapes.

func.func @clamp_no_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.clamp: at least one of min and max is required (input 4)}}
  %0 = irt.clamp %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @where_no_broadcast(%c: tensor<3xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{irt.where: operand shapes 3, 4x8, 4x8 do not broadcast}}
  %0 = irt.where %c, %x, %x : (tensor<3xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @where_int_condition(%c: tensor<4xi64>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.where: the condition must be a tensor of i1 or f32, got tensor<4xi64>}}
  %0 = irt.where %c, %x, %x : (tensor<4xi64>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @where_mixed_types(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.where: operands and result must have one element type, got lhs f32, rhs i64, the result f32}}
  %0 = irt.where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @where_result(%c: tensor<4x1xf32>, %x: tensor<8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{irt.where: result shape 4x1 does not match the broadcast operand shape 4x8}}
  %0 = irt.where %c, %x, %x : (tensor<4x1xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  func.return %0 : tensor<4x1xf32>
}

// -----

func.func @exp_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{irt.exp: operand 0 must be a tensor of f32, got tensor<4xi32>}}
  %0 = irt.exp %x : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
