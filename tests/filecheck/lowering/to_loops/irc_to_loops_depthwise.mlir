// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize --split-input-file | filecheck %s
// RUN: irc-opt %s -p 'irc-fuse,irc-to-loops{strict=true},irc-vectorize' --split-input-file | filecheck %s --check-prefix=STRICT
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize,irc-parallelize | irc-opt -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-fuse,irc-to-loops,irc-vectorize | irc-opt -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp
// RUN: irc-opt %s -p 'irc-fuse,irc-to-loops{strict=true},irc-vectorize' | irc-opt -t cpp -o %t2.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t2.cpp
// Depthwise convolutions (one input channel per group, `nn.lower_depthwise_conv2d`): one
// parallel iteration per output plane (n, o), the weights loaded once into values, each output
// row's columns innermost with every tap unrolled, so irc-vectorize marks the column loops (a
// strided read is a strided load, or consecutive in a padded row's column phases), the sum stays in registers (outside strict builds, the taps
// round robin over 4 partial sums, added pairwise), and the epilogue runs before the one store. A padded conv first writes its plane with the zero padding into a buffer
// of its own (then every column is interior); strict builds keep the input as it is and give the
// border rows and columns straight-line code over their in-bounds taps (compile-time ranges).
// A conv whose taps are all in bounds at stride 1, or padded at a column stride (its column
// phases), takes the row blocks instead (up to 7 output rows per column loop, columns in whole
// vectors: @depthwise, @kernel7, @rows_of_16); an unpadded strided one keeps the row at a time
// nest (@kernel7_stride2, @unpadded_stride2).

