// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=6},irc-to-loops{gemm_width=32 threads=1}' | filecheck %s
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=6},irc-to-loops{gemm_width=32 threads=1}' -t 'cpp{gemm_width=32}' | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=6},irc-to-loops{gemm_width=32 threads=1}' -t 'cpp{gemm_width=32}' -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// A grouped conv whose groups have whole panels of output channels (32 a group at width 32; a
// long K on a 7x7 plane: ResNeXt-50's last stage) takes the pixels layout per group: its weights
// packed at compile time in 32-channel panels, [groups * 1, K, 32], each group's call reading
// its own panel (`irc_g*M*K` floats on).
// CHECK-LABEL: func.func @pixel_groups
// CHECK:         %w_packed = memref.alloc() {{.*}} : memref<4x288x32xf32>
// CHECK:         irl.gemm pixels_panels %w_packed, %x -> %out0 sizes [32, 49, 288] {{.*}} groups 4> parallel 1
// CPP-LABEL: extern "C" void pixel_groups(
// CPP:         for (int64_t irc_g = 0; irc_g < 4; ++irc_g) {
// CPP:           const irc_prepacked<IRC_NR> irc_a{w_packed + irc_g*9216, 288};
// CPP:           irc_conv_pixels<9, {{.*}}>(32, irc_a, irc_b, irc_c, irc_epi,
func.func @pixel_groups(%x: tensor<1x128x7x7xf32>, %w: tensor<128x32x3x3xf32>) -> tensor<1x128x7x7xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 4 : (tensor<1x128x7x7xf32>, tensor<128x32x3x3xf32>) -> tensor<1x128x7x7xf32>
  func.return %y : tensor<1x128x7x7xf32>
}
