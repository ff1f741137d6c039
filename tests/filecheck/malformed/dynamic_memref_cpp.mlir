// RUN: irc-opt %s -t cpp --verify-diagnostics
// RUN: %exit1 irc-opt %s -t cpp 2>&1 | filecheck %s
// CHECK: irc-opt: error: ValueError: cpp emitter: {{.+}}
// CHECK-NOT: Traceback
// expected-error @unknown {{ValueError: cpp emitter: dynamic dimensions are not supported yet: argument 0 of @f has type memref<?x4xf32>; give every dimension a static size (irc compiles one version per input shape)}}
func.func @f(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0, %c0] : memref<?x4xf32>
  memref.store %v, %y[%c0, %c0] : memref<?x4xf32>
  func.return
}