// 7 columns in, stride 2, padding 1: the padded rows hold the two column phases side by side,
// each phase's first input column at a multiple of 16 (`PaddedRow`: padded columns 0, 2, .. 8
// at [15, 20), 1, 3, .. 7 at [32, 36), one zero column to 37; rows 48 wide), so every tap reads
// consecutive columns: tap 0 the even phase at ow + 15, tap 1 the odd one at ow + 32, tap 2
// the even one at ow + 16, in row blocks (`_depthwise_blocked`: the 4 output rows read padded
// rows 0..8 through one view, each loaded input row feeding the outputs that read it: row 2
// output 0's last kernel row and output 1's first). The copy reads the input row in pairs (columns 2q and 2q + 1, q < 3:
// consecutive loads) and stores them at q + 32 and q + 16 (padded 2q + 1 and 2q + 2); the last
// column (6, padded 7) goes to 35. Only the zeros a tap reads are written in an input row: 15,
// 19 and 36.
// CHECK-LABEL: func.func @depthwise(%x: memref<2x4x7x7xf32>, %w: memref<4x1x3x3xf32>, %b: memref<4xf32>, %out0: memref<2x4x4x4xf32>)
// CHECK:         %padded = memref.alloc() {alignment = 64 : i64} : memref<2x4x9x48xf32>
// CHECK-NEXT:    "scf.parallel"(%c0, %c0, %c2, %c4, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:      scf.for %r = %c0 to %c1 step %c1 {
// CHECK-NEXT:        scf.for %j = %c0 to %c48 step %c1 {
// CHECK-NEXT:          %{{.*}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          memref.store %{{.*}}, %padded[%i0, %i1, %r, %j] : memref<2x4x9x48xf32>
// CHECK-NEXT:        } {irc.vectorize}
// CHECK:           scf.for %[[R:.*]] = %c1 to %c8 step %c1 {
// CHECK-NEXT:        %[[SRC:.*]] = arith.subi %[[R]], %c1 : index
// CHECK-NEXT:        scf.for %{{.*}} = %c15 to %c16 step %c1 {
// CHECK:             scf.for %{{.*}} = %c19 to %c20 step %c1 {
// CHECK:             scf.for %{{.*}} = %c36 to %c37 step %c1 {
// CHECK:             scf.for %[[Q:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:          %[[E:.*]] = arith.muli %[[Q]], %c2 : index
// CHECK-NEXT:          %[[AT1:.*]] = arith.addi %[[Q]], %c32 : index
// CHECK-NEXT:          %[[V:.*]] = memref.load %x[%i0, %i1, %[[SRC]], %[[E]]] : memref<2x4x7x7xf32>
// CHECK-NEXT:          memref.store %[[V]], %padded[%i0, %i1, %[[R]], %[[AT1]]] : memref<2x4x9x48xf32>
// CHECK-NEXT:          %[[E2:.*]] = arith.muli %[[Q]], %c2 : index
// CHECK-NEXT:          %[[O:.*]] = arith.addi %[[E2]], %c1 : index
// CHECK-NEXT:          %[[AT0:.*]] = arith.addi %[[Q]], %c16 : index
// CHECK-NEXT:          %[[V2:.*]] = memref.load %x[%i0, %i1, %[[SRC]], %[[O]]] : memref<2x4x7x7xf32>
// CHECK-NEXT:          memref.store %[[V2]], %padded[%i0, %i1, %[[R]], %[[AT0]]] : memref<2x4x9x48xf32>
// CHECK-NEXT:        } {irc.vectorize}
// CHECK-NEXT:        %[[LAST:.*]] = memref.load %x[%i0, %i1, %[[SRC]], %c6] : memref<2x4x7x7xf32>
// CHECK-NEXT:        memref.store %[[LAST]], %padded[%i0, %i1, %[[R]], %c35] : memref<2x4x9x48xf32>
// CHECK-NEXT:      }
// CHECK:           %[[W00:.*]] = memref.load %w[%i1, %c0, %c0, %c0] : memref<4x1x3x3xf32>
// CHECK-NEXT:      %[[W01:.*]] = memref.load %w[%i1, %c0, %c0, %c1] : memref<4x1x3x3xf32>
// CHECK-COUNT-7:   memref.load %w
// CHECK-NEXT:      %[[BIAS:.*]] = memref.load %b[%i1] : memref<4xf32>
// CHECK-NEXT:      %[[NC:.*]] = arith.muli %i0, %c4 : index
// CHECK-NEXT:      %[[PLANE:.*]] = arith.addi %[[NC]], %i1 : index
// CHECK-NEXT:      %[[FIRST:.*]] = arith.muli %[[PLANE]], %c9 : index
// CHECK-NEXT:      %[[AT0:.*]] = arith.addi %[[FIRST]], %c0 : index
// CHECK-NEXT:      %[[OFF:.*]] = arith.muli %[[AT0]], %c48 : index
// CHECK-NEXT:      %row = memref.reinterpret_cast %padded to offset: [%[[OFF]]], sizes: [432], strides: [1] : memref<2x4x9x48xf32> to memref<432xf32>
// CHECK-NEXT:      scf.for %ow = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[IW0:.*]] = arith.addi %ow, %c15 : index
// CHECK-NEXT:        %[[X0:.*]] = memref.load %row[%[[IW0]]] : memref<432xf32>
// CHECK-NEXT:        %[[P0:.*]] = arith.mulf %[[X0]], %[[W00]] : f32
// CHECK-NEXT:        %[[A0:.*]] = arith.addf %[[BIAS]], %[[P0]] : f32
// CHECK-NEXT:        %[[IW1:.*]] = arith.addi %ow, %c32 : index
// CHECK-NEXT:        %[[X1:.*]] = memref.load %row[%[[IW1]]] : memref<432xf32>
// CHECK-NEXT:        %[[P1:.*]] = arith.mulf %[[X1]], %[[W01]] : f32
// CHECK-NEXT:        arith.addf %[[A0]], %[[P1]] : f32
// CHECK-NEXT:        %[[IW2:.*]] = arith.addi %ow, %c16 : index
// CHECK-NEXT:        memref.load %row[%[[IW2]]] : memref<432xf32>
// CHECK:             %[[C1:.*]] = arith.addi %ow, %c15 : index
// CHECK-NEXT:        %[[R1:.*]] = arith.addi %[[C1]], %c48 : index
// CHECK-NEXT:        memref.load %row[%[[R1]]] : memref<432xf32>
// CHECK:             %[[C2:.*]] = arith.addi %ow, %c15 : index
// CHECK-NEXT:        %[[R2:.*]] = arith.addi %[[C2]], %c96 : index
// CHECK-NEXT:        %[[X6:.*]] = memref.load %row[%[[R2]]] : memref<432xf32>
// CHECK-NEXT:        arith.mulf %[[X6]], %{{.*}} : f32
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        %[[Y0:.*]] = arith.mulf %[[X6]], %[[W00]] : f32
// CHECK-NEXT:        arith.addf %[[BIAS]], %[[Y0]] : f32
// CHECK:             %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        %[[RELU:.*]] = arith.maximumf %{{.*}}, %[[Z]] : f32
// CHECK-NEXT:        memref.store %[[RELU]], %out0[%i0, %i1, %c0, %ow] : memref<2x4x4x4xf32>
// CHECK:             memref.store %{{.*}}, %out0[%i0, %i1, %c1, %ow] : memref<2x4x4x4xf32>
// CHECK:             memref.store %{{.*}}, %out0[%i0, %i1, %c2, %ow] : memref<2x4x4x4xf32>
// CHECK:             memref.store %{{.*}}, %out0[%i0, %i1, %c3, %ow] : memref<2x4x4x4xf32>
// CHECK-NEXT:      } {irc.vectorize}
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    }) {irc.kernel = "irt.conv2d (irt.conv2d + irt.relu) -> 2x4x4x4"}
// CHECK-NEXT:    memref.dealloc %padded : memref<2x4x9x48xf32>

