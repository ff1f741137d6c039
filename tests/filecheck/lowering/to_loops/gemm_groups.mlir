// RUN: irc-opt %s -p 'irc-to-loops{threads=2}' | filecheck %s --check-prefix=T2
// RUN: irc-opt %s -p 'irc-to-loops{threads=2}' -t cpp | filecheck %s --check-prefix=CPP2
// RUN: irc-opt %s -p 'irc-to-loops{threads=1}' | filecheck %s --check-prefix=T1
// RUN: irc-opt %s -p 'irc-to-loops{threads=2}' -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// A grouped convolution with at least GROUP_TASKS groups per thread (6 groups, two threads):
// `parallel 2`, the threads share out the images x groups and each group's product runs on one
// thread (its engine call is not parallel). Compiled for one thread: `parallel 1`, as before.
// T2-LABEL: func.func @grouped
// T2:         irl.gemm direct %w, %x -> %out0 sizes [8, 256, 72] {{.*}} groups 6> parallel 2
// CPP2-LABEL: extern "C" void grouped(
// CPP2:         #pragma omp parallel for collapse(2) schedule(static)
// CPP2-NEXT:    for (int64_t irc_n = 0; irc_n < 1; ++irc_n)
// CPP2-NEXT:    for (int64_t irc_g = 0; irc_g < 6; ++irc_g) {
// CPP2:           irc_conv_direct<9>(8, irc_a, irc_b, irc_c, irc_epi, {{.*}}, false);
// T1-LABEL: func.func @grouped
// T1:         irl.gemm direct %w, %x -> %out0 sizes [8, 256, 72] {{.*}} groups 6> parallel 1
func.func @grouped(%x: tensor<1x48x16x16xf32>, %w: tensor<48x8x3x3xf32>) -> tensor<1x48x16x16xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 6 : (tensor<1x48x16x16xf32>, tensor<48x8x3x3xf32>) -> tensor<1x48x16x16xf32>
  func.return %y : tensor<1x48x16x16xf32>
}
