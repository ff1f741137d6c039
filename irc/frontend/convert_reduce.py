"""FX converters for the ops of `dialects/irt/reduce.py` (this family's `FUNCTIONS`, `METHODS`, `MODULES`).

* reductions: torch.sum / torch.mean / torch.amax and the Tensor methods, with `dim` an int or a
  tuple (negative allowed), `keepdim`, or no dim (a full reduction);
* torch.softmax / F.softmax / Tensor.softmax / nn.Softmax and the log_softmax forms: one
  `irt.softmax` each, already a single fused row kernel;
* F.layer_norm / nn.LayerNorm: one `irt.layer_norm` (no decomposition to recognize later);
* torch.matmul / @ / torch.bmm on 3-D and 4-D tensors: `irt.batch_matmul`; [..., K] @ [K, N]
  and torch.mm: `irt.matmul`; torch.addmm: `irt.matmul` + `irt.add`;
* F.scaled_dot_product_attention: `irt.attention` (a constant bool mask is folded: a causal one
  becomes `causal`, others an additive 0/-inf constant);
* nn.MultiheadAttention and nn.TransformerEncoderLayer, kept as leaf modules by FX, and
  torch._transformer_encoder_layer_fwd (the layer's inference fast path, which TorchDynamo
  traces under no_grad): linear, reshape, transpose, attention, layer_norm and elementwise irt
  ops. Packed in-projection weights are split by row views bound as extra function parameters
  (read in place, no copy); MultiheadAttention returns (out, NotComputed) so `result[0]` works
  and using the weights is reported as unsupported.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn
from xdsl.ir import Attribute, SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.irt.logic import CmpOp
from irc.dialects.irt.math import AbsOp, ClampOp, ExpOp, LogOp, RsqrtOp, SqrtOp, WhereOp
from irc.dialects.irt.reduce import (
    AttentionOp,
    BatchMatmulOp,
    LayerNormOp,
    LogSoftmaxOp,
    ReduceOp,
    SoftmaxOp,
)
from irc.dialects.irt.shape import ExpandOp
from irc.dialects.symbolic import dims_of
from irc.frontend.convert_base import (
    Converter,
    ImportContext,
    Unsupported,
    accepts_ints,
    dtype_of,
    dtype_of_type,
    like,
    tensor_type,
)

# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------


def _dims(dim: Any, rank: int) -> list[int]:
    """Normalized, sorted reduction dims; None or () means every dim."""
    if dim is None:
        return list(range(rank))
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return list(range(rank))
    if any(not isinstance(d, int) for d in dims):
        raise Unsupported(f"dim={dim!r}: reduction dims must be integers")
    norm = sorted({d % max(rank, 1) for d in dims})
    if len(norm) != len(dims):
        raise Unsupported(f"dim={dim!r} names a dimension twice")
    return norm


def _check_dtype(dtype: Any) -> None:
    if dtype not in (None, torch.float32):
        raise Unsupported(f"dtype={dtype}: irc computes float32")


def _reduce(kind: str):
    def convert(imp: ImportContext, node: fx.Node, x, dim=None, keepdim=False, *, dtype=None, out=None) -> SSAValue:
        _check_dtype(dtype)
        if out is not None:
            raise Unsupported("out= is not supported")
        x = imp.tensor(x)
        rank = len(irt.shape_of(x))
        if rank == 0:
            return x
        return imp.insert(ReduceOp(kind, x, _dims(dim, rank), bool(keepdim), imp.result_type(node)))

    return convert


def _amax(imp: ImportContext, node: fx.Node, x, dim=(), keepdim=False, *, out=None) -> SSAValue:
    return _reduce("max")(imp, node, x, dim, keepdim, out=out)


def _max_full(imp: ImportContext, node: fx.Node, x, *args, **kwargs) -> SSAValue:
    """Tensor.max() / torch.max(x) with no dim: the maximum element. Other forms (a dim, which also
    returns indices, or a second tensor) are unsupported."""
    if not args and not kwargs:
        return _reduce("max")(imp, node, x)
    raise Unsupported("max with a dim or a second tensor; use torch.amax / torch.maximum")


def _kept(x: SSAValue, dims: Sequence[int]) -> Attribute:
    """x's type with `dims` reduced to size 1 (keepdim)."""
    return like(x, [1 if d in dims else n for d, n in enumerate(irt.shape_of(x))])


def _var(imp: ImportContext, node: fx.Node, x, dim=None, unbiased=None, keepdim=False, *, correction=None,
         std: bool = False) -> SSAValue:
    """var/std over `dim`: the sum of squared deviations from the mean over N - correction
    (correction 1 unless given; `unbiased=False` is 0), as torch (0/0 = NaN for one element)."""
    x = imp.tensor(x)
    shape = irt.shape_of(x)
    if isinstance(dim, bool):  # the old var(x, unbiased) form
        dim, unbiased = None, dim
    if correction is None:
        correction = 0 if unbiased is False else 1
    dims = _dims(dim, len(shape))
    count = 1
    for d in dims:
        if not isinstance(shape[d], int):
            raise Unsupported(f"var/std over a dimension of symbolic size {shape[d]}")
        count *= shape[d]
    kept = _kept(x, dims)
    mean = imp.insert(ReduceOp("mean", x, dims, True, kept))
    dev = imp.insert(irt.SubOp(x, mean, x.type))
    squares = imp.insert(ReduceOp("sum", imp.insert(irt.MulOp(dev, dev, x.type)), dims, True, kept))
    v = imp.insert(irt.DivOp(squares, imp.tensor(float(max(count - float(correction), 0.0))), kept))
    if std:
        v = imp.insert(SqrtOp(v))
    return v if keepdim else imp.insert(irt.ReshapeOp(v, imp.result_type(node)))