// Strict: no padded copy (rows of %x itself); rows 1..2 and columns 1..2 are interior, row 0
// takes kernel rows 1 and 2, column 0 taps 1 and 2, column 3 taps 0 and 1 (row 3 takes every
// kernel row).
// STRICT-LABEL: func.func @depthwise
// STRICT-NOT:     memref.alloc
// STRICT:         scf.for %oh = %c1 to %c3 step %c1 {
// STRICT:           %row_1 = memref.reinterpret_cast %x
// STRICT:           %row_2 = memref.reinterpret_cast %x
// STRICT:           scf.for %ow = %c1 to %c3 step %c1 {
// STRICT-COUNT-9:     memref.load %row
// STRICT:             memref.store %{{.*}}, %out0[%i0, %i1, %oh, %ow] : memref<2x4x4x4xf32>
// STRICT-NEXT:      } {irc.vectorize}
// STRICT-COUNT-6:   memref.load %row{{.*}}[%c{{[01]}}] : memref<7xf32>
// STRICT:           memref.store %{{.*}}, %out0[%i0, %i1, %oh, %c0] : memref<2x4x4x4xf32>
// STRICT-COUNT-6:   memref.load %row{{.*}}[%c{{[56]}}] : memref<7xf32>
// STRICT:           memref.store %{{.*}}, %out0[%i0, %i1, %oh, %c3] : memref<2x4x4x4xf32>
// STRICT-NEXT:    }
// STRICT:         %[[TOP1:.*]] = memref.reinterpret_cast %x to offset: [%{{.*}}], sizes: [7], strides: [1]
// STRICT:         %[[TOP2:.*]] = memref.reinterpret_cast %x to offset: [%{{.*}}], sizes: [7], strides: [1]
// STRICT-NEXT:    scf.for %{{.*}} = %c1 to %c3 step %c1 {
// STRICT-COUNT-6:   memref.load %{{row_[0-9]+}}[%{{.*}}] : memref<7xf32>
// STRICT:           memref.store %{{.*}}, %out0[%i0, %i1, %c0, %{{.*}}] : memref<2x4x4x4xf32>
// STRICT-NEXT:    } {irc.vectorize}
// STRICT-COUNT-4: memref.load %{{row_[0-9]+}}[%c{{[01]}}] : memref<7xf32>
// STRICT-NOT:     memref.load
// STRICT:         memref.store %{{.*}}, %out0[%i0, %i1, %c0, %c0] : memref<2x4x4x4xf32>
// CPP-LABEL:   extern "C" void depthwise(
// CPP-NOT:       reduction(+
// CPP:           for (int64_t q = 0; q < 3; ++q)
// CPP:           #pragma omp simd
// CPP-NEXT:      for (int64_t ow = 0; ow < 4; ++ow)

