// RUN: irc-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Symbolic sizes in the op families language models use: each verifier checks what is known
// (equal expressions are equal sizes) and names the sizes, as for static shapes.

// Contractions: M = s0 * s1 rows, or every size a symbol.
// CHECK-LABEL: func.func @contractions
// CHECK:         irt.linear %x, %w, %b : (tensor<?x?x48xf32, #irt.dims<"s0", "s1">>, tensor<40x48xf32>, tensor<40xf32>) -> tensor<?x?x40xf32, #irt.dims<"s0", "s1">>
// CHECK:         irt.matmul %a, %c : (tensor<?x?xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s1", "s2">>) -> tensor<?x?xf32, #irt.dims<"s0", "s2">>
func.func @contractions(%x: tensor<?x?x48xf32, #irt.dims<"s0", "s1">>, %w: tensor<40x48xf32>, %b: tensor<40xf32>,
                        %a: tensor<?x?xf32, #irt.dims<"s0", "s1">>, %c: tensor<?x?xf32, #irt.dims<"s1", "s2">>)
                        -> (tensor<?x?x40xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s0", "s2">>) {
  %y = irt.linear %x, %w, %b : (tensor<?x?x48xf32, #irt.dims<"s0", "s1">>, tensor<40x48xf32>, tensor<40xf32>) -> tensor<?x?x40xf32, #irt.dims<"s0", "s1">>
  %z = irt.matmul %a, %c : (tensor<?x?xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s1", "s2">>) -> tensor<?x?xf32, #irt.dims<"s0", "s2">>
  func.return %y, %z : tensor<?x?x40xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s0", "s2">>
}

// -----

func.func @contracting(%a: tensor<?x?xf32, #irt.dims<"s0", "s1">>, %c: tensor<?x?xf32, #irt.dims<"s2", "s2">>) -> tensor<?x?xf32, #irt.dims<"s0", "s2">> {
  // expected-error @+1 {{irt.matmul: contracting dimensions differ: lhs s0xs1 has s1, rhs s2xs2 has s2 (matmul expects rhs as [K, N])}}
  %z = irt.matmul %a, %c : (tensor<?x?xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s2", "s2">>) -> tensor<?x?xf32, #irt.dims<"s0", "s2">>
  func.return %z : tensor<?x?xf32, #irt.dims<"s0", "s2">>
}

// -----

func.func @epilogue(%x: tensor<?x48xf32, #irt.dims<"s0">>, %w: tensor<40x48xf32>, %r: tensor<?x40xf32, #irt.dims<"s1">>) -> tensor<?x40xf32, #irt.dims<"s0">> {
  // expected-error @+1 {{irt.contract: epilogue input 0 of shape s1x40 does not broadcast to the result shape s0x40}}
  %y = irt.contract linear %x, %w epilogue(%r : tensor<?x40xf32, #irt.dims<"s1">>) : (tensor<?x48xf32, #irt.dims<"s0">>, tensor<40x48xf32>) -> tensor<?x40xf32, #irt.dims<"s0">> {
  ^bb0(%acc: f32, %e: f32):
    %s = arith.addf %acc, %e : f32
    irt.yield %s : f32
  }
  func.return %y : tensor<?x40xf32, #irt.dims<"s0">>
}
