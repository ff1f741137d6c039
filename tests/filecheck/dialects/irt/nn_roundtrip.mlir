// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// The CNN ops print in their custom form and parse back to the same text, also via the generic
// form: conv2d unfused (empty region), with a bias, grouped and dilated, and with an epilogue.

// CHECK-LABEL: func.func @nn(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>, %m: tensor<16x1x1xf32>, %r: tensor<1x16x4x4xf32>, %dw: tensor<3x1x3x3xf32>) -> tensor<1x16x1x1xf32> {
// CHECK-NEXT:    %c = irt.conv2d %x, %w bias(%b : tensor<16xf32>) stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    %d = irt.conv2d %x, %dw stride [1, 2] padding [2, 0] dilation [2, 1] groups 3 : (tensor<1x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x8x3xf32>
// CHECK-NEXT:    %f = irt.conv2d %x, %w epilogue(%r : tensor<1x16x4x4xf32>) stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x4x4xf32> {
// CHECK-NEXT:    ^bb0(%acc: f32, %e0: f32):
// CHECK-NEXT:      %s = arith.addf %acc, %e0 : f32
// CHECK-NEXT:      irt.yield %s : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %n = irt.batch_norm %c, %m, %m, %m, %m eps 1.000000e-05 : (tensor<1x16x4x4xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>) -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    %p = irt.max_pool2d %n kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] ceil_mode : (tensor<1x16x4x4xf32>) -> tensor<1x16x3x3xf32>
// CHECK-NEXT:    %a = irt.avg_pool2d %f kernel [2, 2] stride [2, 2] padding [0, 0] count_include_pad : (tensor<1x16x4x4xf32>) -> tensor<1x16x2x2xf32>
// CHECK-NEXT:    %a2 = irt.avg_pool2d %a kernel [2, 2] stride [1, 1] padding [1, 1] ceil_mode : (tensor<1x16x2x2xf32>) -> tensor<1x16x3x3xf32>
// CHECK-NEXT:    %g = irt.adaptive_avg_pool2d %a2 : (tensor<1x16x3x3xf32>) -> tensor<1x16x1x1xf32>
// CHECK-NEXT:    func.return %g : tensor<1x16x1x1xf32>

func.func @nn(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>, %m: tensor<16x1x1xf32>, %r: tensor<1x16x4x4xf32>, %dw: tensor<3x1x3x3xf32>) -> tensor<1x16x1x1xf32> {
  %c = irt.conv2d %x, %w bias(%b : tensor<16xf32>) stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x4x4xf32>
  %d = irt.conv2d %x, %dw stride [1, 2] padding [2, 0] dilation [2, 1] groups 3 : (tensor<1x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x8x3xf32>
  %f = irt.conv2d %x, %w epilogue(%r : tensor<1x16x4x4xf32>) stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x4x4xf32> {
  ^bb0(%acc: f32, %e0: f32):
    %s = arith.addf %acc, %e0 : f32
    irt.yield %s : f32
  }
  %n = irt.batch_norm %c, %m, %m, %m, %m eps 1.000000e-05 : (tensor<1x16x4x4xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %p = irt.max_pool2d %n kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] ceil_mode : (tensor<1x16x4x4xf32>) -> tensor<1x16x3x3xf32>
  %a = irt.avg_pool2d %f kernel [2, 2] stride [2, 2] padding [0, 0] count_include_pad : (tensor<1x16x4x4xf32>) -> tensor<1x16x2x2xf32>
  %a2 = irt.avg_pool2d %a kernel [2, 2] stride [1, 1] padding [1, 1] ceil_mode : (tensor<1x16x2x2xf32>) -> tensor<1x16x3x3xf32>
  %g = irt.adaptive_avg_pool2d %a2 : (tensor<1x16x3x3xf32>) -> tensor<1x16x1x1xf32>
  func.return %g : tensor<1x16x1x1xf32>
}

// -----

// Batch norm of 2-D and 3-D inputs, and with scalar (affine=False) parameters.

// CHECK-LABEL: func.func @bn(%x: tensor<4x5xf32>, %s: tensor<5xf32>, %y: tensor<2x5x7xf32>, %t: tensor<5x1xf32>, %one: tensor<f32>) -> (tensor<4x5xf32>, tensor<2x5x7xf32>) {
// CHECK-NEXT:    %a = irt.batch_norm %x, %s, %s, %s, %s eps 1.000000e-03 : (tensor<4x5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    %b = irt.batch_norm %y, %t, %t, %one, %one eps 1.000000e-05 : (tensor<2x5x7xf32>, tensor<5x1xf32>, tensor<5x1xf32>, tensor<f32>, tensor<f32>) -> tensor<2x5x7xf32>
// CHECK-NEXT:    func.return %a, %b : tensor<4x5xf32>, tensor<2x5x7xf32>

func.func @bn(%x: tensor<4x5xf32>, %s: tensor<5xf32>, %y: tensor<2x5x7xf32>, %t: tensor<5x1xf32>, %one: tensor<f32>) -> (tensor<4x5xf32>, tensor<2x5x7xf32>) {
  %a = irt.batch_norm %x, %s, %s, %s, %s eps 1.000000e-03 : (tensor<4x5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %b = irt.batch_norm %y, %t, %t, %one, %one eps 1.000000e-05 : (tensor<2x5x7xf32>, tensor<5x1xf32>, tensor<5x1xf32>, tensor<f32>, tensor<f32>) -> tensor<2x5x7xf32>
  func.return %a, %b : tensor<4x5xf32>, tensor<2x5x7xf32>
}
