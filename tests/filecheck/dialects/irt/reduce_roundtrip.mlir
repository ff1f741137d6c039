// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// The reduce family prints in its custom form and parses back to the same text, also via the
// generic form. Optional parts (keepdim, layer_norm's weight and bias, attention's mask and
// causal) appear only when present.

// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:    %s = irt.reduce sum %x [1] : (tensor<3x4x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    %m = irt.reduce mean %x [0, 2] keepdim : (tensor<3x4x5xf32>) -> tensor<1x4x1xf32>
// CHECK-NEXT:    %a = irt.reduce max %x [0, 1, 2] : (tensor<3x4x5xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return %s, %m, %a : tensor<3x5xf32>, tensor<1x4x1xf32>, tensor<f32>
func.func @reductions(%x: tensor<3x4x5xf32>) -> (tensor<3x5xf32>, tensor<1x4x1xf32>, tensor<f32>) {
  %s = irt.reduce sum %x [1] : (tensor<3x4x5xf32>) -> tensor<3x5xf32>
  %m = irt.reduce mean %x [0, 2] keepdim : (tensor<3x4x5xf32>) -> tensor<1x4x1xf32>
  %a = irt.reduce max %x [0, 1, 2] : (tensor<3x4x5xf32>) -> tensor<f32>
  func.return %s, %m, %a : tensor<3x5xf32>, tensor<1x4x1xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @normalizations
// CHECK-NEXT:    %p = irt.softmax %x dim -1 : tensor<3x4x5xf32>
// CHECK-NEXT:    %l = irt.log_softmax %p dim 0 : tensor<3x4x5xf32>
// CHECK-NEXT:    %n = irt.layer_norm %l : tensor<3x4x5xf32> weight %w : tensor<5xf32> bias %b : tensor<5xf32> dims 1 eps 1.000000e-05 -> tensor<3x4x5xf32>
// CHECK-NEXT:    %nb = irt.layer_norm %n : tensor<3x4x5xf32> bias %b : tensor<5xf32> dims 1 eps 1.000000e-05 -> tensor<3x4x5xf32>
// CHECK-NEXT:    %n2 = irt.layer_norm %nb : tensor<3x4x5xf32> dims 2 eps 1.000000e-03 -> tensor<3x4x5xf32>
// CHECK-NEXT:    func.return %n2 : tensor<3x4x5xf32>
func.func @normalizations(%x: tensor<3x4x5xf32>, %w: tensor<5xf32>, %b: tensor<5xf32>) -> tensor<3x4x5xf32> {
  %p = irt.softmax %x dim -1 : tensor<3x4x5xf32>
  %l = irt.log_softmax %p dim 0 : tensor<3x4x5xf32>
  %n = irt.layer_norm %l : tensor<3x4x5xf32> weight %w : tensor<5xf32> bias %b : tensor<5xf32> dims 1 eps 1.000000e-05 -> tensor<3x4x5xf32>
  %nb = irt.layer_norm %n : tensor<3x4x5xf32> bias %b : tensor<5xf32> dims 1 eps 1.000000e-05 -> tensor<3x4x5xf32>
  %n2 = irt.layer_norm %nb : tensor<3x4x5xf32> dims 2 eps 1.000000e-03 -> tensor<3x4x5xf32>
  func.return %n2 : tensor<3x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @attention
// CHECK-NEXT:    %s = irt.batch_matmul linear %q, %k : (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>) -> tensor<2x4x16x32xf32>
// CHECK-NEXT:    %o = irt.batch_matmul matmul %s, %v : (tensor<2x4x16x32xf32>, tensor<2x4x32x6xf32>) -> tensor<2x4x16x6xf32>
// CHECK-NEXT:    %a = irt.attention %q, %k, %v scale 1.250000e-01 : (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x6xf32>) -> tensor<2x4x16x6xf32>
// CHECK-NEXT:    %am = irt.attention %q, %k, %v mask %m scale 3.750000e-01 causal : (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x6xf32>, tensor<16x32xf32>) -> tensor<2x4x16x6xf32>
// CHECK-NEXT:    %as = irt.attention %q, %k, %v mask %m scale 3.750000e-01 safe : (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x6xf32>, tensor<16x32xf32>) -> tensor<2x4x16x6xf32>
// CHECK-NEXT:    func.return %o, %a, %am, %as
func.func @attention(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x32x8xf32>, %v: tensor<2x4x32x6xf32>, %m: tensor<16x32xf32>) -> (tensor<2x4x16x6xf32>, tensor<2x4x16x6xf32>, tensor<2x4x16x6xf32>, tensor<2x4x16x6xf32>) {
  %s = irt.batch_matmul linear %q, %k : (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>) -> tensor<2x4x16x32xf32>
  %o = irt.batch_matmul matmul %s, %v : (tensor<2x4x16x32xf32>, tensor<2x4x32x6xf32>) -> tensor<2x4x16x6xf32>
  %a = irt.attention %q, %k, %v scale 0.125 : (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x6xf32>) -> tensor<2x4x16x6xf32>
  %am = irt.attention %q, %k, %v mask %m scale 0.375 causal : (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x6xf32>, tensor<16x32xf32>) -> tensor<2x4x16x6xf32>
  // a row masked whole gives 0, not NaN (F.scaled_dot_product_attention's)
  %as = irt.attention %q, %k, %v mask %m scale 0.375 safe : (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x6xf32>, tensor<16x32xf32>) -> tensor<2x4x16x6xf32>
  func.return %o, %a, %am, %as : tensor<2x4x16x6xf32>, tensor<2x4x16x6xf32>, tensor<2x4x16x6xf32>, tensor<2x4x16x6xf32>
}
