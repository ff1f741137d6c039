// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p irc-fuse | filecheck %s --check-prefix=FUSE

// Symbolic sizes: a `?` dimension carries its expression in #irt.dims (the tensor's encoding).
// Expressions print in one spelling (s0 * (s1 + 1) is s0 + s0 * s1), so equal sizes compare
// equal in verifiers and fusion: the add and relu fuse, the reshape checks 8 * s0 elements.
// CHECK-LABEL: func.func @symbolic
// CHECK:         irt.reshape %{{.*}} : (tensor<?x2x4xf32, #irt.dims<"s0">>) -> tensor<?xf32, #irt.dims<"8 * s0">>
// CHECK:         tensor<?x?xf32, #irt.dims<"s0", "s0 + s0 * s1">>
// FUSE-LABEL: func.func @symbolic
// FUSE:         irt.elementwise ins(%x, %y : tensor<?x8xf32, #irt.dims<"s0">>, tensor<8xf32>) -> tensor<?x8xf32, #irt.dims<"s0">> attributes {irc.fused = ["irt.add", "irt.relu"]}
func.func @symbolic(%x: tensor<?x8xf32, #irt.dims<"s0">>, %y: tensor<8xf32>, %z: tensor<?x?xf32, #irt.dims<"s0", "s0*(s1+1)">>) -> (tensor<?xf32, #irt.dims<"8 * s0">>, tensor<?x?xf32, #irt.dims<"s0", "s0 + s0 * s1">>) {
  %a = irt.add %x, %y : (tensor<?x8xf32, #irt.dims<"s0">>, tensor<8xf32>) -> tensor<?x8xf32, #irt.dims<"s0">>
  %r = irt.relu %a : tensor<?x8xf32, #irt.dims<"s0">>
  %t = irt.reshape %r : (tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?x2x4xf32, #irt.dims<"s0">>
  %u = irt.reshape %t : (tensor<?x2x4xf32, #irt.dims<"s0">>) -> tensor<?xf32, #irt.dims<"8 * s0">>
  %e = irt.exp %z : tensor<?x?xf32, #irt.dims<"s0", "s0 + s0 * s1">>
  func.return %u, %e : tensor<?xf32, #irt.dims<"8 * s0">>, tensor<?x?xf32, #irt.dims<"s0", "s0 + s0 * s1">>
}

// -----

func.func @different_symbols(%x: tensor<?x8xf32, #irt.dims<"s0">>, %y: tensor<?x8xf32, #irt.dims<"s1">>) -> tensor<?x8xf32, #irt.dims<"s0">> {
  // expected-error @+1 {{irt.add: operand shapes s0x8, s1x8 do not broadcast}}
  %a = irt.add %x, %y : (tensor<?x8xf32, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s1">>) -> tensor<?x8xf32, #irt.dims<"s0">>
  func.return %a : tensor<?x8xf32, #irt.dims<"s0">>
}

// -----

func.func @reshape_count(%x: tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?xf32, #irt.dims<"4 * s0">> {
  // expected-error @+1 {{irt.reshape: cannot reshape s0x8 (8 * s0 elements) to 4 * s0 (4 * s0 elements)}}
  %a = irt.reshape %x : (tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?xf32, #irt.dims<"4 * s0">>
  func.return %a : tensor<?xf32, #irt.dims<"4 * s0">>
}

// -----

func.func @too_few_sizes(%x: tensor<?x?xf32, #irt.dims<"s0">>) -> tensor<?x?xf32, #irt.dims<"s0">> {
  // expected-error @+1 {{irt.relu: operand 0: type tensor<?x?xf32, #irt.dims<"s0">> has 2 dynamic dimension(s) but 1 size expression(s)}}
  %a = irt.relu %x : tensor<?x?xf32, #irt.dims<"s0">>
  func.return %a : tensor<?x?xf32, #irt.dims<"s0">>
}
