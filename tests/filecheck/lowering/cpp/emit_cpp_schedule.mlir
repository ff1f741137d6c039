// RUN: irc-opt %s -t cpp | filecheck %s
// RUN: irc-opt %s -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// The emitter prints the schedule the loop passes wrote, whatever the shapes: the same 4x1000
// nest as "split" (threads over the 4 rows, `omp simd` on the columns) and as "inner" (threads
// and lanes on the columns), and a 300-iteration sum without (one SIMD reduction) and with
// `irc.chunk = 32` (32 partial results: 9 chunks, then 12 iterations).

// CHECK-LABEL: extern "C" void split(
// CHECK:         #pragma omp parallel for collapse(1) schedule(static)
// CHECK-NEXT:    for (int64_t i0 = 0; i0 < 4; ++i0)
// CHECK-NEXT:    #pragma omp simd
// CHECK-NEXT:    for (int64_t i1 = 0; i1 < 1000; ++i1)
// CHECK-LABEL: extern "C" void inner(
// CHECK:         for (int64_t i0 = 0; i0 < 4; ++i0)
// CHECK-NEXT:    #pragma omp parallel for simd schedule(static)
// CHECK-NEXT:    for (int64_t i1 = 0; i1 < 1000; ++i1)
// CHECK-LABEL: extern "C" void unmarked_sum(
// CHECK-NOT:     _parts
// CHECK:         #pragma omp simd reduction(+:acc)
// CHECK-NEXT:    for (int64_t k = 0; k < 300; ++k)
// CHECK-LABEL: extern "C" void chunked_sum(
// CHECK:         float acc_parts[32];
// CHECK:         for (int64_t chunk = 0; chunk < 288; chunk += 32)
// CHECK:         for (int64_t {{k_[0-9]+}} = 288; {{k_[0-9]+}} < 300; ++{{k_[0-9]+}})

func.func @split(%x: memref<4x1000xf32>, %out0: memref<4x1000xf32>) {
  %c1000 = arith.constant 1000 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  "scf.parallel"(%c0, %c0, %c4, %c1000, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i0: index, %i1: index):
    %0 = memref.load %x[%i0, %i1] : memref<4x1000xf32>
    memref.store %0, %out0[%i0, %i1] : memref<4x1000xf32>
    scf.reduce
  }) {irc.vectorize, irc.simd = "split"} : (index, index, index, index, index, index) -> ()
  func.return
}

func.func @inner(%x: memref<4x1000xf32>, %out0: memref<4x1000xf32>) {
  %c1000 = arith.constant 1000 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  "scf.parallel"(%c0, %c0, %c4, %c1000, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i0: index, %i1: index):
    %0 = memref.load %x[%i0, %i1] : memref<4x1000xf32>
    memref.store %0, %out0[%i0, %i1] : memref<4x1000xf32>
    scf.reduce
  }) {irc.vectorize, irc.simd = "inner"} : (index, index, index, index, index, index) -> ()
  func.return
}

func.func @unmarked_sum(%x: memref<300xf32>, %out0: memref<1xf32>) {
  %c300 = arith.constant 300 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %k = %c0 to %c300 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%k] : memref<300xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  } {irc.reduction = "add"}
  memref.store %s, %out0[%c0] : memref<1xf32>
  func.return
}

func.func @chunked_sum(%x: memref<300xf32>, %out0: memref<1xf32>) {
  %c300 = arith.constant 300 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %k = %c0 to %c300 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%k] : memref<300xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  } {irc.reduction = "add", irc.chunk = 32 : i64}
  memref.store %s, %out0[%c0] : memref<1xf32>
  func.return
}
