// RUN: irc-opt %s -p irc-fuse --split-input-file | filecheck %s
// RUN: irc-opt %s -p 'irc-fuse{disable="conv-batchnorm-fold"}' --split-input-file | filecheck %s --check-prefix=NOFOLD

// conv -> batch_norm -> relu: the BN folds into the conv's weight and bias, written as irt ops on
// the parameters (folded once at compile time by irc.compile); the relu becomes the epilogue.
// CHECK-LABEL: func.func @fold
// CHECK:         %bn_scale = irt.elementwise ins(%{{.*}}, %{{.*}} : tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> {
// CHECK-NEXT:    ^bb0(%var: f32, %gamma: f32):
// CHECK-NEXT:      %[[EPS:.*]] = arith.constant 1.000000e-05 : f32
// CHECK-NEXT:      %[[VE:.*]] = arith.addf %var, %[[EPS]] : f32
// CHECK-NEXT:      %[[SQ:.*]] = math.sqrt %[[VE]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.divf %gamma, %[[SQ]] : f32
// CHECK-NEXT:      irt.yield %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[S4:.*]] = irt.reshape %bn_scale : (tensor<16xf32>) -> tensor<16x1x1x1xf32>
// CHECK-NEXT:    %folded_weight = irt.mul %w, %[[S4]] : (tensor<16x3x3x3xf32>, tensor<16x1x1x1xf32>) -> tensor<16x3x3x3xf32>
// CHECK-NEXT:    %folded_bias = irt.elementwise ins(%{{.*}}, %bn_scale, %{{.*}} : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> {
// CHECK-NEXT:    ^bb0(%mean: f32, %scale: f32, %beta: f32):
// CHECK-NEXT:      %[[NM:.*]] = arith.negf %mean : f32
// CHECK-NEXT:      %[[MS:.*]] = arith.mulf %[[NM]], %scale : f32
// CHECK-NEXT:      %[[B:.*]] = arith.addf %[[MS]], %beta : f32
// CHECK-NEXT:      irt.yield %[[B]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = irt.conv2d %x, %folded_weight bias(%folded_bias : tensor<16xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32> attributes {irc.fused = ["irt.conv2d", "irt.batch_norm", "irt.relu"]} {
// CHECK-NEXT:    ^bb0(%acc: f32):
// CHECK-NEXT:      arith.constant 0.000000e+00
// CHECK-NEXT:      arith.maximumf %acc
// CHECK-NEXT:      irt.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r
// Without the fold, the BN is computed per element in the conv's epilogue instead.
// NOFOLD-LABEL: func.func @fold
// NOFOLD-NEXT:    %r = irt.conv2d %x, %w epilogue(%m, %v, %g, %bt : {{.*}} attributes {irc.fused = ["irt.conv2d", "irt.batch_norm", "irt.relu"]} {
// NOFOLD:           math.sqrt
// NOFOLD-NOT:     folded_weight

func.func @fold(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %m: tensor<16x1x1xf32>, %v: tensor<16x1x1xf32>, %g: tensor<16x1x1xf32>, %bt: tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32> {
  %c = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %n = irt.batch_norm %c, %m, %v, %g, %bt eps 1.000000e-05 : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %r = irt.relu %n : tensor<1x16x8x8xf32>
  func.return %r : tensor<1x16x8x8xf32>
}

// -----

// As imported: a conv with a bias, [C] statistics viewed as [C, 1, 1], affine=False constants.
// The new bias starts from the conv's: (b - mean) * scale + beta; the views are seen through.
// CHECK-LABEL: func.func @fold_bias_imported
// CHECK-NEXT:    %one = irt.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %zero = irt.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %bn_scale = irt.elementwise ins(%v, %one : tensor<4xf32>, tensor<f32>) -> tensor<4xf32> {
// CHECK:           arith.constant 1.000000e-03 : f32
// CHECK:         %folded_weight = irt.mul %w, %{{.*}} : (tensor<4x3x1x1xf32>, tensor<4x1x1x1xf32>) -> tensor<4x3x1x1xf32>
// CHECK-NEXT:    %folded_bias = irt.elementwise ins(%m, %bn_scale, %zero, %b : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%mean: f32, %scale: f32, %beta: f32, %[[CB:.*]]: f32):
// CHECK-NEXT:      %[[C:.*]] = arith.subf %[[CB]], %mean : f32
// CHECK-NEXT:      %[[CS:.*]] = arith.mulf %[[C]], %scale : f32
// CHECK-NEXT:      %[[NB:.*]] = arith.addf %[[CS]], %beta : f32
// CHECK-NEXT:      irt.yield %[[NB]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %n = irt.conv2d %x, %folded_weight bias(%folded_bias : tensor<4xf32>) stride [2, 2] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x1x1xf32>) -> tensor<1x4x4x4xf32> attributes {irc.fused = ["irt.conv2d", "irt.batch_norm"]}
// CHECK-NEXT:    func.return %n

func.func @fold_bias_imported(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x1x1xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %g: tensor<4xf32>, %bt: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %c = irt.conv2d %x, %w bias(%b : tensor<4xf32>) stride [2, 2] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x1x1xf32>) -> tensor<1x4x4x4xf32>
  %m3 = irt.reshape %m : (tensor<4xf32>) -> tensor<4x1x1xf32>
  %v3 = irt.reshape %v : (tensor<4xf32>) -> tensor<4x1x1xf32>
  %one = irt.constant dense<1.000000e+00> : tensor<f32>
  %zero = irt.constant dense<0.000000e+00> : tensor<f32>
  %n = irt.batch_norm %c, %m3, %v3, %one, %zero eps 1.000000e-03 : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>, tensor<4x1x1xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  func.return %n : tensor<1x4x4x4xf32>
}