func.func @depthwise(%x: tensor<2x4x7x7xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x4x4xf32> {
  %y = irt.conv2d %x, %w bias(%b : tensor<4xf32>) stride [2, 2] padding [1, 1] dilation [1, 1] groups 4 : (tensor<2x4x7x7xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x4x4xf32>
  %r = irt.relu %y : tensor<2x4x4x4xf32>
  func.return %r : tensor<2x4x4x4xf32>
}

// -----

// A channel multiplier of 2 (output channel o reads input channel o / 2, so planes share an
// input plane: no padded copy), no bias (the sum starts at zero), no epilogue.
// CHECK-LABEL: func.func @multiplier
// CHECK-NOT:     memref.alloc
// CHECK:         ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:      %[[C:.*]] = arith.divsi %i1, %c2 : index
// CHECK:           %[[N3:.*]] = arith.muli %i0, %c3 : index
// CHECK-NEXT:      %{{.*}} = arith.addi %[[N3]], %[[C]] : index
// CHECK:           scf.for %ow = %c1 to %c4 step %c1 {
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT:         arith.maximumf
// CHECK:           } {irc.vectorize}

func.func @multiplier(%x: tensor<1x3x5x5xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<1x6x5x5xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 3 : (tensor<1x3x5x5xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x5x5xf32>
  func.return %y : tensor<1x6x5x5xf32>
}

// -----

// A 7x7 kernel at stride 2 with no padding (no padded copy, so no column phases and no row
// blocks: the strided loads of 2R + 5 rows were slower than a row at a time): 49 taps in one
// loop are too many registers for GCC, so each output row takes a pass per kernel row
// (MAX_TAPS_PER_LOOP): the first starts from the bias, the next ones from the partial sums
// stored in the row, the last applies the epilogue (ReLU6: max, min).
// CHECK-LABEL: func.func @kernel7_stride2
// CHECK:         scf.for %oh = %c0 to %c5 step %c1 {
// CHECK-COUNT-7:   memref.reinterpret_cast %x
// CHECK-NEXT:      scf.for %ow = %c0 to %c5 step %c1 {
// CHECK-NOT:         memref.load %out0
// CHECK-COUNT-7:     memref.load %row
// CHECK-NOT:         arith.maximumf
// CHECK:             memref.store %{{.*}}, %out0[%i0, %i1, %oh, %ow] : memref<1x2x5x5xf32>
// CHECK-NEXT:      } {irc.vectorize}
// CHECK-COUNT-5:   memref.load %out0
// CHECK:           scf.for %[[LAST:.*]] = %c0 to %c5 step %c1 {
// CHECK-NEXT:        %[[PART:.*]] = memref.load %out0[%i0, %i1, %oh, %[[LAST]]] : memref<1x2x5x5xf32>
// CHECK-COUNT-7:     memref.load %row_6
// CHECK:             arith.maximumf
// CHECK:             arith.minimumf
// CHECK-NEXT:        memref.store %{{.*}}, %out0[%i0, %i1, %oh, %[[LAST]]] : memref<1x2x5x5xf32>
// CHECK-NEXT:      } {irc.vectorize}
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.reduce

func.func @kernel7_stride2(%x: tensor<1x2x15x15xf32>, %w: tensor<2x1x7x7xf32>, %b: tensor<2xf32>) -> tensor<1x2x5x5xf32> {
  %y = irt.conv2d %x, %w bias(%b : tensor<2xf32>) stride [2, 2] padding [0, 0] dilation [1, 1] groups 2 : (tensor<1x2x15x15xf32>, tensor<2x1x7x7xf32>) -> tensor<1x2x5x5xf32>
  %r = irt.relu6 %y : tensor<1x2x5x5xf32>
  func.return %r : tensor<1x2x5x5xf32>
}

// -----

// A 7x7 kernel at stride 1 (ConvNeXt's): the row blocks (`_depthwise_blocked`). The padded rows
// are 32 wide, the 15 padded columns at [13, 28) (the input's at 16). Rows 0..6 in one block (13
// input rows through one view of the padded plane, 416 = 13 x 32 elements), rows 7..8 in a
// second (8 input rows, 256 elements). Each block's columns run as [0, 8) and [5, 9)
// (whole vectors; the second overlaps the first). Each input element is loaded once per column
// loop (13 rows x 7 columns = 91 loads) and feeds every output row that reads it; output row r
// is complete after input row r + 6, and its ReLU6 and store follow at once. No partial sums
// pass through %out0.
// CHECK-LABEL: func.func @kernel7
// CHECK:         %padded = memref.alloc() {alignment = 64 : i64} : memref<1x2x15x32xf32>
// CHECK:         %[[BIAS:.*]] = memref.load %b[%i1] : memref<2xf32>
// CHECK-NOT:     scf.for %oh
// CHECK:         %row = memref.reinterpret_cast %padded to offset: [%{{.*}}], sizes: [416], strides: [1] : memref<1x2x15x32xf32> to memref<416xf32>
// CHECK-NEXT:    scf.for %ow = %c0 to %c8 step %c1 {
// CHECK-NEXT:      %[[I0:.*]] = arith.addi %ow, %c13 : index
// CHECK-NEXT:      %[[X0:.*]] = memref.load %row[%[[I0]]] : memref<416xf32>
// CHECK-NEXT:      %[[P0:.*]] = arith.mulf %[[X0]], %{{.*}} : f32
// CHECK-NEXT:      %{{.*}} = arith.addf %[[BIAS]], %[[P0]] : f32
// CHECK-NEXT:      %[[I1:.*]] = arith.addi %ow, %c14 : index
// CHECK-NEXT:      %{{.*}} = memref.load %row[%[[I1]]] : memref<416xf32>
// CHECK-NOT:       memref.load %out0
// CHECK:           %[[C7:.*]] = arith.addi %ow, %c13 : index
// CHECK-NEXT:      %[[I7:.*]] = arith.addi %[[C7]], %c32 : index
// CHECK-NEXT:      %[[X7:.*]] = memref.load %row[%[[I7]]] : memref<416xf32>
// CHECK-NEXT:      %{{.*}} = arith.mulf %[[X7]], %{{.*}} : f32
// CHECK-NEXT:      %{{.*}} = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      %{{.*}} = arith.mulf %[[X7]], %{{.*}} : f32
// CHECK-NEXT:      %{{.*}} = arith.addf %[[BIAS]], %{{.*}} : f32
// CHECK:           arith.maximumf
// CHECK:           arith.minimumf
// CHECK-NEXT:      memref.store %{{.*}}, %out0[%i0, %i1, %c0, %ow] : memref<1x2x9x9xf32>
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c1, %ow] : memref<1x2x9x9xf32>
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c6, %ow] : memref<1x2x9x9xf32>
// CHECK-NEXT:    } {irc.vectorize}
// CHECK-NEXT:    scf.for %ow_1 = %c5 to %c9 step %c1 {
// CHECK-COUNT-91:  memref.load %row[
// CHECK-NOT:       memref.load %row[
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c6, %ow_1] : memref<1x2x9x9xf32>
// CHECK-NEXT:    } {irc.vectorize}
// CHECK:         %row_1 = memref.reinterpret_cast %padded to offset: [%{{.*}}], sizes: [256], strides: [1] : memref<1x2x15x32xf32> to memref<256xf32>
// CHECK-NEXT:    scf.for %ow_2 = %c0 to %c8 step %c1 {
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c7, %ow_2] : memref<1x2x9x9xf32>
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c8, %ow_2] : memref<1x2x9x9xf32>
// CHECK-NEXT:    } {irc.vectorize}
// CHECK-NEXT:    scf.for %ow_3 = %c5 to %c9 step %c1 {
// CHECK:         } {irc.vectorize}
// CHECK-NEXT:    scf.reduce
// STRICT-LABEL: func.func @kernel7
// STRICT-NOT:     memref.alloc
// STRICT:         scf.for %oh = %c3 to %c6 step %c1 {
// CPP-LABEL:   extern "C" void kernel7(
// CPP:           for (int64_t ow = 0; ow < 8; ++ow)
// CPP:           #pragma omp simd simdlen(8)
// CPP-NEXT:      for (int64_t [[OW1:ow_[0-9]+]] = 5; [[OW1]] < 9; ++[[OW1]])

