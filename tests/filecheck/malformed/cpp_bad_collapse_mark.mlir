// RUN: irc-opt %s -t cpp --verify-diagnostics
// RUN: %exit1 irc-opt %s -t cpp 2>&1 | filecheck %s
// CHECK: irc-opt: error: NotImplementedError: cpp emitter: {{.+}}
// CHECK-NOT: Traceback
// expected-error @unknown {{NotImplementedError: cpp emitter: irc.collapse must be an integer from 1 to the nest's 2 dimensions, got 3 : i64}}
func.func @f(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
  %c8 = arith.constant 8 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  "scf.parallel"(%c0, %c0, %c4, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %v = memref.load %x[%i, %j] : memref<4x8xf32>
    memref.store %v, %y[%i, %j] : memref<4x8xf32>
    scf.reduce
  }) {irc.parallel = "omp", irc.collapse = 3 : i64} : (index, index, index, index, index, index) -> ()
  func.return
}
