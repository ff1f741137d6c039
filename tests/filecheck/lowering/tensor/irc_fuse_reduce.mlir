// RUN: irc-opt %s -p irc-fuse --split-input-file | filecheck %s
// RUN: irc-opt %s -p 'irc-fuse{disable="attention"}' --split-input-file | filecheck %s --check-prefix=NOATT

// The reduce family's rules: `batch-matmul-transpose` and `attention` (with cases that must not fire).

// q @ k^T with k transposed in the last two dims: the batch_matmul reads k's rows in place.
// CHECK-LABEL: func.func @bmm_transposed
// CHECK-NEXT:    %m = irt.batch_matmul linear %a, %b {irc.fused = ["irt.transpose", "irt.batch_matmul"]} : (tensor<2x4x8xf32>, tensor<2x16x8xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT:    func.return %m
// NOATT-LABEL: func.func @bmm_transposed
// NOATT-NEXT:    irt.batch_matmul linear %a, %b
func.func @bmm_transposed(%a: tensor<2x4x8xf32>, %b: tensor<2x16x8xf32>) -> tensor<2x4x16xf32> {
  %t = irt.transpose %b [0, 2, 1] : (tensor<2x16x8xf32>) -> tensor<2x8x16xf32>
  %m = irt.batch_matmul matmul %a, %t : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  func.return %m : tensor<2x4x16xf32>
}

// -----

// Attention written out (k transposed, / 2, + mask, softmax over the last dim, @ v) is one op:
// scale 1/2, the mask an operand; the transpose, scores, constant and elementwise ops are gone.
// CHECK-LABEL: func.func @attention
// CHECK-NEXT:    %o = irt.attention %q, %k, %v mask %mask scale 5.000000e-01 {irc.fused = ["irt.softmax", "irt.batch_matmul"]} : (tensor<1x2x5x3xf32>, tensor<1x2x7x3xf32>, tensor<1x2x7x4xf32>, tensor<5x7xf32>) -> tensor<1x2x5x4xf32>
// CHECK-NEXT:    func.return %o
// Without the rule, the other rules still apply: k is read in place, div + add are one kernel.
// NOATT-LABEL: func.func @attention
// NOATT-NEXT:    %s = irt.batch_matmul linear %q, %k
// NOATT-NEXT:    %c = irt.constant
// NOATT-NEXT:    %a = irt.elementwise ins(%s, %c, %mask
// NOATT:         %p = irt.softmax %a dim -1
// NOATT-NEXT:    %o = irt.batch_matmul matmul %p, %v
func.func @attention(%q: tensor<1x2x5x3xf32>, %k: tensor<1x2x7x3xf32>, %v: tensor<1x2x7x4xf32>, %mask: tensor<5x7xf32>) -> tensor<1x2x5x4xf32> {
  %kt = irt.transpose %k [0, 1, 3, 2] : (tensor<1x2x7x3xf32>) -> tensor<1x2x3x7xf32>
  %s = irt.batch_matmul matmul %q, %kt : (tensor<1x2x5x3xf32>, tensor<1x2x3x7xf32>) -> tensor<1x2x5x7xf32>
  %c = irt.constant dense<2.000000e+00> : tensor<f32>
  %d = irt.div %s, %c : (tensor<1x2x5x7xf32>, tensor<f32>) -> tensor<1x2x5x7xf32>
  %a = irt.add %d, %mask : (tensor<1x2x5x7xf32>, tensor<5x7xf32>) -> tensor<1x2x5x7xf32>
  %p = irt.softmax %a dim -1 : tensor<1x2x5x7xf32>
  %o = irt.batch_matmul matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  func.return %o : tensor<1x2x5x4xf32>
}

// -----