func.func @kernel7(%x: tensor<1x2x9x9xf32>, %w: tensor<2x1x7x7xf32>, %b: tensor<2xf32>) -> tensor<1x2x9x9xf32> {
  %y = irt.conv2d %x, %w bias(%b : tensor<2xf32>) stride [1, 1] padding [3, 3] dilation [1, 1] groups 2 : (tensor<1x2x9x9xf32>, tensor<2x1x7x7xf32>) -> tensor<1x2x9x9xf32>
  %r = irt.relu6 %y : tensor<1x2x9x9xf32>
  func.return %r : tensor<1x2x9x9xf32>
}

// -----

// More channels than padded planes (4 per thread the pass is told of, 2 by default: 8): the
// nest runs over (n, chunk q), channels [q*20/8, (q+1)*20/8) one after another, each writing its
// input into the chunk's plane, which stays in cache (a plane per channel missed on every store);
// the plane's zeros are written once per chunk. A row of 14 columns is copied as input columns
// [0, 8) + [6, 14) (to [16, 24) + [22, 30) of a row 32 wide: `PaddedRow`), whole vectors (GCC's
// remainder was scalar).
// CHECK-LABEL: func.func @channel_chunks(
// CHECK:         %padded = memref.alloc() {alignment = 64 : i64} : memref<1x8x16x32xf32>
// CHECK-NEXT:    "scf.parallel"(%c0, %c0, %c1, %c8, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:      scf.for %r = %c0 to %c1 step %c1 {
// CHECK:             memref.store %{{.*}}, %padded[%i0, %i1, %r, %j] : memref<1x8x16x32xf32>
// CHECK:           scf.for %[[R:.*]] = %c1 to %c15 step %c1 {
// CHECK-NOT:         memref.load %x
// CHECK:           %[[NEXT:.*]] = arith.addi %i1, %c1 : index
// CHECK-NEXT:      %[[LO0:.*]] = arith.muli %i1, %c20 : index
// CHECK-NEXT:      %[[LO:.*]] = arith.divsi %[[LO0]], %c8 : index
// CHECK-NEXT:      %[[HI0:.*]] = arith.muli %[[NEXT]], %c20 : index
// CHECK-NEXT:      %[[HI:.*]] = arith.divsi %[[HI0]], %c8 : index
// CHECK-NEXT:      scf.for %o = %[[LO]] to %[[HI]] step %c1 {
// CHECK-NEXT:        scf.for %[[RO:.*]] = %c1 to %c15 step %c1 {
// CHECK-NEXT:          %[[SRC:.*]] = arith.subi %[[RO]], %c1 : index
// CHECK-NEXT:          scf.for %[[Q:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:            %[[AT:.*]] = arith.addi %[[Q]], %c16 : index
// CHECK-NEXT:            memref.load %x[%i0, %o, %[[SRC]], %[[Q]]] : memref<1x20x14x14xf32>
// CHECK-NEXT:            memref.store %{{.*}}, %padded[%i0, %i1, %[[RO]], %[[AT]]]
// CHECK:               } {irc.vectorize}
// CHECK-NEXT:          scf.for %{{.*}} = %c6 to %c14 step %c1 {
// CHECK:               } {irc.vectorize}
// CHECK-NEXT:        }
// CHECK-NEXT:        memref.load %w[%o, %c0, %c0, %c0] : memref<20x1x3x3xf32>
// CHECK:             %[[NQ:.*]] = arith.muli %i0, %c8 : index
// CHECK-NEXT:        arith.addi %[[NQ]], %i1 : index
// STRICT-LABEL: func.func @channel_chunks(
// STRICT-NOT:     %padded
// STRICT:         "scf.parallel"(%c0, %c0, %c1, %c20, %c1, %c1)
func.func @channel_chunks(%x: tensor<1x20x14x14xf32>, %w: tensor<20x1x3x3xf32>) -> tensor<1x20x14x14xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 20 : (tensor<1x20x14x14xf32>, tensor<20x1x3x3xf32>) -> tensor<1x20x14x14xf32>
  func.return %y : tensor<1x20x14x14xf32>
}