def _std(imp: ImportContext, node: fx.Node, x, dim=None, unbiased=None, keepdim=False, *, correction=None) -> SSAValue:
    return _var(imp, node, x, dim, unbiased, keepdim, correction=correction, std=True)


def _norm_of(imp: ImportContext, x: SSAValue, ord: Any, dims: list[int], keep: Attribute) -> SSAValue:
    """The vector ord-norm of x over `dims`, keepdim: 2 (sqrt of the sum of squares), 1 (the
    sum of |x|) or inf (the max of |x|)."""
    if ord == 2:
        return imp.insert(SqrtOp(imp.insert(ReduceOp("sum", imp.insert(irt.MulOp(x, x, x.type)), dims, True, keep))))
    if ord == 1:
        return imp.insert(ReduceOp("sum", imp.insert(AbsOp(x)), dims, True, keep))
    if ord == float("inf"):
        return imp.insert(ReduceOp("max", imp.insert(AbsOp(x)), dims, True, keep))
    raise Unsupported(f"a vector norm of order {ord!r}; irc computes orders 2, 1 and inf")


def _vector_norm(imp: ImportContext, node: fx.Node, x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None) -> SSAValue:
    _check_dtype(dtype)
    if out is not None:
        raise Unsupported("out= is not supported")
    x = imp.tensor(x)
    dims = _dims(dim, len(irt.shape_of(x)))
    r = _norm_of(imp, x, ord, dims, _kept(x, dims))
    return r if keepdim else imp.insert(irt.ReshapeOp(r, imp.result_type(node)))


def _normalize(imp: ImportContext, node: fx.Node, x, p=2.0, dim=1, eps=1e-12, out=None) -> SSAValue:
    """F.normalize: x / max(||x||_p over dim, eps)."""
    if out is not None:
        raise Unsupported("out= is not supported")
    x = imp.tensor(x)
    dims = _dims(dim, len(irt.shape_of(x)))
    norm = _norm_of(imp, x, p, dims, _kept(x, dims))
    norm = imp.insert(ClampOp(norm, float(eps), None))
    return imp.insert(irt.DivOp(x, norm, x.type))


def _logsumexp(imp: ImportContext, node: fx.Node, x, dim, keepdim=False) -> SSAValue:
    """log(sum(exp(x - m))) + m over `dim`, m the maximum, taken as 0 where it is infinite (as
    torch: a row of -inf gives -inf, one holding +inf gives +inf)."""
    x = imp.tensor(x)
    dims = _dims(dim, len(irt.shape_of(x)))
    kept = _kept(x, dims)
    m = imp.insert(ReduceOp("max", x, dims, True, kept))
    infinite = imp.insert(CmpOp("eq", imp.insert(AbsOp(m)), imp.tensor(float("inf")), tensor_type(irt.shape_of(m), torch.bool)))
    m = imp.insert(WhereOp(infinite, imp.tensor(0.0), m, kept))
    sums = imp.insert(ReduceOp("sum", imp.insert(ExpOp(imp.insert(irt.SubOp(x, m, x.type)))), dims, True, kept))
    r = imp.insert(irt.AddOp(imp.insert(LogOp(sums)), m, kept))
    return r if keepdim else imp.insert(irt.ReshapeOp(r, imp.result_type(node)))


# ---------------------------------------------------------------------------------------------
# Softmax, log_softmax, layer_norm
# ---------------------------------------------------------------------------------------------


def _softmax(op_cls):
    def convert(imp: ImportContext, node: fx.Node, x, dim=None, _stacklevel=3, dtype=None) -> SSAValue:
        _check_dtype(dtype)
        if dim is None:
            raise Unsupported("softmax without dim (implicit dim choice is deprecated); pass dim=")
        x = imp.tensor(x)
        if not irt.shape_of(x):
            raise Unsupported("softmax of a 0-d tensor")
        return imp.insert(op_cls(x, int(dim)))

    return convert


def _layer_norm(imp: ImportContext, node: fx.Node, x, normalized_shape, weight=None, bias=None, eps=1e-5) -> SSAValue:
    x = imp.tensor(x)
    shape = irt.shape_of(x)
    norm = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not norm or tuple(shape[len(shape) - len(norm) :]) != norm or len(norm) > len(shape):
        raise Unsupported(f"normalized_shape {list(norm)} is not the trailing shape of the input {list(shape)}")
    w = imp.tensor(weight) if weight is not None else None
    b = imp.tensor(bias) if bias is not None else None
    return imp.insert(LayerNormOp(x, w, b, len(norm), float(eps)))


def _rms_norm(imp: ImportContext, node: fx.Node, x, normalized_shape, weight=None, eps=None) -> SSAValue:
    """F.rms_norm / nn.RMSNorm as torch computes it: x * rsqrt(mean(x^2 over the normalized
    dims) + eps) * weight, eps defaulting to float32's machine epsilon; irt ops the fusion puts
    in a reduction and an elementwise kernel, as a hand-written RMSNorm (Llama's)."""
    x = imp.tensor(x)
    shape = irt.shape_of(x)
    norm = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not norm or len(norm) > len(shape) or tuple(shape[len(shape) - len(norm) :]) != norm:
        raise Unsupported(f"normalized_shape {list(norm)} is not the trailing shape of the input {list(shape)}")
    eps = torch.finfo(torch.float32).eps if eps is None else float(eps)
    dims = list(range(len(shape) - len(norm), len(shape)))
    kept = [1 if d in dims else n for d, n in enumerate(shape)]
    mean = imp.insert(ReduceOp("mean", imp.insert(irt.MulOp(x, x, x.type)), dims, True, like(x, kept)))
    y = imp.insert(irt.MulOp(x, imp.insert(RsqrtOp(imp.insert(irt.AddOp(mean, imp.tensor(eps), mean.type)))), x.type))
    return y if weight is None else imp.insert(irt.MulOp(y, imp.tensor(weight), x.type))


