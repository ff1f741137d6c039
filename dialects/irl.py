"""`irl`: loop-level ops irc's code generators expand themselves.

After `irc-to-loops`, most kernels are plain `scf` loop nests over `memref`s. A matrix product
is not: it is an `irl.gemm`, a call into irc's GEMM engine (cache blocking, operand packing and
a register-tiled micro-kernel; `lowering/cpp/gemm.py`) whose every choice is written on the op,
so it shows in IR dumps and golden tests:

    irl.gemm panels %x, %w_packed -> %y epilogue(%b : memref<16xf32>) sizes [4, 16, 8]
        tiles [6, 16, 8, 4] strides [0, 0, 1] parallel 0
        : memref<4x8xf32>, memref<1x8x16xf32>, memref<4x16xf32> {
    ^bb0(%acc: f32, %bias: f32):
      %v = arith.addf %acc, %bias : f32
      irl.yield %v : f32
    }

computes C[i, j] = body(sum_k A[i, k] * B[k, j], e[i, j]...) for an M x N x K product (`sizes`).
A is `a` read as a row-major [M, K] matrix. B depends on the layout (`GemmLayout`):

* `panels`: `b` holds B in the engine's panels of 16 columns, [ceil(N/16), K, 16], packed at
  compile time;
* `nk` / `kn`: `b` is a row-major [N, K] (nn.Linear) / [K, N] matrix, packed on the fly;
* `im2col`: B is the im2col matrix of the NCHW image `b` (convolution, its geometry in `conv`,
  an `#irl.conv` written `conv <input NxCxHxW, output OxOHxOW, kernel kHxkW, stride sHxsW,
  padding pHxpW, dilation dHxdW, groups G>`); the product then runs per image and group: A is the group's
  [O/groups, C/groups*kH*kW] weights, C the group's [O/groups, OH*OW] output;
* `im2col_panels`: as `im2col`, with `a` the weights already in the engine's MR-row panels
  (MR: the Target's `gemm_rows`, 6 by default), [ceil(O/MR), C/groups*kH*kW, MR] (`irt.pack
  "rows" MR`, at compile time);
* `direct` / `direct_panels`: as `im2col` / `im2col_panels`, but B is read in place from the
  image, nothing packed: with stride 1 and no padding each row (c, kh, kw) of B is the image
  plane shifted by kh*dH*W + kw*dW; otherwise the image is first copied once, zeros for the
  padding included, into sH x sW phase planes per channel (at most `DIRECT_MAX_PHASES`), in
  which every tap is again a shifted plane. The product runs on virtual columns oh*Wq + ow
  (Wq = ceil((W + 2*pW) / sW)) and keeps those with ow < OW (`irc_conv_direct` in
  `include/irc_gemm.h`); its `tiles` NC counts virtual columns, and K is never split (KC is
  unused).
* `pixels` / `pixels_panels`: as `direct`, but the register tile runs over output pixels x
  output channels (`irc_conv_pixels`): the weights are its B, [O, C*kH*kW] rows packed per call
  or, in `pixels_panels`, `a` already in the engine's panels of W output channels,
  [ceil(O/W), C*kH*kW, W] (`irt.pack "rows" W`, W the panel width; with groups, each group's
  O/groups channels a multiple of W, so that its panels are its own). It reads the
  image in place at any stride (a padded one from a zero-padded copy, no phase planes) and on a
  small plane wastes none of its tile on virtual columns.
  `tiles` MS counts output channels per task (a multiple of W), NC output pixels per task, and
  MC output rows per band: below the output height (`pixels_panels`, a padded image, tasks of
  every channel), each task copies the padded rows its output rows read a band of MC output
  rows at a time, rather than the whole padded image once.
* `winograd`: a 3x3 conv of stride 1, dilation 1 and one group as Winograd F(2x2, 3x3)
  (`irc_conv_winograd`): `a` is its weights transformed and packed [16, ceil(O/R), C, R] (`irt.pack
  "winograd" R`, R = `IRC_PT`: 14 output channels at 32-wide GEMM panels, 6 at 16); per 2x2 tile
  of outputs, 16 products over the input channels replace the 36 of the direct sum. `tiles` MC
  counts tile rows (output row pairs) per task and MS output channel panels of R per task (NC and
  KC are unused).

`batch [count, sa, sb, sc]` (optional, not with im2col) makes it `count` products, the n-th reading
A, B and C `sa`, `sb`, `sc` elements further on (0: shared, a broadcast batch dim) and its
epilogue inputs at the per-batch strides: a batched matmul (attention's q @ k^T, p @ v).

`tiles` = [MC, NC, KC, MS] is the cache blocking: OpenMP tasks of MS rows x NC columns of C,
each taking K in steps of KC and its rows MC at a time;
`strides` has three element strides per epilogue input (per image or batch entry, per row i, per
column j; 0 broadcasts), `parallel` = 1 shares C blocks among OpenMP threads; `parallel` = 2 (a
convolution of several images or groups) shares out its images x groups instead, each one's
product on one thread (`lowering/to_loops/gemm.py` `GROUP_TASKS`).

Sizes known only at call time (symbolic dimensions, `dialects/symbolic.py`) are `index`
operands in these lists, as in MLIR's mixed static/dynamic lists (`memref.subview`): the
blocking and strides computed from them are operands too (arith ops before the op compute them
at call time, `lowering/to_loops/gemm.py`), and `parallel 1 if %p` runs on threads only when
the i1 `%p` is true at call time (the product is large enough):

    irl.gemm nk %x, %w -> %y sizes [%s0, 256, 256] tiles [%mc, 128, 256, %ms] strides []
        parallel 1 if %big : memref<?x256xf32, #irt.dims<"s0">>, memref<256x256xf32>, ...

A run-time size may be 0: the engine then writes nothing (M or N) or the epilogue of 0 (K).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Union

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    UnitAttr,
    i1,
    i64,
)
from xdsl.dialects.utils import DynamicIndexList, EnumAttribute, get_dynamic_index_list, split_dynamic_index_list
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from irc.dialects.static_shape import StaticShapeOp


class GemmLayout(StrEnum):
    """How `irl.gemm` reads its operands (see the module docstring)."""

    PANELS = "panels"
    NK = "nk"
    KN = "kn"
    IM2COL = "im2col"
    IM2COL_PANELS = "im2col_panels"
    DIRECT = "direct"
    DIRECT_PANELS = "direct_panels"
    PIXELS = "pixels"
    PIXELS_PANELS = "pixels_panels"
    WINOGRAD = "winograd"


CONV_LAYOUTS = (GemmLayout.IM2COL, GemmLayout.IM2COL_PANELS, GemmLayout.DIRECT, GemmLayout.DIRECT_PANELS,
                GemmLayout.PIXELS, GemmLayout.PIXELS_PANELS, GemmLayout.WINOGRAD)
DIRECT_LAYOUTS = (GemmLayout.DIRECT, GemmLayout.DIRECT_PANELS)
PIXEL_LAYOUTS = (GemmLayout.PIXELS, GemmLayout.PIXELS_PANELS)
DIRECT_MAX_PHASES = 64
"""The most phase planes (stride_h x stride_w) a direct convolution copies its image into."""
PACKED_CONV_LAYOUTS = (GemmLayout.IM2COL_PANELS, GemmLayout.DIRECT_PANELS)


@irdl_attr_definition
class GemmLayoutAttr(EnumAttribute[GemmLayout], SpacedOpaqueSyntaxAttribute):
    """`irl.gemm`'s layout: a keyword in the op's custom form (`#irl<layout nk>` generic)."""

    name = "irl.layout"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> GemmLayout:
        pos = parser.pos
        value = parser.parse_optional_identifier_or_str_literal()
        if value not in tuple(GemmLayout):
            parser.raise_error(f"irl.gemm: layout must be one of {', '.join(GemmLayout)}, got {value!r}", pos, parser.pos)
        return GemmLayout(value)


@dataclass(frozen=True)
class ConvGeometry:
    """A 2-D convolution's shapes, as Python ints (`ConvAttr.geometry`)."""

    batch: int
    channels: int
    height: int
    width: int
    out_channels: int
    out_height: int
    out_width: int
    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    pad_h: int
    pad_w: int
    dilation_h: int
    dilation_w: int
    groups: int


