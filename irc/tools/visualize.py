"""`irc visualize`: draw the graph irc captured for a model and dump its fused IR.

Writes two files into the output directory:

* `figure1_graph_structure.png` - the FX graph as a top-to-bottom DAG (matplotlib only):
  nodes are layered by their longest path from the inputs, each box shows the node's op
  kind, target and output shape, arrows follow the data flow, colours mark op kinds.
* `fused_graph_structure.txt` - `cm.ir("fused")`, the IR after irc's fusion passes.

The model is a built-in name (see `irc.models`) or `package.module:attribute`, naming a
zero-argument callable returning `(module, example_inputs)` or an `nn.Module` instance
(then `--input-shape 1x784` gives the float32 randn example input).
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from pathlib import Path

from irc.errors import IrcError
from irc.models import UsageError, get_model
from irc.tools.cli import input_shapes, output_dir, writing_to

GRAPH_PNG = "figure1_graph_structure.png"
FUSED_TXT = "fused_graph_structure.txt"

OP_COLOURS = {
    "placeholder": "#b7e4c7",
    "get_attr": "#e9ecef",
    "call_module": "#a9cce3",
    "call_function": "#f9d29d",
    "call_method": "#d7bde2",
    "output": "#f5b7b1",
}

# Layout in inches: box size, horizontal pitch, vertical pitch, band for title + legend.
BOX_W, BOX_H = 2.6, 0.72
PITCH_X, PITCH_Y = 3.0, 1.25
MARGIN, TOP_BAND = 0.4, 1.3
MAX_LABEL = 34
VIRTUAL_PITCH = 0.35  # horizontal slot of a long edge passing a layer
MAX_PIXELS = 30000


# --- loading the model -------------------------------------------------------------------


def parse_shapes(text: str) -> list[tuple[int, ...]]:
    """'1x784' -> [(1, 784)]; several inputs are comma-separated: '1x784,1x10'."""
    shapes = []
    for part in text.split(","):
        try:
            dims = tuple(int(d) for d in part.strip().lower().split("x"))
        except ValueError:
            dims = ()
        if not dims or any(d <= 0 for d in dims):
            raise UsageError(f"bad --input-shape {text!r}: expected e.g. 1x784 or 1x784,1x10")
        shapes.append(dims)
    return shapes


def import_reference(ref: str):
    """Import `package.module:attribute` (attribute may be dotted) and return the object."""
    module_name, _, attr_path = ref.partition(":")
    if not module_name or not attr_path:
        raise UsageError(f"bad model reference {ref!r}: expected package.module:attribute")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import module {module_name!r} (from {ref!r}): {exc}") from None
    for attr in attr_path.split("."):
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            raise UsageError(f"module {module_name!r} has no attribute {attr_path!r}") from None
    return obj


def _as_inputs(value, ref: str) -> tuple:
    """Example inputs as a tuple of tensors (a single tensor is accepted too)."""
    import torch

    inputs = (value,) if isinstance(value, torch.Tensor) else tuple(value)
    if not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise UsageError(f"{ref}: example inputs must be a tensor or a tuple of tensors")
    return inputs


def load_model(ref: str, input_shape: str | None = None):
    """Resolve a model argument to `(model, example_inputs)`.

    `ref` is a built-in model name or `package.module:attribute`. An `nn.Module` instance
    needs `input_shape`; a callable is called with no arguments and must return
    `(model, example_inputs)`.
    """
    if ":" not in ref:
        spec = get_model(ref)
        if input_shape:
            raise UsageError(f"--input-shape is for an nn.Module given as package.module:attribute; the "
                             f"built-in model {ref!r} brings its own example inputs")
        return spec.build()
    import torch
    from torch import nn

    obj = import_reference(ref)
    if isinstance(obj, nn.Module):
        if not input_shape:
            raise UsageError(f"{ref} is an nn.Module instance; give its input with --input-shape, e.g. 1x784")
        torch.manual_seed(0)
        return obj.eval(), tuple(torch.randn(*s) for s in parse_shapes(input_shape))
    if not callable(obj):
        raise UsageError(f"{ref} is a {type(obj).__name__}, not an nn.Module or a callable")
    if input_shape:
        print(f"note: --input-shape is ignored, {ref} provides its own example inputs")
    built = obj()
    if not (isinstance(built, (tuple, list)) and len(built) == 2 and callable(built[0])):
        raise UsageError(f"{ref}() must return (model, example_inputs), got {type(built).__name__}")
    model, inputs = built
    if isinstance(model, nn.Module):
        model = model.eval()
    return model, _as_inputs(inputs, ref)


# --- graph facts -------------------------------------------------------------------------


@dataclass
class NodeBox:
    """What the figure shows for one FX node."""

    name: str
    op: str
    target: str
    shape: str
    inputs: list[str]


def _shorten(text: str, limit: int = MAX_LABEL) -> str:
    """Cut `text` to `limit` characters with an ellipsis in the middle."""
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return text[:half] + "…" + text[-(limit - 1 - half):]


def describe_value(value) -> str:
    """'f32[1, 128]' for a tensor (or FX tensor metadata), '(f32[1, 10], ...)' for tuples, '' if unknown."""
    import torch

    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, (torch.Size, tuple, list)) and isinstance(dtype, torch.dtype):
        short = str(dtype).replace("torch.", "").replace("float", "f").replace("int", "i")
        return f"{short}[{', '.join(map(str, shape))}]"
    if isinstance(value, (tuple, list)):
        parts = [describe_value(v) for v in value]
        return "(" + ", ".join(p for p in parts if p) + ")" if any(parts) else ""
    return ""


def node_shapes(gm, inputs) -> dict[str, str]:
    """Output shape text per node name: from node.meta when present, else by running `gm`."""
    import torch
    import torch.fx

    shapes: dict[str, str] = {}
    for node in gm.graph.nodes:
        text = describe_value(node.meta.get("val", node.meta.get("tensor_meta")))
        if text:
            shapes[node.name] = text
    if len(shapes) == len(gm.graph.nodes):
        return shapes

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            shapes.setdefault(n.name, describe_value(result))
            return result

    try:
        with torch.no_grad():
            Recorder(gm).run(*inputs)
    except Exception:  # noqa: BLE001 - shapes are a nicety; draw the graph without them
        pass
    return shapes


def _target_text(gm, node) -> str:
    """Readable target: module class for call_module, qualified name for functions."""
    if node.op == "call_module":
        try:
            sub = gm.get_submodule(node.target)
            extra = sub.extra_repr().replace("in_features=", "").replace("out_features=", "")
            return f"{node.target}: {type(sub).__name__}({extra})"
        except AttributeError:
            return str(node.target)
    if node.op == "call_function":
        return _function_name(node.target)
    if node.op in ("placeholder", "output"):
        return node.name
    return str(node.target)


def _function_name(target) -> str:
    """'aten.addmm.default' for ATen ops, 'torch.relu' / 'add' for Python callables."""
    if "Op" in type(target).__name__:  # OpOverload, OpOverloadPacket, HigherOrderOperator
        return str(target)
    from torch.fx.node import _get_qualified_name

    try:
        name = _get_qualified_name(target)
    except Exception:  # noqa: BLE001 - fall back to whatever str() says
        name = getattr(target, "__name__", str(target))
    for prefix in ("_operator.", "builtins."):
        name = name.removeprefix(prefix)
    return name


def describe_graph(gm, inputs) -> list[NodeBox]:
    """One `NodeBox` per FX node, in graph order."""
    shapes = node_shapes(gm, inputs)
    return [
        NodeBox(node.name, node.op, _target_text(gm, node), shapes.get(node.name, ""),
                [n.name for n in node.all_input_nodes])
        for node in gm.graph.nodes
    ]


# --- layout ------------------------------------------------------------------------------


def assign_layers(boxes: list[NodeBox]) -> dict[str, int]:
    """Layer of each node = longest path from a node without inputs.

    Nodes without inputs that are not graph inputs (get_attr constants) move down to just
    above their first user, so weights sit next to the op that consumes them.
    """
    layer: dict[str, int] = {}
    for box in boxes:  # FX graphs are topologically ordered
        layer[box.name] = 1 + max((layer[p] for p in box.inputs), default=-1)
    users: dict[str, list[str]] = {b.name: [] for b in boxes}
    for box in boxes:
        for p in box.inputs:
            users[p].append(box.name)
    for box in boxes:
        if not box.inputs and box.op != "placeholder" and users[box.name]:
            layer[box.name] = min(layer[u] for u in users[box.name]) - 1
    return layer


@dataclass
class Layout:
    """Where everything goes, in inches; y grows downwards from the top of layer 0.

    Edges spanning several layers pass through one virtual node per intermediate layer,
    which takes a narrow slot in that layer, so long edges run beside boxes, not through.
    """

    layer: dict[str, int]
    x: dict[str, float]  # centre x of every real and virtual node
    routes: list[tuple[str, list[str], str]]  # (source, virtual nodes top-down, target)
    width: float  # horizontal extent of the whole drawing

    def y(self, node: str) -> float:
        """Centre y of `node`'s layer."""
        return self.layer[node] * PITCH_Y + BOX_H / 2


