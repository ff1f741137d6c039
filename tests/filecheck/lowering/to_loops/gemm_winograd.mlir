// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32}' | filecheck %s --check-prefix=PACK
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32},irc-to-loops{gemm_width=32 threads=2 l2=1048576}' | filecheck %s
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32},irc-to-loops{gemm_width=32 threads=2 l2=1048576}' -t 'cpp{gemm_width=32}' | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1},irc-to-loops{threads=1 l2=1048576}' -t cpp | filecheck %s --check-prefix=AVX2
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32},irc-to-loops{gemm_width=32 threads=1 l2=1048576 l3=1048576}' | filecheck %s --check-prefix=SMALLL3

// A 3x3 stride-1 conv with at least 64 input and output channels and 32 2x2 output tiles (here
// 8 x 7 = 56) runs as Winograd F(2x2, 3x3): irc-pack-weights transforms its weight
// (`irt.pack "winograd"`, [16, ceil(O/R), C, R] with R = 14 output channels, the two-row pixel
// tile's height at 32-wide panels; 6 at 16), irc-to-loops gives `irl.gemm winograd` tiles
// [R, 1, 1, OS]: at two threads 4 of the 8 tile rows per task, every panel of output channels in
// each (OS = 5; the transformed weights, 287 KB, are at most half of L2); at one thread one task,
// or, where a task's transformed inputs and products (8.6 KB a tile here) would take more than a
// quarter of L3 (1 MiB: 30 tiles), tasks of 4 tile rows.
// PACK:        %w_packed = irt.pack %w "winograd" 14 : (tensor<70x64x3x3xf32>) -> tensor<16x5x64x14xf32>
// PACK-NEXT:   irt.conv2d %x, %w packed(%w_packed : tensor<16x5x64x14xf32>) stride [1, 1] padding [1, 1]
// CHECK:       irl.gemm winograd %w_packed, %x -> %out0 sizes [70, 195, 576] tiles [4, 1, 1, 5] strides [] conv <input 1x64x15x13, output 70x15x13, kernel 3x3, stride 1x1, padding 1x1
// CPP:         const irc_wino irc_a{w_packed, 4, 5};
// CPP:         irc_conv_winograd(70, irc_a, irc_b, irc_c, irc_epi, true);
// AVX2:        const irc_wino irc_a{w_packed, 8, 12};
// SMALLL3:     irl.gemm winograd {{.*}} tiles [4, 1, 1, 5]
// AVX2:        irc_conv_winograd(70, irc_a, irc_b, irc_c, irc_epi, true);
func.func @winograd(%x: tensor<1x64x15x13xf32>, %w: tensor<70x64x3x3xf32>) -> tensor<1x70x15x13xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x64x15x13xf32>, tensor<70x64x3x3xf32>) -> tensor<1x70x15x13xf32>
  func.return %y : tensor<1x70x15x13xf32>
}

// Too few tiles (4 x 4 = 16 for 8x8 outputs), a stride, or fewer than 64 channels: the pixels or
// direct layouts, weights packed by rows.
// PACK-LABEL: func.func @not_winograd
// PACK-NOT:   "winograd"
// CHECK-LABEL: func.func @not_winograd
// CHECK-NOT:  irl.gemm winograd
func.func @not_winograd(%x: tensor<1x32x8x8xf32>, %w: tensor<64x32x3x3xf32>, %x2: tensor<1x32x16x16xf32>, %w2: tensor<64x32x3x3xf32>) -> (tensor<1x64x8x8xf32>, tensor<1x64x8x8xf32>, tensor<1x64x16x16xf32>) {
  %a = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x32x8x8xf32>, tensor<64x32x3x3xf32>) -> tensor<1x64x8x8xf32>
  %b = irt.conv2d %x2, %w stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x32x16x16xf32>, tensor<64x32x3x3xf32>) -> tensor<1x64x8x8xf32>
  %c = irt.conv2d %x2, %w2 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x32x16x16xf32>, tensor<64x32x3x3xf32>) -> tensor<1x64x16x16xf32>
  func.return %a, %b, %c : tensor<1x64x8x8xf32>, tensor<1x64x8x8xf32>, tensor<1x64x16x16xf32>
}
