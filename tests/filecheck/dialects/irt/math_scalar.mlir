// RUN: irc-opt %s -p irc-fuse | filecheck %s
// RUN: irc-opt %s -p irc-fuse,irc-to-loops -t cpp | filecheck %s --check-prefix=CPP

// What each math op computes per element (its build_scalar), seen through one fused chain:
// hardswish and clamp use NaN-propagating maximumf/minimumf, leaky_relu is
// max(x, 0) + slope * min(x, 0), pow 2 is x * x and other exponents call powf, rsqrt is
// 1 / sqrt(x), where turns its 0.0/1.0 condition into an i1 and selects.

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %g = irt.elementwise ins(%x, %m, %x : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> attributes {irc.fused = ["irt.hardswish", "irt.leaky_relu", "irt.clamp", "irt.pow", "irt.pow", "irt.rsqrt", "irt.where"]} {
// CHECK-NEXT:    ^bb0(%x0: f32, %x1: f32, %x2: f32):
// CHECK-NEXT:      %0 = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      %1 = arith.addf %x0, %0 : f32
// CHECK-NEXT:      %2 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %3 = arith.maximumf %1, %2 : f32
// CHECK-NEXT:      %4 = arith.constant 6.000000e+00 : f32
// CHECK-NEXT:      %5 = arith.minimumf %3, %4 : f32
// CHECK-NEXT:      %6 = arith.mulf %x0, %5 : f32
// CHECK-NEXT:      %7 = arith.constant 6.000000e+00 : f32
// CHECK-NEXT:      %8 = arith.divf %6, %7 : f32
// CHECK-NEXT:      %9 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %10 = arith.minimumf %8, %9 : f32
// CHECK-NEXT:      %11 = arith.constant 2.000000e-01 : f32
// CHECK-NEXT:      %12 = arith.mulf %10, %11 : f32
// CHECK-NEXT:      %13 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %14 = arith.maximumf %8, %13 : f32
// CHECK-NEXT:      %15 = arith.addf %14, %12 : f32
// CHECK-NEXT:      %16 = arith.constant -1.000000e+00 : f32
// CHECK-NEXT:      %17 = arith.maximumf %15, %16 : f32
// CHECK-NEXT:      %18 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %19 = arith.minimumf %17, %18 : f32
// CHECK-NEXT:      %20 = arith.mulf %19, %19 : f32
// CHECK-NEXT:      %21 = arith.constant 2.500000e+00 : f32
// CHECK-NEXT:      %22 = math.powf %20, %21 : f32
// CHECK-NEXT:      %23 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %24 = math.sqrt %22 : f32
// CHECK-NEXT:      %25 = arith.divf %23, %24 : f32
// CHECK-NEXT:      %26 = arith.fptoui %x1 : f32 to i1
// CHECK-NEXT:      %27 = arith.select %26, %25, %x2 : f32
// CHECK-NEXT:      irt.yield %27 : f32
// CHECK-NEXT:    }

// CPP-LABEL: extern "C" void chain(
// CPP:         const float [[P:v[0-9]+]] = __builtin_powf([[B:v[0-9]+]], 2.5f);
// CPP:         const bool [[C:v[0-9]+]] = [[M:v[0-9]+]] != 0.0f;
// CPP-NEXT:    const float [[S:v[0-9]+]] = [[C]] ? [[R:v[0-9]+]] : [[X:v[0-9]+]];
func.func @chain(%x: tensor<4x8xf32>, %m: tensor<8xf32>) -> tensor<4x8xf32> {
  %a = irt.hardswish %x : tensor<4x8xf32>
  %b = irt.leaky_relu %a slope 2.000000e-01 : tensor<4x8xf32>
  %c = irt.clamp %b min -1.000000e+00 max 1.000000e+00 : tensor<4x8xf32>
  %d = irt.pow %c exponent 2.000000e+00 : tensor<4x8xf32>
  %e = irt.pow %d exponent 2.500000e+00 : tensor<4x8xf32>
  %f = irt.rsqrt %e : tensor<4x8xf32>
  %g = irt.where %m, %f, %x : (tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %g : tensor<4x8xf32>
}

// CPP-LABEL: extern "C" void trig(
// CPP:         const float [[A:v[0-9]+]] = __builtin_cosf(
// CPP-NEXT:    const float {{v[0-9]+}} = __builtin_sinf([[A]]);
func.func @trig(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = irt.cos %x : tensor<4xf32>
  %b = irt.sin %a : tensor<4xf32>
  func.return %b : tensor<4xf32>
}
