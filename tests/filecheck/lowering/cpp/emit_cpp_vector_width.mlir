// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t 'cpp{vector_width=16}' | filecheck %s --check-prefixes=CHECK,W16
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t 'cpp{vector_width=8}' | filecheck %s --check-prefixes=CHECK,W8
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t 'cpp{vector_width=4}' | filecheck %s --check-prefixes=CHECK,W4
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t 'cpp{vector_width=16}' -o %t16.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t16.cpp
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t 'cpp{vector_width=4}' -o %t4.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t4.cpp
// RUN: not irc-opt %s -p irc-fuse -t 'cpp{vector_width=32}' 2>&1 | filecheck %s --check-prefix=BAD

// The Target's vector width (`-t cpp{vector_width=W}`: 16 float32 lanes with AVX-512, 8 with
// AVX2, 4 portable) is the lane count of all the vector code: `#define IRC_VL W` sizes the
// runtime headers' vectors (`irc_vec`: GEMM epilogues, softmax rows, the vector math) and every
// SIMD loop says `simdlen(W)`, so GCC's own choice (which depends on its tuning of the CPU) does
// not decide it. Elementwise chains, plain and chunked reductions, softmax and layer_norm rows alike.

// W16:         #define IRC_VL 16
// W8:          #define IRC_VL 8
// W4:          #define IRC_VL 4
// CHECK:       typedef float irc_vec __attribute__((vector_size(IRC_VL * 4)));

// CHECK-LABEL: extern "C" void silu_gelu(
// W16:           #pragma omp simd simdlen(16)
// W8:            #pragma omp simd simdlen(8)
// W4:            #pragma omp simd simdlen(4)
// CHECK-NEXT:    for (int64_t i1 = 0; i1 < 64; ++i1)
// CHECK:           irc_erf(
func.func @silu_gelu(%x: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %s = irt.sigmoid %x : tensor<32x64xf32>
  %m = irt.mul %x, %s : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  %g = irt.gelu %m : tensor<32x64xf32>
  func.return %g : tensor<32x64xf32>
}

// A softmax row: the max and the sum are SIMD reductions at the width, the exp pass a SIMD loop.

// CHECK-LABEL: extern "C" void softmax(
// W16:           #pragma omp simd reduction(max:{{.*}}) simdlen(16)
// W16:           #pragma omp simd reduction(+:{{.*}}) simdlen(16)
// W4:            #pragma omp simd reduction(max:{{.*}}) simdlen(4)
// W4:            #pragma omp simd reduction(+:{{.*}}) simdlen(4)
// CHECK:       extern "C" void softmax__argv(
func.func @softmax(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %p = irt.softmax %x dim -1 : tensor<8x128xf32>
  func.return %p : tensor<8x128xf32>
}

// layer_norm over 512: the mean and variance sums are long enough to be chunked; the chunk's
// partial results are filled `simdlen(W)` lanes at a time.

// CHECK-LABEL: extern "C" void layer_norm(
// CHECK:         float {{acc[0-9_]*_parts}}[64];
// W16:           #pragma omp simd simdlen(16)
// W8:            #pragma omp simd simdlen(8)
// W4:            #pragma omp simd simdlen(4)
// CHECK-NEXT:    for (int64_t {{[a-z0-9_]+}} = chunk{{[0-9_]*}}; {{.*}} < chunk{{[0-9_]*}} + 64;
// W16:           #pragma omp simd reduction(+:{{acc[0-9_]*}}) simdlen(16)
// CHECK:       extern "C" void layer_norm__argv(
func.func @layer_norm(%x: tensor<4x512xf32>, %w: tensor<512xf32>, %b: tensor<512xf32>) -> tensor<4x512xf32> {
  %n = irt.layer_norm %x : tensor<4x512xf32> weight %w : tensor<512xf32> bias %b : tensor<512xf32> dims 1 eps 1.000000e-05 -> tensor<4x512xf32>
  func.return %n : tensor<4x512xf32>
}

// BAD: vector_width must be one of 4, 8, 16, got 32
