// RUN: irc-opt %s -p 'irc-to-loops{strict=true}' --split-input-file | filecheck %s
// The scalar nests of convolution and pooling (strict builds and depthwise-like convs; the
// GEMM engine's form is in loops_gemm.mlir).
// RUN: irc-opt %s -p 'irc-to-loops{strict=true}' | irc-opt -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p 'irc-to-loops{strict=true}' | irc-opt -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// A padded, strided, grouped conv: one parallel nest over [N, O, OH, OW]; per output position the
// valid kernel taps [lo, hi) are computed once (clamped with maxsi/minsi), so the reduction loops
// kh, kw, c never test bounds. The bias starts the accumulator; the group picks the input channels.
// CHECK-LABEL: func.func @conv(%x: memref<1x4x5x5xf32>, %w: memref<6x2x3x3xf32>, %b: memref<6xf32>, %out0: memref<1x6x3x3xf32>)
// CHECK:         "scf.parallel"(%c0, %c0, %c0, %c0, %c1, %c6, %c3, %c3, %c1, %c1, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
// CHECK-NEXT:      %[[OS:.*]] = arith.muli %i2, %c2 : index
// CHECK-NEXT:      %[[START:.*]] = arith.subi %[[OS]], %c1 : index
// CHECK-NEXT:      %[[BEFORE:.*]] = arith.subi %c1, %[[OS]] : index
// CHECK-NEXT:      %[[LO:.*]] = arith.maxsi %[[BEFORE]], %c0 : index
// CHECK-NEXT:      %[[ROOM:.*]] = arith.subi %c6, %[[OS]] : index
// CHECK-NEXT:      %[[HI:.*]] = arith.minsi %[[ROOM]], %c3 : index
// CHECK:           %[[G:.*]] = arith.divsi %i1, %c3 : index
// CHECK-NEXT:      %[[CBASE:.*]] = arith.muli %[[G]], %c2 : index
// CHECK-NEXT:      %[[BIAS:.*]] = memref.load %b[%i1] : memref<6xf32>
// CHECK-NEXT:      %{{.*}} = scf.for %kh = %[[LO]] to %[[HI]] step %c1 iter_args(%acc = %[[BIAS]]) -> (f32) {
// CHECK-NEXT:        %{{.*}} = scf.for %kw = %{{.*}} to %{{.*}} step %c1 iter_args(%acc_1 = %acc) -> (f32) {
// CHECK-NEXT:          %{{.*}} = scf.for %c = %c0 to %c2 step %c1 iter_args(%acc_2 = %acc_1) -> (f32) {
// CHECK-NEXT:            %[[CI:.*]] = arith.addi %[[CBASE]], %c : index
// CHECK-NEXT:            %[[IH:.*]] = arith.addi %[[START]], %kh : index
// CHECK-NEXT:            %[[IW:.*]] = arith.addi %{{.*}}, %kw : index
// CHECK-NEXT:            %[[XV:.*]] = memref.load %x[%i0, %[[CI]], %[[IH]], %[[IW]]] : memref<1x4x5x5xf32>
// CHECK-NEXT:            %[[WV:.*]] = memref.load %w[%i1, %c, %kh, %kw] : memref<6x2x3x3xf32>
// CHECK-NEXT:            %[[P:.*]] = arith.mulf %[[XV]], %[[WV]] : f32
// CHECK-NEXT:            %[[S:.*]] = arith.addf %acc_2, %[[P]] : f32
// CHECK-NEXT:            scf.yield %[[S]] : f32
// CHECK-NEXT:          } {irc.reduction = "add"}
// CHECK-NOT:       scf.if
// CHECK:           memref.store %{{.*}}, %out0[%i0, %i1, %i2, %i3] : memref<1x6x3x3xf32>
// CHECK:         }) {irc.kernel = "irt.conv2d -> 1x6x3x3"}
// CPP-LABEL:   extern "C" void conv(
// CPP:           const int64_t [[LO:v[0-9]+]] = {{v[0-9]+}} > 0 ? {{v[0-9]+}} : 0;
// CPP:           const int64_t [[HI:v[0-9]+]] = {{v[0-9]+}} < 3 ? {{v[0-9]+}} : 3;
// CPP:           for (int64_t kh = [[LO]]; kh < [[HI]]; ++kh)
// CPP:           #pragma omp simd reduction(+:acc_{{[0-9]+}})
// CPP-NEXT:      for (int64_t c = 0; c < 2; ++c)

