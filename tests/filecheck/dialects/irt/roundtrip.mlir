// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// Every irt op prints in its custom form and parses back to the same text, also via the generic form.

// CHECK-LABEL: func.func @layers
// CHECK-NEXT:    %y = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %nb = irt.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %m = irt.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %r = irt.relu %y : tensor<4x16xf32>
// CHECK-NEXT:    %s = irt.sigmoid %r : tensor<4x16xf32>
// CHECK-NEXT:    %t = irt.tanh %s : tensor<4x16xf32>
// CHECK-NEXT:    %g = irt.gelu %t : tensor<4x16xf32>
// CHECK-NEXT:    %gt = irt.gelu %g approx tanh : tensor<4x16xf32>
// CHECK-NEXT:    %c = irt.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %a = irt.add %gt, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %sb = irt.sub %a, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %mu = irt.mul %sb, %m : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %d = irt.div %mu, %nb : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %tr = irt.transpose %d [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
// CHECK-NEXT:    %f = irt.reshape %tr : (tensor<16x4xf32>) -> tensor<64xf32>
// CHECK-NEXT:    func.return %f : tensor<64xf32>
func.func @layers(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %wt: tensor<8x16xf32>) -> tensor<64xf32> {
  %y = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %nb = irt.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %m = irt.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = irt.relu %y : tensor<4x16xf32>
  %s = irt.sigmoid %r : tensor<4x16xf32>
  %t = irt.tanh %s : tensor<4x16xf32>
  %g = irt.gelu %t : tensor<4x16xf32>
  %gt = irt.gelu %g approx tanh : tensor<4x16xf32>
  %c = irt.constant dense<5.000000e-01> : tensor<f32>
  %a = irt.add %gt, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %sb = irt.sub %a, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %mu = irt.mul %sb, %m : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %d = irt.div %mu, %nb : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %tr = irt.transpose %d [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %f = irt.reshape %tr : (tensor<16x4xf32>) -> tensor<64xf32>
  func.return %f : tensor<64xf32>
}

// -----

// The fused ops keep their per-element computation in a region.

// CHECK-LABEL: func.func @fused
// CHECK-NEXT:    %k = irt.contract linear %x, %w epilogue(%b : tensor<16xf32>) : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT:    ^bb0(%acc: f32, %bias: f32):
// CHECK-NEXT:      %s = arith.addf %acc, %bias : f32
// CHECK-NEXT:      %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %r = arith.maximumf %s, %zero : f32
// CHECK-NEXT:      irt.yield %r : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %m = irt.contract matmul %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT:    ^bb0(%acc_1: f32):
// CHECK-NEXT:      irt.yield %acc_1 : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %e = irt.elementwise ins(%k, %m : tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT:    ^bb0(%p: f32, %q: f32):
// CHECK-NEXT:      %pq = arith.mulf %p, %q : f32
// CHECK-NEXT:      %th = math.tanh %pq : f32
// CHECK-NEXT:      irt.yield %th : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %e : tensor<4x16xf32>
func.func @fused(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %wt: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %k = irt.contract linear %x, %w epilogue(%b : tensor<16xf32>) : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> {
  ^bb0(%acc: f32, %bias: f32):
    %s = arith.addf %acc, %bias : f32
    %zero = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %s, %zero : f32
    irt.yield %r : f32
  }
  %m = irt.contract matmul %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%acc: f32):
    irt.yield %acc : f32
  }
  %e = irt.elementwise ins(%k, %m : tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%p: f32, %q: f32):
    %pq = arith.mulf %p, %q : f32
    %th = math.tanh %pq : f32
    irt.yield %th : f32
  }
  func.return %e : tensor<4x16xf32>
}
