// RUN: irc-opt %s -p irc-to-loops | filecheck %s
// RUN: irc-opt %s -p 'irc-to-loops{strict=true}' | filecheck %s --check-prefix=STRICT
// RUN: irc-opt %s -p irc-to-loops,irc-vectorize,irc-parallelize -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-to-loops,irc-vectorize,irc-parallelize -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp
// RUN: irc-opt %s -p 'irc-to-loops{strict=true},irc-vectorize,irc-parallelize' -t 'cpp{strict=true}' -o %t2.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t2.cpp

!X = tensor<?x?x12xf32, #irt.dims<"s0", "s1">>
!S = tensor<?x?xf32, #irt.dims<"s0", "s1">>
!Q = tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
!K = tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>
!P = tensor<?x4x?x?xf32, #irt.dims<"s0", "s1", "s2">>
!W = tensor<4x?x16xf32, #irt.dims<"s2">>

// A mean over a run-time count (12 * s1): its reciprocal is computed once, before the nest, from
// the count's call-time value (0 gives 1/0 = inf, and the mean of nothing 0 * inf = NaN, as eager).
// CHECK-LABEL: func.func @mean(%s0: index, %s1: index,
// CHECK:         %[[N:.*]] = arith.muli %s1, %c12 : index
// CHECK-NEXT:    %[[I:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT:    %[[F:.*]] = arith.sitofp %[[I]] : i64 to f32
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[R:.*]] = arith.divf %[[ONE]], %[[F]] : f32
// CHECK-NEXT:    "scf.parallel"(%c0, %c0, %c0, %s0, %c1, %c1, %c1, %c1, %c1)
// CHECK:           scf.for %r0 = %c0 to %s1 step %c1
// CHECK:           arith.mulf %{{.*}}, %[[R]] : f32
// CPP-LABEL: extern "C" void mean(const int64_t s0, const int64_t s1,
// CPP:         const float [[F:.*]] = static_cast<float>([[N:.*]]);
func.func @mean(%x: !X) -> tensor<?x1x1xf32, #irt.dims<"s0">> {
  %mean = irt.reduce mean %x [1, 2] keepdim : (!X) -> tensor<?x1x1xf32, #irt.dims<"s0">>
  func.return %mean : tensor<?x1x1xf32, #irt.dims<"s0">>
}

// Softmax over a run-time last dim (attention scores): its three passes run to %s1; a
// layer_norm over the static last dim has run-time rows, four per iteration: ceil(s1 / 4)
// iterations (computed at entry), rows past the last one clamped to it (s1 - 1).
// CHECK-LABEL: func.func @scores(%s0: index, %s1: index,
// CHECK:         %[[LAST:.*]] = arith.addi %s1, %c-1 : index
// CHECK-NEXT:    %[[UP:.*]] = arith.addi %s1, %c3 : index
// CHECK-NEXT:    %[[BLOCKS:.*]] = arith.divsi %[[UP]], %c4 : index
// CHECK:         "scf.parallel"(%c0, %s0, %c1)
// CHECK:           scf.for %j = %c0 to %s1 step %c1 iter_args
// CHECK:           } {irc.reduction = "max"}
// CHECK:           scf.for %{{.*}} = %c0 to %s1 step %c1 iter_args
// CHECK:           } {irc.reduction = "add"}
// CHECK:           scf.for %{{.*}} = %c0 to %s1 step %c1 {
// CHECK:         "scf.parallel"(%c0, %c0, %s0, %[[BLOCKS]], %c1, %c1)
// CHECK-NEXT:    ^bb0(%{{.*}}: index, %i1: index):
// CHECK-NEXT:      %[[FIRST:.*]] = arith.muli %i1, %c4 : index
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addi %[[FIRST]], %c1 : index
// CHECK-NEXT:      arith.minsi %[[NEXT]], %[[LAST]] : index
// CHECK:         }) {irc.kernel = "irt.layer_norm -> s0xs1x12"}
// CPP-LABEL: extern "C" void scores(
// CPP:         for (int64_t j = 0; j < s1; ++j)
func.func @scores(%y: !S, %x: !X, %w: tensor<12xf32>) -> (!S, !X) {
  %sy = irt.softmax %y dim 1 : !S
  %ln = irt.layer_norm %x : !X weight %w : tensor<12xf32> dims 1 eps 1.0e-05 -> !X
  func.return %sy, %ln : !S, !X
}

