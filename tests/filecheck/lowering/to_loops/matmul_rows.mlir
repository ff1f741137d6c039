// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=6},irc-to-loops{gemm_width=32 gemm_rows=6 matmul_rows=12 threads=1}' | filecheck %s
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=6},irc-to-loops{gemm_width=32 gemm_rows=6 matmul_rows=12 threads=1}' -t 'cpp{gemm_width=32 gemm_rows=6 matmul_rows=12}' | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=6},irc-to-loops{gemm_width=32 gemm_rows=6 matmul_rows=12 threads=1}' -t 'cpp{gemm_width=32 gemm_rows=6 matmul_rows=12}' -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// Two register tile heights in one module: the conv's weights packed in 6-row panels and read
// with 6-row tiles (gemm_rows, IRC_MR), the linear layer's tiles 12 rows high (matmul_rows,
// IRC_MMR; its lhs is read in place, never packed): its lhs block is a multiple of 12 rows,
// MC 36 for M = 26 (30 with 6-row tiles).
// CHECK-LABEL: func.func @both
// CHECK:         %cw_packed = memref.alloc() {alignment = 64 : i64} : memref<2x27x6xf32>
// CHECK:         irl.gemm direct_panels %cw_packed, %{{.*}} -> %{{.*}} sizes [12, 64, 27] tiles [12, 96, 27, 12]
// CHECK:         irl.gemm panels %{{.*}}, %{{.*}} -> %{{.*}} sizes [26, 64, 768] tiles [36, 64, 256, 26]
// CPP:           #define IRC_MR 6
// CPP-NEXT:      #define IRC_MMR 12
// CPP-LABEL:     extern "C" void both(
// CPP:           const irc_prepacked<IRC_MR> irc_a{{{.*}}, 27};
// CPP:           const irc_dense<IRC_MMR, false> irc_a{{{.*}}, 768, 26};
func.func @both(%x: tensor<1x3x8x8xf32>, %cw: tensor<12x3x3x3xf32>, %y: tensor<26x768xf32>, %w: tensor<64x768xf32>) -> (tensor<1x12x8x8xf32>, tensor<26x64xf32>) {
  %c = irt.conv2d %x, %cw stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<12x3x3x3xf32>) -> tensor<1x12x8x8xf32>
  %l = irt.linear %y, %w : (tensor<26x768xf32>, tensor<64x768xf32>) -> tensor<26x64xf32>
  func.return %c, %l : tensor<1x12x8x8xf32>, tensor<26x64xf32>
}
