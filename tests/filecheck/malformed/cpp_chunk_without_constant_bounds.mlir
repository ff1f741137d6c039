// RUN: irc-opt %s -t cpp --verify-diagnostics
// RUN: %exit1 irc-opt %s -t cpp 2>&1 | filecheck %s
// CHECK: irc-opt: error: NotImplementedError: cpp emitter: {{.+}}
// CHECK-NOT: Traceback
// expected-error @unknown {{NotImplementedError: cpp emitter: irc.chunk = 64 : i64 needs a positive integer and a loop with constant bounds and step 1}}
func.func @f(%x: memref<300xf32>, %y: memref<1xf32>) {
  %c300 = arith.constant 300 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %ub = arith.addi %c0, %c300 : index
  %s = scf.for %k = %c0 to %ub step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%k] : memref<300xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  } {irc.reduction = "add", irc.chunk = 64 : i64}
  memref.store %s, %y[%c0] : memref<1xf32>
  func.return
}
