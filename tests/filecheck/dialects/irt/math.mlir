// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// The elementwise math ops of irt_math.py print in their custom form and parse back to the same
// text, also via the generic form.

// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %a = irt.exp %x : tensor<4x8xf32>
// CHECK-NEXT:    %b = irt.log %a : tensor<4x8xf32>
// CHECK-NEXT:    %c = irt.sqrt %b : tensor<4x8xf32>
// CHECK-NEXT:    %d = irt.rsqrt %c : tensor<4x8xf32>
// CHECK-NEXT:    %e = irt.neg %d : tensor<4x8xf32>
// CHECK-NEXT:    %f = irt.abs %e : tensor<4x8xf32>
// CHECK-NEXT:    %g = irt.cos %f : tensor<4x8xf32>
// CHECK-NEXT:    %h = irt.sin %g : tensor<4x8xf32>
// CHECK-NEXT:    %i = irt.relu6 %h : tensor<4x8xf32>
// CHECK-NEXT:    %j = irt.silu %i : tensor<4x8xf32>
// CHECK-NEXT:    %k = irt.hardswish %j : tensor<4x8xf32>
// CHECK-NEXT:    %l = irt.hardsigmoid %k : tensor<4x8xf32>
// CHECK-NEXT:    func.return %l : tensor<4x8xf32>
func.func @unary(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = irt.exp %x : tensor<4x8xf32>
  %b = irt.log %a : tensor<4x8xf32>
  %c = irt.sqrt %b : tensor<4x8xf32>
  %d = irt.rsqrt %c : tensor<4x8xf32>
  %e = irt.neg %d : tensor<4x8xf32>
  %f = irt.abs %e : tensor<4x8xf32>
  %g = irt.cos %f : tensor<4x8xf32>
  %h = irt.sin %g : tensor<4x8xf32>
  %i = irt.relu6 %h : tensor<4x8xf32>
  %j = irt.silu %i : tensor<4x8xf32>
  %k = irt.hardswish %j : tensor<4x8xf32>
  %l = irt.hardsigmoid %k : tensor<4x8xf32>
  func.return %l : tensor<4x8xf32>
}

// -----

// Scalar parameters are f32 properties; clamp's bounds are each optional. irt.where's condition
// is an f32 tensor of 0.0/1.0 (a folded compile-time mask), broadcast like the other operands.

// CHECK-LABEL: func.func @parametrized
// CHECK-NEXT:    %p = irt.pow %x exponent 2.500000e+00 : tensor<4x8xf32>
// CHECK-NEXT:    %c = irt.clamp %p min -1.000000e+00 max 1.000000e+00 : tensor<4x8xf32>
// CHECK-NEXT:    %lo = irt.clamp %c min 0.000000e+00 : tensor<4x8xf32>
// CHECK-NEXT:    %hi = irt.clamp %lo max 6.000000e+00 : tensor<4x8xf32>
// CHECK-NEXT:    %l = irt.leaky_relu %hi slope 1.000000e-02 : tensor<4x8xf32>
// CHECK-NEXT:    %w = irt.where %m, %s, %l : (tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %w : tensor<4x8xf32>
func.func @parametrized(%x: tensor<4x8xf32>, %m: tensor<4x8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
  %p = irt.pow %x exponent 2.500000e+00 : tensor<4x8xf32>
  %c = irt.clamp %p min -1.000000e+00 max 1.000000e+00 : tensor<4x8xf32>
  %lo = irt.clamp %c min 0.000000e+00 : tensor<4x8xf32>
  %hi = irt.clamp %lo max 6.000000e+00 : tensor<4x8xf32>
  %l = irt.leaky_relu %hi slope 1.000000e-02 : tensor<4x8xf32>
  %w = irt.where %m, %s, %l : (tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %w : tensor<4x8xf32>
}
