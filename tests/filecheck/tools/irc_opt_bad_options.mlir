// Bad pass names and options: a message naming what exists, exit code 1, no traceback.

// RUN: not irc-opt %s -p 'irc-fuse{disable="no-such-rule"}' 2>&1 | filecheck %s --check-prefix=RULE
// RUN: not irc-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS

// RULE: irc-opt: error: ValueError: irc-fuse: unknown rule(s) no-such-rule; the rules are {{.*}}contraction-epilogue, elementwise-chain
// RULE-NOT: Traceback
// PASS: irc-opt: error: ValueError: Unrecognized passes: ['no-such-pass']
// PASS-NOT: Traceback
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = irt.relu %x : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
