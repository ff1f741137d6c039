// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}dynamic_memref_gemm.mlir:7:3: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%a: memref<?x8xf32>, %b: memref<16x8xf32>, %c: memref<4x16xf32>) {
  // expected-error @+1 {{irl.gemm: operand 0: type memref<?x8xf32> has 1 dynamic dimension(s) but 0 size expression(s) (a `?` dimension needs its size in an #irt.dims attribute)}}
  irl.gemm nk %a, %b -> %c sizes [4, 16, 8] tiles [6, 16, 8, 4] strides [] parallel 0 : memref<?x8xf32>, memref<16x8xf32>, memref<4x16xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}
