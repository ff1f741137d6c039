// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// The index ops of language models print in their custom form and parse back to the same text,
// with symbolic sizes (arange takes its length from its result type) and static ones.

// CHECK-LABEL: func.func @index
// CHECK-NEXT:    %p = irt.arange start 3.000000e+00 step -2.000000e+00 : tensor<?xi64, #irt.dims<"s1">>
// CHECK-NEXT:    %c = irt.cumsum %m dim 1 : tensor<?x?xi64, #irt.dims<"s0", "s1">>
// CHECK-NEXT:    %ga = irt.gather %x, %g dim 1 : (tensor<?x6xf32, #irt.dims<"s0">>, tensor<?x3xi64, #irt.dims<"s0">>) -> tensor<?x3xf32, #irt.dims<"s0">>
// CHECK-NEXT:    %is = irt.index_select %x, %sel dim 0 : (tensor<?x6xf32, #irt.dims<"s0">>, tensor<?xi64, #irt.dims<"s1">>) -> tensor<?x6xf32, #irt.dims<"s1">>
// CHECK-NEXT:    %t = irt.constant dense<true> : tensor<i1>
// CHECK-NEXT:    %full = irt.expand %t : (tensor<i1>) -> tensor<?x?xi1, #irt.dims<"s1", "s1">>
// CHECK-NEXT:    %tr = irt.tril %full diagonal -1 : tensor<?x?xi1, #irt.dims<"s1", "s1">>
// CHECK-NEXT:    %fc = irt.cumsum %x dim 0 : tensor<?x6xf32, #irt.dims<"s0">>
// CHECK-NEXT:    %af = irt.arange start 5.000000e-01 step 2.500000e-01 : tensor<?xf32, #irt.dims<"s1">>
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

// -----

// CHECK-LABEL: func.func @static
// CHECK-NEXT:    %u = irt.triu %x diagonal 1 : tensor<2x4x4xf32>
// CHECK-NEXT:    %e = irt.embedding %ids, %w : (tensor<?x?xi64, #irt.dims<"s0", "s1">>, tensor<10x8xf32>) -> tensor<?x?x8xf32, #irt.dims<"s0", "s1">>
func.func @static(%x: tensor<2x4x4xf32>, %ids: tensor<?x?xi64, #irt.dims<"s0", "s1">>, %w: tensor<10x8xf32>) -> (tensor<2x4x4xf32>, tensor<?x?x8xf32, #irt.dims<"s0", "s1">>) {
  %u = irt.triu %x diagonal 1 : tensor<2x4x4xf32>
  %e = irt.embedding %ids, %w : (tensor<?x?xi64, #irt.dims<"s0", "s1">>, tensor<10x8xf32>) -> tensor<?x?x8xf32, #irt.dims<"s0", "s1">>
  func.return %u, %e : tensor<2x4x4xf32>, tensor<?x?x8xf32, #irt.dims<"s0", "s1">>
}
