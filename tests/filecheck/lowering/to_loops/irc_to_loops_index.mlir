// RUN: irc-opt %s -p irc-to-loops | filecheck %s
// RUN: irc-opt %s -p 'irc-pipeline{inputs=4}' -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p 'irc-pipeline{inputs=4}' -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// The index ops as loops, with symbolic sizes. arange: start + i * step from the index.
// CHECK-LABEL: func.func @index(%s0: index, %s1: index,
// CHECK:         %[[LAST:.*]] = arith.addi %s0, %c-1 : index
// CHECK:         %1 = arith.index_cast %i0 : index to i64
// CHECK-NEXT:    %2 = arith.constant -2 : i64
// CHECK-NEXT:    %3 = arith.muli %1, %2 : i64
// CHECK-NEXT:    %4 = arith.constant 3 : i64
// CHECK-NEXT:    %5 = arith.addi %3, %4 : i64
// CHECK:         {irc.kernel = "irt.arange -> s1"}

// cumsum: parallel over the other dims, a sequential loop carrying the sum, each prefix stored.
// CHECK:         %7 = scf.for %j = %c0 to %s1 step %c1 iter_args(%8 = %6) -> (i64) {
// CHECK-NEXT:      %9 = memref.load %m[%i0_1, %j]
// CHECK-NEXT:      %10 = arith.addi %8, %9 : i64
// CHECK-NEXT:      memref.store %10, %out1[%i0_1, %j]
// CHECK-NEXT:      scf.yield %10 : i64

// gather and index_select: the index clamped into the input for the load, NaN where clamping
// changed it (the bound of a symbolic dim is computed once at the entry: s0 - 1).
// CHECK:         %13 = arith.index_cast %11 : i64 to index
// CHECK-NEXT:    %14 = arith.maxsi %13, %c0 : index
// CHECK-NEXT:    %15 = arith.minsi %14, %c5 : index
// CHECK-NEXT:    %16 = arith.cmpi eq, %15, %13 : index
// CHECK-NEXT:    %17 = memref.load %x[%i0_2, %15]
// CHECK-NEXT:    %18 = arith.select %16, %17, %12 : f32
// CHECK:         %23 = arith.minsi %22, %[[LAST]] : index
// CHECK:         %25 = memref.load %x[%23, %i1_1]

// tril on an s1 x s1 bool mask: keep where j - i <= diagonal, else false.
// CHECK:         %29 = arith.subi %i1_3, %i0_5 : index
// CHECK-NEXT:    %30 = arith.cmpi sle, %29, %c-1 : index
// CHECK-NEXT:    %31 = memref.load %full[%i0_5, %i1_3] : memref<?x?xi1, #irt.dims<"s1", "s1">>
// CHECK-NEXT:    %32 = arith.constant false
// CHECK-NEXT:    %33 = arith.select %30, %31, %32 : i1

// A float cumsum accumulates in f64, as torch's CPU kernel does.
// CHECK:         %35 = scf.for %j_1 = %c0 to %s0 step %c1 iter_args(%36 = %34) -> (f64) {
// CHECK-NEXT:      %37 = memref.load %x[%j_1, %i0_6]
// CHECK-NEXT:      %38 = arith.extf %37 : f32 to f64
// CHECK-NEXT:      %39 = arith.addf %36, %38 : f64
// CHECK-NEXT:      %40 = arith.truncf %39 : f64 to f32

// In C++: the L x L bool mask is a view of the arena (its own region: one type per place), sized
// s1 * s1 (a square of a symbol); the f64 sum a double.
// CPP-LABEL: extern "C" void index(const int64_t s0, const int64_t s1,
// CPP:         bool* __restrict__ full = reinterpret_cast<bool*>(arena + 0);
// CPP:         const bool [[K:v[0-9]+]] = {{v[0-9]+}} <= -1;
// CPP:         double [[ACC:acc[0-9]+]] = 0.0f;
// CPP:         const double {{v[0-9]+}} = static_cast<double>(
// CPP:         irc_thread_arena(64 * ((irc_imax(1, s1 * s1) + 63) / 64))
func.func @index(%x: tensor<?x6xf32, #irt.dims<"s0">>, %m: tensor<?x?xi64, #irt.dims<"s0", "s1">>, %g: tensor<?x3xi64, #irt.dims<"s0">>, %sel: tensor<?xi64, #irt.dims<"s1">>)
    -> (tensor<?xi64, #irt.dims<"s1">>, tensor<?x?xi64, #irt.dims<"s0", "s1">>, tensor<?x3xf32, #irt.dims<"s0">>, tensor<?x6xf32, #irt.dims<"s1">>, tensor<?x?xi1, #irt.dims<"s1", "s1">>, tensor<?x6xf32, #irt.dims<"s0">>, tensor<?xf32, #irt.dims<"s1">>) {
  %p = irt.arange start 3.0 step -2.0 : tensor<?xi64, #irt.dims<"s1">>
  %c = irt.cumsum %m dim 1 : tensor<?x?xi64, #irt.dims<"s0", "s1">>
  %ga = irt.gather %x, %g dim 1 : (tensor<?x6xf32, #irt.dims<"s0">>, tensor<?x3xi64, #irt.dims<"s0">>) -> tensor<?x3xf32, #irt.dims<"s0">>
  %is = irt.index_select %x, %sel dim 0 : (tensor<?x6xf32, #irt.dims<"s0">>, tensor<?xi64, #irt.dims<"s1">>) -> tensor<?x6xf32, #irt.dims<"s1">>
  %t = irt.constant dense<true> : tensor<i1>
  %full = irt.expand %t : (tensor<i1>) -> tensor<?x?xi1, #irt.dims<"s1", "s1">>
  %tr = irt.tril %full diagonal -1 : tensor<?x?xi1, #irt.dims<"s1", "s1">>
  %fc = irt.cumsum %x dim 0 : tensor<?x6xf32, #irt.dims<"s0">>
  %af = irt.arange start 0.5 step 0.25 : tensor<?xf32, #irt.dims<"s1">>
  func.return %p, %c, %ga, %is, %tr, %fc, %af : tensor<?xi64, #irt.dims<"s1">>, tensor<?x?xi64, #irt.dims<"s0", "s1">>, tensor<?x3xf32, #irt.dims<"s0">>, tensor<?x6xf32, #irt.dims<"s1">>, tensor<?x?xi1, #irt.dims<"s1", "s1">>, tensor<?x6xf32, #irt.dims<"s0">>, tensor<?xf32, #irt.dims<"s1">>
}