// -----

// A 3x3 kernel at stride 1 on rows of 16 columns (a multiple of 8, which took the row at a time
// nest before the row blocks measured faster there too): blocks of 7 output rows (oh = 0, 1:
// rows 0..13, 9 input rows = 432 elements of the padded plane, whose rows are 48 wide), then one
// of rows 14 and 15.
// CHECK-LABEL: func.func @rows_of_16
// CHECK:         %padded = memref.alloc() {alignment = 64 : i64} : memref<1x2x18x48xf32>
// CHECK:         scf.for %oh = %c0 to %c2 step %c1 {
// CHECK:           %row = memref.reinterpret_cast %padded to offset: [%{{.*}}], sizes: [432], strides: [1]
// CHECK:           scf.for %ow = %c0 to %c16 step %c1 {
// CHECK-COUNT-7:     memref.store %{{.*}}, %out0[%i0, %i1, %{{.*}}, %ow]
// CHECK-NEXT:      } {irc.vectorize}
// CHECK:         %row_1 = memref.reinterpret_cast %padded to offset: [%{{.*}}], sizes: [192], strides: [1]
// CHECK-NEXT:    scf.for %ow_1 = %c0 to %c16 step %c1 {
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c14, %ow_1]
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %c15, %ow_1]
// CHECK-NEXT:    } {irc.vectorize}
func.func @rows_of_16(%x: tensor<1x2x16x16xf32>, %w: tensor<2x1x3x3xf32>) -> tensor<1x2x16x16xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 2 : (tensor<1x2x16x16xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x16x16xf32>
  func.return %y : tensor<1x2x16x16xf32>
}

// -----

