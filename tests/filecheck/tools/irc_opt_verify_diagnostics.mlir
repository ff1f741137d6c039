// --verify-diagnostics checks the errors against MLIR's `// expected-error {{...}}` annotations:
// an error with the wrong text, at the wrong line, not produced or not expected fails the run
// (exit code 1) with a line saying which. Chunks whose errors match print nothing.

// RUN: not irc-opt %s --verify-diagnostics --split-input-file -o %t 2>&1 | filecheck %s

// CHECK:      irc_opt_verify_diagnostics.mlir:13:8: error "irt.matmul: result shape 4x2 should be 2x4" does not match the expected "result shape 9x9" (line 13)
// CHECK-NEXT: irc_opt_verify_diagnostics.mlir:20: expected error "never produced" was not produced
// CHECK-NEXT: irc_opt_verify_diagnostics.mlir:27:17: unexpected error: use of undefined value %y
// CHECK-NEXT: irc_opt_verify_diagnostics.mlir:35:8: error "irt.matmul: result shape 4x2 should be 2x4" was expected at line 36 (annotation at line 34)
// CHECK-NOT:  irc-opt
func.func @wrong_text(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<4x2xf32> {
  %0 = irt.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32> // expected-error {{result shape 9x9}}
  func.return %0 : tensor<4x2xf32>
}

// -----

func.func @not_produced(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{never produced}}
  func.return %x : tensor<4xf32>
}

// -----

func.func @unexpected(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.relu %y : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @wrong_line(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<4x2xf32> {
  // expected-error-re @+2 {{result shape {{[0-9]x[0-9]}} should be}}
  %0 = irt.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

// The annotation forms that match: @below, @above and -re (the corpus in tests/malformed uses @+N and @unknown).
func.func @matched(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<4x2xf32> {
  // expected-error @below {{irt.matmul: result shape 4x2 should be 2x4}}
  %0 = irt.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

func.func @matched_re(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.relu %undefined : tensor<4xf32>
  // expected-error-re @above {{use of undefined value %{{[a-z]+}}}}
  func.return %0 : tensor<4xf32>
}