func.func @conv(%x: tensor<1x4x5x5xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x3x3xf32> {
  %y = irt.conv2d %x, %w bias(%b : tensor<6xf32>) stride [2, 2] padding [1, 1] dilation [1, 1] groups 2 : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x3x3xf32>
  func.return %y : tensor<1x6x3x3xf32>
}

// -----

// No padding and no overhang: constant tap bounds, no clamping at all.
// CHECK-LABEL: func.func @conv1x1
// CHECK-NOT:     arith.maxsi
// CHECK-NOT:     arith.minsi
// CHECK:         scf.for %kh = %c0 to %c1 step %c1
// CHECK-NEXT:      scf.for %kw = %c0 to %c1 step %c1
// CHECK-NEXT:        scf.for %c = %c0 to %c4 step %c1
// CHECK:         func.return

func.func @conv1x1(%x: tensor<1x4x6x6xf32>, %w: tensor<8x4x1x1xf32>) -> tensor<1x8x3x3xf32> {
  %y = irt.conv2d %x, %w stride [2, 2] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x3x3xf32>
  func.return %y : tensor<1x8x3x3xf32>
}

// -----

// The strict nests (the others are in irc_to_loops_pool.mlir). Max pool works a row at a time:
// the output row starts at -inf, then every tap (kh in the clamped window, kw) folds its valid
// column range into it, columns innermost (a loop irc-vectorize can mark: no carried value, a
// stride-2 read), as maximumf(tap, row) so a tie keeps the earlier tap, as eager; avg pool
// (count_include_pad off) divides by the clipped window's size; adaptive pool uses
// floor(o*H/OH) .. ceil((o+1)*H/OH).
// CHECK-LABEL: func.func @pools
// CHECK:           ^bb0(%i0: index, %i1: index, %i2: index):
// CHECK:           scf.for %ow = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:        memref.store %[[NEGINF]], %out0[%i0, %i1, %i2, %ow]
// CHECK:           scf.for %kh = %{{.*}} to %{{.*}} step %c1 {
// CHECK:             scf.for %kw = %c0 to %c3 step %c1 {
// CHECK:               %[[LO:.*]] = arith.maxsi %{{.*}}, %c0 : index
// CHECK:               %[[HI:.*]] = arith.minsi %{{.*}}, %c4 : index
// CHECK-NEXT:          scf.for %ow_1 = %[[LO]] to %[[HI]] step %c1 {
// CHECK-NEXT:            %[[IW0:.*]] = arith.muli %ow_1, %c2 : index
// CHECK-NEXT:            %[[IW:.*]] = arith.addi %[[IW0]], %{{.*}} : index
// CHECK-NEXT:            %[[OLD:.*]] = memref.load %out0[%i0, %i1, %i2, %ow_1]
// CHECK-NEXT:            %[[NEW:.*]] = memref.load %x[%i0, %i1, %{{.*}}, %[[IW]]]
// CHECK-NEXT:            %[[M:.*]] = arith.maximumf %[[NEW]], %[[OLD]] : f32
// CHECK-NEXT:            memref.store %[[M]], %out0[%i0, %i1, %i2, %ow_1]
// CHECK:         }) {irc.kernel = "irt.max_pool2d -> 1x2x4x4"}
// CHECK:           %[[H0:.*]] = arith.maxsi %{{.*}}, %c0 : index
// CHECK-NEXT:      %[[H1:.*]] = arith.minsi %{{.*}}, %c7 : index
// CHECK:           %[[SUM:.*]] = scf.for %ih = %[[H0]] to %[[H1]] step %c1
// CHECK:           %[[NH:.*]] = arith.subi %[[H1]], %[[H0]] : index
// CHECK-NEXT:      %[[NW:.*]] = arith.subi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:      %[[N:.*]] = arith.muli %[[NH]], %[[NW]] : index
// CHECK-NEXT:      %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT:      %[[NF:.*]] = arith.sitofp %[[NI]] : i64 to f32
// CHECK-NEXT:      %{{.*}} = arith.divf %[[SUM]], %[[NF]] : f32
// CHECK:         }) {irc.kernel = "irt.avg_pool2d -> 1x2x4x4"}
// CHECK:           %[[S:.*]] = arith.muli %i2_2, %c7 : index
// CHECK-NEXT:      %[[A0:.*]] = arith.divsi %[[S]], %c3 : index
// CHECK-NEXT:      %[[E:.*]] = arith.addi %[[S]], %c9 : index
// CHECK-NEXT:      %[[A1:.*]] = arith.divsi %[[E]], %c3 : index
// CHECK:           scf.for %ih_1 = %[[A0]] to %[[A1]] step %c1
// CHECK:         }) {irc.kernel = "irt.adaptive_avg_pool2d -> 1x2x3x2"}
// CPP-LABEL:   extern "C" void pools(
// CPP:           const float [[F:v[0-9]+]] = static_cast<float>({{v[0-9]+}});

func.func @pools(%x: tensor<1x2x7x7xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x3x2xf32>) {
  %m = irt.max_pool2d %x kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
  %a = irt.avg_pool2d %x kernel [3, 3] stride [2, 2] padding [1, 1] : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
  %g = irt.adaptive_avg_pool2d %x : (tensor<1x2x7x7xf32>) -> tensor<1x2x3x2xf32>
  func.return %m, %a, %g : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x3x2xf32>
}
