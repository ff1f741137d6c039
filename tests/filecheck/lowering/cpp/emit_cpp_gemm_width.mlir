// RUN: %exit1 irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32},irc-to-loops{gemm_width=32}' -t cpp 2>&1 | filecheck %s
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32},irc-to-loops{gemm_width=32}' -t 'cpp{gemm_width=32}' | filecheck %s --check-prefix=WIDE

// Weights packed in 32-column panels read by a target whose GEMM panels are 16 wide would be
// read wrongly: the emitter refuses, naming both widths, instead of printing that C++.
// CHECK: irc-opt: error: NotImplementedError: cpp emitter: irl.gemm reads weights packed in 32-column panels, but this target's GEMM panels are 16 wide
// CHECK-NOT: Traceback
// WIDE: #define IRC_NR 32
// WIDE: extern "C" void f(
func.func @f(%x: tensor<4x8xf32>, %w: tensor<20x8xf32>) -> tensor<4x20xf32> {
  %y = irt.linear %x, %w : (tensor<4x8xf32>, tensor<20x8xf32>) -> tensor<4x20xf32>
  func.return %y : tensor<4x20xf32>
}
