// RUN: irc-opt %s -t cpp --verify-diagnostics
// RUN: %exit1 irc-opt %s -t cpp 2>&1 | filecheck %s
// CHECK: irc-opt: error: ValueError: cpp emitter: {{.+}}
// CHECK-NOT: Traceback
// expected-error @unknown {{ValueError: cpp emitter: argument 0 of @f: type memref<?x4xf32> has 1 dynamic dimension(s) but 0 size expression(s) (a `?` dimension needs its size in an #irt.dims attribute)}}
func.func @f(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0, %c0] : memref<?x4xf32>
  memref.store %v, %y[%c0, %c0] : memref<?x4xf32>
  func.return
}