// The scale and mask already merged into one irt.elementwise are read from its body.
// CHECK-LABEL: func.func @attention_fused_scale
// CHECK-NEXT:    %o = irt.attention %q, %k, %v mask %mask scale 2.500000e-01 {irc.fused = ["irt.softmax", "irt.batch_matmul"]} : (tensor<2x5x3xf32>, tensor<2x7x3xf32>, tensor<2x7x4xf32>, tensor<2x5x7xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT:    func.return %o
func.func @attention_fused_scale(%q: tensor<2x5x3xf32>, %k: tensor<2x7x3xf32>, %v: tensor<2x7x4xf32>, %mask: tensor<2x5x7xf32>) -> tensor<2x5x4xf32> {
  %s = irt.batch_matmul linear %q, %k : (tensor<2x5x3xf32>, tensor<2x7x3xf32>) -> tensor<2x5x7xf32>
  %c = irt.constant dense<2.500000e-01> : tensor<f32>
  %e = irt.elementwise ins(%s, %c, %mask : tensor<2x5x7xf32>, tensor<f32>, tensor<2x5x7xf32>) -> tensor<2x5x7xf32> {
  ^bb0(%x0: f32, %x1: f32, %x2: f32):
    %0 = arith.mulf %x0, %x1 : f32
    %1 = arith.addf %0, %x2 : f32
    irt.yield %1 : f32
  }
  %p = irt.softmax %e dim 2 : tensor<2x5x7xf32>
  %o = irt.batch_matmul matmul %p, %v : (tensor<2x5x7xf32>, tensor<2x7x4xf32>) -> tensor<2x5x4xf32>
  func.return %o : tensor<2x5x4xf32>
}

// -----

// Must not fire: the scores are also returned.
// CHECK-LABEL: func.func @scores_have_another_user
// CHECK-NEXT:    %s = irt.batch_matmul linear %q, %k
// CHECK-NEXT:    %p = irt.softmax %s dim -1
// CHECK-NEXT:    %o = irt.batch_matmul matmul %p, %v
// CHECK-NEXT:    func.return %o, %s
func.func @scores_have_another_user(%q: tensor<2x5x3xf32>, %k: tensor<2x7x3xf32>, %v: tensor<2x7x4xf32>) -> (tensor<2x5x4xf32>, tensor<2x5x7xf32>) {
  %s = irt.batch_matmul linear %q, %k : (tensor<2x5x3xf32>, tensor<2x7x3xf32>) -> tensor<2x5x7xf32>
  %p = irt.softmax %s dim -1 : tensor<2x5x7xf32>
  %o = irt.batch_matmul matmul %p, %v : (tensor<2x5x7xf32>, tensor<2x7x4xf32>) -> tensor<2x5x4xf32>
  func.return %o, %s : tensor<2x5x4xf32>, tensor<2x5x7xf32>
}

// -----

// Must not fire: the attention probabilities are also returned.
// CHECK-LABEL: func.func @probabilities_have_another_user
// CHECK-NEXT:    %s = irt.batch_matmul linear %q, %k
// CHECK-NEXT:    %p = irt.softmax %s dim -1
// CHECK-NEXT:    %o = irt.batch_matmul matmul %p, %v
// CHECK-NEXT:    func.return %o, %p
func.func @probabilities_have_another_user(%q: tensor<2x5x3xf32>, %k: tensor<2x7x3xf32>, %v: tensor<2x7x4xf32>) -> (tensor<2x5x4xf32>, tensor<2x5x7xf32>) {
  %s = irt.batch_matmul linear %q, %k : (tensor<2x5x3xf32>, tensor<2x7x3xf32>) -> tensor<2x5x7xf32>
  %p = irt.softmax %s dim -1 : tensor<2x5x7xf32>
  %o = irt.batch_matmul matmul %p, %v : (tensor<2x5x7xf32>, tensor<2x7x4xf32>) -> tensor<2x5x4xf32>
  func.return %o, %p : tensor<2x5x4xf32>, tensor<2x5x7xf32>
}

// -----