# The textual form: each keyword with the fields it names, written as a dimension list.
_CONV_SYNTAX = (
    ("input", ("batch", "channels", "height", "width")),
    ("output", ("out_channels", "out_height", "out_width")),
    ("kernel", ("kernel_h", "kernel_w")),
    ("stride", ("stride_h", "stride_w")),
    ("padding", ("pad_h", "pad_w")),
    ("dilation", ("dilation_h", "dilation_w")),
    ("groups", ("groups",)),
)


@irdl_attr_definition
class ConvAttr(ParametrizedAttribute):
    """The geometry of the convolution an im2col `irl.gemm` computes:

        #irl.conv<input 1x6x8x8, output 12x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 2>

    input = [batch, C, H, W] (NCHW), output = [O, OH, OW]; every size >= 1 but the padding
    (>= 0), and the groups divide C and O."""

    name = "irl.conv"
    batch: IntAttr
    channels: IntAttr
    height: IntAttr
    width: IntAttr
    out_channels: IntAttr
    out_height: IntAttr
    out_width: IntAttr
    kernel_h: IntAttr
    kernel_w: IntAttr
    stride_h: IntAttr
    stride_w: IntAttr
    pad_h: IntAttr
    pad_w: IntAttr
    dilation_h: IntAttr
    dilation_w: IntAttr
    groups: IntAttr

    @staticmethod
    def get(geometry: ConvGeometry) -> ConvAttr:
        return ConvAttr(*(IntAttr(getattr(geometry, f)) for _, fields in _CONV_SYNTAX for f in fields))

    @property
    def geometry(self) -> ConvGeometry:
        return ConvGeometry(*(getattr(self, f).data for _, fields in _CONV_SYNTAX for f in fields))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        values: list[Attribute] = []
        with parser.in_angle_brackets():
            for n, (keyword, fields) in enumerate(_CONV_SYNTAX):
                if n:
                    parser.parse_punctuation(",")
                parser.parse_keyword(keyword)
                pos = parser.pos
                dims = parser.parse_dimension_list()
                if len(dims) != len(fields) or min(dims) < 0:
                    parser.raise_error(f"#irl.conv: {keyword} takes {'x'.join(['N'] * len(fields))} "
                                       f"(sizes {', '.join(fields)})", pos, parser.pos)
                values += [IntAttr(d) for d in dims]
        return values

    def print_parameters(self, printer: Printer) -> None:
        g = self.geometry
        printer.print_string("<" + ", ".join(f"{keyword} {'x'.join(str(getattr(g, f)) for f in fields)}"
                                             for keyword, fields in _CONV_SYNTAX) + ">")

    def verify(self) -> None:
        g = self.geometry
        if min(v for f, v in vars(g).items() if f not in ("pad_h", "pad_w")) < 1 or min(g.pad_h, g.pad_w) < 0:
            raise VerifyException(f"#irl.conv: sizes, strides, dilations and groups must be >= 1, padding >= 0: {g}")
        if g.channels % g.groups or g.out_channels % g.groups:
            raise VerifyException(
                f"#irl.conv: groups ({g.groups}) must divide the input ({g.channels}) and output ({g.out_channels}) channels"
            )


