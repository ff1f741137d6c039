"""The emission of one `irl.gemm` / `irl.attention` as a call into the GEMM engine, whose C++ is
`include/irc_gemm.h` (pasted into a translation unit that has one of them, see `emit_cpp`).

C[M, N] = epilogue(A[M, K] x B[K, N]), the BLIS way:

* a C block of MS rows x NC columns per OpenMP task (`irc_gemm`); within it K in steps of KC:
  the B block is packed once per step into NR-column panels [KC][NR] (or read from panels packed
  at compile time), then the A rows, MC at a time, into MR-row panels [KC][MR];
* the register tile (`irc_tile`): MR x NR floats in 2 x MR vector accumulators (MR = `IRC_MR`,
  the Target's gemm_rows, 6 by default; NR = `IRC_NR`: 16 with AVX2 ymm vectors, 32 with
  AVX-512 zmm), one broadcast of A and two loads of B per k feeding 2 x MR
  FMAs; on the last K step the epilogue runs on the accumulators (a generic lambda called with
  `IRC_VL`-float pieces (the Target's vector width), or with floats on a ragged edge) before the one store of the tile.

Packers: `irc_prepacked` (panels made at compile time), `irc_dense` (a row-major matrix, either
orientation), `irc_im2col` (the im2col matrix of an NCHW image, built panel by panel, never whole).
A convolution in the `direct` / `direct_panels` layouts packs no B at all: `irc_conv_direct`
copies a padded or strided image once (zeros included, in stride_h x stride_w phase planes),
then reads each tile's two vectors per k straight from the image, its K loop per input channel
over the taps, and stores each tile's real columns (see the header). In the `pixels` layouts
(`irc_conv_pixels`) the same image gives a broadcast per output pixel and k, the weights'
panels (`irc_prepacked<IRC_NR>`, or packed per call) two vectors of output channels.
Per-thread scratch for packed blocks is allocated once per thread and reused.
Vectors are GCC vector extensions; FMA comes from `__builtin_ia32_vfmaddps512_mask` /
`vfmaddps256` when the target has it (`-march=native`), else a multiply and an add (a 32-wide
build on a CPU without AVX-512 still computes right, in pairs of narrower vectors).
"""

from __future__ import annotations

from irc.dialects import irl
from irc.target import PIXEL_PAIR_ROWS, PIXEL_ROWS


def _ix(em, value: irl.Index) -> str:
    """A size, tile or stride of an irl op in C++: the literal, or the variable holding its
    call-time value."""
    return str(value) if isinstance(value, int) else em.n(value)


def _parallel(em, op: irl.GemmOp | irl.AttentionOp) -> str:
    """Whether the engine call shares its work among threads (`parallel 2`: the loop over images
    and groups around it does, so each call runs on one thread)."""
    if op.parallel_if is not None:
        return em.n(op.parallel_if)
    return "true" if op.parallel.value.data == 1 else "false"


def _strided_read(ptr: str, base_terms: list[tuple[str, str]], sc: str) -> str:
    """The C++ expression reading `ptr` at sum(index*stride for base_terms) + j*sc, for V lanes
    (a stride "0" term is left out; column stride 0 broadcasts, 1 is contiguous, else a gather)."""
    base = " + ".join(f"{index}*{stride}" for index, stride in base_terms if stride != "0") or "0"
    if sc == "0":
        return f"irc_splat<V>({ptr}[{base}])"
    if sc == "1":
        return f"irc_ld<V>({ptr} + {base} + j)"
    return f"irc_gather<V>({ptr} + {base} + j*{sc}, {sc})"


def _operand_access(em, value, strides: tuple[irl.Index, irl.Index, irl.Index], batch: str | None) -> str:
    """The C++ expression reading an epilogue input at (batch, row `irc_row`, column `j`)."""
    sb, sr, sc = (_ix(em, s) for s in strides)
    terms = ([(batch, sb)] if batch else []) + [("irc_row", sr)]
    return _strided_read(em.n(value), terms, sc)


