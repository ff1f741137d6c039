// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize | filecheck %s
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp
// RUN: irc-opt %s -p 'irc-fuse,irc-to-loops,irc-vectorize{vector_width=4}' | filecheck %s --check-prefix=W4
// RUN: irc-opt %s -p 'irc-fuse,irc-to-loops{strict=true},irc-vectorize' | filecheck %s --check-prefix=STRICT
// RUN: irc-opt %s -p 'irc-fuse,irc-to-loops{strict=true},irc-vectorize{vector_width=4}' | filecheck %s --check-prefix=STRICT-W4

// irc-vectorize marks a loop `irc.vectorize` when its innermost dimension walks every buffer
// contiguously (the last index) or not at all, and its body is straight-line arith/math/memref.
// It also writes the schedule the emitter prints: on a marked nest, `irc.simd = "split"` (OpenMP
// threads over the outer dimensions, `omp simd` on the innermost) or "inner" (the outer
// dimensions are few: `parallel for simd` on the innermost); on a long reduction `irc.chunk`.

// A broadcast bias along the contiguous dimension and GELU: marked.

// CHECK-LABEL: func.func @bias_gelu
// CHECK:         "scf.parallel"(%c0, %c0, %c32, %c64, %c1, %c1)
// CHECK:         }) {irc.kernel = "irt.elementwise (irt.add + irt.gelu) -> 32x64", irc.vectorize, irc.simd = "split"}
// CPP-LABEL:   extern "C" void bias_gelu(
// CPP:           #pragma omp parallel for collapse(1) schedule(static)
// CPP-NEXT:      for (int64_t i0 = 0; i0 < 32; ++i0)
// CPP-NEXT:      #pragma omp simd
// CPP-NEXT:      for (int64_t i1 = 0; i1 < 64; ++i1)
// CPP:             irc_erf(
func.func @bias_gelu(%x: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<32x64xf32> {
  %y = irt.add %x, %b : (tensor<32x64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
  %g = irt.gelu %y : tensor<32x64xf32>
  func.return %g : tensor<32x64xf32>
}

// A per-row scale (invariant in the innermost dimension) is still contiguous; with only 4 rows
// the threads split the 1000 columns instead.

// CHECK-LABEL: func.func @few_rows
// CHECK:         }) {irc.kernel = "irt.mul -> 4x1000", irc.vectorize, irc.simd = "inner"}
// CPP-LABEL:   extern "C" void few_rows(
// CPP:           // kernel {{[0-9]+}}: irt.mul -> 4x1000
// CPP-NEXT:      for (int64_t i0 = 0; i0 < 4; ++i0)
// CPP-NEXT:      #pragma omp parallel for simd schedule(static)
// CPP-NEXT:      for (int64_t i1 = 0; i1 < 1000; ++i1)
func.func @few_rows(%x: tensor<4x1000xf32>, %c: tensor<4x1xf32>) -> tensor<4x1000xf32> {
  %y = irt.mul %x, %c : (tensor<4x1000xf32>, tensor<4x1xf32>) -> tensor<4x1000xf32>
  func.return %y : tensor<4x1000xf32>
}

// A transpose reads its input with the innermost index in the first position (a stride of
// 16): not marked, and emitted as before.

// CHECK-LABEL: func.func @transposed
// CHECK-NOT:     irc.simd
// CHECK:         }) {irc.kernel = "irt.transpose -> 16x8"} :
// CPP-LABEL:   extern "C" void transposed(
// CPP:           #pragma omp parallel for collapse(2) schedule(static)
// CPP-NOT:       simd
// CPP:         }
func.func @transposed(%x: tensor<8x16xf32>) -> tensor<16x8xf32> {
  %t = irt.transpose %x [1, 0] : (tensor<8x16xf32>) -> tensor<16x8xf32>
  func.return %t : tensor<16x8xf32>
}

// Softmax: the row nest holds loops (not marked itself); its three row passes are: a max
// reduction, an add reduction that also stores, and an in-place scale.

// CHECK-LABEL: func.func @softmax
// CHECK:         scf.for %j = %c0 to %c9 step %c1 iter_args
// CHECK:         } {irc.reduction = "max", irc.vectorize}
// CHECK:         scf.for
// CHECK:         } {irc.reduction = "add", irc.vectorize}
// CHECK:         scf.for
// CHECK:         } {irc.vectorize}
// CHECK-NEXT:    scf.reduce
// CHECK-NEXT:  }) {irc.kernel = "irt.softmax -> 4x9"} :
// CHECK-NOT:     irc.chunk
// CPP-LABEL:   extern "C" void softmax(
// CPP:           #pragma omp parallel for collapse(1) schedule(static)
// CPP:             #pragma omp simd reduction(max:[[M:acc[0-9]*]])
// CPP-NEXT:        for (int64_t j = 0; j < 9; ++j)
// CPP:               irc_maxf([[M]],
// CPP:             #pragma omp simd reduction(+:[[L:acc[0-9]*]])
// CPP:               irc_exp(
// CPP:             #pragma omp simd
// CPP-NEXT:        for
func.func @softmax(%x: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %p = irt.softmax %x dim -1 : tensor<4x9xf32>
  func.return %p : tensor<4x9xf32>
}

// Softmax over dim 0 walks each column with a stride: no loop is marked.

// CHECK-LABEL: func.func @softmax_dim0
// CHECK-NOT:     irc.vectorize
// CHECK:         func.return
func.func @softmax_dim0(%x: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %p = irt.softmax %x dim 0 : tensor<4x9xf32>
  func.return %p : tensor<4x9xf32>
}

// Max pool's vertical pass reads the input rows at a stride of 2 (q*2, q*2 + 1) and stores the
// two column phases of its row of window maxima (a 1-D view of it) at q + 32 and q + 16
// (`PaddedRow`: each phase's input columns from a multiple of 16), 8 trips apart: marked. The
// horizontal pass reads the phases at ow + 15, ow + 32, ow + 16 and writes the output row at
// ow: marked. A stride of 8 keeps plain rows, and its horizontal pass would
// gather element by element: not marked.

// CHECK-LABEL: func.func @max_pool
// CHECK:             %flat = memref.reinterpret_cast %window_rows
// CHECK-NEXT:        scf.for %q = %c0 to %c8 step %c1 {
// CHECK-NEXT:          arith.muli %q, %c2 : index
// CHECK-NEXT:          %[[P1:.*]] = arith.addi %q, %c32 : index
// CHECK:               memref.store %{{.*}}, %flat[%[[P1]]]
// CHECK:               %[[P0:.*]] = arith.addi %q, %c16 : index
// CHECK:               memref.store %{{.*}}, %flat[%[[P0]]]
// CHECK-NEXT:        } {irc.vectorize}
// CHECK:             %flat_1 = memref.reinterpret_cast %window_rows
// CHECK-NEXT:        scf.for %ow = %c0 to %c8 step %c1 {
// CHECK-NEXT:          %[[T0:.*]] = arith.addi %ow, %c15 : index
// CHECK:               memref.load %flat_1[%[[T0]]]
// CHECK:             } {irc.vectorize}
// At 4 lanes too, with no lanes mark (constant bounds).
// W4-LABEL:    func.func @max_pool
// W4:              scf.for %ow = %c0 to %c8 step %c1 {
// W4:              } {irc.vectorize}
// CHECK-LABEL: func.func @max_pool_stride8
// CHECK:           scf.for %ow = %c0 to %c2 step %c1 {
// CHECK-NEXT:        arith.muli %ow, %c8 : index
// CHECK:           }
// CHECK-NOT:       irc.vectorize
// CHECK:         func.return

// A strict build's max pool folds each tap's clamped column range into the row: known only at
// run time but bounded by the 8 output columns, fewer than twice the default 8 lanes:
// `irc.lanes = 4`, so a window of 7 or 8 columns still fills a vector (with 8 lanes it would
// rarely fill one and run its remainder scalar). At 4 lanes (`irc-vectorize{vector_width=4}`)
// 8 columns are two vectors already: no lanes mark.

// STRICT-LABEL: func.func @max_pool
// STRICT:           scf.for %ow_1 = %{{.*}} to %{{.*}} step %c1 {
// STRICT-NEXT:        arith.muli %ow_1, %c2 : index
// STRICT:           } {irc.vectorize, irc.lanes = 4 : i64}
// STRICT-W4-LABEL:  func.func @max_pool
// STRICT-W4:            scf.for %ow_1 = %{{.*}} to %{{.*}} step %c1 {
// STRICT-W4:            } {irc.vectorize}
// STRICT-LABEL: func.func @max_pool_stride8
// STRICT:           scf.for %ow_1 = %{{.*}} to %{{.*}} step %c1 {
// STRICT-NEXT:        arith.muli %ow_1, %c8 : index
// STRICT:           }
// STRICT-NOT:       irc.vectorize
// STRICT:         func.return
// CPP-LABEL:   extern "C" void max_pool(
// CPP:               #pragma omp simd simdlen(8)
// CPP-NEXT:          for (int64_t q = 0; q < 8; ++q)
// CPP:               #pragma omp simd simdlen(8)
// CPP-NEXT:          for (int64_t ow = 0; ow < 8; ++ow)
// CPP:                 irc_maxf(
func.func @max_pool(%x: tensor<1x4x16x16xf32>) -> tensor<1x4x8x8xf32> {
  %m = irt.max_pool2d %x kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] : (tensor<1x4x16x16xf32>) -> tensor<1x4x8x8xf32>
  func.return %m : tensor<1x4x8x8xf32>
}

func.func @max_pool_stride8(%x: tensor<1x4x16x16xf32>) -> tensor<1x4x2x2xf32> {
  %m = irt.max_pool2d %x kernel [8, 8] stride [8, 8] padding [0, 0] dilation [1, 1] : (tensor<1x4x16x16xf32>) -> tensor<1x4x2x2xf32>
  func.return %m : tensor<1x4x2x2xf32>
}

// A reduction of at least 256 constant iterations keeps 64 partial results (`irc.chunk`), marked
// or not (the column sum walks its input with a stride: not vectorized, still chunked); 255
// iterations are too few.

// CHECK-LABEL: func.func @long_reductions
// CHECK:         } {irc.reduction = "add", irc.vectorize, irc.chunk = 64 : i64}
// CHECK:         } {irc.reduction = "add", irc.chunk = 64 : i64}
// CHECK-NOT:     irc.chunk
// CHECK:         func.return
// CPP-LABEL:   extern "C" void long_reductions(
// CPP:           float {{acc[0-9_]*_parts}}[64];
// CPP:           float {{acc[0-9_]*_parts}}[64];
// CPP-NOT:       _parts[64];
// CPP:         extern "C" void long_reductions__argv(
func.func @long_reductions(%x: tensor<4x256xf32>, %y: tensor<256x4xf32>, %z: tensor<4x255xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %s = irt.reduce sum %x [1] : (tensor<4x256xf32>) -> tensor<4xf32>
  %c = irt.reduce sum %y [0] : (tensor<256x4xf32>) -> tensor<4xf32>
  %t = irt.reduce sum %z [1] : (tensor<4x255xf32>) -> tensor<4xf32>
  func.return %s, %c, %t : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
