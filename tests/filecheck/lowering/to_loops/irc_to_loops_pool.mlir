// RUN: irc-opt %s -p irc-to-loops | filecheck %s
// RUN: irc-opt %s -p irc-to-loops,irc-vectorize | filecheck %s --check-prefix=VEC
// RUN: irc-opt %s -p irc-to-loops,irc-vectorize -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// Max and avg pooling outside strict builds (`separable_pool`; the strict nests are in
// irc_to_loops_nn.mlir). One parallel iteration per plane (n, c). Its rows of window reductions
// (`window_rows`, one per output row of a block of up to 8, here all 4: the input width plus the
// padding, 9, rounded up to whole column phases, 10) hold the stride's two column phases side by
// side, each phase's first input column at a multiple of 16 (`PaddedRow`: padded column 2q at
// 15 + q, 2q + 1 at 32 + q; rows 48 wide). They get their padding columns first (0, 8 and 9 at
// 15, 19 and 36): -inf for max. Then the vertical pass of every output row of a block reduces the
// window's rows in bounds into its row of the buffer (a 1-D view of it): input columns 2q and
// 2q + 1 (q < 3: padded 2q + 1 and 2q + 2) go to q + 32 and q + 16, the last column (6, padded
// 7) to 35; then the horizontal pass of every row of the block takes the window's columns from
// consecutive loads (ow + 15, ow + 32, ow + 16: padded 2ow, 2ow + 1, 2ow + 2). (One pass right after the
// other read each row back while its stores were still in flight: DenseNet's 3x3/s2 pool on
// 1x64x32x32 took 13.7 us rather than 5.9.) The interior rows (every kernel row in bounds, here
// 1 and 2) are loops over blocks, rows first + r; the border rows (oh = 0: rows 0 and 1; oh = 3:
// rows 5 and 6) straight-line code, a block of them. Every loop has constant bounds. A max chain
// is maximumf(next, acc): GCC vectorizes that form.