def _check_panel_width(em, panels, what: str) -> None:
    """Panels packed [P, K, W] for another width than this target's GEMM tile cannot be read."""
    width = panels.type.get_shape()[-1]
    if width != em.gemm_width:
        raise NotImplementedError(
            f"cpp emitter: irl.gemm reads {what} packed in {width}-column panels, but this target's GEMM "
            f"panels are {em.gemm_width} wide (cpp{{gemm_width={em.gemm_width}}}); pack them for "
            f"{em.gemm_width} (irc-pack-weights{{gemm_width={em.gemm_width}}}) or emit with gemm_width={width}"
        )


def emit_gemm(em, op: irl.GemmOp) -> None:
    """One `irl.gemm` as a call to `irc_gemm` (`irc_gemm_batched` with a `batch`) with a generic
    lambda for the epilogue."""
    layout = op.layout.data
    a, b, c = em.n(op.a), em.n(op.b), em.n(op.c)
    strides = op.mixed("strides")
    g = op.conv.geometry if op.conv is not None else None  # a convolution: per image and group
    em.line("{")
    em.depth += 1
    if g is not None:
        m, n, k = op.ints("sizes")
        cg = g.channels // g.groups
        if op.parallel.value.data == 2:  # threads over images x groups
            em.line("#pragma omp parallel for collapse(2) schedule(static)")
        em.line(f"for (int64_t irc_n = 0; irc_n < {g.batch}; ++irc_n)")
        em.line(f"for (int64_t irc_g = 0; irc_g < {g.groups}; ++irc_g) {{")
        em.depth += 1
        image = f"{b} + (irc_n*{g.channels} + irc_g*{cg})*{g.height * g.width}"
        if layout in irl.DIRECT_LAYOUTS + irl.PIXEL_LAYOUTS + (irl.GemmLayout.WINOGRAD,):
            em.line(f"const irc_direct irc_b{{{image}, {cg}, {g.height}, {g.width}, {g.kernel_h}, {g.kernel_w}, "
                    f"{g.stride_h}, {g.stride_w}, {g.pad_h}, {g.pad_w}, {g.dilation_h}, {g.dilation_w}, "
                    f"{g.out_height}, {g.out_width}}};")
        else:
            em.line(f"const irc_im2col irc_b{{{image}, {cg}, {g.height}, {g.width}, {g.kernel_h}, {g.kernel_w}, "
                    f"{g.stride_h}, {g.stride_w}, {g.pad_h}, {g.pad_w}, {g.dilation_h}, {g.dilation_w}, {g.out_width}}};")
        if layout == irl.GemmLayout.WINOGRAD:  # the weights' transform, [16][ceil(M/IRC_PT)][C][IRC_PT]
            rows = op.a.type.get_shape()[-1]
            if rows != PIXEL_PAIR_ROWS[em.gemm_width]:
                raise NotImplementedError(
                    f"cpp emitter: irl.gemm reads Winograd weights packed in panels of {rows} output channels, but "
                    f"this target's Winograd tile (IRC_PT) has {PIXEL_PAIR_ROWS[em.gemm_width]} "
                    f"(cpp{{gemm_width={em.gemm_width}}}); pack them with irc-pack-weights{{gemm_width={em.gemm_width}}}"
                )
            tile_rows, _, _, panels = op.ints("tiles")
            em.line(f"const irc_wino irc_a{{{a}, {tile_rows}, {panels}}};")
        elif layout == irl.GemmLayout.PIXELS_PANELS:  # the weights as the rhs, in panels of output channels
            _check_panel_width(em, op.a, "conv weights")
            group = f" + irc_g*{m * k}" if g.groups > 1 else ""  # a group's M / W whole panels
            em.line(f"const irc_prepacked<IRC_NR> irc_a{{{a}{group}, {k}}};")
        elif layout == irl.GemmLayout.PIXELS:
            em.line(f"const irc_dense<IRC_NR, false> irc_a{{{a} + irc_g*{m * k}, {k}, {m}}};")
        elif layout in irl.PACKED_CONV_LAYOUTS:  # each group's rows in panels of their own: ceil(m / rows) a group
            rows = op.a.type.get_shape()[-1]
            if rows != em.gemm_rows:
                raise NotImplementedError(
                    f"cpp emitter: irl.gemm reads conv weights packed in {rows}-row panels, but this target's GEMM "
                    f"tile has {em.gemm_rows} rows (cpp{{gemm_rows={em.gemm_rows}}}); pack them for {em.gemm_rows} "
                    f"(irc-pack-weights{{gemm_rows={em.gemm_rows}}}) or emit with gemm_rows={rows}"
                )
            em.line(f"const irc_prepacked<IRC_MR> irc_a{{{a} + irc_g*{-(-m // rows) * rows * k}, {k}}};")
        else:
            em.line(f"const irc_dense<IRC_MR, false> irc_a{{{a} + irc_g*{m * k}, {k}, {m}}};")
        em.line(f"float* irc_c = {c} + (irc_n*{g.out_channels} + irc_g*{m})*{n};")
        row = f"irc_g*{m} + i"
    else:
        m, n, k = (_ix(em, v) for v in op.mixed("sizes"))
        if layout == irl.GemmLayout.PANELS:
            _check_panel_width(em, op.b, "weights")
        em.line(f"const irc_dense<IRC_MMR, false> irc_a{{{a}, {k}, {m}}};")
        pb = {irl.GemmLayout.PANELS: f"irc_prepacked<IRC_NR>{{{b}, {k}}}",
              irl.GemmLayout.NK: f"irc_dense<IRC_NR, false>{{{b}, {k}, {n}}}",
              irl.GemmLayout.KN: f"irc_dense<IRC_NR, true>{{{b}, {n}, {n}}}"}[layout]
        em.line(f"const auto irc_b = {pb};")
        em.line(f"float* irc_c = {c};")
        row = "i"
    batch = [_ix(em, v) for v in op.mixed("batch")]  # [count, sa, sb, sc]: the n-th product is irc_n
    _emit_epilogue(em, op, strides, row, "irc_n" if g is not None or batch else None, per_batch=bool(batch))
    mc, nc, kc, ms = (_ix(em, v) for v in op.mixed("tiles"))
    if layout in irl.PIXEL_LAYOUTS:  # bands of MC output rows, MS output channels x NC pixels per task
        # what irc_pixels_task's run tiles are compiled for: the taps, the column stride, the
        # height of a row's run tiles, the output rows per tile, whether every run tile of a
        # whole row is that high (the row a multiple of its tiles: no K loop for one pixel fewer),
        # whether the top and bottom rows' tiles skip kernel rows (padding above and below) and
        # which taps a row's first and last pixels read column padding with (irc_cols)
        most = PIXEL_ROWS[em.gemm_width]
        run_rows = pixel_run_rows(g.out_width, most, PIXEL_PAIR_ROWS[em.gemm_width] if k >= TALL_TILES_MIN_K else 0)
        segments = pixel_run_segments(run_rows, g.out_height, PIXEL_PAIR_ROWS[em.gemm_width])
        tiles = -(-g.out_width // max(most, run_rows))  # a whole row's tiles, as irc_pixels_task cuts it
        even = "true" if g.out_width > 0 and g.out_width % tiles == 0 else "false"
        edges = "true" if g.pad_h > 0 else "false"  # edge rows skip the kernel rows that read padding alone
        args = f"{g.kernel_h * g.kernel_w}, {g.stride_w}, {run_rows}, {segments}, {even}, {edges}, {_pixel_cols(g, run_rows)}"
        em.line(f"irc_conv_pixels<{args}>({m}, irc_a, irc_b, irc_c, irc_epi, {mc}, {nc}, {ms}, {_parallel(em, op)});")
    elif layout == irl.GemmLayout.WINOGRAD:
        em.line(f"irc_conv_winograd({m}, irc_a, irc_b, irc_c, irc_epi, {_parallel(em, op)});")
    elif layout in irl.DIRECT_LAYOUTS:  # the taps per channel are a template argument: the K loop's inner trip count
        em.line(f"irc_conv_direct<{g.kernel_h * g.kernel_w}>({m}, irc_a, irc_b, irc_c, irc_epi, {mc}, {nc}, {ms}, "
                f"{_parallel(em, op)});")
    else:
        rest = f"{m}, {n}, {k}, irc_a, irc_b, irc_c, {n}, irc_epi, {mc}, {nc}, {kc}, {ms}, {_parallel(em, op)}"
        em.line(f"irc_gemm_batched({', '.join(batch)}, {rest});" if batch else f"irc_gemm({rest});")
    if g is not None:
        em.depth -= 1
        em.line("}")
    em.depth -= 1
    em.line("}")


TALL_TILES_MIN_K = 64
"""The shortest K (input channels x taps) for which a pixels-layout conv takes `tall` run tiles
(`pixel_run_rows`): with a short K a tile's fixed costs outweigh its K loop's, and a 24 -> 144
channel 1x1 on 56x56 measured 221 -> 229 us with tiles of 14 (Intel Xeon, one thread)."""


def pixel_run_rows(out_width: int, most: int, tall: int = 0) -> int:
    """The taller of the heights a pixels-layout conv's row of `out_width` output pixels is cut
    into (`irc_pixels_task`'s RH): ceil(out_width / most) tiles of balanced heights, each one run
    of the row; or `tall` (> most) where tiles of it cut the row evenly and tiles of `most` do not
    (`PIXEL_PAIR_ROWS`: 56 = 4 x 14 rather than 12 + 4 x 11). Tiles balanced over the whole plane
    instead straddle rows, and a straddling tile reads through a pointer per pixel
    (`irc_accumulate_pixels`'s RUN = 0). Run tiles against straddling ones, Intel Xeon, one
    thread, A/B in one process: 128 -> 32 channels 3x3 on 16x16 178 -> 165 us (rows of 16 in
    tiles of 8 rather than 12 across rows), on 8x8 69 -> 63, 128 channels on 28x28 1558 ->
    1499; DenseNet 1.59 -> 1.54 ms, MobileNet-v2 1.19 -> 1.13, cnn 148 -> 129 us, ResNet-18
    28.8 -> 28.3 ms; its cold build 6.55 -> 6.94 s (four more tile heights)."""
    rows = -(-out_width // max(1, -(-out_width // most)))  # 0 for an empty row: tiles over the whole range
    if tall > most and out_width >= 2 * tall and out_width % tall == 0 and out_width % rows:
        return tall
    return rows


def pixel_run_segments(run_rows: int, out_height: int, most: int) -> int:
    """Rows per tile of a pixels-layout conv (`irc_pixels_task`'s S): 2 where two of a row's
    runs fit a tile of `most` pixels (`PIXEL_PAIR_ROWS`) and there are two rows, else 1."""
    return 2 if 0 < 2 * run_rows <= most and out_height >= 2 else 1


PIXEL_EDGE_TAPS = 9
"""The most taps per channel for which a pixels-layout conv whose output rows are each one or two
run tiles skips the taps its rows' first and last pixels read column padding with (`irc_cols` in
`include/irc_gemm.h`): its K loop unrolls that many taps whole, so which (pixel, tap) pairs read
padding is known at compile time."""


PIXEL_EDGE_HALF_ROWS = 8
"""The most pixels per run tile for which rows of two tiles skip their edge pixels' padding taps:
one pixel of 8 with a 3x3 is 4% of a tile's FMAs. Zen 4, one thread, alternating in one process,
the native call alone: DenseNet's 128 -> 32 channel 3x3 on 16x16 (8 + 8) 171.1 -> 166.9 us,
DenseNet 1527 -> 1504 us (two threads 940 -> 928), ResNet-18 (its 256-channel 3x3s on 14x14, 7 + 7
in two-row tiles) 32.8 -> 32.4 ms. Also ResNet-18's 28-wide rows (14 + 14): level within the noise
(32.4-32.6 ms either way), 0.45 s more of g++'s CPU time on its unit (7.56 -> 8.01 s)."""


def _pixel_cols(g, run_rows: int) -> str:
    """`irc_cols<KW, DW, PW, ER>` for a pixels-layout conv whose output rows are each one run tile
    of `run_rows` pixels and whose first or last pixel reads column padding with some tap;
    `irc_cols<KW, DW, PW, ER, 0>` where each row is two run tiles (the first skips the row's first
    pixels' taps, the second its last pixels'; tiles of at most `PIXEL_EDGE_HALF_ROWS`); else
    `irc_no_cols`."""
    edge = g.width + g.pad_w - (g.out_width - 1) * g.stride_w  # the last pixel's first tap past the image
    left, right = g.pad_w > 0, (g.kernel_w - 1) * g.dilation_w >= edge
    if g.kernel_h * g.kernel_w > PIXEL_EDGE_TAPS or g.out_width not in (run_rows, 2 * run_rows) or not (left or right):
        return "irc_no_cols"
    halves = ", 0" if g.out_width == 2 * run_rows else ""
    if halves and run_rows > PIXEL_EDGE_HALF_ROWS:
        return "irc_no_cols"
    return f"irc_cols<{g.kernel_w}, {g.dilation_w}, {g.pad_w}, {edge}{halves}>"


def _emit_epilogue(em, op: irl.GemmOp, strides, row: str, batch: str | None, per_batch: bool = False) -> None:
    """The epilogue lambda: (acc, i, j), or (acc, irc_n, i, j) for a batched product."""
    block = op.body.block
    batch_arg = "[[maybe_unused]] int64_t irc_n, " if per_batch else ""
    em.line(f"const auto irc_epi = [&](auto acc, {batch_arg}int64_t i, int64_t j) {{")
    em.depth += 1
    em.line("using V [[maybe_unused]] = decltype(acc);")
    em.line(f"[[maybe_unused]] const int64_t irc_row = {row};")
    em.names[block.args[0]] = "acc"
    for index, (arg, value) in enumerate(zip(block.args[1:], op.epilogue)):
        name = em.fresh(arg, "e")
        em.line(f"const V {name} = {_operand_access(em, value, tuple(strides[3 * index : 3 * index + 3]), batch)};")
    with em.vector_lanes():
        for inner in block.ops:
            if isinstance(inner, irl.YieldOp):
                em.line(f"return {em.n(inner.value)};")
            else:
                em.emit(inner)
    em.depth -= 1
    em.line("};")


def emit_attention(em, op: irl.AttentionOp) -> None:
    """One `irl.attention` as a call to `irc_attention` with a generic lambda for the scores."""
    batch, lq, lk, e, ev = (_ix(em, v) for v in op.mixed("sizes"))
    em.line("{")
    em.depth += 1
    em.line("const auto irc_score = [&](auto acc, int64_t b, int64_t row, int64_t j) {")
    em.depth += 1
    em.line("using V = decltype(acc);")
    em.line(f"V x = acc * irc_splat<V>({op.scale.value.data!r}f);")
    if op.mask:
        sb, sr, sc = (_ix(em, s) for s in op.mixed("mask_strides"))
        em.line(f"x = x + {_strided_read(em.n(op.mask[0]), [('b', sb), ('row', sr)], sc)};")
    else:
        em.line("(void)b;")
    if op.causal.value.data:
        em.line("x = irc_causal<V>(x, row, j);")
    else:
        em.line("(void)row; (void)j;")
    em.line("return x;")
    em.depth -= 1
    em.line("};")
    # P v's vectors per row (irc_pv_vectors in the header) when the value width is a constant: the
    # unit then compiles that one path; -1: chosen at run time.
    value_width = op.mixed("sizes")[4]
    nv = -1
    if isinstance(value_width, int):
        nv = value_width // em.vector_width if value_width % em.vector_width == 0 and value_width <= 4 * em.vector_width else 0
    em.line(f"irc_attention<{nv}>({batch}, {lq}, {lk}, {e}, {ev}, {em.n(op.q)}, {em.n(op.k)}, {em.n(op.v)}, {em.n(op.o)}, "
            f"irc_score, {op.rows.value.data}, {'true' if op.causal.value.data else 'false'}, {_parallel(em, op)}"
            f"{', true' if op.zero_masked_rows is not None else ''});")
    em.depth -= 1
    em.line("}")