@irdl_op_definition
class YieldOp(StaticShapeOp):
    """Ends an `irl.gemm` epilogue with the element to store."""

    name = "irl.yield"
    value = operand_def(Float32Type)
    traits = traits_def(IsTerminator())
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


Index = Union[int, SSAValue]
"""A size, tile or stride on an `irl` op: static, or an `index` value known at call time."""


def _ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _mixed(values: Sequence[Index]) -> tuple[DenseArrayBase, list[SSAValue]]:
    """A mixed list as its static property (`?` entries marked DYNAMIC_INDEX) and its operands."""
    static, dynamic = split_dynamic_index_list(list(values), DYNAMIC_INDEX)
    return _ints(static), dynamic


def _parallel(parallel: bool | int | SSAValue) -> tuple[IntegerAttr, list[SSAValue]]:
    """`parallel 0 | 1 | 2`, or `parallel 1 if %p` when `parallel` is an i1 known at call time."""
    if isinstance(parallel, SSAValue):
        return IntegerAttr(1, i64), [parallel]
    return IntegerAttr(int(parallel), i64), []


class IntArrays:
    """Reading an op's mixed static/dynamic integer lists (property `name`, operands
    `dynamic_<name>`) as Python tuples."""

    def mixed(self, name: str) -> tuple[Index, ...]:
        """The entries: ints, and the index operands of those known at call time."""
        static = getattr(self, name).get_values()
        dynamic = getattr(self, f"dynamic_{name}", ())
        return tuple(get_dynamic_index_list(static, dynamic, DYNAMIC_INDEX))

    def ints(self, name: str) -> tuple[int, ...]:
        """The entries of a list that has no run-time entries."""
        values = self.mixed(name)
        if not all(isinstance(v, int) for v in values):
            raise ValueError(f"{self.name}: {name} has entries known only at call time")  # type: ignore[attr-defined]
        return values  # type: ignore[return-value]

    def verify_list(self, name: str, length: int | None, what: str, minimum: int | None = None) -> None:
        """`name` has `length` entries (None: any), one operand per `?`, static entries >= `minimum`."""
        static = tuple(getattr(self, name).get_values())
        dynamic = getattr(self, f"dynamic_{name}", ())
        if static.count(DYNAMIC_INDEX) != len(dynamic):
            raise VerifyException(f"{self.name}: {name} has {static.count(DYNAMIC_INDEX)} run-time entries "  # type: ignore[attr-defined]
                                  f"but {len(dynamic)} operands")
        shown = "[" + ", ".join("?" if v == DYNAMIC_INDEX else str(v) for v in static) + "]"
        known = [v for v in static if v != DYNAMIC_INDEX]
        if (length is not None and len(static) != length) or (minimum is not None and known and min(known) < minimum):
            raise VerifyException(f"{self.name}: {name} must be {what}, got {shown}")  # type: ignore[attr-defined]

    def verify_parallel(self) -> None:
        if self.parallel_if is not None and self.parallel.value.data != 1:  # type: ignore[attr-defined]
            raise VerifyException(f"{self.name}: `parallel 1 if %p` is the only run-time choice of threads")  # type: ignore[attr-defined]
        if self.parallel.value.data not in (0, 1, 2):  # type: ignore[attr-defined]
            raise VerifyException(f"{self.name}: parallel must be 0, 1 or 2, got {self.parallel.value.data}")  # type: ignore[attr-defined]
        if self.parallel.value.data == 2 and getattr(self, "conv", None) is None:  # type: ignore[attr-defined]
            raise VerifyException(f"{self.name}: parallel 2 (threads over images x groups) needs a convolution")  # type: ignore[attr-defined]


