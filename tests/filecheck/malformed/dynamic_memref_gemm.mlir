// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}dynamic_memref_gemm.mlir:7:3: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%a: memref<?x8xf32>, %b: memref<16x8xf32>, %c: memref<4x16xf32>) {
  // expected-error @+1 {{irl.gemm: dynamic dimensions are not supported yet: operand 0 has type memref<?x8xf32>; give every dimension a static size (irc compiles one version per input shape)}}
  irl.gemm nk %a, %b -> %c sizes [4, 16, 8] tiles [6, 16, 8, 4] strides [] parallel 0 : memref<?x8xf32>, memref<16x8xf32>, memref<4x16xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}