// Must not fire: the softmax runs over the queries (dim 1), not the keys.
// CHECK-LABEL: func.func @softmax_over_another_dim
// CHECK-NEXT:    %s = irt.batch_matmul linear %q, %k
// CHECK-NEXT:    %p = irt.softmax %s dim 1
// CHECK-NEXT:    %o = irt.batch_matmul matmul %p, %v
func.func @softmax_over_another_dim(%q: tensor<2x7x3xf32>, %k: tensor<2x7x3xf32>, %v: tensor<2x7x4xf32>) -> tensor<2x7x4xf32> {
  %s = irt.batch_matmul linear %q, %k : (tensor<2x7x3xf32>, tensor<2x7x3xf32>) -> tensor<2x7x7xf32>
  %p = irt.softmax %s dim 1 : tensor<2x7x7xf32>
  %o = irt.batch_matmul matmul %p, %v : (tensor<2x7x7xf32>, tensor<2x7x4xf32>) -> tensor<2x7x4xf32>
  func.return %o : tensor<2x7x4xf32>
}

// -----

// Must not fire: (scores + mask) * scale scales the mask too, which irt.attention cannot say.
// CHECK-LABEL: func.func @mask_then_scale
// CHECK-NEXT:    %s = irt.batch_matmul linear %q, %k
// CHECK-NEXT:    %c = irt.constant
// CHECK-NEXT:    %m = irt.elementwise ins(%s, %mask, %c
// CHECK:         %p = irt.softmax %m dim -1
// CHECK-NEXT:    %o = irt.batch_matmul matmul %p, %v
func.func @mask_then_scale(%q: tensor<2x5x3xf32>, %k: tensor<2x7x3xf32>, %v: tensor<2x7x4xf32>, %mask: tensor<5x7xf32>) -> tensor<2x5x4xf32> {
  %s = irt.batch_matmul linear %q, %k : (tensor<2x5x3xf32>, tensor<2x7x3xf32>) -> tensor<2x5x7xf32>
  %a = irt.add %s, %mask : (tensor<2x5x7xf32>, tensor<5x7xf32>) -> tensor<2x5x7xf32>
  %c = irt.constant dense<2.500000e-01> : tensor<f32>
  %m = irt.mul %a, %c : (tensor<2x5x7xf32>, tensor<f32>) -> tensor<2x5x7xf32>
  %p = irt.softmax %m dim -1 : tensor<2x5x7xf32>
  %o = irt.batch_matmul matmul %p, %v : (tensor<2x5x7xf32>, tensor<2x7x4xf32>) -> tensor<2x5x4xf32>
  func.return %o : tensor<2x5x4xf32>
}

// -----

