// --split-input-file processes every chunk: a failing chunk is reported on stderr at its
// file:line:col, the chunks after it are still printed, and the exit code is 1. Only a line
// that is just the marker splits (not this: // -----), and an empty last chunk is an empty module.

// RUN: not irc-opt %s --split-input-file 2>/dev/null | filecheck %s --check-prefix=OUT
// RUN: not irc-opt %s --split-input-file -o %t 2>&1 | filecheck %s --check-prefix=ERR

// OUT:      func.func @first
// OUT:      //{{ }}-----
// OUT-NEXT: //{{ }}-----
// OUT-NEXT: //{{ }}-----
// OUT-NEXT: builtin.module {
// OUT-NEXT:   func.func @last
// OUT:      //{{ }}-----
// OUT-NEXT: builtin.module {
// OUT-NEXT: }
// ERR:      irc-opt: error: {{.*}}irc_opt_split_input.mlir:27:17: use of undefined value %y
// ERR:      irc-opt: error: {{.*}}irc_opt_split_input.mlir:34:8: irt.matmul: result shape 4x2 should be 2x4
// ERR-NOT:  Traceback
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----

func.func @undefined(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.relu %y : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @bad_shape(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<4x2xf32> {
  %0 = irt.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

func.func @last(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----
