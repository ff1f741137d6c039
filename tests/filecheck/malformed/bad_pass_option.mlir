// A bad pass option is rejected while the command line is read, before any input: no line to
// annotate, so no --verify-diagnostics run.
// RUN: %exit1 irc-opt %s -p 'irc-fuse{bogus=1}' 2>&1 | filecheck %s
// CHECK: irc-opt: error: ValueError: Provided arguments ["bogus"] not found in expected arguments ["disable"]
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