// -----

// Must not fire: the conv's own output is also returned, so its weights cannot change.
// CHECK-LABEL: func.func @conv_two_users
// CHECK-NEXT:    %c = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %n = irt.batch_norm %c, %m, %m, %m, %m eps 1.000000e-05
// CHECK-NEXT:    func.return %c, %n

func.func @conv_two_users(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %m: tensor<16x1x1xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) {
  %c = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %n = irt.batch_norm %c, %m, %m, %m, %m eps 1.000000e-05 : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  func.return %c, %n : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
}

// -----

// Must not fire: the mean is computed (not a parameter), so w' would be recomputed on every call;
// the BN goes into the conv's epilogue instead.
// CHECK-LABEL: func.func @stats_not_parameters
// CHECK-NEXT:    %mean = irt.relu %m : tensor<16x1x1xf32>
// CHECK-NEXT:    %n = irt.conv2d %x, %w epilogue(%mean, %m, %m, %m : {{.*}} attributes {irc.fused = ["irt.conv2d", "irt.batch_norm"]} {
// CHECK:           math.sqrt
// CHECK-NOT:     folded

func.func @stats_not_parameters(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %m: tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32> {
  %c = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %mean = irt.relu %m : tensor<16x1x1xf32>
  %n = irt.batch_norm %c, %mean, %m, %m, %m eps 1.000000e-05 : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  func.return %n : tensor<1x16x8x8xf32>
}

// -----

// Must not fire: a relu sits between the conv's sum and the BN (the conv has an epilogue).
// CHECK-LABEL: func.func @conv_relu_bn
// CHECK-NEXT:    %n = irt.conv2d %x, %w epilogue(%m, %m, %m, %m : {{.*}} attributes {irc.fused = ["irt.conv2d", "irt.relu", "irt.batch_norm"]} {
// CHECK-NEXT:    ^bb0(%acc: f32, %e0: f32, %e1: f32, %e2: f32, %e3: f32):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.maximumf %acc, %[[Z]] : f32
// CHECK:           math.sqrt
// CHECK:           arith.subf %[[R]], %e0 : f32
// CHECK-NOT:     folded

func.func @conv_relu_bn(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %m: tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32> {
  %c = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %r = irt.relu %c : tensor<1x16x8x8xf32>
  %n = irt.batch_norm %r, %m, %m, %m, %m eps 1.000000e-05 : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  func.return %n : tensor<1x16x8x8xf32>
}

// -----

// conv + residual add + relu: the generic contraction-epilogue rule (conv2d is an EpilogueOp).
// CHECK-LABEL: func.func @residual
// CHECK-NEXT:    %r = irt.conv2d %x, %w bias(%b : tensor<4xf32>) epilogue(%x : tensor<1x4x8x8xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> attributes {irc.fused = ["irt.conv2d", "irt.add", "irt.relu"]} {
// CHECK-NEXT:    ^bb0(%acc: f32, %e0: f32):
// CHECK-NEXT:      %[[A:.*]] = arith.addf %acc, %e0 : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.maximumf %[[A]], %[[Z]] : f32
// CHECK-NEXT:      irt.yield %[[R]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r

func.func @residual(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %c = irt.conv2d %x, %w bias(%b : tensor<4xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a = irt.add %c, %x : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %r = irt.relu %a : tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}

// -----

// A bias written as a broadcast add, then relu6; and silu: all epilogues.
// CHECK-LABEL: func.func @bias_add_activations
// CHECK-NEXT:    %r6 = irt.conv2d %x, %w epilogue(%b : tensor<4x1x1xf32>) {{.*}} attributes {irc.fused = ["irt.conv2d", "irt.add", "irt.relu6"]} {
// CHECK:           arith.minimumf
// CHECK:         %s = irt.conv2d %x, %w stride [1, 1] {{.*}} attributes {irc.fused = ["irt.conv2d", "irt.silu"]} {
// CHECK:           math.exp
// CHECK-NOT:     irt.relu6
// CHECK-NOT:     irt.silu

func.func @bias_add_activations(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4x1x1xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %c0 = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a = irt.add %c0, %b : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r6 = irt.relu6 %a : tensor<1x4x8x8xf32>
  %c1 = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %s = irt.silu %c1 : tensor<1x4x8x8xf32>
  func.return %r6, %s : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}
