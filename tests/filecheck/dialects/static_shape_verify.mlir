// RUN: irc-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Every irt and irl op rejects a `?` dimension without its size expression (#irt.dims), and
// an op not written for symbolic sizes rejects them, naming itself, the operand or result and
// its type; a zero-size dimension is a static size and verifies. (Symbolic sizes where they
// are supported: dialects/symbolic.mlir.)

func.func @dynamic_operand(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{irt.relu: operand 0: type tensor<?x4xf32> has 1 dynamic dimension(s) but 0 size expression(s) (a `?` dimension needs its size in an #irt.dims attribute)}}
  %0 = irt.relu %x : tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}

// -----

func.func @dynamic_result(%x: tensor<2x6xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{irt.reshape: result 0: type tensor<?xf32> has 1 dynamic dimension(s) but 0 size expression(s)}}
  %0 = irt.reshape %x : (tensor<2x6xf32>) -> tensor<?xf32>
  func.return %0 : tensor<?xf32>
}

// -----

func.func @not_yet_symbolic(%x: tensor<4x3x8x8xf32>, %w: tensor<?x3x3x3xf32, #irt.dims<"s0">>) -> tensor<4x?x8x8xf32, #irt.dims<"s0">> {
  // expected-error @+1 {{irt.conv2d: symbolic sizes are not supported by this op yet: operand 1 has type tensor<?x3x3x3xf32, #irt.dims<"s0">>}}
  %0 = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<4x3x8x8xf32>, tensor<?x3x3x3xf32, #irt.dims<"s0">>) -> tensor<4x?x8x8xf32, #irt.dims<"s0">>
  func.return %0 : tensor<4x?x8x8xf32, #irt.dims<"s0">>
}

// -----

func.func @dynamic_memref(%a: memref<?x8xf32>, %b: memref<16x8xf32>, %c: memref<4x16xf32>) {
  // expected-error @+1 {{irl.gemm: operand 0: type memref<?x8xf32> has 1 dynamic dimension(s) but 0 size expression(s)}}
  irl.gemm nk %a, %b -> %c sizes [4, 16, 8] tiles [6, 16, 8, 4] strides [] parallel 0 : memref<?x8xf32>, memref<16x8xf32>, memref<4x16xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @oversized(%x: tensor<9223372036854775807x4xf32>) -> tensor<9223372036854775807x4xf32> {
  // expected-error @+1 {{irt.relu: operand 0 has type tensor<9223372036854775807x4xf32>: 3.69e+19 elements, more than a 64-bit size can address}}
  %0 = irt.relu %x : tensor<9223372036854775807x4xf32>
  func.return %0 : tensor<9223372036854775807x4xf32>
}

// -----

func.func @max_over_empty(%x: tensor<3x0xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{irt.reduce: max over dimension 1 of size 0 (input 3x0) has no value; torch.amax raises for it too}}
  %0 = irt.reduce max %x [1] : (tensor<3x0xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

// Zero-size dimensions verify in every family, as in PyTorch.
// CHECK-LABEL: func.func @empty_batch
// CHECK:         irt.linear %x, %w, %b : (tensor<0x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<0x16xf32>
// CHECK:         irt.reduce sum %{{.*}} [1] : (tensor<3x0xf32>) -> tensor<3xf32>
// CHECK:         irt.softmax
// CHECK:         irt.slice %{{.*}} offsets [0, 8] strides [1, 1] : (tensor<3x8xf32>) -> tensor<3x0xf32>
// CHECK:         irt.matmul %{{.*}}, %{{.*}} : (tensor<3x0xf32>, tensor<0x5xf32>) -> tensor<3x5xf32>
func.func @empty_batch(%x: tensor<0x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %e: tensor<3x0xf32>, %k: tensor<0x5xf32>, %y: tensor<3x8xf32>) -> (tensor<0x16xf32>, tensor<3xf32>, tensor<0x16xf32>, tensor<3x0xf32>, tensor<3x5xf32>) {
  %0 = irt.linear %x, %w, %b : (tensor<0x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<0x16xf32>
  %1 = irt.reduce sum %e [1] : (tensor<3x0xf32>) -> tensor<3xf32>
  %2 = irt.softmax %0 dim 1 : tensor<0x16xf32>
  %3 = irt.slice %y offsets [0, 8] strides [1, 1] : (tensor<3x8xf32>) -> tensor<3x0xf32>
  %4 = irt.matmul %e, %k : (tensor<3x0xf32>, tensor<0x5xf32>) -> tensor<3x5xf32>
  func.return %0, %1, %2, %3, %4 : tensor<0x16xf32>, tensor<3xf32>, tensor<0x16xf32>, tensor<3x0xf32>, tensor<3x5xf32>
}