def layout(boxes: list[NodeBox], sweeps: int = 4) -> Layout:
    """Layered layout: longest-path layers, virtual nodes, barycentre ordering sweeps."""
    layer = assign_layers(boxes)
    rows: dict[int, list[str]] = {}
    for box in boxes:
        rows.setdefault(layer[box.name], []).append(box.name)
    up: dict[str, list[str]] = {b.name: [] for b in boxes}  # neighbours one layer above
    down: dict[str, list[str]] = {b.name: [] for b in boxes}  # ... and one layer below
    routes = []
    virtual: set[str] = set()
    for box in boxes:
        for pred in box.inputs:
            chain = [f"{pred}->{box.name}@{d}" for d in range(layer[pred] + 1, layer[box.name])]
            virtual.update(chain)
            for d, v in zip(range(layer[pred] + 1, layer[box.name]), chain):
                layer[v] = d
                rows[d].append(v)
                up[v], down[v] = [], []
            hops = [pred, *chain, box.name]
            for a, b in zip(hops, hops[1:]):
                down[a].append(b)
                up[b].append(a)
            routes.append((pred, chain, box.name))

    depths = sorted(rows)
    for sweep in range(sweeps):  # alternate top-down (by inputs) and bottom-up (by users)
        order, neighbours = (depths, up) if sweep % 2 == 0 else (depths[::-1], down)
        for d in order:
            _sort_by_barycentre(rows[d], neighbours, rows)

    slot = {n: VIRTUAL_PITCH if n in virtual else PITCH_X for n in layer}
    x = _place(rows, up, down, slot)
    lo = min(x[n] - slot[n] / 2 for n in x)
    hi = max(x[n] + slot[n] / 2 for n in x)
    x = {n: v - (lo + hi) / 2 for n, v in x.items()}  # centre the drawing on 0
    return Layout(layer, x, routes, hi - lo)