def _rms_norm_module(imp: ImportContext, node: fx.Node, mod: nn.Module, x) -> SSAValue:
    return _rms_norm(imp, node, x, mod.normalized_shape, _module_tensor(imp, mod, "weight"), mod.eps)


def _layer_norm_module(imp: ImportContext, node: fx.Node, mod: nn.LayerNorm, x) -> SSAValue:
    return _layer_norm_of(imp, mod, imp.tensor(x))


def _layer_norm_of(imp: ImportContext, mod: nn.LayerNorm, x: SSAValue) -> SSAValue:
    w = _module_tensor(imp, mod, "weight")
    b = _module_tensor(imp, mod, "bias")
    return _layer_norm(imp, None, x, mod.normalized_shape, w, b, mod.eps)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Batched matmul
# ---------------------------------------------------------------------------------------------


def _matmul_2d(imp: ImportContext, node: fx.Node, a, b) -> SSAValue:
    """[..., K] @ [K, N]: irt.matmul."""
    a, b = imp.tensor(a), imp.tensor(b)
    if len(irt.shape_of(a)) < 1 or len(irt.shape_of(b)) != 2:
        raise Unsupported(
            f"matmul of shapes {irt.shape_of(a)} and {irt.shape_of(b)}: irc supports [..., K] @ [K, N]"
        )
    return imp.insert(irt.MatmulOp(a, b, imp.result_type(node)))


def _batch_matmul(imp: ImportContext, a: SSAValue, b: SSAValue, result_shape: Sequence[int]) -> SSAValue:
    return imp.insert(BatchMatmulOp("matmul", a, b, tensor_type(result_shape)))


def _matmul(imp: ImportContext, node: fx.Node, a, b, *, out=None) -> SSAValue:
    """torch.matmul: [..., K] @ [K, N] is the core irt.matmul; both operands of rank >= 2 with at
    least one of rank >= 3 is irt.batch_matmul (batch dims broadcast)."""
    if out is not None:
        raise Unsupported("out= is not supported")
    a, b = imp.tensor(a), imp.tensor(b)
    ra, rb = len(irt.shape_of(a)), len(irt.shape_of(b))
    if ra >= 2 and rb >= 3:
        return _batch_matmul(imp, a, b, dims_of(imp.result_type(node)))
    return _matmul_2d(imp, node, a, b)


def _bmm(imp: ImportContext, node: fx.Node, a, b, *, out=None) -> SSAValue:
    a, b = imp.tensor(a), imp.tensor(b)
    if len(irt.shape_of(a)) != 3 or len(irt.shape_of(b)) != 3:
        raise Unsupported(f"bmm needs two 3-D tensors, got {irt.shape_of(a)} and {irt.shape_of(b)}")
    return _matmul(imp, node, a, b, out=out)


def _addmm(imp: ImportContext, node: fx.Node, bias, a, b, *, beta=1, alpha=1, out=None) -> SSAValue:
    """bias + a @ b (beta = alpha = 1): irt.matmul + irt.add, which fusion turns into one kernel."""
    if beta != 1 or alpha != 1 or out is not None:
        raise Unsupported("addmm with beta/alpha other than 1 or out=")
    a, b = imp.tensor(a), imp.tensor(b)
    if len(irt.shape_of(a)) != 2 or len(irt.shape_of(b)) != 2:
        raise Unsupported(f"addmm needs 2-D matrices, got {irt.shape_of(a)} and {irt.shape_of(b)}")
    t = imp.result_type(node)
    m = imp.insert(irt.MatmulOp(a, b, tensor_type((irt.shape_of(a)[0], irt.shape_of(b)[1]))))
    return imp.insert(irt.AddOp(imp.tensor(bias), m, t))


def _baddbmm(imp: ImportContext, node: fx.Node, bias, a, b, *, beta=1, alpha=1, out=None) -> SSAValue:
    """beta bias + alpha (a @ b) for 3-D a and b (BLOOM's and GPT-J's attention scores): a batched
    matmul, then the scalings and the add, which fusion puts in its epilogue. With beta 0 the bias
    is not read, so its NaN and inf do not reach the result, as torch documents."""
    if out is not None:
        raise Unsupported("out= is not supported")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (beta, alpha)):
        raise Unsupported("baddbmm's beta and alpha must be Python numbers known at compile time")
    a, b = imp.tensor(a), imp.tensor(b)
    if len(irt.shape_of(a)) != 3 or len(irt.shape_of(b)) != 3:
        raise Unsupported(f"baddbmm needs two 3-D tensors, got {irt.shape_of(a)} and {irt.shape_of(b)}")
    t = imp.result_type(node)
    prod = _batch_matmul(imp, a, b, dims_of(t))
    if alpha != 1:
        prod = imp.insert(irt.MulOp(prod, imp.tensor(float(alpha)), t))
    if beta == 0:
        return prod
    bias = imp.tensor(bias)
    if beta != 1:
        bias = imp.insert(irt.MulOp(bias, imp.tensor(float(beta)), bias.type))
    return imp.insert(irt.AddOp(bias, prod, t))


