// RUN: irc-opt %s -p 'irc-fold-params{inputs=1}' --split-input-file | filecheck %s
// RUN: irc-opt %s -p 'irc-fold-params{inputs=1},irc-to-loops' --split-input-file | filecheck %s --check-prefix=LOOPS
// RUN: irc-opt %s -p 'irc-fold-params{inputs=1},irc-to-loops' -t cpp --split-input-file | filecheck %s --check-prefix=CPP

// Parameter-only ops (a transposed weight, a product of two parameters) move into @f__fold;
// @f reads their results as parameters, after the one it still reads itself (%s, index 2);
// %w and %b, read only by folded ops, are dropped. The literal stays with its reader.
// CHECK-LABEL: func.func @f(%x: tensor<4x8xf32>, %s: tensor<16xf32>, %wt: tensor<8x16xf32>, %bs: tensor<16xf32>) -> tensor<4x16xf32> attributes {irc.params = array<i64: 2>} {
// CHECK-NEXT:    %y = irt.matmul %x, %wt
// CHECK-NEXT:    %z = irt.add %y, %bs
// CHECK-NEXT:    %r = irt.add %z, %s
// CHECK-NEXT:    func.return %r
// CHECK:       func.func @f__fold(%w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) attributes {irc.compile_time, irc.params = array<i64: 0, 1, 2>} {
// CHECK-NEXT:    %wt = irt.transpose %w [1, 0]
// CHECK-NEXT:    %two = irt.constant
// CHECK-NEXT:    %b2 = irt.mul %b, %two
// CHECK-NEXT:    %bs = irt.mul %b2, %s
// CHECK-NEXT:    func.return %wt, %bs : tensor<8x16xf32>, tensor<16xf32>
// irc-to-loops lowers @f and leaves the compile-time function as it is; -t cpp skips it.
// LOOPS:       func.func @f(%x: memref<4x8xf32>
// LOOPS:       func.func @f__fold(%w: tensor<16x8xf32>
// LOOPS-NEXT:    %wt = irt.transpose
// CPP:         extern "C" void f(
// CPP-NOT:     f__fold
func.func @f(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: tensor<16xf32>) -> tensor<4x16xf32> {
  %wt = irt.transpose %w [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = irt.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %two = irt.constant dense<2.000000e+00> : tensor<f32>
  %b2 = irt.mul %b, %two : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %bs = irt.mul %b2, %s : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %z = irt.add %y, %bs : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = irt.add %z, %s : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// -----

// Nothing depends on parameters only: the function is unchanged, no fold function, no irc.params.
// CHECK-LABEL: func.func @g(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT:    %y = irt.linear %x, %w
// CHECK-NEXT:    func.return %y
// CHECK-NOT:   @g__fold
func.func @g(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %y = irt.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}

// -----

// An op on literals whose result has symbolic sizes has no value before the call binds them: it
// stays (a causal mask the length of the sequence), and nothing folds.
// CHECK-LABEL: func.func @mask(%x: tensor<?x?xf32, #irt.dims<"s0", "s0">>) -> tensor<?x?xi1, #irt.dims<"s0", "s0">> {
// CHECK-NEXT:    %t = irt.constant dense<true> : tensor<i1>
// CHECK-NEXT:    %full = irt.expand %t
// CHECK-NEXT:    %m = irt.tril %full diagonal 0
// CHECK-NEXT:    func.return %m
// CHECK-NOT:   @mask__fold
func.func @mask(%x: tensor<?x?xf32, #irt.dims<"s0", "s0">>) -> tensor<?x?xi1, #irt.dims<"s0", "s0">> {
  %t = irt.constant dense<true> : tensor<i1>
  %full = irt.expand %t : (tensor<i1>) -> tensor<?x?xi1, #irt.dims<"s0", "s0">>
  %m = irt.tril %full diagonal 0 : tensor<?x?xi1, #irt.dims<"s0", "s0">>
  func.return %m : tensor<?x?xi1, #irt.dims<"s0", "s0">>
}

// -----

// Inside a scalar body: a batch norm's gamma / sqrt(var + eps) reads parameters only, so it
// becomes an irt.elementwise over their [4, 1, 1] (%param_math), folded with the rest; the
// body keeps x's part and reads the folded value as a new argument; %var and %g are dropped.
// CHECK-LABEL: func.func @bn(%x: tensor<1x4x5x5xf32>, %mean: tensor<4x1x1xf32>, %b: tensor<4x1x1xf32>, %param_math: tensor<4x1x1xf32>) -> tensor<1x4x5x5xf32> attributes {irc.params = array<i64: 0, 3>} {
// CHECK-NEXT:    %y = irt.elementwise ins(%x, %mean, %b, %param_math : {{.*}}) -> tensor<1x4x5x5xf32> {
// CHECK-NEXT:    ^bb0(%x0: f32, %x1: f32, %x4: f32, %param0: f32):
// CHECK-NEXT:      %c = arith.subf %x0, %x1
// CHECK-NEXT:      %n = arith.mulf %c, %param0
// CHECK-NEXT:      %o = arith.addf %n, %x4
// CHECK-NOT:       math.sqrt
// CHECK:         func.func @bn__fold(%var: tensor<4x1x1xf32>, %g: tensor<4x1x1xf32>) -> tensor<4x1x1xf32> attributes {irc.compile_time, irc.params = array<i64: 1, 2>} {
// CHECK-NEXT:    %param_math = irt.elementwise ins(%var, %g : tensor<4x1x1xf32>, tensor<4x1x1xf32>) -> tensor<4x1x1xf32> {
// CHECK-NEXT:    ^bb0(%x2: f32, %x3: f32):
// CHECK:           %r = math.sqrt %v
// CHECK-NEXT:      %inv = arith.divf %one, %r
// CHECK-NEXT:      %s = arith.mulf %x3, %inv
// CHECK-NEXT:      irt.yield %s : f32
// CHECK:           func.return %param_math
func.func @bn(%x: tensor<1x4x5x5xf32>, %mean: tensor<4x1x1xf32>, %var: tensor<4x1x1xf32>, %g: tensor<4x1x1xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x5x5xf32> {
  %y = irt.elementwise ins(%x, %mean, %var, %g, %b : tensor<1x4x5x5xf32>, tensor<4x1x1xf32>, tensor<4x1x1xf32>, tensor<4x1x1xf32>, tensor<4x1x1xf32>) -> tensor<1x4x5x5xf32> {
  ^bb0(%x0: f32, %x1: f32, %x2: f32, %x3: f32, %x4: f32):
    %one = arith.constant 1.000000e+00 : f32
    %eps = arith.constant 1.000000e-05 : f32
    %v = arith.addf %x2, %eps : f32
    %r = math.sqrt %v : f32
    %inv = arith.divf %one, %r : f32
    %s = arith.mulf %x3, %inv : f32
    %c = arith.subf %x0, %x1 : f32
    %n = arith.mulf %c, %s : f32
    %o = arith.addf %n, %x4 : f32
    %zero = arith.constant 0.000000e+00 : f32
    %relu = arith.maximumf %o, %zero : f32
    irt.yield %relu : f32
  }
  func.return %y : tensor<1x4x5x5xf32>
}

// -----

// A plain (unfused) batch norm is split the same way, as an irt.elementwise that records it.
// CHECK-LABEL: func.func @plain(%x: tensor<2x3xf32>, %mean: tensor<3xf32>, %b: tensor<3xf32>, %param_math: tensor<3xf32>)
// CHECK-NEXT:    %y = irt.elementwise ins(%x, %mean, %b, %param_math : {{.*}}) -> tensor<2x3xf32> attributes {irc.fused = ["irt.batch_norm"]} {
// CHECK-NOT:       math.sqrt
// CHECK:         func.func @plain__fold(%var: tensor<3xf32>, %g: tensor<3xf32>) -> tensor<3xf32>
// CHECK:           math.sqrt
func.func @plain(%x: tensor<2x3xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = irt.batch_norm %x, %mean, %var, %g, %b eps 1.000000e-05 : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A convolution's epilogue: tanh of a per-channel parameter moves out; the accumulator and the
// residual-like %q (read with it) stay.
// CHECK-LABEL: func.func @epi(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x1x1xf32>, %q: tensor<1x3x4x4xf32>, %param_math: tensor<3x1x1xf32>)
// CHECK-NEXT:    %y = irt.conv2d %x, %w epilogue(%q, %param_math : tensor<1x3x4x4xf32>, tensor<3x1x1xf32>)
// CHECK-NEXT:    ^bb0(%acc: f32, %e1: f32, %param0: f32):
// CHECK-NEXT:      %m = arith.mulf %acc, %param0
// CHECK-NEXT:      %a = arith.addf %m, %e1
// CHECK:         func.func @epi__fold(%p: tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
// CHECK-NEXT:    %param_math = irt.elementwise ins(%p : tensor<3x1x1xf32>)
// CHECK-NEXT:    ^bb0(%e0: f32):
// CHECK-NEXT:      %t = math.tanh %e0
func.func @epi(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x1x1xf32>, %p: tensor<3x1x1xf32>, %q: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %y = irt.conv2d %x, %w epilogue(%p, %q : tensor<3x1x1xf32>, tensor<1x3x4x4xf32>) stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32> {
  ^bb0(%acc: f32, %e0: f32, %e1: f32):
    %t = math.tanh %e0 : f32
    %m = arith.mulf %acc, %t : f32
    %a = arith.addf %m, %e1 : f32
    irt.yield %a : f32
  }
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

// A moved part may read a parameter of another element type (a boolean mask): its new body's
// arguments keep their types.
// CHECK-LABEL: func.func @mask(%x: tensor<2x3xf32>, %param_math: tensor<3xf32>)
// CHECK-NEXT:    %y = irt.elementwise ins(%x, %param_math : tensor<2x3xf32>, tensor<3xf32>)
// CHECK:         func.func @mask__fold(%m: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %param_math = irt.elementwise ins(%m, %a, %b : tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> {
// CHECK-NEXT:    ^bb0(%x1: i1, %x2: f32, %x3: f32):
// CHECK-NEXT:      %s = arith.select %x1, %x2, %x3 : f32
// CHECK-NEXT:      %e = math.exp %s : f32
func.func @mask(%x: tensor<2x3xf32>, %m: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = irt.elementwise ins(%x, %m, %a, %b : tensor<2x3xf32>, tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x0: f32, %x1: i1, %x2: f32, %x3: f32):
    %s = arith.select %x1, %x2, %x3 : f32
    %e = math.exp %s : f32
    %o = arith.mulf %x0, %e : f32
    irt.yield %o : f32
  }
  func.return %y : tensor<2x3xf32>
}