def _place(rows, up, down, slot, sweeps: int = 6) -> dict[str, float]:
    """x of every node: rows keep their order, nodes are pulled towards their neighbours.

    Start from centred rows, then alternately pull each row towards the mean x of its
    inputs (top-down) and of its users (bottom-up), never letting neighbours overlap.
    """
    x: dict[str, float] = {}
    for row in rows.values():
        left = -sum(slot[n] for n in row) / 2
        for n in row:
            x[n] = left + slot[n] / 2
            left += slot[n]
    depths = sorted(rows)
    for sweep in range(sweeps + 1):  # odd count: the last sweep is top-down, by inputs
        order, neighbours = (depths, up) if sweep % 2 == 0 else (depths[::-1], down)
        for d in order:
            row = rows[d]
            desired = [sum(x[m] for m in neighbours[n]) / len(neighbours[n]) if neighbours[n] else x[n]
                       for n in row]
            for n, value in zip(row, _fit_in_order(desired, [slot[n] for n in row])):
                x[n] = value
    return x


def _fit_in_order(desired: list[float], widths: list[float]) -> list[float]:
    """Positions close to `desired`, in the same order, with no two slots overlapping.

    The mean of a left-to-right pass (push right) and a right-to-left pass (push left):
    both respect the spacing, so their average does too.
    """
    n = len(desired)
    gap = [(widths[i] + widths[i + 1]) / 2 for i in range(n - 1)]
    fwd = list(desired)
    for i in range(1, n):
        fwd[i] = max(desired[i], fwd[i - 1] + gap[i - 1])
    bwd = list(desired)
    for i in range(n - 2, -1, -1):
        bwd[i] = min(desired[i], bwd[i + 1] - gap[i])
    return [(f + b) / 2 for f, b in zip(fwd, bwd)]


def _sort_by_barycentre(row: list[str], neighbours: dict[str, list[str]], rows) -> None:
    """Sort `row` in place by the mean slot index of each node's neighbours (stable for ties)."""
    index: dict[str, int] = {}
    for other in rows.values():
        index.update({n: i - (len(other) - 1) / 2 for i, n in enumerate(other)})
    current = {n: i - (len(row) - 1) / 2 for i, n in enumerate(row)}

    def key(n: str) -> float:
        near = [index[m] for m in neighbours[n] if m in index]
        return sum(near) / len(near) if near else current[n]

    row.sort(key=key)


# --- drawing -----------------------------------------------------------------------------