@accepts_ints
def _outer(imp: ImportContext, node: fx.Node, a, b) -> SSAValue:
    """a[:, None] * b[None, :] (RoPE's positions times inverse frequencies), in the result's dtype."""
    t = imp.result_type(node)
    dtype = dtype_of_type(t)
    if dtype == torch.bool:
        raise Unsupported("outer of bool tensors")
    a, b = imp.tensor(a, dtype), imp.tensor(b, dtype)
    if len(irt.shape_of(a)) != 1 or len(irt.shape_of(b)) != 1:
        raise Unsupported(f"outer needs two 1-D tensors, got {irt.shape_of(a)} and {irt.shape_of(b)}")
    col = imp.insert(irt.ReshapeOp(a, like(a, (irt.shape_of(a)[0], 1))))
    row = imp.insert(irt.ReshapeOp(b, like(b, (1, irt.shape_of(b)[0]))))
    return imp.insert(irt.MulOp(col, row, t))


def _einsum_terms(equation: str, ranks: Sequence[int]) -> tuple[list[str], str]:
    """The operands' and the result's subscripts of an einsum equation, one letter per dimension:
    an ellipsis becomes as many placeholder letters (not a-zA-Z) as the dimensions it covers,
    aligned from the right as torch broadcasts them; no "->" means the letters that occur once,
    in alphabetical order, after the ellipsis's."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise Unsupported(f"einsum {equation!r} names {len(terms)} operands, {len(ranks)} given")
    span = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t), default=0)
    filler = "".join(chr(0x3B1 + i) for i in range(span))  # greek letters: never a subscript
    expanded = []
    for t, r in zip(terms, ranks):
        n = r - len(t.replace("...", "")) if "..." in t else 0
        t = t.replace("...", filler[span - n:])
        if len(t) != r or not all(c.isalpha() for c in t):
            raise Unsupported(f"einsum {equation!r}: subscripts {t!r} do not fit an operand of rank {r}")
        expanded.append(t)
    if arrow:
        out = out.replace("...", filler)
    else:
        letters = "".join(expanded)
        out = filler + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in filler))
    return expanded, out


def _einsum_sizes(equation: str, terms: Sequence[str], out: str, xs: Sequence[SSAValue]) -> dict[str, int]:
    """Each subscript letter's size, the same in every operand that names it; Unsupported for what
    `_einsum` does not take."""
    sizes: dict[str, int] = {}
    for t, x in zip(terms, xs):
        if len(set(t)) != len(t):
            raise Unsupported(f"einsum {equation!r}: a letter repeated within one operand (a diagonal)")
        for c, n in zip(t, irt.shape_of(x)):
            if not isinstance(n, int):
                raise Unsupported(f"einsum {equation!r} on a dimension of symbolic size {n}")
            if sizes.setdefault(c, n) != n:
                raise Unsupported(f"einsum {equation!r}: dimension {c!r} is {sizes[c]} in one operand and {n} in another")
    if len(set(out)) != len(out) or any(c not in sizes for c in out):
        raise Unsupported(f"einsum {equation!r}: the result names a dimension twice or one no operand has")
    return sizes


def _einsum(imp: ImportContext, node: fx.Node, equation, *operands) -> SSAValue:
    """torch.einsum on float tensors: each operand's dimensions that no other operand or the
    result names summed away (irt.reduce), then the operands contracted pairwise, left to right,
    each pair as one batched matmul ([batch, free a, summed] @ [batch, summed, free b], by
    transposes and reshapes), and the result transposed to the equation's order. Unsupported:
    a letter repeated within one operand (diagonals), sizes that differ between operands
    (broadcasting a size-1 dimension), the sublist form, and symbolic sizes."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise Unsupported("einsum's sublist form; pass the equation as a string")
    xs = [imp.tensor(x) for x in operands]
    if any(dtype_of(x) != torch.float32 for x in xs):
        raise Unsupported("einsum of non-float tensors")
    terms, out = _einsum_terms(equation, [len(irt.shape_of(x)) for x in xs])
    sizes = _einsum_sizes(equation, terms, out, xs)

    def needed(i: int) -> set[str]:  # the letters operand i must keep: those of later operands or the result
        return set(out).union(*terms[i + 1 :], *terms[:i])

    def summed(x: SSAValue, t: str, keep: set[str]) -> tuple[SSAValue, str]:
        drop = [d for d, c in enumerate(t) if c not in keep]
        if not drop:
            return x, t
        t2 = "".join(c for c in t if c in keep)
        return imp.insert(ReduceOp("sum", x, drop, False, tensor_type([sizes[c] for c in t2]))), t2

    def arranged(x: SSAValue, t: str, order: str) -> SSAValue:
        if t != order:
            x = imp.insert(irt.TransposeOp(x, [t.index(c) for c in order], tensor_type([sizes[c] for c in order])))
        return x

    def merged(x: SSAValue, shape: Sequence[int]) -> SSAValue:
        return x if irt.shape_of(x) == tuple(shape) else imp.insert(irt.ReshapeOp(x, tensor_type(shape)))

    acc, at = summed(xs[0], terms[0], needed(0))
    for i in range(1, len(xs)):
        x, t = summed(xs[i], terms[i], needed(i) | set(at))
        later = set(out).union(*terms[i + 1 :])
        batch = [c for c in at if c in t and c in later]
        inner = [c for c in at if c in t and c not in later]
        free_a = [c for c in at if c not in t]
        free_b = [c for c in t if c not in at]
        nb, m, k, n = (math.prod(sizes[c] for c in cs) for cs in (batch, free_a, inner, free_b))
        a = merged(arranged(acc, at, "".join(batch + free_a + inner)), (nb, m, k))
        b = merged(arranged(x, t, "".join(batch + inner + free_b)), (nb, k, n))
        product = _batch_matmul(imp, a, b, (nb, m, n))
        at = "".join(batch + free_a + free_b)
        acc = merged(product, [sizes[c] for c in at])
    acc, at = summed(acc, at, set(out))
    return arranged(acc, at, out)


