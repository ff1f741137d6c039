// RUN: irc-opt %s -p irc-to-loops,irc-parallelize --split-input-file | filecheck %s
// RUN: irc-opt %s -p irc-to-loops,irc-parallelize --split-input-file -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p 'irc-to-loops,irc-parallelize{threshold=100}' --split-input-file | filecheck %s --check-prefix=LOW
// RUN: irc-opt %s -p irc-to-loops --split-input-file -t cpp | filecheck %s --check-prefix=UNMARKED

// Work = iterations x body ops (constants are free): relu on 4x16 is 64 x 3 (load, max,
// store), far below the threshold: serial; sigmoid on 256x512 is 131072 x 6: OpenMP. With no
// SIMD schedule (irc-vectorize did not run) and 256 outer iterations, its threads share the
// rows only (`irc.collapse = 1`): collapsing the columns too would rebuild both indices from the
// flattened one at every element.

// CHECK-LABEL: func.func @sizes
// CHECK:         }) {irc.kernel = "irt.relu -> 4x16", irc.work = 192 : i64, irc.parallel = "serial"}
// CHECK:         }) {irc.kernel = "irt.sigmoid -> 256x512", irc.work = 786432 : i64, irc.parallel = "omp", irc.collapse = 1 : i64}

// CPP-LABEL:     extern "C" void sizes(
// CPP:           // kernel 0: irt.relu -> 4x16
// CPP-NOT:       #pragma omp parallel
// CPP-NEXT:      for (int64_t i0 = 0; i0 < 4; ++i0)
// CPP:           // kernel 1: irt.sigmoid -> 256x512
// CPP-NEXT:      #pragma omp parallel for collapse(1) schedule(static)

// LOW-LABEL: func.func @sizes
// LOW:         irc.work = 192 : i64, irc.parallel = "omp"
// LOW:         irc.work = 786432 : i64, irc.parallel = "omp"

// UNMARKED-LABEL: extern "C" void sizes(
// UNMARKED:       // kernel 0: irt.relu -> 4x16
// UNMARKED-NEXT:  #pragma omp parallel for collapse(2) schedule(static)
func.func @sizes(%x: tensor<4x16xf32>, %y: tensor<256x512xf32>) -> (tensor<4x16xf32>, tensor<256x512xf32>) {
  %a = irt.relu %x : tensor<4x16xf32>
  %b = irt.sigmoid %y : tensor<256x512xf32>
  func.return %a, %b : tensor<4x16xf32>, tensor<256x512xf32>
}

// -----

// Inner loops count their trip count times their body: a softmax row is three loops over the
// row (max, sum of exps, normalize), so 4 rows of 9 are 472 ops and 64 rows of 1024 are 852032.

// CHECK-LABEL: func.func @rows
// CHECK:         }) {irc.kernel = "irt.softmax -> 4x9", irc.work = 472 : i64, irc.parallel = "serial"}
// CHECK:         }) {irc.kernel = "irt.softmax -> 64x1024", irc.work = 852032 : i64, irc.parallel = "omp"}

// CPP-LABEL:     extern "C" void rows(
// CPP:           // kernel 0: irt.softmax -> 4x9
// CPP-NEXT:      for (int64_t i0 = 0; i0 < 4; ++i0)
// CPP:           // kernel 1: irt.softmax -> 64x1024
// CPP-NEXT:      #pragma omp parallel for collapse(1) schedule(static)

// LOW-LABEL: func.func @rows
// LOW:         irc.work = 472 : i64, irc.parallel = "omp"
func.func @rows(%x: tensor<4x9xf32>, %y: tensor<64x1024xf32>) -> (tensor<4x9xf32>, tensor<64x1024xf32>) {
  %p = irt.softmax %x dim -1 : tensor<4x9xf32>
  %q = irt.softmax %y dim -1 : tensor<64x1024xf32>
  func.return %p, %q : tensor<4x9xf32>, tensor<64x1024xf32>
}

// -----

// A single iteration never runs on threads, whatever its work (one softmax row of 64).

// LOW-LABEL: func.func @one
// LOW:         irc.work = 833 : i64, irc.parallel = "serial"
func.func @one(%x: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %p = irt.softmax %x dim -1 : tensor<1x64xf32>
  func.return %p : tensor<1x64xf32>
}

// -----

// A window at a moving start (`ub = lb + 8`) counts 8 trips: each of 64 x 2 outputs does 4
// index ops, 8 x (1 + 8 x (1 + 2)) for the window, a divide and a store. A window whose extent
// is not constant (7 rows pooled into 3) is assumed to take 16 trips per loop.

// CHECK-LABEL: func.func @windows
// CHECK:         irc.kernel = "irt.adaptive_avg_pool2d -> 1x64x2x1", irc.work = 26368 : i64, irc.parallel = "serial"
// CHECK:         irc.kernel = "irt.adaptive_avg_pool2d -> 1x2x3x2", irc.work = 9588 : i64, irc.parallel = "serial"
func.func @windows(%x: tensor<1x64x16x8xf32>, %y: tensor<1x2x7x7xf32>) -> (tensor<1x64x2x1xf32>, tensor<1x2x3x2xf32>) {
  %g = irt.adaptive_avg_pool2d %x : (tensor<1x64x16x8xf32>) -> tensor<1x64x2x1xf32>
  %h = irt.adaptive_avg_pool2d %y : (tensor<1x2x7x7xf32>) -> tensor<1x2x3x2xf32>
  func.return %g, %h : tensor<1x64x2x1xf32>, tensor<1x2x3x2xf32>
}

// -----

// A transpose (not vectorizable: its innermost output dimension walks the input with a stride)
// threads over its outer iterations (NCHW -> NHWC merges H and W: 1x784) and keeps the 64
// channels a plain loop; the 4x40000 one walks 1x625 tiles of 4 x 64 (its output rows are too
// wide to stay untiled), collapsing both tile dimensions, so both threads get work.

// CHECK-LABEL: func.func @transposes
// CHECK:         }) {irc.kernel = "irt.transpose -> 1x28x28x64", irc.work = {{[0-9]+}} : i64, irc.parallel = "omp", irc.collapse = 2 : i64}
// CHECK:         "scf.parallel"(%c0, %c0, %c1, %c625, %c1, %c1)
// CHECK:         }) {irc.kernel = "irt.transpose -> 4x40000", irc.work = {{[0-9]+}} : i64, irc.parallel = "omp"}
// CPP-LABEL:   extern "C" void transposes(
// CPP:           #pragma omp parallel for collapse(2) schedule(static)
// CPP:           #pragma omp parallel for collapse(2) schedule(static)
func.func @transposes(%x: tensor<1x64x28x28xf32>, %y: tensor<40000x4xf32>) -> (tensor<1x28x28x64xf32>, tensor<4x40000xf32>) {
  %a = irt.transpose %x [0, 2, 3, 1] : (tensor<1x64x28x28xf32>) -> tensor<1x28x28x64xf32>
  %b = irt.transpose %y [1, 0] : (tensor<40000x4xf32>) -> tensor<4x40000xf32>
  func.return %a, %b : tensor<1x28x28x64xf32>, tensor<4x40000xf32>
}
