// RUN: irc-opt %s -p irc-fuse --split-input-file | filecheck %s
// RUN: irc-opt %s -p 'irc-fuse{disable="contraction-epilogue"}' --split-input-file | filecheck %s --check-prefix=NOEPI
// RUN: irc-opt %s -p 'irc-fuse{disable="elementwise-chain"}' --split-input-file | filecheck %s --check-prefix=NOCHAIN

// The headline: nn.Linear + ReLU becomes one contraction whose epilogue adds the bias and clamps.
// CHECK-LABEL: func.func @linear_relu
// CHECK-NEXT:    %r = irt.contract linear %x, %w epilogue(%b : tensor<16xf32>) : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> attributes {irc.fused = ["irt.linear", "irt.relu"]} {
// CHECK-NEXT:    ^bb0(%acc: f32, %e0: f32):
// CHECK-NEXT:      %[[B:.*]] = arith.addf %acc, %e0 : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.maximumf %[[B]], %[[Z]] : f32
// CHECK-NEXT:      irt.yield %[[R]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r
// NOEPI-LABEL: func.func @linear_relu
// NOEPI-NEXT:    irt.linear %x, %w, %b
// NOEPI-NEXT:    irt.relu

func.func @linear_relu(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = irt.relu %y : tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// -----

// matmul + bias add is a linear layer: the bias becomes the epilogue.
// CHECK-LABEL: func.func @matmul_bias_to_linear
// CHECK-NEXT:    %y = irt.contract matmul %x, %w epilogue(%b : tensor<16xf32>) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> attributes {irc.fused = ["irt.matmul", "irt.add"]} {
// CHECK-NEXT:    ^bb0(%acc: f32, %e0: f32):
// CHECK-NEXT:      arith.addf %acc, %e0 : f32

func.func @matmul_bias_to_linear(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %m = irt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = irt.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}

// -----

// x @ w.T reads w's rows in place: no transpose is materialized.
// CHECK-LABEL: func.func @matmul_transposed
// CHECK-NEXT:    %m = irt.linear %x, %w {irc.fused = ["irt.transpose", "irt.matmul"]} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %m
// NOEPI-LABEL: func.func @matmul_transposed
// NOEPI-NEXT:    irt.linear %x, %w

func.func @matmul_transposed(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %t = irt.transpose %w [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %m = irt.matmul %x, %t : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  func.return %m : tensor<4x16xf32>
}

// -----

// linear + gelu / sigmoid / tanh: the activation's scalar body goes into the epilogue.
// CHECK-LABEL: func.func @activations
// CHECK:         %g = irt.contract linear %x, %w epilogue(%b : tensor<16xf32>) {{.*}} attributes {irc.fused = ["irt.linear", "irt.gelu"]} {
// CHECK:           math.erf
// CHECK:         %s = irt.contract linear %x, %w epilogue(%b : tensor<16xf32>) {{.*}} attributes {irc.fused = ["irt.linear", "irt.sigmoid"]} {
// CHECK:           math.exp
// CHECK:         %t = irt.contract linear %x, %w : {{.*}} attributes {irc.fused = ["irt.linear", "irt.tanh"]} {
// CHECK-NEXT:    ^bb0(%acc{{.*}}: f32):
// CHECK-NEXT:      %[[T:.*]] = math.tanh %acc{{.*}} : f32
// CHECK-NEXT:      irt.yield %[[T]] : f32
// CHECK-NOT:     irt.gelu

func.func @activations(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %y0 = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g = irt.gelu %y0 : tensor<4x16xf32>
  %y1 = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %s = irt.sigmoid %y1 : tensor<4x16xf32>
  %y2 = irt.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %t = irt.tanh %y2 : tensor<4x16xf32>
  func.return %g, %s, %t : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A residual add then ReLU: both go into one epilogue; the residual is an epilogue input.
// CHECK-LABEL: func.func @residual
// CHECK-NEXT:    %r = irt.contract linear %x, %w epilogue(%b, %x : tensor<16xf32>, tensor<4x16xf32>) {{.*}} attributes {irc.fused = ["irt.linear", "irt.add", "irt.relu"]} {
// CHECK-NEXT:    ^bb0(%acc: f32, %e0: f32, %e1: f32):
// CHECK-NEXT:      %[[B:.*]] = arith.addf %acc, %e0 : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[B]], %e1 : f32
// CHECK:           arith.maximumf %[[S]]

func.func @residual(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = irt.linear %x, %w, %b : (tensor<4x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %a = irt.add %y, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = irt.relu %a : tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// -----

// A chain of elementwise ops (with a broadcast operand and a scalar) becomes one irt.elementwise.
// CHECK-LABEL: func.func @elementwise_chain
// CHECK:         %t = irt.elementwise ins(%x, %y, %c : tensor<4x16xf32>, tensor<16xf32>, tensor<f32>) -> tensor<4x16xf32> attributes {irc.fused = ["irt.mul", "irt.sigmoid", "irt.mul", "irt.relu"]} {
// CHECK-NEXT:    ^bb0(%x0: f32, %x1: f32, %x2: f32):
// CHECK-NEXT:      arith.mulf %x0, %x1 : f32
// CHECK:           math.exp
// CHECK:           arith.maximumf
// CHECK-NEXT:      irt.yield
// NOCHAIN-LABEL: func.func @elementwise_chain
// NOCHAIN:         irt.mul
// NOCHAIN-NEXT:    irt.sigmoid

func.func @elementwise_chain(%x: tensor<4x16xf32>, %y: tensor<16xf32>) -> tensor<4x16xf32> {
  %c = irt.constant dense<5.000000e-01> : tensor<f32>
  %m = irt.mul %x, %y : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %s = irt.sigmoid %m : tensor<4x16xf32>
  %h = irt.mul %s, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %t = irt.relu %h : tensor<4x16xf32>
  func.return %t : tensor<4x16xf32>
}

// -----

// Not fused: a transcendental (gelu's erf) of a transcendental's result (x * sigmoid(x), an exp)
// in one body would be one dependency chain longer than the out-of-order window holds
// (`no_transcendental_chain`): x * sigmoid(x) is one kernel, gelu another.
// CHECK-LABEL: func.func @transcendental_chain
// CHECK:         %m = irt.elementwise ins(%x, %x : tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> attributes {irc.fused = ["irt.sigmoid", "irt.mul"]} {
// CHECK:           math.exp
// CHECK:         %g = irt.gelu %m : tensor<64x64xf32>
// CHECK-NEXT:    func.return %g

func.func @transcendental_chain(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %s = irt.sigmoid %x : tensor<64x64xf32>
  %m = irt.mul %x, %s : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %g = irt.gelu %m : tensor<64x64xf32>
  func.return %g : tensor<64x64xf32>
}

// -----

// Fused: two transcendentals on independent inputs (exp(x) + tanh(y)) are two short chains the
// core overlaps, not one long one.
// CHECK-LABEL: func.func @parallel_transcendentals
// CHECK:         %s = irt.elementwise ins(%y, %x : tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> attributes {irc.fused = ["irt.tanh", "irt.exp", "irt.add"]} {
// CHECK-DAG:       math.exp
// CHECK-DAG:       math.tanh
// CHECK:         func.return %s

func.func @parallel_transcendentals(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = irt.exp %x : tensor<64x64xf32>
  %t = irt.tanh %y : tensor<64x64xf32>
  %s = irt.add %e, %t : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %s : tensor<64x64xf32>
}

// -----

// Must NOT fuse: the linear's value is also returned, so it has to be materialized.
// CHECK-LABEL: func.func @two_users
// CHECK-NEXT:    %y = irt.linear %x, %w
// CHECK-NEXT:    %r = irt.relu %y

func.func @two_users(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %y = irt.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %r = irt.relu %y : tensor<4x16xf32>
  func.return %r, %y : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Must NOT fuse: the add broadcasts the linear's result (4x1 -> 4x16), so one produced
// element feeds many outputs and cannot live in a register of one epilogue.
// CHECK-LABEL: func.func @broadcast_producer
// CHECK-NEXT:    %y = irt.linear %x, %w
// CHECK-NEXT:    %a = irt.add %y, %z

func.func @broadcast_producer(%x: tensor<4x8xf32>, %w: tensor<1x8xf32>, %z: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %y = irt.linear %x, %w : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x1xf32>
  %a = irt.add %y, %z : (tensor<4x1xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %a : tensor<4x16xf32>
}

// -----

// Must NOT fuse into the epilogue: the consumer compares and selects (an i1 inside its body),
// and an epilogue computes on vectors of floats. The mask and select still fuse with the add.
// CHECK-LABEL: func.func @mask_after_linear
// CHECK:         %y = irt.linear %x, %w
// CHECK-NEXT:    %r = irt.elementwise ins(%y, %k, %y, %zero, %y, %one
// CHECK:           arith.cmpf ogt
// CHECK:           arith.select

func.func @mask_after_linear(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %zero = irt.constant dense<0.0> : tensor<f32>
  %k = irt.constant dense<0.1> : tensor<f32>
  %one = irt.constant dense<1.0> : tensor<f32>
  %y = irt.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %m = irt.cmp gt %y, %zero : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xi1>
  %s = irt.mul %y, %k : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %v = irt.where %m, %y, %s : (tensor<4x16xi1>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = irt.add %v, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}
