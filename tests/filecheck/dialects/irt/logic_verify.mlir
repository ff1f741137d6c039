// RUN: irc-opt %s --verify-diagnostics --split-input-file

// The element types each logic op takes, and the ones that reject the others.

func.func @cmp_mixed(%x: tensor<4xf32>, %i: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{irt.cmp: operands and result must have one element type, got lhs f32, rhs i64}}
  %0 = irt.cmp lt %x, %i : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @cmp_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.cmp: the result must be a tensor of i1, got tensor<4xf32>}}
  %0 = irt.cmp lt %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @and_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.and: lhs must be a tensor of i64 or i1, got tensor<4xf32>}}
  %0 = irt.and %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @cast_i32(%x: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.cast: the input must be a tensor of f32, i64 or i1, got tensor<4xi32>}}
  %0 = irt.cast %x : (tensor<4xi32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @div_int(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{irt.div: operand 0 must be a tensor of f32, got tensor<4xi64>}}
  %0 = irt.div %x, %x : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

func.func @bool_arithmetic(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{irt.add: lhs must be a tensor of f32 or i64, got tensor<4xi1>}}
  %0 = irt.add %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @exp_int(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{irt.exp: operand 0 must be a tensor of f32, got tensor<4xi64>}}
  %0 = irt.exp %x : tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

func.func @reshape_type(%x: tensor<4xi64>) -> tensor<2x2xf32> {
  // expected-error @+1 {{irt.reshape: operands and result must have one element type, got the input i64, the result f32}}
  %0 = irt.reshape %x : (tensor<4xi64>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}

// -----

func.func @body_types(%x: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{irt.elementwise: the scalar body must take (i64), got (f32)}}
  %0 = irt.elementwise ins(%x : tensor<4xi64>) -> tensor<4xi1> {
  ^bb0(%a: f32):
    %c = arith.constant 0.0 : f32
    %b = arith.cmpf oeq, %a, %c : f32
    irt.yield %b : i1
  }
  func.return %0 : tensor<4xi1>
}

// -----

func.func @yield_type(%x: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{irt.elementwise: the scalar body must yield i1, got i64}}
  %0 = irt.elementwise ins(%x : tensor<4xi64>) -> tensor<4xi1> {
  ^bb0(%a: i64):
    irt.yield %a : i64
  }
  func.return %0 : tensor<4xi1>
}
