// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=12},irc-to-loops{gemm_width=32 gemm_rows=12 matmul_rows=12 threads=2 l1d=32768 l2=1048576 l3=33554432}' --split-input-file | filecheck %s
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=12},irc-to-loops{gemm_width=32 gemm_rows=12 matmul_rows=12 threads=2 l1d=32768 l2=1048576 l3=33554432}' -t 'cpp{gemm_width=32 gemm_rows=12 matmul_rows=12}' --split-input-file | filecheck %s --check-prefix=CPP
// RUN: %exit1 irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=12},irc-to-loops{gemm_width=32 gemm_rows=12}' -t 'cpp{gemm_width=32}' --split-input-file 2>&1 | filecheck %s --check-prefix=MISMATCH
// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=12},irc-to-loops{gemm_width=32 gemm_rows=12}' -t 'cpp{gemm_width=32 gemm_rows=12}' -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// 12-row register tiles (AVX-512's 32 registers: 24 accumulators), for matrix products
// (matmul_rows, IRC_MMR) and for convs (gemm_rows, IRC_MR), and the blocking from the
// cache sizes (a 1 MiB L2, a 32 MiB L3) for an lhs read in place: KC = L2 / 512 = 2048 would take
// K = 4096 in 2 steps with lhs blocks of 252 rows (2 MiB of 2048-long rows, down to a multiple of
// 12), a second pass over the rhs; one block of all 264 rows (256 rounded up to 12) costs less
// (C_PASS_WEIGHT): K in 3 steps of 1366, MC 264; NC = 1024 (the rhs block fits a thread's half of
// L3); MS all 256 rows (the columns are split).
// CHECK-LABEL: func.func @linear
// CHECK:         irl.gemm panels %x, %w_packed -> %out0 sizes [256, 4096, 4096] tiles [264, 1024, 1366, 256]
// CPP:           #define IRC_NR 32
// CPP-NEXT:      #define IRC_MR 12
// CPP-NEXT:      #define IRC_MMR 12
// CPP-LABEL:     extern "C" void linear(
// CPP:           irc_gemm(256, 4096, 4096, irc_a, irc_b, irc_c, 4096, irc_epi, 264, 1024, 1366, 256, true);
// MISMATCH:      extern "C" void linear(
func.func @linear(%x: tensor<256x4096xf32>, %w: tensor<4096x4096xf32>) -> tensor<256x4096xf32> {
  %y = irt.linear %x, %w : (tensor<256x4096xf32>, tensor<4096x4096xf32>) -> tensor<256x4096xf32>
  func.return %y : tensor<256x4096xf32>
}

// -----

// A conv's weight packed in 12-row panels, [ceil(O/12), C*kH*kW, 12], read as the engine's lhs;
// a group starts at panel g*(O/g)/12. Emitted for a 6-row tile, the panels would be read
// wrongly: the emitter refuses, naming both heights.
// CHECK-LABEL: func.func @conv
// CHECK:         %w_packed = memref.alloc() {alignment = 64 : i64} : memref<2x27x12xf32>
// CHECK:         irl.gemm direct_panels %w_packed, %x -> %out0 sizes [12, 64, 27] tiles [12, 64, 27, 12]
// CPP-LABEL:     extern "C" void conv(
// CPP:           const irc_prepacked<IRC_MR> irc_a{{{.*}} + irc_g*324, 27};
// MISMATCH:      irc-opt: error: NotImplementedError: cpp emitter: irl.gemm reads conv weights packed in 12-row panels, but this target's GEMM tile has 6 rows
func.func @conv(%x: tensor<1x6x8x8xf32>, %w: tensor<24x3x3x3xf32>) -> tensor<1x24x8x8xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 2 : (tensor<1x6x8x8xf32>, tensor<24x3x3x3xf32>) -> tensor<1x24x8x8xf32>
  func.return %y : tensor<1x24x8x8xf32>
}
