// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 winograd=false},irc-to-loops{l2=262144}' | filecheck %s
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 winograd=false},irc-to-loops{l2=262144}' -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 winograd=false},irc-to-loops' | filecheck %s --check-prefix=NOL2

// A padded pixels-layout conv whose whole padded image (64 x 18 x 18 floats, 83 KB) would take
// more than an eighth of L2 (256 KB here) while its weights (74 KB) stay within half of it:
// tiles[0], MC, is the output rows per band its tasks (8 output rows each, for the two threads)
// copy and use at a time (`pixel_band_rows`): the padded rows of a band fill at most L2 / 16
// (16 KB: 3 rows of 64 x 18 floats, so one output row of a 3x3), and the C++ takes it as
// irc_conv_pixels's BH. With L2 unknown (0), MC is the output height: one padded copy of the
// whole image.
// CHECK-LABEL: func.func @banded
// CHECK:         irl.gemm pixels_panels {{.*}} tiles [1, 128, 576, 32] {{.*}} conv <input 1x64x16x16, output 32x16x16, kernel 3x3
// CPP:           irc_conv_pixels<9, 1, 6, 1, false, true, irc_no_cols>(32, irc_a, irc_b, irc_c, irc_epi, 1, 128, 32, true);
// NOL2:          irl.gemm pixels_panels {{.*}} tiles [16, 128, 576, 32]
func.func @banded(%x: tensor<1x64x16x16xf32>, %w: tensor<32x64x3x3xf32>) -> tensor<1x32x16x16xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x64x16x16xf32>, tensor<32x64x3x3xf32>) -> tensor<1x32x16x16xf32>
  func.return %y : tensor<1x32x16x16xf32>
}
