// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// The layout/data ops of irt_shape.py print in their custom form and parse back to the same
// text, also via the generic form.

// CHECK-LABEL: func.func @shape
// CHECK-NEXT:    %s = irt.slice %x offsets [0, 2] strides [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %r = irt.slice %x offsets [3, 0] strides [1, 1] : (tensor<4x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT:    %e = irt.expand %b : (tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %c = irt.concat %s, %y, %s dim 1 : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x9xf32>
// CHECK-NEXT:    %d = irt.slice %c offsets [0, 1] strides [1, 1] : (tensor<4x9xf32>) -> tensor<4x7xf32>
// CHECK-NEXT:    func.return %d : tensor<4x7xf32>
func.func @shape(%x: tensor<4x8xf32>, %y: tensor<4x3xf32>, %b: tensor<8xf32>) -> tensor<4x7xf32> {
  %s = irt.slice %x offsets [0, 2] strides [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  %r = irt.slice %x offsets [3, 0] strides [1, 1] : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %e = irt.expand %b : (tensor<8xf32>) -> tensor<4x8xf32>
  %c = irt.concat %s, %y, %s dim 1 : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x9xf32>
  %d = irt.slice %c offsets [0, 1] strides [1, 1] : (tensor<4x9xf32>) -> tensor<4x7xf32>
  func.return %d : tensor<4x7xf32>
}

// -----

// irt.embedding: i64 indices (any rank) pick rows of a 2-D f32 table.

// CHECK-LABEL: func.func @embedding
// CHECK-NEXT:    %e = irt.embedding %idx, %w : (tensor<2x5xi64>, tensor<10x8xf32>) -> tensor<2x5x8xf32>
// CHECK-NEXT:    %f = irt.embedding %v, %w : (tensor<3xi64>, tensor<10x8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    func.return %e, %f : tensor<2x5x8xf32>, tensor<3x8xf32>
func.func @embedding(%idx: tensor<2x5xi64>, %v: tensor<3xi64>, %w: tensor<10x8xf32>) -> (tensor<2x5x8xf32>, tensor<3x8xf32>) {
  %e = irt.embedding %idx, %w : (tensor<2x5xi64>, tensor<10x8xf32>) -> tensor<2x5x8xf32>
  %f = irt.embedding %v, %w : (tensor<3xi64>, tensor<10x8xf32>) -> tensor<3x8xf32>
  func.return %e, %f : tensor<2x5x8xf32>, tensor<3x8xf32>
}