// CHECK-LABEL: func.func @max_pool(%x: memref<1x2x7x7xf32>, %out0: memref<1x2x4x4xf32>)
// CHECK:         %window_rows = memref.alloc() {alignment = 64 : i64} : memref<1x2x4x48xf32>
// CHECK:         "scf.parallel"(%c0, %c0, %c1, %c2, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:      scf.for %r = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:        memref.store %[[NEGINF]], %window_rows[%i0, %i1, %r, %c15]
// CHECK-NEXT:        %[[NEGINF2:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:        memref.store %[[NEGINF2]], %window_rows[%i0, %i1, %r, %c19]
// CHECK-NEXT:        %[[NEGINF3:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:        memref.store %[[NEGINF3]], %window_rows[%i0, %i1, %r, %c36]
// CHECK-NEXT:      }
// CHECK:           scf.for %r_1 = %c0 to %c2 step %c1 {
// CHECK-NEXT:        %[[OH:.*]] = arith.addi %c1, %r_1 : index
// CHECK:             %row = memref.reinterpret_cast %x
// CHECK:             %row_1 = memref.reinterpret_cast %x
// CHECK:             %row_2 = memref.reinterpret_cast %x
// CHECK:             %flat = memref.reinterpret_cast %window_rows to offset: [%{{.*}}], sizes: [48], strides: [1]
// CHECK-NEXT:        scf.for %q = %c0 to %c3 step %c1 {
// CHECK-NEXT:          %[[E:.*]] = arith.muli %q, %c2 : index
// CHECK-NEXT:          %[[AT1:.*]] = arith.addi %q, %c32 : index
// CHECK-NEXT:          %[[R0:.*]] = memref.load %row[%[[E]]]
// CHECK-NEXT:          %[[R1:.*]] = memref.load %row_1[%[[E]]]
// CHECK-NEXT:          %[[R2:.*]] = memref.load %row_2[%[[E]]]
// CHECK-NEXT:          %[[M01:.*]] = arith.maximumf %[[R1]], %[[R0]] : f32
// CHECK-NEXT:          %[[M:.*]] = arith.maximumf %[[R2]], %[[M01]] : f32
// CHECK-NEXT:          memref.store %[[M]], %flat[%[[AT1]]]
// CHECK-NEXT:          %[[E2:.*]] = arith.muli %q, %c2 : index
// CHECK-NEXT:          %[[O:.*]] = arith.addi %[[E2]], %c1 : index
// CHECK-NEXT:          %[[AT0:.*]] = arith.addi %q, %c16 : index
// CHECK-NEXT:          memref.load %row[%[[O]]]
// CHECK:               memref.store %{{.*}}, %flat[%[[AT0]]]
// CHECK-NEXT:        }
// CHECK-NEXT:        memref.load %row[%c6]
// CHECK:             memref.store %{{.*}}, %flat[%c35]
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.for %r_2 = %c0 to %c2 step %c1 {
// CHECK-NEXT:        %[[OH2:.*]] = arith.addi %c1, %r_2 : index
// CHECK:             %flat_1 = memref.reinterpret_cast %window_rows
// CHECK-NEXT:        scf.for %ow = %c0 to %c4 step %c1 {
// CHECK-NEXT:          %[[C0:.*]] = arith.addi %ow, %c15 : index
// CHECK-NEXT:          %[[C1:.*]] = arith.addi %ow, %c32 : index
// CHECK-NEXT:          %[[C2:.*]] = arith.addi %ow, %c16 : index
// CHECK-NEXT:          %[[T0:.*]] = memref.load %flat_1[%[[C0]]]
// CHECK-NEXT:          %[[T1:.*]] = memref.load %flat_1[%[[C1]]]
// CHECK-NEXT:          %[[T2:.*]] = memref.load %flat_1[%[[C2]]]
// CHECK-NEXT:          %[[N01:.*]] = arith.maximumf %[[T1]], %[[T0]] : f32
// CHECK-NEXT:          %[[N:.*]] = arith.maximumf %[[T2]], %[[N01]] : f32
// CHECK-NEXT:          memref.store %[[N]], %out0[%i0, %i1, %[[OH2]], %ow]
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK:           %row_3 = memref.reinterpret_cast %x
// CHECK:           %row_4 = memref.reinterpret_cast %x
// CHECK:           %flat_2 = memref.reinterpret_cast %window_rows
// CHECK-NEXT:      scf.for %q_1 = %c0 to %c3 step %c1 {
// CHECK:             arith.maximumf
// CHECK-NOT:         arith.maximumf
// CHECK:             memref.store
// CHECK:             arith.maximumf
// CHECK-NOT:         arith.maximumf
// CHECK:           }
// CHECK:           %row_5 = memref.reinterpret_cast %x
// CHECK:           %row_6 = memref.reinterpret_cast %x
// CHECK:           %flat_3 = memref.reinterpret_cast %window_rows to offset: [%{{.*}}], sizes: [48], strides: [1]
// CHECK:           %flat_4 = memref.reinterpret_cast %window_rows
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c0, %ow_1]
// CHECK:           %flat_5 = memref.reinterpret_cast %window_rows
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c3, %ow_2]
// CHECK:         }) {irc.kernel = "irt.max_pool2d -> 1x2x4x4"}
// CHECK:         memref.dealloc %window_rows
// Both passes of every row are marked for SIMD (the vertical one reads at a stride of 2 and
// stores its two phases 3 trips apart).
// VEC-LABEL:   func.func @max_pool
// VEC:               scf.for %q = %c0 to %c3 step %c1 {
// VEC:               } {irc.vectorize}
// VEC:               scf.for %ow = %c0 to %c4 step %c1 {
// VEC:               } {irc.vectorize}
func.func @max_pool(%x: tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32> {
  %m = irt.max_pool2d %x kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
  func.return %m : tensor<1x2x4x4xf32>
}

// Avg pool pads with 0 and divides by PyTorch's divisor, a constant per output: without
// count_include_pad a border column divides by the window clipped to the input (6 in an
// interior row, 4 in a border row), the interior columns by 9 or 6 in one loop.
// CHECK-LABEL: func.func @avg_pool
// CHECK:             %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        memref.store %[[ZERO]], %window_rows[%i0, %i1, %r, %c15]
// CHECK:           scf.for %r_1 = %c0 to %c2 step %c1 {
// CHECK:             scf.for %q = %c0 to %c3 step %c1 {
// CHECK:               %[[S01:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[S01]], %{{.*}} : f32
// CHECK-NEXT:          memref.store %[[S]], %flat
// CHECK:           scf.for %r_2 = %c0 to %c2 step %c1 {
// CHECK-NEXT:        %[[OH:.*]] = arith.addi %c1, %r_2 : index
// CHECK:             %[[D6:.*]] = arith.constant 6.000000e+00 : f32
// CHECK-NEXT:        %{{.*}} = arith.divf %{{.*}}, %[[D6]] : f32
// CHECK-NEXT:        memref.store %{{.*}}, %out0[%i0, %i1, %[[OH]], %c0]
// CHECK-NEXT:        scf.for %ow = %c1 to %c3 step %c1 {
// CHECK:               %[[D9:.*]] = arith.constant 9.000000e+00 : f32
// CHECK-NEXT:          %{{.*}} = arith.divf %{{.*}}, %[[D9]] : f32
// CHECK-NEXT:          memref.store %{{.*}}, %out0[%i0, %i1, %[[OH]], %ow]
// CHECK:             arith.constant 6.000000e+00 : f32
// CHECK:             memref.store %{{.*}}, %out0[%i0, %i1, %[[OH]], %c3]
// CHECK:           arith.constant 4.000000e+00 : f32
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c0, %c0]
// CHECK:           scf.for %ow_1 = %c1 to %c3 step %c1 {
// CHECK:             arith.constant 6.000000e+00 : f32
// CHECK:         }) {irc.kernel = "irt.avg_pool2d -> 1x2x4x4"}
func.func @avg_pool(%x: tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32> {
  %a = irt.avg_pool2d %x kernel [3, 3] stride [2, 2] padding [1, 1] : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
  func.return %a : tensor<1x2x4x4xf32>
}

// ceil_mode: the last window (columns 6 and 7) overhangs the input, so window_rows holds 8
// columns (in a row 16 wide), column 7 is 0, and the last column divides by the window clipped to the (unpadded) input: 2
// in the interior rows, 1 in the last row. A 2x2/s2 window reads whole pairs of columns (no
// gap), so the row stays plain (no column phases); its 7 columns, fewer than a 16-lane vector,
// are two overlapping loops of 4 ([0, 4) and [3, 7)). Its windows tile the row, so each
// horizontal pass reads back whole the vectors just stored (their stores forward): one row per
// plane, each output row's two passes one after the other.
// CHECK-LABEL: func.func @avg_pool_ceil
// CHECK:         %window_rows = memref.alloc() {alignment = 64 : i64} : memref<1x2x1x16xf32>
// CHECK:           memref.store %{{.*}}, %window_rows[%i0, %i1, %c0, %c7]
// CHECK:           scf.for %oh = %c0 to %c3 step %c1 {
// CHECK:             scf.for %q = %c0 to %c4 step %c1 {
// CHECK:             scf.for %q_1 = %c3 to %c7 step %c1 {
// CHECK:             scf.for %ow = %c0 to %c3 step %c1 {
// CHECK:               arith.constant 4.000000e+00 : f32
// CHECK:             arith.constant 2.000000e+00 : f32
// CHECK:             memref.store %{{.*}}, %out0[%i0, %i1, %oh, %c3]
// CHECK:           scf.for %ow_1 = %c0 to %c3 step %c1 {
// CHECK:             arith.constant 2.000000e+00 : f32
// CHECK:           arith.constant 1.000000e+00 : f32
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c3, %c3]
func.func @avg_pool_ceil(%x: tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32> {
  %a = irt.avg_pool2d %x kernel [2, 2] stride [2, 2] padding [0, 0] ceil_mode count_include_pad : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
  func.return %a : tensor<1x2x4x4xf32>
}

// A global average pool (adaptive, output 1x1): each plane's 49 contiguous elements seen as one
// row of a [2, 3, 1, 49] view, summed in one loop marked as a reduction, then divided by 49; not
// seven rows of seven, each summed across a vector's lanes.
// CHECK-LABEL: func.func @global_avg_pool(%x: memref<2x3x7x7xf32>, %out0: memref<2x3x1x1xf32>)
// CHECK:         %[[FLAT:.*]] = memref.reinterpret_cast %x to offset: [0], sizes: [2, 3, 1, 49], strides: [147, 49, 49, 1]
// CHECK:         scf.for %ih = %c0 to %c1 step %c1
// CHECK-NEXT:      scf.for %iw = %c0 to %c49 step %c1
// CHECK-NEXT:        memref.load %[[FLAT]][%i0, %i1, %ih, %iw] : memref<2x3x1x49xf32>
// CHECK:           } {irc.reduction = "add"}
// CHECK:         %[[N:.*]] = arith.constant 4.900000e+01 : f32
// CHECK-NEXT:    arith.divf %{{.*}}, %[[N]] : f32
// CHECK:         }) {irc.kernel = "irt.adaptive_avg_pool2d -> 2x3x1x1"}
func.func @global_avg_pool(%x: tensor<2x3x7x7xf32>) -> tensor<2x3x1x1xf32> {
  %g = irt.adaptive_avg_pool2d %x : (tensor<2x3x7x7xf32>) -> tensor<2x3x1x1xf32>
  func.return %g : tensor<2x3x1x1xf32>
}