# ---------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------


def _is_causal_bool(allowed: torch.Tensor, lq: int, lk: int) -> bool:
    """Whether a bool mask (True = attend) is exactly the top-left causal mask, broadcast."""
    tril = torch.ones(lq, lk, dtype=torch.bool).tril()
    try:
        return bool((allowed.expand(*allowed.shape[:-2], lq, lk) == tril).all())
    except RuntimeError:
        return False


def _attention_mask(
    imp: ImportContext, mask: Any, lq: int, lk: int, true_means_masked: bool
) -> tuple[SSAValue | None, bool]:
    """(additive float mask operand or None, causal). Float masks pass through; a compile-time bool
    mask becomes `causal` if it is the causal pattern, else a constant 0/-inf tensor; a run-time
    bool mask 0/-inf computed from it (irt.where)."""
    if mask is None:
        return None, False
    if isinstance(mask, SSAValue):
        if dtype_of(mask) == torch.float32:
            return mask, False
        if dtype_of(mask) != torch.bool:
            raise Unsupported(f"an attn_mask of {dtype_of(mask)} (irc takes float and bool masks)")
        shape = irt.shape_of(mask)
        zero, minus_inf = imp.tensor(0.0), imp.tensor(float("-inf"))
        attend, skip = (minus_inf, zero) if true_means_masked else (zero, minus_inf)
        return imp.insert(WhereOp(mask, attend, skip, tensor_type(shape))), False
    if isinstance(mask, torch.Tensor):
        if mask.dtype == torch.bool:
            allowed = ~mask if true_means_masked else mask
            if _is_causal_bool(allowed, lq, lk):
                return None, True
            additive = torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))
            return imp.constant(additive, "attn_mask"), False
        if mask.is_floating_point():
            return imp.constant(mask.to(torch.float32), "attn_mask"), False
    raise Unsupported(f"attn_mask of type {getattr(mask, 'dtype', type(mask).__name__)}: irc takes float masks "
                      "or compile-time bool masks")


SDPA_ZERO_MASKED_ROWS = hasattr(torch.ops.aten, "_safe_softmax")
"""Whether this torch's F.scaled_dot_product_attention gives 0 for a query row whose every key
is masked (since torch 2.5: `_safe_softmax`), where torch.softmax, nn.MultiheadAttention's
inference path and torch 2.4 give NaN: irc's attention from it follows (`irt.attention safe`)."""


@accepts_ints
def _sdpa(
    imp: ImportContext, node: fx.Node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
    enable_gqa=False,
) -> SSAValue:
    if dropout_p:
        raise Unsupported(f"dropout_p={dropout_p}: irc compiles inference (dropout_p must be 0)")
    q, k, v = imp.tensor(q), imp.tensor(k), imp.tensor(v)
    if any(dtype_of(x) != torch.float32 for x in (q, k, v)):
        raise Unsupported("attention on tensors other than float32")
    if enable_gqa:  # k and v have fewer heads than q: each serves a group of query heads
        k, v = (_repeat_heads(imp, x, irt.shape_of(q)[-3]) for x in (k, v))
    lq, e = irt.shape_of(q)[-2:]
    lk = irt.shape_of(k)[-2]
    mask, causal = _attention_mask(imp, attn_mask, lq, lk, true_means_masked=False)
    s = 1.0 / math.sqrt(e) if scale is None and e else 1.0 if scale is None else float(scale)  # E = 0: scores are 0
    return imp.insert(AttentionOp(q, k, v, mask, s, bool(is_causal) or causal, imp.result_type(node),
                                  safe=SDPA_ZERO_MASKED_ROWS))


def _repeat_heads(imp: ImportContext, x: SSAValue, heads: int) -> SSAValue:
    """[..., Hkv, L, E] -> [..., heads, L, E], head h reading head h // (heads / Hkv) (repeat_kv)."""
    *batch, hkv, length, e = irt.shape_of(x)
    if len(irt.shape_of(x)) < 3 or heads % hkv:
        raise Unsupported(f"enable_gqa with {heads} query heads over {hkv} key/value heads")
    if heads == hkv:
        return x
    group = heads // hkv
    x = _reshape(imp, x, (*batch, hkv, 1, length, e))
    x = imp.insert(ExpandOp(x, tensor_type((*batch, hkv, group, length, e))))
    return _reshape(imp, x, (*batch, heads, length, e))


# ---------------------------------------------------------------------------------------------
# nn.MultiheadAttention, nn.TransformerEncoderLayer (leaf modules)
# ---------------------------------------------------------------------------------------------


