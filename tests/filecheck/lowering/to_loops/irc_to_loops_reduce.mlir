// RUN: irc-opt %s -p 'irc-to-loops{strict=true}' --split-input-file | filecheck %s
// strict=true: the scalar nests (contractions and attention take the GEMM engine otherwise, see loops_gemm.mlir).

// Softmax: one parallel iteration per row and three straight-line passes over it (each one
// vectorizable): the max m (a "max" reduction, from -FLT_MAX so -inf entries give 0, not NaN),
// the sum l of exp(x - m) (an "add" reduction that also stores each exp in the output row),
// then the output row scaled in place by 1 / l.

// CHECK-LABEL: func.func @softmax(%x: memref<4x9xf32>, %out0: memref<4x9xf32>) {
// CHECK:         "scf.parallel"(%c0, %c4, %c1)
// CHECK-NEXT:    ^bb0(%i0: index):
// CHECK-NEXT:      %[[NEGMAX:.*]] = arith.constant -3.40282347e+38 : f32
// CHECK-NEXT:      %[[M:.*]] = scf.for %j = %c0 to %c9 step %c1 iter_args(%[[MI:.*]] = %[[NEGMAX]]) -> (f32) {
// CHECK-NEXT:        %[[X:.*]] = memref.load %x[%i0, %j] : memref<4x9xf32>
// CHECK-NEXT:        %[[MN:.*]] = arith.maximumf %[[MI]], %[[X]] : f32
// CHECK-NEXT:        scf.yield %[[MN]] : f32
// CHECK-NEXT:      } {irc.reduction = "max"}
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[L:.*]] = scf.for %[[J1:.*]] = %c0 to %c9 step %c1 iter_args(%[[LI:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:        %[[X1:.*]] = memref.load %x[%i0, %[[J1]]] : memref<4x9xf32>
// CHECK-NEXT:        %[[XS:.*]] = arith.subf %[[X1]], %[[M]] : f32
// CHECK-NEXT:        %[[P:.*]] = math.exp %[[XS]] : f32
// CHECK-NEXT:        memref.store %[[P]], %out0[%i0, %[[J1]]] : memref<4x9xf32>
// CHECK-NEXT:        %[[LN:.*]] = arith.addf %[[LI]], %[[P]] : f32
// CHECK-NEXT:        scf.yield %[[LN]] : f32
// CHECK-NEXT:      } {irc.reduction = "add"}
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[INV:.*]] = arith.divf %[[ONE]], %[[L]] : f32
// CHECK-NEXT:      scf.for %[[J:.*]] = %c0 to %c9 step %c1 {
// CHECK-NEXT:        %[[E:.*]] = memref.load %out0[%i0, %[[J]]] : memref<4x9xf32>
// CHECK-NEXT:        %[[Y:.*]] = arith.mulf %[[E]], %[[INV]] : f32
// CHECK-NEXT:        memref.store %[[Y]], %out0[%i0, %[[J]]] : memref<4x9xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    }) {irc.kernel = "irt.softmax -> 4x9"}
// CHECK-NEXT:    func.return
func.func @softmax(%x: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %p = irt.softmax %x dim -1 : tensor<4x9xf32>
  func.return %p : tensor<4x9xf32>
}

// -----

// log_softmax over dim 0: the rows are columns (the parallel loop runs over dim 1); the exp-sum
// pass stores nothing, and the last pass writes x - (m + log l).

// CHECK-LABEL: func.func @log_softmax_dim0
// CHECK:         "scf.parallel"(%c0, %c9, %c1)
// CHECK:           scf.for %j = %c0 to %c4 step %c1 iter_args
// CHECK-NEXT:        memref.load %x[%j, %i0] : memref<4x9xf32>
// CHECK:           } {irc.reduction = "max"}
// CHECK:           scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args
// CHECK-NOT:         memref.store
// CHECK:           } {irc.reduction = "add"}
// CHECK-NEXT:      %[[LOG:.*]] = math.log %[[L:.*]] : f32
// CHECK-NEXT:      scf.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[X:.*]] = memref.load %x[%[[J]], %i0] : memref<4x9xf32>
// CHECK-NEXT:        %[[D:.*]] = arith.subf %[[X]], %[[M:.*]] : f32
// CHECK-NEXT:        %[[Y:.*]] = arith.subf %[[D]], %[[LOG]] : f32
// CHECK-NEXT:        memref.store %[[Y]], %out0[%[[J]], %i0] : memref<4x9xf32>
// CHECK:         }) {irc.kernel = "irt.log_softmax -> 4x9"}
func.func @log_softmax_dim0(%x: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %p = irt.log_softmax %x dim 0 : tensor<4x9xf32>
  func.return %p : tensor<4x9xf32>
}

// -----

// A keepdim mean: parallel over the 1x4x1 result, nested reduction loops over dims 0 and 2 (the
// innermost an add reduction), then * 1/15. A full max reduction has no parallel dims: its loop
// nest runs at the top level and its outer scf.for carries the kernel label.

// CHECK-LABEL: func.func @reduce(%x: memref<3x4x5xf32>, %out0: memref<1x4x1xf32>, %out1: memref<f32>) {
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %c1, %c4, %c1, %c1, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index, %i2: index):
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[S:.*]] = scf.for %r0 = %c0 to %c3 step %c1 iter_args(%[[A0:.*]] = %[[Z]]) -> (f32) {
// CHECK-NEXT:        %[[S1:.*]] = scf.for %r1 = %c0 to %c5 step %c1 iter_args(%[[A1:.*]] = %[[A0]]) -> (f32) {
// CHECK-NEXT:          %[[X:.*]] = memref.load %x[%r0, %i1, %r1] : memref<3x4x5xf32>
// CHECK-NEXT:          %[[N:.*]] = arith.addf %[[A1]], %[[X]] : f32
// CHECK-NEXT:          scf.yield %[[N]] : f32
// CHECK-NEXT:        } {irc.reduction = "add"}
// CHECK-NEXT:        scf.yield %[[S1]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[C:.*]] = arith.constant 0.0666666701 : f32
// CHECK-NEXT:      %[[MEAN:.*]] = arith.mulf %[[S]], %[[C]] : f32
// CHECK-NEXT:      memref.store %[[MEAN]], %out0[%i0, %i1, %i2] : memref<1x4x1xf32>
// CHECK:         }) {irc.kernel = "irt.reduce -> 1x4x1"}
// CHECK-NEXT:    %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:    %[[MAX:.*]] = scf.for %r0_1 = %c0 to %c3 step %c1 iter_args(%{{.*}} = %[[NEGINF]]) -> (f32) {
// CHECK:               arith.maximumf
// CHECK:         } {irc.kernel = "irt.reduce -> scalar"}
// CHECK-NEXT:    memref.store %[[MAX]], %out1[] : memref<f32>
func.func @reduce(%x: tensor<3x4x5xf32>) -> (tensor<1x4x1xf32>, tensor<f32>) {
  %m = irt.reduce mean %x [0, 2] keepdim : (tensor<3x4x5xf32>) -> tensor<1x4x1xf32>
  %a = irt.reduce max %x [0, 1, 2] : (tensor<3x4x5xf32>) -> tensor<f32>
  func.return %m, %a : tensor<1x4x1xf32>, tensor<f32>
}

// -----

// Layer norm: per row, the mean of x - x[0] (shifted, so a large offset stays exact), the
// variance of x - mean, then (x - mean) / sqrt(var + eps) * w + b. Four rows per iteration
// (`layer_norm_rows`), each pass over all four in turn: 6 rows are two iterations, the second
// taking rows 4, 5, 5, 5 (clamped to the last row; its values are stored again).

// CHECK-LABEL: func.func @layer_norm
// CHECK:         "scf.parallel"(%c0, %c2, %c1)
// CHECK-NEXT:    ^bb0(%i0: index):
// CHECK-NEXT:      %[[R0:.*]] = arith.muli %i0, %c4 : index
// CHECK-NEXT:      %[[A1:.*]] = arith.addi %[[R0]], %c1 : index
// CHECK-NEXT:      %[[R1:.*]] = arith.minsi %[[A1]], %c5 : index
// CHECK-NEXT:      %[[A2:.*]] = arith.addi %[[R0]], %c2 : index
// CHECK-NEXT:      %[[R2:.*]] = arith.minsi %[[A2]], %c5 : index
// CHECK-NEXT:      %[[A3:.*]] = arith.addi %[[R0]], %c3 : index
// CHECK-NEXT:      %[[R3:.*]] = arith.minsi %[[A3]], %c5 : index
// CHECK-NEXT:      %[[X0:.*]] = memref.load %x[%[[R0]], %c0] : memref<6x8xf32>
// CHECK-NEXT:      %[[X1:.*]] = memref.load %x[%[[R1]], %c0] : memref<6x8xf32>
// CHECK-NEXT:      %[[X2:.*]] = memref.load %x[%[[R2]], %c0] : memref<6x8xf32>
// CHECK-NEXT:      %[[X3:.*]] = memref.load %x[%[[R3]], %c0] : memref<6x8xf32>
// CHECK:           scf.for %r = %c0 to %c8
// CHECK-NEXT:        memref.load %x[%[[R0]], %r]
// CHECK-NEXT:        arith.subf %{{.*}}, %[[X0]] : f32
// CHECK:           } {irc.reduction = "add"}
// CHECK:           scf.for %r_1 = %c0 to %c8
// CHECK-NEXT:        memref.load %x[%[[R1]], %r_1]
// CHECK-NEXT:        arith.subf %{{.*}}, %[[X1]] : f32
// CHECK:           } {irc.reduction = "add"}
// CHECK-COUNT-2:   } {irc.reduction = "add"}
// CHECK:           %[[MEAN0:.*]] = arith.addf %[[X0]], %{{.*}} : f32
// CHECK:           scf.for %r_4 = %c0 to %c8
// CHECK-NEXT:        memref.load %x[%[[R0]], %r_4]
// CHECK-NEXT:        arith.subf %{{.*}}, %[[MEAN0]] : f32
// CHECK:           } {irc.reduction = "add"}
// CHECK-COUNT-3:   } {irc.reduction = "add"}
// CHECK:           %[[EPS:.*]] = arith.constant 1.000000e-05 : f32
// CHECK-NEXT:      %[[VE:.*]] = arith.addf %{{.*}}, %[[EPS]] : f32
// CHECK-NEXT:      %[[SD:.*]] = math.sqrt %[[VE]] : f32
// CHECK-NEXT:      %[[RSTD:.*]] = arith.divf %{{.*}}, %[[SD]] : f32
// CHECK-COUNT-3:   math.sqrt
// CHECK:           scf.for %r_8 = %c0 to %c8 step %c1 {
// CHECK:             memref.load %w[%r_8] : memref<8xf32>
// CHECK:             memref.load %b[%r_8] : memref<8xf32>
// CHECK:             memref.store %{{.*}}, %out0[%[[R0]], %r_8] : memref<6x8xf32>
// CHECK:           scf.for %r_11 = %c0 to %c8 step %c1 {
// CHECK:             memref.store %{{.*}}, %out0[%[[R3]], %r_11] : memref<6x8xf32>
// CHECK:         }) {irc.kernel = "irt.layer_norm -> 6x8"}
func.func @layer_norm(%x: tensor<6x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<6x8xf32> {
  %n = irt.layer_norm %x : tensor<6x8xf32> weight %w : tensor<8xf32> bias %b : tensor<8xf32> dims 1 eps 1.000000e-05 -> tensor<6x8xf32>
  func.return %n : tensor<6x8xf32>
}

// -----

// Attention: parallel over (batch, query); the output row is the accumulator (zeroed, rescaled
// by exp(m_old - m_new) and accumulating p * v[j] for each key, divided by l at the end), so no
// score is stored. Causal: the key loop ends at i + 1.

// CHECK-LABEL: func.func @attention
// CHECK:         "scf.parallel"(%c0, %c0, %c2, %c5, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:      scf.for %e = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        memref.store %[[Z]], %out0[%i0, %i1, %e] : memref<2x5x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[UB:.*]] = arith.addi %i1, %c1 : index
// CHECK:           %{{.*}}, %[[L:.*]] = scf.for %j = %c0 to %[[UB]] step %c1 iter_args
// CHECK:             %[[DOT:.*]] = scf.for %e_1 = %c0 to %c3 step %c1 iter_args
// CHECK-NEXT:          memref.load %q[%i0, %i1, %e_1] : memref<2x5x3xf32>
// CHECK-NEXT:          memref.load %k[%i0, %j, %e_1] : memref<2x7x3xf32>
// CHECK:             } {irc.reduction = "add"}
// CHECK-NEXT:        %[[SC:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:        %[[S:.*]] = arith.mulf %[[DOT]], %[[SC]] : f32
// CHECK-NEXT:        %[[MN:.*]] = arith.maximumf %{{.*}}, %[[S]] : f32
// CHECK:             %[[CORR:.*]] = math.exp
// CHECK:             %[[P:.*]] = math.exp
// CHECK-NEXT:        scf.for %e_2 = %c0 to %c4 step %c1 {
// CHECK-NEXT:          %[[O:.*]] = memref.load %out0[%i0, %i1, %e_2]
// CHECK-NEXT:          %[[OS:.*]] = arith.mulf %[[O]], %[[CORR]] : f32
// CHECK-NEXT:          %[[V:.*]] = memref.load %v[%i0, %j, %e_2] : memref<2x7x4xf32>
// CHECK-NEXT:          %[[PV:.*]] = arith.mulf %[[P]], %[[V]] : f32
// CHECK-NEXT:          %[[ON:.*]] = arith.addf %[[OS]], %[[PV]] : f32
// CHECK-NEXT:          memref.store %[[ON]], %out0[%i0, %i1, %e_2]
// CHECK-NEXT:        }
// CHECK:           %[[INV:.*]] = arith.divf %{{.*}}, %[[L]] : f32
// CHECK-NEXT:      scf.for %e_3 = %c0 to %c4 step %c1 {
// CHECK:             arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK:         }) {irc.kernel = "irt.attention -> 2x5x4"}
func.func @attention(%q: tensor<2x5x3xf32>, %k: tensor<2x7x3xf32>, %v: tensor<2x7x4xf32>) -> tensor<2x5x4xf32> {
  %o = irt.attention %q, %k, %v scale 0.5 causal : (tensor<2x5x3xf32>, tensor<2x7x3xf32>, tensor<2x7x4xf32>) -> tensor<2x5x4xf32>
  func.return %o : tensor<2x5x4xf32>
}

// -----

// `safe` (F.scaled_dot_product_attention's): a row masked whole sums no exp, and its 1 / l is
// taken as 0 where l is not > 0, so the row is 0 (not 0 * inf = NaN; a NaN l stays NaN).
// CHECK-LABEL: func.func @attention_safe
// CHECK:           %[[INV:.*]] = arith.divf %{{.*}}, %[[L:.*]] : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[SOME:.*]] = arith.cmpf ogt, %[[L]], %[[Z]] : f32
// CHECK-NEXT:      %[[Z2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[SAFE:.*]] = arith.select %[[SOME]], %[[INV]], %[[Z2]] : f32
// CHECK-NEXT:      scf.for %e_3 = %c0 to %c4 step %c1 {
// CHECK:             arith.mulf %{{.*}}, %[[SAFE]] : f32
// CHECK:         }) {irc.kernel = "irt.attention -> 2x5x4"}
func.func @attention_safe(%q: tensor<2x5x3xf32>, %k: tensor<2x7x3xf32>, %v: tensor<2x7x4xf32>, %m: tensor<5x7xf32>) -> tensor<2x5x4xf32> {
  %o = irt.attention %q, %k, %v mask %m scale 0.5 safe : (tensor<2x5x3xf32>, tensor<2x7x3xf32>, tensor<2x7x4xf32>, tensor<5x7xf32>) -> tensor<2x5x4xf32>
  func.return %o : tensor<2x5x4xf32>
}