@irdl_op_definition
class GemmOp(IntArrays, StaticShapeOp):
    """C = epilogue(A x B) by irc's GEMM engine (see the module docstring)."""

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irl.gemm"
    layout = prop_def(GemmLayoutAttr)
    a = operand_def(MemRefType)
    b = operand_def(MemRefType)
    c = operand_def(MemRefType)
    epilogue = var_operand_def(MemRefType)
    dynamic_sizes = var_operand_def(IndexType)
    dynamic_tiles = var_operand_def(IndexType)
    dynamic_strides = var_operand_def(IndexType)
    dynamic_batch = var_operand_def(IndexType)
    parallel_if = opt_operand_def(i1)
    sizes = prop_def(DenseArrayBase.constr(i64))
    tiles = prop_def(DenseArrayBase.constr(i64))
    strides = prop_def(DenseArrayBase.constr(i64))
    batch = prop_def(DenseArrayBase.constr(i64))  # [] or [count, sa, sb, sc]
    conv = opt_prop_def(ConvAttr)
    parallel = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    custom_directives = (DynamicIndexList,)
    assembly_format = (
        "$layout $a `,` $b `->` $c (`epilogue` `(` $epilogue^ `:` type($epilogue) `)`)? "
        "(`batch` custom<DynamicIndexList>($dynamic_batch, $batch)^)? "
        "`sizes` custom<DynamicIndexList>($dynamic_sizes, $sizes) "
        "`tiles` custom<DynamicIndexList>($dynamic_tiles, $tiles) "
        "`strides` custom<DynamicIndexList>($dynamic_strides, $strides) (`conv` $conv^)? "
        "`parallel` $parallel (`if` $parallel_if^)? "
        "`:` type($a) `,` type($b) `,` type($c) attr-dict-with-keyword $body"
    )

    def __init__(
        self,
        layout: GemmLayout,
        a: SSAValue,
        b: SSAValue,
        c: SSAValue,
        epilogue: Sequence[SSAValue],
        *,
        sizes: Sequence[Index],
        tiles: Sequence[Index],
        strides: Sequence[Index],
        body: Region,
        conv: ConvGeometry | None = None,
        batch: Sequence[Index] = (),
        parallel: bool | int | SSAValue = True,
    ):
        (sizes_attr, dyn_sizes), (tiles_attr, dyn_tiles), (strides_attr, dyn_strides), (batch_attr, dyn_batch) = (
            _mixed(sizes), _mixed(tiles), _mixed(strides), _mixed(batch))
        parallel_attr, parallel_if = _parallel(parallel)
        properties: dict[str, Attribute] = {
            "layout": GemmLayoutAttr(layout),
            "sizes": sizes_attr,
            "tiles": tiles_attr,
            "strides": strides_attr,
            "batch": batch_attr,
            "parallel": parallel_attr,
        }
        if conv is not None:
            properties["conv"] = ConvAttr.get(conv)
        super().__init__(
            operands=[a, b, c, list(epilogue), dyn_sizes, dyn_tiles, dyn_strides, dyn_batch, parallel_if],
            regions=[body], properties=properties,
        )

    def verify_(self) -> None:
        self.verify_list("sizes", 3, "[M, N, K] >= 1", minimum=1)
        self.verify_list("tiles", 4, "[MC, NC, KC, MS] >= 1", minimum=1)
        if len(self.mixed("strides")) != 3 * len(self.epilogue):
            raise VerifyException(
                f"irl.gemm: strides needs 3 entries per epilogue input ({len(self.epilogue)}), got {len(self.mixed('strides'))}"
            )
        self.verify_list("strides", None, "per-input (batch, row, column) strides")
        if self.mixed("batch"):
            self.verify_list("batch", 4, "[count, sa, sb, sc], count >= 1 and strides >= 0", minimum=0)
            if self.mixed("batch")[0] == 0:
                raise VerifyException("irl.gemm: the batch count must be >= 1 (or a run-time size), got 0")
        self.verify_parallel()
        if (self.layout.data in CONV_LAYOUTS) != (self.conv is not None):
            raise VerifyException(
                "irl.gemm: the convolution layouts (im2col, direct, pixels and their _panels, and only they) take the "
                "convolution geometry (`conv <...>`)"
            )
        if self.conv is not None:
            if self.dynamic_sizes or self.dynamic_tiles or self.dynamic_strides or self.parallel_if is not None:
                raise VerifyException("irl.gemm: a convolution's sizes, tiles and strides are static")
            if self.mixed("batch"):
                raise VerifyException("irl.gemm: a convolution runs per image already (no `batch`)")
            g = self.conv.geometry
            implied = (g.out_channels // g.groups, g.out_height * g.out_width, g.channels // g.groups * g.kernel_h * g.kernel_w)
            if self.ints("sizes") != implied:
                raise VerifyException(
                    f"irl.gemm: sizes {list(self.ints('sizes'))} are not the per-group product of the conv geometry, "
                    f"[O/groups, OH*OW, C/groups*kH*kW] = {list(implied)}"
                )
            if self.layout.data in PACKED_CONV_LAYOUTS + (GemmLayout.PIXELS_PANELS,):
                self._verify_conv_panels(g)
            if self.layout.data == GemmLayout.WINOGRAD:
                self._verify_winograd(g)
            if self.layout.data in DIRECT_LAYOUTS and g.stride_h * g.stride_w > DIRECT_MAX_PHASES:
                raise VerifyException(
                    f"irl.gemm: the direct layouts copy a strided image into stride_h x stride_w phase planes, "
                    f"at most {DIRECT_MAX_PHASES} (im2col takes any stride), got stride {g.stride_h}x{g.stride_w}"
                )
        block = self.body.block
        if len(block.args) != 1 + len(self.epilogue) or not isinstance(block.last_op, YieldOp):
            raise VerifyException(
                f"irl.gemm: the epilogue takes the accumulator and one f32 per epilogue input "
                f"({1 + len(self.epilogue)} arguments) and ends with irl.yield"
            )


    def _verify_winograd(self, g: ConvGeometry) -> None:
        """The winograd layout runs a 3x3 stride-1 undilated conv of one group, its weights
        transformed and packed [16, ceil(M/R), C, R] (`irt.pack "winograd"`), read without bounds."""
        m, _, k = self.ints("sizes")
        shape = tuple(self.a.type.get_shape())  # type: ignore[attr-defined]
        if (g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, g.groups) != (3, 3, 1, 1, 1, 1, 1):
            raise VerifyException(
                f"irl.gemm: the winograd layout runs a 3x3 conv of stride 1, dilation 1 and one group, got kernel "
                f"{g.kernel_h}x{g.kernel_w}, stride {g.stride_h}x{g.stride_w}, dilation {g.dilation_h}x{g.dilation_w}, "
                f"groups {g.groups}"
            )
        if len(shape) != 4 or shape[0] != 16 or shape[2] != k // 9 or shape[3] < 1 or shape[1] != -(-m // shape[3]):
            raise VerifyException(
                f"irl.gemm: the winograd layout reads its weights as [16, ceil(M/R), C, R] = [16, ceil({m}/R), {k // 9}, R], "
                f"got {list(shape)}"
            )

    def _verify_conv_panels(self, g: ConvGeometry) -> None:
        """A conv's packed weights are read without bounds: their shape must be the one the
        engine indexes, [groups*ceil(M/R), K, R] row panels (M, K per group), or for
        pixels_panels [groups*M/W, K, W] channel panels that tasks take whole (with groups, M a
        multiple of W: no panel straddles two)."""
        m, _, k = self.ints("sizes")
        shape = tuple(self.a.type.get_shape())  # type: ignore[attr-defined]
        width = shape[-1]
        pixels = self.layout.data == GemmLayout.PIXELS_PANELS
        if pixels and g.groups != 1 and m % width:
            raise VerifyException(
                f"irl.gemm: pixels_panels reads each group's weights as whole panels: M ({m}) must be a multiple of "
                f"the panel width ({width}) with groups {g.groups}"
            )
        expected = (-(-m // width) * g.groups, k, width)
        if len(shape) != 3 or shape != expected:
            raise VerifyException(
                f"irl.gemm: {self.layout.data} reads its weights as panels {list(expected)} "
                f"([groups*ceil(M/{'W' if pixels else 'R'}), K, {'W' if pixels else 'R'}]), got {list(shape)}"
            )
        if pixels and self.ints("tiles")[3] % width:
            raise VerifyException(
                f"irl.gemm: pixels_panels tasks take whole panels of {width} output channels: MS (tiles[3]) "
                f"must be a multiple of {width}, got {self.ints('tiles')[3]}"
            )


@irdl_op_definition
class AttentionOp(IntArrays, StaticShapeOp):
    """softmax(q k^T * scale + mask) v for `batch` independent heads, on the GEMM engine.

        irl.attention %q, %k, %v -> %o sizes [4, 128, 128, 64, 64] rows 64 scale 0.125
            causal 0 mask_strides [] parallel 1 : memref<...>, memref<...>, memref<...>, memref<...>

    `sizes` = [batch, Lq, Lk, E, Ev]; q, k, v, o are contiguous [batch, L, E] buffers. Queries go
    `rows` at a time: a block of scores (rows x Lk) is one GEMM with the scale, mask and causal
    -inf applied on the register tile, a softmax over each row in place, then P v (read from P's
    and v's rows for Ev of 1-4 vectors, else one GEMM). `causal 1` also tells the engine that a
    block needs only the keys up to its last query. Scores never exist beyond one block per thread.
    `mask_strides` (batch, row, column) read the optional additive mask operand (0 broadcasts).
    `safe`: a row whose scores are all -inf gives 0, not NaN (irt.attention's `safe`).
    Sizes and mask strides known only at
    call time are index operands (`sizes [%b, %s0, %s1, 64, 64]`), and `parallel 1 if %p`
    decides the threads at call time, as on `irl.gemm`.
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irl.attention"
    q = operand_def(MemRefType)
    k = operand_def(MemRefType)
    v = operand_def(MemRefType)
    o = operand_def(MemRefType)
    mask = var_operand_def(MemRefType)
    dynamic_sizes = var_operand_def(IndexType)
    dynamic_mask_strides = var_operand_def(IndexType)
    parallel_if = opt_operand_def(i1)
    sizes = prop_def(DenseArrayBase.constr(i64))
    rows = prop_def(IntegerAttr[I64])
    scale = prop_def(FloatAttr[Float32Type])
    causal = prop_def(IntegerAttr[I64])
    mask_strides = prop_def(DenseArrayBase.constr(i64))
    parallel = prop_def(IntegerAttr[I64])
    zero_masked_rows = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    custom_directives = (DynamicIndexList,)
    assembly_format = (
        "$q `,` $k `,` $v `->` $o (`mask` `(` $mask^ `:` type($mask) `)`)? "
        "`sizes` custom<DynamicIndexList>($dynamic_sizes, $sizes) `rows` $rows "
        "`scale` $scale `causal` $causal (`safe` $zero_masked_rows^)? "
        "`mask_strides` custom<DynamicIndexList>($dynamic_mask_strides, $mask_strides) "
        "`parallel` $parallel (`if` $parallel_if^)? "
        "`:` type($q) `,` type($k) `,` type($v) `,` type($o) attr-dict"
    )

    def __init__(self, q, k, v, o, mask, *, sizes: Sequence[Index], rows: int, scale: float, causal: bool,
                 mask_strides: Sequence[Index], parallel: bool | SSAValue, safe: bool = False):
        (sizes_attr, dyn_sizes), (strides_attr, dyn_strides) = _mixed(sizes), _mixed(mask_strides)
        parallel_attr, parallel_if = _parallel(parallel)
        properties = {
            "sizes": sizes_attr,
            "rows": IntegerAttr(rows, i64),
            "scale": FloatAttr(scale, Float32Type()),
            "causal": IntegerAttr(int(causal), i64),
            "mask_strides": strides_attr,
            "parallel": parallel_attr,
        }
        if safe:
            properties["zero_masked_rows"] = UnitAttr()
        super().__init__(
            operands=[q, k, v, o, [mask] if mask is not None else [], dyn_sizes, dyn_strides, parallel_if],
            properties=properties,
        )

    def verify_(self) -> None:
        self.verify_list("sizes", 5, "[batch, Lq, Lk, E, Ev] >= 1", minimum=1)
        if len(self.mask) > 1 or len(self.mixed("mask_strides")) != 3 * len(self.mask):
            raise VerifyException("irl.attention: at most one mask, with 3 strides (batch, row, column)")
        self.verify_list("mask_strides", None, "(batch, row, column) strides")
        self.verify_parallel()
        if self.rows.value.data < 1:
            raise VerifyException("irl.attention: rows must be >= 1")


IRL = Dialect("irl", [GemmOp, AttentionOp, YieldOp], [GemmLayoutAttr, ConvAttr])
