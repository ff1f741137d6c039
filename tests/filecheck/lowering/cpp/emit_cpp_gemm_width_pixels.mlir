// RUN: %exit1 irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32},irc-to-loops{gemm_width=32}' -t cpp 2>&1 | filecheck %s
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32},irc-to-loops{gemm_width=32}' -t 'cpp{gemm_width=32}' | filecheck %s --check-prefix=WIDE

// A conv in the pixels layout reads its weights as the rhs, packed in panels of gemm_width
// output channels: a target whose panels are 16 wide would read 32-wide ones wrongly, and the
// emitter refuses, naming both widths. At width 32 a row of 4 pixels is half of a two-row tile
// (IRC_PT 14): the rows per tile (the fourth template argument) are 2 (`pixel_run_segments`).
// CHECK: irc-opt: error: NotImplementedError: cpp emitter: irl.gemm reads conv weights packed in 32-column panels, but this target's GEMM panels are 16 wide
// CHECK-NOT: Traceback
// WIDE: #define IRC_NR 32
// WIDE: #define IRC_PR 12
// WIDE-NEXT: #define IRC_PT 14
// WIDE: const irc_prepacked<IRC_NR> irc_a{w_packed, 288};
// WIDE: irc_conv_pixels<9, 1, 4, 2, true, true, irc_cols<3, 1, 1, 2>>(24, irc_a, irc_b, irc_c, irc_epi, 4, 8, 32, false);
func.func @f(%x: tensor<1x32x4x4xf32>, %w: tensor<24x32x3x3xf32>) -> tensor<1x24x4x4xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x32x4x4xf32>, tensor<24x32x3x3xf32>) -> tensor<1x24x4x4xf32>
  func.return %y : tensor<1x24x4x4xf32>
}
