"""Vectorizable float32 math for the generated C++: exp, log, tanh, erf (so sigmoid, silu and
GELU, whose scalar bodies are built from them) without libm calls.

GCC does not vectorize calls to `expf`/`erff`/`tanhf`/`logf` (without `-ffast-math`), so a
fused elementwise kernel that calls them runs one element at a time. `include/irc_math.h` is
pasted into every translation unit by `emit_cpp.py` (inside its prelude, `irc_prelude.h`).
Every function is branch-free (range reduction + polynomial, the selects written as `?:`), written once as a template, and
callable on both `float` (scalar loops, which GCC then auto-vectorizes: the loop body inlines to
straight-line FMA code) and `irc_vec` (`IRC_VL` lanes, the Target's vector width: one zmm, ymm
or xmm register; GCC vector extensions; the
GEMM epilogues call these). Both instantiations run the same operations, so they agree bit for
bit; with `-mfma` (as `-march=native` gives here) every `irc_fma` is one fused multiply-add.

Error bounds against float64 over all float32 inputs (subnormals, huge values, +-0, +-inf and
NaN included), stated with a little margin over the maxima measured by an exhaustive run of all
2^32 bit patterns (exp 1.028 ulp, log 0.83, tanh 1.33, erf 1.125; `IRC_EXHAUSTIVE=1 pytest
tests/test_vector_math.py -k exhaustive` reruns it):

    irc_exp   <= 1.5 ulp   (subnormal results included; overflow -> inf, underflow -> 0)
    irc_log   <= 1 ulp     (subnormal inputs included; log(+-0) = -inf, log(x<0) = NaN, log(inf) = inf)
    irc_tanh  <= 1.5 ulp
    irc_erf   <= 1.5 ulp

`BOUNDS` holds them; tests/test_vector_math.py asserts them over every 509th bit pattern plus
the edge cases. NaN in gives NaN out for every function. Sigmoid, SiLU and GELU are built from
these by their scalar bodies (1 / (1 + exp(-x)), ...), which add a few roundings of their own.

Sources of the approximations: exp, log and the small-|x| tanh polynomial are Cephes' expf,
logf and tanhf (S. Moshier) made branch-free; tanh for |x| >= 0.625 is 1 - 2 / (exp(2|x|) + 1);
erf is the two-piece form x + x P(x^2) for |x| < 0.9277 and 1 - exp(t Q(t) - t) above (as in
N. Juffa's published single-precision erff).

`IRC_LIBM` (defined by the emitter in strict mode, see `emit_cpp`) turns the `float` overloads
back into GCC's libm builtins, so `IRC_STRICT=1` builds compute transcendentals exactly as the
C library does (scalar, slower); the vector overloads then call them lane by lane.
"""

from __future__ import annotations

BOUNDS = {"exp": 1.5, "log": 1.0, "tanh": 1.5, "erf": 1.5}
"""Maximum error in ulps of each function over all float32 inputs (see the module doc)."""
