// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 winograd=false},irc-to-loops{gemm_width=32}' -t 'cpp{gemm_width=32}' | filecheck %s --check-prefix=WIDE
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=16 winograd=false},irc-to-loops{gemm_width=16}' -t 'cpp{gemm_width=16}' | filecheck %s --check-prefix=NARROW

// A pixels-layout conv's output rows are cut into run tiles (`pixel_run_rows`, the third
// template argument). A row of 28 pixels: tiles of 12 would be 10 + 9 + 9, so at width 32 it
// takes two tiles of 14 (PIXEL_PAIR_ROWS, 28 of the 32 registers), every one of them 14 (EVEN,
// the fifth argument). At width 16 a tile holds at most 6 pixels: 6 + 4 x 5 (not EVEN).
// The sixth, EDGES: padded above and below, the top and bottom rows' tiles skip the kernel rows
// that read padding alone; a conv padded in its columns only (@columns_padded) has none to skip.
// The seventh, the taps that edge pixels read column padding with, skipped (irc_cols): not in rows
// of 14-pixel tiles; in rows of two tiles of at most 8 pixels (@halves, 16 = 8 + 8 at width 32:
// SIDES 0, the first tile skips the left edge's taps, the second the right's), not in rows of three.
// WIDE: #define IRC_PR 12
// WIDE-NEXT: #define IRC_PT 14
// WIDE: irc_conv_pixels<9, 1, 14, 1, true, true, irc_no_cols>(64, irc_a, irc_b, irc_c, irc_epi, 5, 140, 32, true);
// NARROW: #define IRC_PR 6
// NARROW-NEXT: #define IRC_PT 6
// NARROW: irc_conv_pixels<9, 1, 6, 1, false, true, irc_no_cols>(64, irc_a, irc_b, irc_c, irc_epi, 5, 140, 32, true);
// WIDE: irc_conv_pixels<3, 1, 14, 1, true, false, irc_no_cols>(64, irc_a, irc_b, irc_c, irc_epi, 3, 126, 32, true);
// NARROW: irc_conv_pixels<3, 1, 6, 1, true, false, irc_no_cols>(64, irc_a, irc_b, irc_c, irc_epi, 3, 126, 32, true);
func.func @f(%x: tensor<1x64x5x28xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x5x28xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x64x5x28xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x5x28xf32>
  func.return %y : tensor<1x64x5x28xf32>
}

func.func @columns_padded(%x: tensor<1x96x3x42xf32>, %w: tensor<64x96x1x3xf32>) -> tensor<1x64x3x42xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [0, 1] dilation [1, 1] groups 1 : (tensor<1x96x3x42xf32>, tensor<64x96x1x3xf32>) -> tensor<1x64x3x42xf32>
  func.return %y : tensor<1x64x3x42xf32>
}

// WIDE: irc_conv_pixels<9, 1, 8, 1, true, true, irc_cols<3, 1, 1, 2, 0>>(32, irc_a, irc_b, irc_c, irc_epi, 4, 32, 32, true);
// NARROW: irc_conv_pixels<9, 1, 6, 1, false, true, irc_no_cols>(32, irc_a, irc_b, irc_c, irc_epi, 4, 64, 16, true);
func.func @halves(%x: tensor<1x128x4x16xf32>, %w: tensor<32x128x3x3xf32>) -> tensor<1x32x4x16xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x128x4x16xf32>, tensor<32x128x3x3xf32>) -> tensor<1x32x4x16xf32>
  func.return %y : tensor<1x32x4x16xf32>
}