def draw_graph(boxes: list[NodeBox], path: Path, title: str) -> None:
    """Render `boxes` as a layered DAG into `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch, Patch

    lay = layout(boxes)
    n_layers = max(lay.layer.values()) + 1
    fig_w = max(6.0, lay.width + 2 * MARGIN)
    fig_h = (n_layers - 1) * PITCH_Y + BOX_H + TOP_BAND + MARGIN
    fig = plt.figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(-fig_w / 2, fig_w / 2)
    ax.set_ylim(fig_h - TOP_BAND, -TOP_BAND)  # inverted: y grows downwards
    ax.axis("off")

    for route in lay.routes:
        _draw_route(ax, lay, *route)
    for box in boxes:
        cx, cy = lay.x[box.name], lay.y(box.name)
        ax.add_patch(FancyBboxPatch(
            (cx - BOX_W / 2, cy - BOX_H / 2), BOX_W, BOX_H, boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor=OP_COLOURS.get(box.op, "white"), edgecolor="#444444", linewidth=0.8, zorder=2))
        ax.text(cx, cy - 0.2, box.op, ha="center", va="center", fontsize=7, color="#333333", zorder=3)
        ax.text(cx, cy, _shorten(box.target), ha="center", va="center", fontsize=8.5,
                fontweight="bold", zorder=3)
        if box.shape:
            ax.text(cx, cy + 0.2, _shorten(box.shape), ha="center", va="center", fontsize=7.5,
                    family="monospace", zorder=3)

    kinds = [k for k in OP_COLOURS if any(b.op == k for b in boxes)]
    handles = [Patch(facecolor=OP_COLOURS[k], edgecolor="#444444", label=k) for k in kinds]
    ncol = max(1, min(len(handles), int(fig_w // 1.9)))
    fig.text(0.5, 1 - 0.3 / fig_h, title, ha="center", va="center", fontsize=11, fontweight="bold")
    fig.legend(handles=handles, loc="upper center", ncol=ncol, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.5 / fig_h))
    dpi = min(130, int(MAX_PIXELS / max(fig_w, fig_h)))
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def _draw_route(ax, lay: Layout, source: str, chain: list[str], target: str) -> None:
    """Arrow from the bottom of `source` through its virtual nodes to the top of `target`."""
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.path import Path as MplPath

    points = [(lay.x[source], lay.y(source) + BOX_H / 2)]
    for v in chain:  # pass each intermediate layer vertically, beside its boxes
        points += [(lay.x[v], lay.y(v) - BOX_H / 2), (lay.x[v], lay.y(v) + BOX_H / 2)]
    points.append((lay.x[target], lay.y(target) - BOX_H / 2))
    # Between layers: a cubic curve leaving and entering vertically; inside a layer: a line.
    verts, codes = [points[0]], [MplPath.MOVETO]
    for i, ((x0, y0), (x1, y1)) in enumerate(zip(points, points[1:])):
        if i % 2 == 1:
            verts.append((x1, y1))
            codes.append(MplPath.LINETO)
        else:
            mid = (y1 - y0) / 2
            verts += [(x0, y0 + mid), (x1, y1 - mid), (x1, y1)]
            codes += [MplPath.CURVE4] * 3
    ax.add_patch(FancyArrowPatch(path=MplPath(verts, codes), arrowstyle="-|>", mutation_scale=10,
                                 color="#555555", linewidth=0.9, zorder=1, shrinkA=0, shrinkB=1))


# --- command line ------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `irc visualize`."""
    parser.add_argument("model", nargs="?", default="mlp-small",
                        help="built-in model name or package.module:attribute (default: mlp-small)")
    parser.add_argument("--input-shape", type=input_shapes,
                        help="input shape(s) for an nn.Module instance, e.g. 1x784 or 1x784,1x10")
    parser.add_argument("--out", type=output_dir, default=Path("."), help="output directory (default: .)")


def run(args: argparse.Namespace) -> int:
    """Entry point of `irc visualize`; returns the exit code."""
    import torch

    import irc

    model, inputs = load_model(args.model, args.input_shape)
    graph_png = args.out / GRAPH_PNG
    try:
        with torch.no_grad():
            cm = irc.compile(model, inputs, fallback=False)  # say what irc cannot compile
    except IrcError:
        with writing_to(args.out):
            _draw_traced_fallback(model, inputs, graph_png, args.model)
        raise
    fused_txt = args.out / FUSED_TXT
    with writing_to(args.out):
        draw_graph(describe_graph(cm.graph_module, inputs), graph_png, f"FX graph of {args.model}")
        fused_txt.write_text(cm.ir("fused").rstrip() + "\n")
    print(f"wrote {graph_png}")
    print(f"wrote {fused_txt}")
    return 0


def _draw_traced_fallback(model, inputs, path: Path, label: str) -> None:
    """When irc cannot compile the model, still draw its `symbolic_trace` graph if possible."""
    import torch.fx

    try:
        gm = torch.fx.symbolic_trace(model)
        draw_graph(describe_graph(gm, inputs), path, f"FX graph of {label} (irc could not compile it)")
        print(f"wrote {path} (from torch.fx.symbolic_trace)")
    except Exception:  # noqa: BLE001 - the compile error is what the user must see
        pass