// Attention with run-time batch, Lq and Lk on the engine: sizes [4 * s0, s1, s2, 16, 16] (the
// flattened batch computed at entry), the mask read with a run-time row stride.
// CHECK-LABEL: func.func @attention(%s0: index, %s1: index, %s2: index,
// CHECK:         %[[B:.*]] = arith.muli %s0, %c4 : index
// CHECK:         irl.attention %q, %k, %v -> %out0 mask(%m : memref<?x?xf32, #irt.dims<"s1", "s2">>) sizes [%[[B]], %s1, %s2, 16, 16] rows 64 scale 2.500000e-01 causal 0 mask_strides [0, %s2, 1] parallel 1 if %{{.*}} :
// CHECK:         irl.attention %q, %k, %v -> %out1 sizes [%[[B]], %s1, %s2, 16, 16] rows 64 scale 2.500000e-01 causal 1 mask_strides [] parallel 1 if %{{.*}} :
// CPP-LABEL: extern "C" void attention(
// CPP:         x = x + irc_ld<V>(m + row*s2 + j);
// CPP:         irc_attention<2>([[B:.*]], s1, s2, 16, 16, q, k, v, out0, irc_score, 64, false, [[P:.*]]);
// A causal one tells the engine, which then skips the keys after a block's last query.
// CPP:         irc_attention<2>([[B]], s1, s2, 16, 16, q, k, v, out1, irc_score, 64, true, {{.*}});
// The scalar online-softmax nest: causal keys end at min(i + 1, Lk) (Lq and Lk are not known to
// compare), and no keys at call time keep the zeros (the normalizing factor is then 0, not 1/0).
// STRICT-LABEL: func.func @attention(
// STRICT:         arith.cmpi sgt, %s2, %c0 : index
// STRICT:         %[[END:.*]] = arith.addi %i2_1, %c1 : index
// STRICT-NEXT:    %[[MIN:.*]] = arith.minsi %[[END]], %s2 : index
// STRICT:         scf.for %j_1 = %c0 to %[[MIN]] step %c1 iter_args
// STRICT:         %[[KEYS:.*]] = arith.cmpi sgt, %s2, %c0 : index
// STRICT:         arith.select %[[KEYS]], %{{.*}}, %{{.*}} : f32
func.func @attention(%q: !Q, %k: !K, %v: !K, %m: tensor<?x?xf32, #irt.dims<"s1", "s2">>) -> (!Q, !Q) {
  %a = irt.attention %q, %k, %v mask %m scale 0.25 : (!Q, !K, !K, tensor<?x?xf32, #irt.dims<"s1", "s2">>) -> !Q
  %c = irt.attention %q, %k, %v scale 0.25 causal : (!Q, !K, !K) -> !Q
  func.return %a, %c : !Q, !Q
}

// Self-attention scores are s0 x s0: their strides and sizes are products of a symbol with
// itself (sympy's s0**2), spelled s0 * s0 in the IR, at the loop level and in C++.
// CHECK-LABEL: func.func @self_scores(%s0: index, %y: memref<4x?x?xf32, #irt.dims<"s0", "s0">>, %out0: memref<?xf32, #irt.dims<"4 * (s0 * s0)">>)
// CHECK:         %[[SQ:.*]] = arith.muli %s0, %s0 : index
// CHECK:         memref.reinterpret_cast %out0 to offset: [0], sizes: [4, %s0, %s0], strides: [%[[SQ]], %s0, 1] : memref<?xf32, #irt.dims<"4 * (s0 * s0)">> to memref<4x?x?xf32, #irt.dims<"s0", "s0">>
// CPP-LABEL: extern "C" void self_scores(
// CPP:         view{{[0-9]+}}[{{.*}}*(s0 * s0) + {{.*}}*(s0) + {{.*}}] =
func.func @self_scores(%y: tensor<4x?x?xf32, #irt.dims<"s0", "s0">>) -> tensor<?xf32, #irt.dims<"4 * s0 * s0">> {
  %p = irt.softmax %y dim 2 : tensor<4x?x?xf32, #irt.dims<"s0", "s0">>
  %f = irt.reshape %p : (tensor<4x?x?xf32, #irt.dims<"s0", "s0">>) -> tensor<?xf32, #irt.dims<"4 * s0 * s0">>
  func.return %f : tensor<?xf32, #irt.dims<"4 * s0 * s0">>
}

// Batched matmuls on the engine: q @ k^T and p @ v with run-time batch and lengths are one
// irl.gemm each with `batch [count, sa, sb, sc]` (count 4 * s0, the per-entry strides of A, B
// and C); a rhs shared by every batch entry has stride 0. A broadcast that is no single stride
// per flattened entry ([4, s2, 16] against a [s0, 4] batch) stays on the scalar nest.
// CHECK-LABEL: func.func @bmm(%s0: index, %s1: index, %s2: index,
// CHECK-DAG:     %[[B:.*]] = arith.muli %s0, %c4 : index
// CHECK-DAG:     %[[SQ:.*]] = arith.muli %s1, %c16 : index
// CHECK-DAG:     %[[SK:.*]] = arith.muli %s2, %c16 : index
// CHECK-DAG:     %[[SS:.*]] = arith.muli %s1, %s2 : index
// CHECK:         irl.gemm nk %q, %k -> %out0 batch [%[[B]], %[[SQ]], %[[SK]], %[[SS]]] sizes [%s1, %s2, 16] tiles
// CHECK:         irl.gemm kn %out0, %k -> %out1 batch [%[[B]], %[[SS]], %[[SK]], %[[SQ]]] sizes [%s1, 16, %s2] tiles
// CHECK:         irl.gemm kn %out0, %shared -> %out2 batch [%[[B]], %[[SS]], 0, %[[SQ]]] sizes [%s1, 16, %s2] tiles
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %c0, %s0, %c4, %s1, %s2, %c1, %c1, %c1, %c1)
// CHECK:           scf.for %k_1 = %c0 to %c16 step %c1 iter_args
// CHECK:             memref.load %w[%i1, %i3, %k_1] : memref<4x?x16xf32, #irt.dims<"s2">>
// CPP-LABEL: extern "C" void bmm(
// CPP:         const auto irc_epi = [&](auto acc, {{\[\[}}maybe_unused{{\]\]}} int64_t irc_n, int64_t i, int64_t j) {
// CPP:         irc_gemm_batched([[B:.*]], [[SQ:.*]], [[SK:.*]], [[SS:.*]], s1, s2, 16, irc_a, irc_b, irc_c, s2, irc_epi,
func.func @bmm(%q: !Q, %k: !K, %shared: tensor<?x16xf32, #irt.dims<"s2">>, %w: !W) -> (!P, !Q, !Q, !P) {
  %s = irt.batch_matmul linear %q, %k : (!Q, !K) -> !P
  %o = irt.batch_matmul matmul %s, %k : (!P, !K) -> !Q
  %o2 = irt.batch_matmul matmul %s, %shared : (!P, tensor<?x16xf32, #irt.dims<"s2">>) -> !Q
  %b = irt.batch_matmul linear %q, %w : (!Q, !W) -> !P
  func.return %s, %o, %o2, %b : !P, !Q, !Q, !P
}