// GPT-2's form: where(causal, scores / sqrt(d), float32's minimum) + padding mask. The select is
// the additive mask where(causal, 0, min), built beside the attention and added to the padding
// mask (a score plus min is min exactly: no score comes within an ulp of it).
// CHECK-LABEL: func.func @gpt2
// CHECK:         %[[ZERO:.*]] = irt.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[MIN:.*]] = irt.constant dense<-3.40282347e+38> : tensor<f32>
// CHECK-NEXT:    %[[KEEP:.*]] = irt.where %causal, %[[ZERO]], %[[MIN]] : (tensor<1x1x5x5xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x5x5xf32>
// CHECK-NEXT:    %[[MASK:.*]] = irt.add %[[KEEP]], %pad : (tensor<1x1x5x5xf32>, tensor<2x1x1x5xf32>) -> tensor<2x1x5x5xf32>
// CHECK-NEXT:    %o = irt.attention %q, %k, %v mask %[[MASK]] scale 5.000000e-01
// NOATT-LABEL: func.func @gpt2
// NOATT:         irt.softmax
func.func @gpt2(%q: tensor<2x4x5x4xf32>, %k: tensor<2x4x5x4xf32>, %v: tensor<2x4x5x4xf32>, %causal: tensor<1x1x5x5xi1>, %pad: tensor<2x1x1x5xf32>) -> tensor<2x4x5x4xf32> {
  %s = irt.batch_matmul linear %q, %k : (tensor<2x4x5x4xf32>, tensor<2x4x5x4xf32>) -> tensor<2x4x5x5xf32>
  %two = irt.constant dense<2.0> : tensor<f32>
  %d = irt.div %s, %two : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5x5xf32>
  %min = irt.constant dense<-3.40282347e+38> : tensor<f32>
  %w = irt.where %causal, %d, %min : (tensor<1x1x5x5xi1>, tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5x5xf32>
  %a = irt.add %w, %pad : (tensor<2x4x5x5xf32>, tensor<2x1x1x5xf32>) -> tensor<2x4x5x5xf32>
  %p = irt.softmax %a dim -1 : tensor<2x4x5x5xf32>
  %o = irt.batch_matmul matmul %p, %v : (tensor<2x4x5x5xf32>, tensor<2x4x5x4xf32>) -> tensor<2x4x5x4xf32>
  func.return %o : tensor<2x4x5x4xf32>
}

// -----

// The same with symbolic batch (s0) and length (s1): the additive mask's types carry their
// #irt.dims (they were built as static types, which failed to verify).
// CHECK-LABEL: func.func @gpt2_symbolic
// CHECK:         irt.where %causal, %{{.*}}, %{{.*}} : (tensor<1x1x?x?xi1, #irt.dims<"s1", "s1">>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x?xf32, #irt.dims<"s1", "s1">>
// CHECK-NEXT:    irt.add %{{.*}}, %pad : (tensor<1x1x?x?xf32, #irt.dims<"s1", "s1">>, tensor<?x1x1x?xf32, #irt.dims<"s0", "s1">>) -> tensor<?x1x?x?xf32, #irt.dims<"s0", "s1", "s1">>
// CHECK-NEXT:    %o = irt.attention %q, %k, %v mask
!Q = tensor<?x4x?x4xf32, #irt.dims<"s0", "s1">>
!S = tensor<?x4x?x?xf32, #irt.dims<"s0", "s1", "s1">>
func.func @gpt2_symbolic(%q: !Q, %k: !Q, %v: !Q, %causal: tensor<1x1x?x?xi1, #irt.dims<"s1", "s1">>, %pad: tensor<?x1x1x?xf32, #irt.dims<"s0", "s1">>) -> !Q {
  %s = irt.batch_matmul linear %q, %k : (!Q, !Q) -> !S
  %two = irt.constant dense<2.0> : tensor<f32>
  %d = irt.div %s, %two : (!S, tensor<f32>) -> !S
  %min = irt.constant dense<-3.40282347e+38> : tensor<f32>
  %w = irt.where %causal, %d, %min : (tensor<1x1x?x?xi1, #irt.dims<"s1", "s1">>, !S, tensor<f32>) -> !S
  %a = irt.add %w, %pad : (!S, tensor<?x1x1x?xf32, #irt.dims<"s0", "s1">>) -> !S
  %p = irt.softmax %a dim -1 : !S
  %o = irt.batch_matmul matmul %p, %v : (!S, !Q) -> !Q
  func.return %o : !Q
}

// -----

// Must not fire: a select to -10000 (older models' fill) changes scores that a sum would not.
// CHECK-LABEL: func.func @small_fill
// CHECK:         irt.softmax
func.func @small_fill(%q: tensor<2x4x5x4xf32>, %k: tensor<2x4x5x4xf32>, %v: tensor<2x4x5x4xf32>, %causal: tensor<1x1x5x5xi1>) -> tensor<2x4x5x4xf32> {
  %s = irt.batch_matmul linear %q, %k : (tensor<2x4x5x4xf32>, tensor<2x4x5x4xf32>) -> tensor<2x4x5x5xf32>
  %fill = irt.constant dense<-10000.0> : tensor<f32>
  %w = irt.where %causal, %s, %fill : (tensor<1x1x5x5xi1>, tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5x5xf32>
  %p = irt.softmax %w dim -1 : tensor<2x4x5x5xf32>
  %o = irt.batch_matmul matmul %p, %v : (tensor<2x4x5x5xf32>, tensor<2x4x5x4xf32>) -> tensor<2x4x5x4xf32>
  func.return %o : tensor<2x4x5x4xf32>
}