def _module_tensor(imp: ImportContext, mod: nn.Module, path: str, rows: slice | None = None) -> SSAValue | None:
    """A module's parameter (or a row slice of it, e.g. q's third of in_proj_weight) as a function
    argument read in place; nested modules' parameters are added on first use."""
    t: Any = mod
    for part in path.split("."):
        t = getattr(t, part)
    if t is None:
        return None
    if rows is None and id(t) in imp.param_args:
        return imp.param(t)
    cache: dict = imp.__dict__.setdefault("_reduce_params", {})
    key = (id(t), None if rows is None else (rows.start, rows.stop))
    if key not in cache:
        view = t if rows is None else t[rows]
        names = {id(m): n for n, m in imp.gm.named_modules()}
        name = ".".join(filter(None, [names.get(id(mod), ""), path, "qkv"[rows.start // len(view)] if rows else ""]))
        cache[key] = (view, imp.add_constant_param(name, view))  # keep the view alive
    return cache[key][1]


def _linear(imp: ImportContext, x: SSAValue, w: SSAValue, b: SSAValue | None) -> SSAValue:
    shape = (*irt.shape_of(x)[:-1], irt.shape_of(w)[0])
    return imp.insert(irt.LinearOp(x, w, b, tensor_type(shape)))


def _reshape(imp: ImportContext, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    return x if irt.shape_of(x) == tuple(shape) else imp.insert(irt.ReshapeOp(x, tensor_type(shape)))


def _permute(imp: ImportContext, x: SSAValue, perm: Sequence[int]) -> SSAValue:
    if list(perm) == list(range(len(perm))):
        return x
    shape = irt.shape_of(x)
    return imp.insert(irt.TransposeOp(x, perm, tensor_type([shape[p] for p in perm])))


def _heads_perm(rank: int, batch_first: bool) -> list[int]:
    """[tokens..., H, D] -> [N, H, L, D] (or [H, L, D] for unbatched [L, H, D])."""
    if rank == 2:
        return [1, 0, 2]
    return [0, 2, 1, 3] if batch_first else [1, 2, 0, 3]


def multi_head_attention(
    imp: ImportContext,
    mod: nn.MultiheadAttention,
    query: SSAValue,
    key: SSAValue,
    value: SSAValue,
    attn_mask: Any,
    causal: bool,
) -> SSAValue:
    """nn.MultiheadAttention's output (inference): in-projections, heads, irt.attention, out_proj."""
    if mod.bias_k is not None or mod.add_zero_attn:
        raise Unsupported("add_bias_kv / add_zero_attn are not supported")
    if mod.training and mod.dropout > 0:
        raise Unsupported("attention dropout in training mode; compile the model in eval mode (model.eval())")
    e = mod.embed_dim
    if mod._qkv_same_embed_dim:
        weights = [_module_tensor(imp, mod, "in_proj_weight", slice(i * e, (i + 1) * e)) for i in range(3)]
    else:
        weights = [_module_tensor(imp, mod, f"{n}_proj_weight") for n in "qkv"]
    if mod.in_proj_bias is not None:
        biases = [_module_tensor(imp, mod, "in_proj_bias", slice(i * e, (i + 1) * e)) for i in range(3)]
    else:
        biases = [None] * 3
    out_w, out_b = _module_tensor(imp, mod, "out_proj.weight"), _module_tensor(imp, mod, "out_proj.bias")
    return attention_block(
        imp, (query, key, value), weights, biases, (out_w, out_b), mod.num_heads, mod.batch_first, attn_mask, causal
    )


def attention_block(
    imp: ImportContext,
    qkv: Sequence[SSAValue],
    weights: Sequence[SSAValue],
    biases: Sequence[SSAValue | None],
    out_proj: tuple[SSAValue, SSAValue | None],
    num_heads: int,
    batch_first: bool,
    attn_mask: Any,
    causal: bool,
    safe: bool = False,
) -> SSAValue:
    """Multi-head attention from its projections: q/k/v linears, split heads ([N, H, L, D]),
    irt.attention (scale 1/sqrt(D)), merge heads, output linear. Inputs are [N, L, E]
    (batch_first), [L, N, E], or unbatched [L, E]; masks follow MultiheadAttention (bool True =
    masked; 2-D [L, S] or 3-D [N * H, L, S])."""
    e = irt.shape_of(weights[0])[0]
    d = e // num_heads
    heads = []
    for x, w, b in zip(qkv, weights, biases):
        y = _linear(imp, x, w, b)
        shape = irt.shape_of(y)
        y = _reshape(imp, y, (*shape[:-1], num_heads, d))
        heads.append(_permute(imp, y, _heads_perm(len(shape), batch_first)))
    q, k, v = heads
    lq, lk = irt.shape_of(q)[-2], irt.shape_of(k)[-2]
    mask, mask_causal = _attention_mask(imp, attn_mask, lq, lk, true_means_masked=True)
    if mask is not None and len(irt.shape_of(mask)) == 3:  # [N * H, L, S] -> [N, H, L, S]
        mask = _reshape(imp, mask, (*irt.shape_of(q)[:-2], lq, lk))
    out_shape = (*irt.shape_of(q)[:-1], d)
    o = imp.insert(AttentionOp(q, k, v, mask, 1.0 / math.sqrt(d), causal or mask_causal, tensor_type(out_shape),
                               safe=safe))
    perm = _heads_perm(len(irt.shape_of(qkv[0])), batch_first)
    inverse = [perm.index(i) for i in range(len(perm))]
    o = _permute(imp, o, inverse)
    o = _reshape(imp, o, (*irt.shape_of(o)[:-2], e))
    return _linear(imp, o, *out_proj)


class NotComputed:
    """Stands for a module result irc does not compute (MultiheadAttention's attention weights):
    taking it with getitem is fine, using it as a tensor is reported as unsupported."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}, not computed by irc>"


def _weights_used(node: fx.Node) -> bool:
    """Whether anything reads the weights of the module's (out, weights) tuple: a user other than
    `result[0]`, or a `result[1]` that has users itself (`out, _ = attn(...)` makes an unused one)."""
    for u in node.users:
        if not (u.op == "call_function" and u.target is operator.getitem):
            return True
        if u.args[1] != 0 and u.users:
            return True
    return False


def _attention_call(node: fx.Node, key_padding_mask, need_weights, attn_mask, is_causal) -> tuple[Any, bool]:
    """A MultiheadAttention call's (mask, causal), as torch reads its arguments; what irc does not
    compute (a key padding mask, the attention weights taken) is unsupported."""
    if key_padding_mask is not None:
        raise Unsupported("key_padding_mask is not supported; pass an additive float attn_mask instead")
    if need_weights and _weights_used(node):
        raise Unsupported("the attention weights output is used (irc computes only the attention output; "
                          "pass need_weights=False)")
    causal = False
    if is_causal:
        if attn_mask is None:
            raise Unsupported("is_causal=True needs attn_mask (as torch requires)")
        if not need_weights:  # torch then ignores the mask and attends causally
            attn_mask, causal = None, True
    return attn_mask, causal


@accepts_ints
def _mha_module(
    imp: ImportContext, node: fx.Node, mod: nn.MultiheadAttention, query, key, value, key_padding_mask=None,
    need_weights=True, attn_mask=None, average_attn_weights=True, is_causal=False,
) -> tuple[SSAValue, NotComputed]:
    attn_mask, causal = _attention_call(node, key_padding_mask, need_weights, attn_mask, is_causal)
    query, key, value = imp.tensor(query), imp.tensor(key), imp.tensor(value)
    out = multi_head_attention(imp, mod, query, key, value, attn_mask, causal)
    return out, NotComputed("the attention weights")


def _activation(imp: ImportContext, act: Any, x: SSAValue) -> SSAValue:
    if act is F.relu or isinstance(act, nn.ReLU):
        return imp.insert(irt.ReluOp(x))
    if act is F.gelu:
        return imp.insert(irt.GeluOp(x))
    if isinstance(act, nn.GELU):
        return imp.insert(irt.GeluOp(x, act.approximate))
    raise Unsupported(f"activation {act!r}: irc supports relu and gelu")


def _encoder_layer(
    imp: ImportContext, node: fx.Node, mod: nn.TransformerEncoderLayer, src, src_mask=None,
    src_key_padding_mask=None, is_causal=False,
) -> SSAValue:
    """nn.TransformerEncoderLayer in eval mode (dropout is the identity), norm_first either way."""
    if src_key_padding_mask is not None:
        raise Unsupported("src_key_padding_mask is not supported")
    if mod.training:
        raise Unsupported("dropout in training mode; compile the model in eval mode (model.eval())")
    causal = bool(is_causal) and src_mask is not None
    mask = None if causal else src_mask

    def norm(which: nn.LayerNorm):
        return lambda y: _layer_norm_of(imp, which, y)

    def ff(y: SSAValue) -> SSAValue:
        h = _linear(imp, y, _module_tensor(imp, mod, "linear1.weight"), _module_tensor(imp, mod, "linear1.bias"))
        h = _activation(imp, mod.activation, h)
        return _linear(imp, h, _module_tensor(imp, mod, "linear2.weight"), _module_tensor(imp, mod, "linear2.bias"))

    return encoder_block(
        imp, imp.tensor(src), lambda y: multi_head_attention(imp, mod.self_attn, y, y, y, mask, causal),
        ff, norm(mod.norm1), norm(mod.norm2), mod.norm_first,
    )


def encoder_block(imp: ImportContext, x: SSAValue, sa, ff, norm1, norm2, norm_first: bool) -> SSAValue:
    """x + sa(norm1(x)), + ff(norm2(.)) (pre-norm), or norm1(x + sa(x)), norm2(. + ff(.)) (post-norm)."""

    def add(a: SSAValue, b: SSAValue) -> SSAValue:
        return imp.insert(irt.AddOp(a, b, x.type))

    if norm_first:
        x = add(x, sa(norm1(x)))
        return add(x, ff(norm2(x)))
    x = norm1(add(x, sa(x)))
    return norm2(add(x, ff(x)))


def _param_rows(imp: ImportContext, value: SSAValue, rows: slice) -> SSAValue:
    """Rows of a parameter argument as a new argument (a view, read in place): slices a packed
    weight at compile time without a slice op."""
    n = len(imp.params)
    args = list(imp.block.args[len(imp.block.args) - n :])
    if value not in args:
        raise Unsupported("the packed in-projection weight is not a parameter (it is computed)")
    name, t = imp.params[args.index(value)]
    cache: dict = imp.__dict__.setdefault("_reduce_params", {})
    key = (id(t), (rows.start, rows.stop))
    if key not in cache:
        view = t[rows]
        cache[key] = (view, imp.add_constant_param(f"{name}.{'qkv'[rows.start // len(view)]}", view))
    return cache[key][1]


def _encoder_layer_fwd(
    imp: ImportContext, node: fx.Node, src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
    use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
    ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None,
) -> SSAValue:
    """torch._transformer_encoder_layer_fwd: the fused fast path nn.TransformerEncoderLayer takes
    in inference (TorchDynamo traces it under no_grad). batch_first; exact GELU when use_gelu;
    norm1's eps for both norms (as the fast path does)."""
    if mask is not None and mask_type != 0:
        raise Unsupported(f"mask_type={mask_type} (a key padding mask) is not supported")
    e = int(embed_dim)
    weights = [_param_rows(imp, qkv_weight, slice(i * e, (i + 1) * e)) for i in range(3)]
    biases = [_param_rows(imp, qkv_bias, slice(i * e, (i + 1) * e)) for i in range(3)]

    def sa(y: SSAValue) -> SSAValue:
        return attention_block(imp, (y, y, y), weights, biases, (proj_weight, proj_bias), int(num_heads), True, mask, False)

    def ff(y: SSAValue) -> SSAValue:
        h = _linear(imp, y, ffn_weight_1, ffn_bias_1)
        h = imp.insert(irt.GeluOp(h) if use_gelu else irt.ReluOp(h))
        return _linear(imp, h, ffn_weight_2, ffn_bias_2)

    def norm(w, b):
        return lambda y: imp.insert(LayerNormOp(y, w, b, 1, float(eps)))

    x = imp.tensor(src)
    return encoder_block(imp, x, sa, ff, norm(norm_weight_1, norm_bias_1), norm(norm_weight_2, norm_bias_2), bool(norm_first))


@accepts_ints
def _mha_forward(
    imp: ImportContext, node: fx.Node, query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
    bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True, key_padding_mask=None,
    need_weights=True, attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
    v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True, is_causal=False,
) -> tuple[SSAValue, NotComputed]:
    """F.multi_head_attention_forward: what nn.MultiheadAttention calls outside its fast path
    (TorchDynamo traces it so with grad enabled). Inputs [L, N, E] or unbatched [L, E]."""
    if bias_k is not None or bias_v is not None or add_zero_attn or static_k is not None or static_v is not None:
        raise Unsupported("add_bias_kv / add_zero_attn / static keys are not supported")
    if training and dropout_p > 0:
        raise Unsupported("attention dropout in training mode; compile the model in eval mode (model.eval())")
    attn_mask, causal = _attention_call(node, key_padding_mask, need_weights, attn_mask, is_causal)
    e = int(embed_dim_to_check)
    if use_separate_proj_weight:
        weights = [imp.tensor(w) for w in (q_proj_weight, k_proj_weight, v_proj_weight)]
    else:
        weights = [_param_rows(imp, in_proj_weight, slice(i * e, (i + 1) * e)) for i in range(3)]
    biases = [None] * 3 if in_proj_bias is None else [_param_rows(imp, in_proj_bias, slice(i * e, (i + 1) * e))
                                                       for i in range(3)]
    qkv = (imp.tensor(query), imp.tensor(key), imp.tensor(value))
    # without the weights torch computes it with F.scaled_dot_product_attention (a row masked
    # whole: 0), with them by softmax (NaN)
    out = attention_block(imp, qkv, weights, biases, (out_proj_weight, out_proj_bias), int(num_heads), False,
                          attn_mask, causal, safe=SDPA_ZERO_MASKED_ROWS and not need_weights)
    return out, NotComputed("the attention weights")


# ---------------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------------

FUNCTIONS: dict[Any, Converter] = {
    torch.sum: _reduce("sum"),
    torch.mean: _reduce("mean"),
    torch.amax: _amax,
    torch.max: _max_full,
    torch.var: _var,
    torch.std: _std,
    torch.logsumexp: _logsumexp,
    torch.linalg.vector_norm: _vector_norm,
    F.normalize: _normalize,
    torch.softmax: _softmax(SoftmaxOp),
    F.softmax: _softmax(SoftmaxOp),
    torch.log_softmax: _softmax(LogSoftmaxOp),
    F.log_softmax: _softmax(LogSoftmaxOp),
    F.layer_norm: _layer_norm,
    **({F.rms_norm: _rms_norm} if hasattr(F, "rms_norm") else {}),  # torch >= 2.4
    torch.matmul: _matmul,
    torch.mm: _matmul_2d,
    operator.matmul: _matmul,
    torch.bmm: _bmm,
    torch.addmm: _addmm,
    torch.baddbmm: _baddbmm,
    torch.outer: _outer,
    torch.ger: _outer,
    torch.einsum: _einsum,
    F.scaled_dot_product_attention: _sdpa,
    torch._transformer_encoder_layer_fwd: _encoder_layer_fwd,
    F.multi_head_attention_forward: _mha_forward,
}

METHODS: dict[str, Converter] = {
    "sum": _reduce("sum"),
    "mean": _reduce("mean"),
    "amax": _amax,
    "max": _max_full,
    "var": _var,
    "std": _std,
    "logsumexp": _logsumexp,
    "softmax": _softmax(SoftmaxOp),
    "log_softmax": _softmax(LogSoftmaxOp),
    "matmul": _matmul,
    "bmm": _bmm,
    "baddbmm": _baddbmm,
    "outer": _outer,
}

MODULES: dict[type, Converter] = {
    nn.Softmax: lambda imp, node, mod, x: _softmax(SoftmaxOp)(imp, node, x, mod.dim),
    nn.LogSoftmax: lambda imp, node, mod, x: _softmax(LogSoftmaxOp)(imp, node, x, mod.dim),
    nn.LayerNorm: _layer_norm_module,
    **({nn.RMSNorm: _rms_norm_module} if hasattr(nn, "RMSNorm") else {}),
    nn.MultiheadAttention: _mha_module,
    nn.TransformerEncoderLayer: _encoder_layer,
}