// A 3x3 kernel at stride 2 with no padding: rows of %x itself read at ow*2 + j (strided loads),
// a row at a time (no row blocks without column phases). The taps round robin over 4 partial
// sums (PARTIAL_SUMS), added pairwise, then the ReLU and one store.
// CHECK-LABEL: func.func @unpadded_stride2
// CHECK-NOT:     memref.alloc
// CHECK:         scf.for %oh = %c0 to %c4 step %c1 {
// CHECK:           %row = memref.reinterpret_cast %x
// CHECK:           %row_1 = memref.reinterpret_cast %x
// CHECK:           %row_2 = memref.reinterpret_cast %x
// CHECK-NEXT:      scf.for %ow = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[C0:.*]] = arith.muli %ow, %c2 : index
// CHECK-NEXT:        %[[X0:.*]] = memref.load %row[%[[C0]]] : memref<9xf32>
// CHECK-NEXT:        %[[P0:.*]] = arith.mulf %[[X0]], %{{.*}} : f32
// CHECK-NEXT:        %[[A0:.*]] = arith.addf %{{.*}}, %[[P0]] : f32
// CHECK:             %[[X1:.*]] = memref.load %row[%{{.*}}] : memref<9xf32>
// CHECK-NEXT:        %[[P1:.*]] = arith.mulf %[[X1]], %{{.*}} : f32
// CHECK:             memref.load %row[%{{.*}}] : memref<9xf32>
// CHECK:             %[[X3:.*]] = memref.load %row_1
// CHECK-NEXT:        %[[P3:.*]] = arith.mulf %[[X3]], %{{.*}} : f32
// CHECK:             %[[X4:.*]] = memref.load %row_1
// CHECK-NEXT:        %[[P4:.*]] = arith.mulf %[[X4]], %{{.*}} : f32
// CHECK-NEXT:        %[[S0:.*]] = arith.addf %[[A0]], %[[P4]] : f32
// CHECK:             %[[X5:.*]] = memref.load %row_1
// CHECK-NEXT:        %[[P5:.*]] = arith.mulf %[[X5]], %{{.*}} : f32
// CHECK-NEXT:        %[[S1:.*]] = arith.addf %[[P1]], %[[P5]] : f32
// CHECK-COUNT-3:     memref.load %row_2
// CHECK:             %[[S0B:.*]] = arith.addf %[[S0]], %{{.*}} : f32
// CHECK-NEXT:        %[[L:.*]] = arith.addf %[[S0B]], %[[S1]] : f32
// CHECK-NEXT:        %[[R:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:        %[[SUM:.*]] = arith.addf %[[L]], %[[R]] : f32
// CHECK-NEXT:        %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        %[[RELU:.*]] = arith.maximumf %[[SUM]], %[[Z]] : f32
// CHECK-NEXT:        memref.store %[[RELU]], %out0[%i0, %i1, %oh, %ow] : memref<2x4x4x4xf32>
// CHECK-NEXT:      } {irc.vectorize}
func.func @unpadded_stride2(%x: tensor<2x4x9x9xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x4x4xf32> {
  %y = irt.conv2d %x, %w bias(%b : tensor<4xf32>) stride [2, 2] padding [0, 0] dilation [1, 1] groups 4 : (tensor<2x4x9x9xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x4x4xf32>
  %r = irt.relu %y : tensor<2x4x4x4xf32>
  func.return %r : tensor<2x4x4x4xf32>
}

// -----

// Rows narrower than 8 (5 columns), stride 1, padding 1 (the row width kept): each plane is one
// flat row of 25 outputs (`_depthwise_flat`, as [0, 16) + [9, 25)). Each plane has its own
// buffer; a parallel iteration takes a chunk of channels (`_depthwise_nest`; here, with fewer
// channels than chunks, one plane), copies every plane of it into its buffer, then computes
// every one (the chunks: test_depthwise_flat_planes_in_chunks_of_channels). Output f = oh*5 + ow reads tap (i, j) at f + 10 + i*5 + j of its
// plane's buffer: the input at 16 (10 floats unused, so that the copy stores aligned vectors, then
// one zero row and one zero), zeros in [10, 16) and [41, 48). Kernel column 0 is off the row where ow = 0 and
// column 2 where ow = 4 (the previous and next rows' elements): their sums are selected away
// there by the masks %valid[0] and %valid[1], written once before the nest (0 at column 0 or 4,
// 1 elsewhere, per row). The residual add reads %s at f; strict builds keep the row nest.
// CHECK-LABEL: func.func @flat(
// CHECK:         %padded = memref.alloc() {alignment = 64 : i64} : memref<2x3x48xf32>
// CHECK-NEXT:    %valid = memref.alloc() {alignment = 64 : i64} : memref<2x5x5xf32>
// CHECK-NEXT:    scf.for %oh = %c0 to %c5 step %c1 {
// CHECK-NEXT:      scf.for %ow = %c0 to %c1 step %c1 {
// CHECK-NEXT:        %{{.*}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        memref.store %{{.*}}, %valid[%c0, %oh, %ow] : memref<2x5x5xf32>
// CHECK:           scf.for %{{.*}} = %c1 to %c5 step %c1 {
// CHECK-NEXT:        %{{.*}} = arith.constant 1.000000e+00 : f32
// CHECK:           scf.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %{{.*}} = arith.constant 1.000000e+00 : f32
// CHECK:           scf.for %{{.*}} = %c4 to %c5 step %c1 {
// CHECK-NEXT:        %{{.*}} = arith.constant 0.000000e+00 : f32
// CHECK:         "scf.parallel"(%c0, %c0, %c2, %c3, %c1, %c1)
// CHECK:           %[[BUF0:.*]] = memref.reinterpret_cast %padded to offset: [%{{.*}}], sizes: [48], strides: [1]
// CHECK-NEXT:      scf.for %{{.*}} = %c10 to %c16 step %c1 {
// CHECK:           } {irc.vectorize}
// CHECK-NEXT:      scf.for %{{.*}} = %c41 to %c48 step %c1 {
// CHECK:           %[[IN:.*]] = memref.reinterpret_cast %x to offset: [%{{.*}}], sizes: [25], strides: [1]
// CHECK-NEXT:      scf.for %[[J:.*]] = %c0 to %c16 step %c1 {
// CHECK-NEXT:        %[[V:.*]] = memref.load %[[IN]][%[[J]]] : memref<25xf32>
// CHECK-NEXT:        %[[AT:.*]] = arith.addi %[[J]], %c16 : index
// CHECK-NEXT:        memref.store %[[V]], %[[BUF0]][%[[AT]]] : memref<48xf32>
// CHECK-NEXT:      } {irc.vectorize}
// CHECK-NEXT:      scf.for %{{.*}} = %c9 to %c25 step %c1 {
// CHECK:           %[[BUF:.*]] = memref.reinterpret_cast %padded to offset: [%{{.*}}], sizes: [48], strides: [1]
// CHECK:           %[[OUT:.*]] = memref.reinterpret_cast %out0 to offset: [%{{.*}}], sizes: [25], strides: [1]
// CHECK-NEXT:      %[[M0:.*]] = memref.reinterpret_cast %valid to offset: [%c0], sizes: [25], strides: [1]
// CHECK-NEXT:      %[[M2:.*]] = memref.reinterpret_cast %valid to offset: [%c25], sizes: [25], strides: [1]
// CHECK:           %[[S:.*]] = memref.reinterpret_cast %s to offset: [%{{.*}}], sizes: [25], strides: [1]
// CHECK:           scf.for %f = %c0 to %c16 step %c1 {
// CHECK-NEXT:        %[[T0:.*]] = arith.addi %f, %c10 : index
// CHECK-NEXT:        %{{.*}} = memref.load %[[BUF]][%[[T0]]] : memref<48xf32>
// CHECK:             %[[T3:.*]] = arith.addi %f, %c15 : index
// CHECK-NEXT:        %{{.*}} = memref.load %[[BUF]][%[[T3]]] : memref<48xf32>
// CHECK:             %[[T6:.*]] = arith.addi %f, %c20 : index
// CHECK:             %[[COL0:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:        %[[MV0:.*]] = memref.load %[[M0]][%f] : memref<25xf32>
// CHECK-NEXT:        %[[OK0:.*]] = arith.cmpf ogt, %[[MV0]], %{{.*}} : f32
// CHECK-NEXT:        %[[Z0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        %[[SEL0:.*]] = arith.select %[[OK0]], %[[COL0]], %[[Z0]] : f32
// CHECK-NOT:         %[[M0]]
// CHECK:             %{{.*}} = arith.addi %f, %c21 : index
// CHECK:             %{{.*}} = arith.addi %f, %c22 : index
// CHECK:             %[[MV2:.*]] = memref.load %[[M2]][%f] : memref<25xf32>
// CHECK-NEXT:        %[[OK2:.*]] = arith.cmpf ogt, %[[MV2]], %{{.*}} : f32
// CHECK-NEXT:        %[[Z2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        %[[SEL2:.*]] = arith.select %[[OK2]], %{{.*}}, %[[Z2]] : f32
// CHECK-NEXT:        %[[B0:.*]] = arith.addf %{{.*}}, %[[SEL0]] : f32
// CHECK-NEXT:        %[[B1:.*]] = arith.addf %{{.*}}, %[[SEL2]] : f32
// CHECK-NEXT:        %[[SUM:.*]] = arith.addf %[[B0]], %[[B1]] : f32
// CHECK-NEXT:        %[[RES:.*]] = memref.load %[[S]][%f] : memref<25xf32>
// CHECK-NEXT:        %[[Y:.*]] = arith.addf %[[SUM]], %[[RES]] : f32
// CHECK-NEXT:        memref.store %[[Y]], %[[OUT]][%f] : memref<25xf32>
// CHECK-NEXT:      } {irc.vectorize}
// CHECK-NEXT:      scf.for %f_1 = %c9 to %c25 step %c1 {
// STRICT-LABEL: func.func @flat(
// STRICT-NOT:     %valid
// STRICT:         scf.for %ow
// CPP-LABEL: extern "C" void flat(
// CPP:         for (int64_t f = 0; f < 16; ++f)
// CPP:           const bool [[OK:v[0-9]+]] = {{v[0-9]+}} > 0.5f;
// CPP-NEXT:      const float {{v[0-9]+}} = [[OK]] ? {{v[0-9]+}} : 0.0f;
func.func @flat(%x: tensor<2x3x5x5xf32>, %w: tensor<3x1x3x3xf32>, %b: tensor<3xf32>, %s: tensor<2x3x5x5xf32>) -> tensor<2x3x5x5xf32> {
  %y = irt.conv2d %x, %w bias(%b : tensor<3xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 3 : (tensor<2x3x5x5xf32>, tensor<3x1x3x3xf32>) -> tensor<2x3x5x5xf32>
  %a = irt.add %y, %s : (tensor<2x3x5x5xf32>, tensor<2x3x5x5xf32>) -> tensor<2x3x5x5xf32>
  func.return %a : tensor<2x3x5x5xf32>
}
