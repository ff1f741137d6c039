"""torch.fx → `irt`: one `func.func` per graph.

Placeholders become the function's first arguments, then every parameter or buffer the graph
reads (so weights never appear in IR text), and the graph's output becomes `func.return`.
Shapes come from running the graph once on the example inputs (`ShapeProp`).

Each FX target maps to a converter in one of three tables (`FUNCTIONS`, `METHODS`, `MODULES`),
composed from the converter families in `converters.py` (a library's function irc does not
import is keyed by its qualified name: `converters.function_converter`); converters build on
`convert_base.py`.
Unsupported nodes never stop the import: every one is recorded, the nodes that depend only on
them are skipped, and one `UnsupportedOpError` names them all at the end.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch import fx
from torch.fx.node import map_aggregate
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt
from irc.dialects.irt.shape import SliceOp
from irc.dialects.symbolic import format_dim
from irc.errors import IrcError, UnsupportedNode, UnsupportedOpError
from irc.frontend.convert_base import (
    DTYPES,
    SYMBOLS,
    Converter,
    ImportContext,
    Unsupported,
    dtype_of,
    dtype_problem,
    ssa_name,
    tensor_type,
)
from irc.frontend.converters import METHODS, MODULES, function_converter
from irc.frontend.folding import has_runtime_value
from irc.frontend.order_mutations import EAGER_META, order_mutations
from irc.frontend.symbolic_import import SymbolTable, propagate_symbolic
from irc.hooks import node_hooked


@dataclass
class ImportedGraph:
    """The imported function and what the runtime needs to call it."""

    module: ModuleOp
    func_name: str
    input_names: list[str]
    input_shapes: list[tuple[int, ...]]
    params: list[tuple[str, torch.Tensor]]  # qualified name, tensor; function args after the inputs
    output_shapes: list[tuple[int, ...]]
    return_tuple: bool
    input_dtypes: list[torch.dtype] = field(default_factory=list)  # float32, int64 or bool
    output_spec: pytree.TreeSpec | None = None  # a dict/list/nested output's structure; None: one tensor or a flat tuple
    output_dtypes: list[torch.dtype] = field(default_factory=list)  # float32, int64 or bool
    symbol_ranges: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # symbolic sizes: name -> (min, max)
    symbol_guards: list[str] = field(default_factory=list)  # size rules tracing assumed, checked per call


@dataclass(frozen=True)
class EagerTensor:
    """The value of a node only PyTorch can hold here: a tensor of a dtype irc does not compile
    (bool masks, int32 indices, float64/float16/bfloat16 ...) given as an input, or any value an
    eager node computes that irc cannot take (dtype None: not a single tensor). Any node taking
    it is unsupported (an eager node when falling back)."""

    name: str
    dtype: torch.dtype | None
    origin: str  # "input", or "eager" (the result of a node PyTorch runs)

    def what(self) -> str:
        kind = "input" if self.origin == "input" else "computed in eager PyTorch"
        return f"{self.name}, a {self.dtype} tensor {kind}" if self.dtype else f"{self.name}, a non-tensor value {kind}"

    def reason(self) -> str:
        return f"it takes {self.what()}; irc compiles float32, int64 and bool tensors"


INPUT_DTYPES = DTYPES
"""Input dtypes irc compiles (float32, int64, bool); int64 and bool tensors may only flow into
converters marked `accepts_ints`, any other use is an unsupported node, as is any use of an
input of another dtype (an `EagerTensor`)."""


def describe_target(node: fx.Node, gm: fx.GraphModule) -> str:
    """A person-readable name for what a node calls: `torch.nn.Conv2d`, `torch.conv2d`, `Tensor.foo`."""
    if node.op == "call_module":
        cls = type(gm.get_submodule(str(node.target)))
        module = re.sub(r"^torch\.nn\.modules\.\w+$", "torch.nn", cls.__module__)
        return f"{module}.{cls.__qualname__}"
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_function":
        t = node.target
        mod = getattr(t, "__module__", None) or "torch"
        name = getattr(t, "__name__", str(t))
        if mod == "_operator":
            mod = "operator"
        return f"{mod}.{name}"
    return f"{node.op} {node.target}"


@dataclass
class FxImporter(ImportContext):
    """Imports one graph: converts its nodes in order with the converters of `converters.py`."""

    failed: set[fx.Node] = field(default_factory=set)  # unsupported nodes and those depending on them
    unsupported: list[UnsupportedNode] = field(default_factory=list)

    def function_converter(self, target: Any) -> Converter | None:
        return function_converter(target)

    def method_converter(self, name: str) -> Converter | None:
        return METHODS.get(name)

    # -- the import -----------------------------------------------------------------------
    def run(
        self, example_inputs: Sequence[torch.Tensor], func_name: str, dynamic: Sequence[dict] | None = None
    ) -> ImportedGraph:
        """Import the graph for inputs like `example_inputs`; `dynamic` ({dim: DynamicDim} per
        input, symbolic_import.py) makes those dimensions symbolic sizes."""
        table = None
        if dynamic is not None and any(dynamic):
            _propagate_shapes(self.gm, example_inputs)  # the model runs on the real inputs, or a plain error
            table = propagate_symbolic(self.gm, example_inputs, dynamic)
        token = SYMBOLS.set(table.size if table is not None else None)
        try:
            graph = self._run(example_inputs, func_name, table)
        finally:
            SYMBOLS.reset(token)
        return graph

    def _run(self, example_inputs: Sequence[torch.Tensor], func_name: str, table: SymbolTable | None) -> ImportedGraph:
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise IrcError(
                f"the model takes {len(placeholders)} input(s) "
                f"({', '.join(p.name for p in placeholders)}) but {len(example_inputs)} example input(s) were given"
            )
        for p, x in zip(placeholders, example_inputs):
            if not isinstance(x, torch.Tensor):
                raise IrcError(f"example input '{p.name}' is a {type(x).__name__}; irc compiles tensor inputs only")
            if x.device.type != "cpu":
                raise IrcError(f"example input '{p.name}' is on {x.device}; irc compiles for the CPU")
        if table is None:
            _propagate_shapes(self.gm, example_inputs)
        input_shapes = table.input_shapes if table is not None else [tuple(x.shape) for x in example_inputs]
        shape_of_input = dict(zip(placeholders, input_shapes))

        self.params = params = self._collect_params()
        native = [(p, x) for p, x in zip(placeholders, example_inputs) if x.dtype in INPUT_DTYPES]
        arg_types = [tensor_type(shape_of_input[p], x.dtype) for p, x in native] + [tensor_type(t.shape) for _, t in params]
        self.block = block = Block(arg_types=arg_types)
        for (p, _), arg in zip(native, block.args):
            arg.name_hint = ssa_name(p.name)
            self.values[p] = arg
        for p, x in zip(placeholders, example_inputs):
            if x.dtype not in INPUT_DTYPES:  # its users are unsupported nodes (eager with fallback)
                self.values[p] = EagerTensor(p.name, x.dtype, "input")
                if not p.users:
                    self._unsupported(p, f"an unused {x.dtype} input; irc compiles float32 tensors")
        for (name, t), arg in zip(params, block.args[len(native):]):
            arg.name_hint = ssa_name(name)
            self.param_args[id(t)] = arg
        self.builder = Builder(InsertPoint.at_end(block))

        outputs: list[SSAValue] = []
        return_tuple, output_spec = False, None
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                outputs, return_tuple, output_spec = self._outputs(node)
                continue
            self._import_node(node)

        if self.unsupported:
            raise UnsupportedOpError(self.unsupported)
        self.builder.insert(func.ReturnOp(*outputs))
        arg_types = [a.type for a in block.args]  # converters may have added constant parameters
        fn = func.FuncOp(func_name, (arg_types, [v.type for v in outputs]), Region(block))
        module = ModuleOp([fn])
        module.verify()
        return ImportedGraph(
            module=module,
            func_name=func_name,
            input_names=[p.name for p in placeholders],
            input_shapes=list(input_shapes),
            params=params,
            output_shapes=[irt.shape_of(v) for v in outputs],
            return_tuple=return_tuple,
            input_dtypes=[x.dtype for x in example_inputs],
            output_spec=output_spec,
            output_dtypes=[dtype_of(v) for v in outputs],
            symbol_ranges=dict(table.ranges) if table is not None else {},
            symbol_guards=(list(table.guards) + slice_requirements(module)) if table is not None else [],
        )

    def _collect_params(self) -> list[tuple[str, torch.Tensor]]:
        """Every tensor the graph reads from the module, once each, in first-use order."""
        found: dict[int, tuple[str, torch.Tensor]] = {}
        for node in self.gm.graph.nodes:
            tensors: list[tuple[str, torch.Tensor | None]] = []
            if node.op == "get_attr":
                tensors = [(str(node.target), _fetch_attr(self.gm, str(node.target)))]
            elif node.op == "call_module":
                mod = self.gm.get_submodule(str(node.target))
                if type(mod) in MODULES:
                    tensors = [(f"{node.target}.{n}", p) for n, p in mod.named_parameters(recurse=False)]
                    tensors += [(f"{node.target}.{n}", t) for n, t in mod.named_buffers(recurse=False)]
            for name, t in tensors:
                if _traced_scalar(name, t):
                    continue
                if isinstance(t, torch.Tensor) and t.dtype == torch.float32 and id(t) not in found:
                    found[id(t)] = (name, t)
        return list(found.values())

    def _import_node(self, node: fx.Node) -> None:
        """Convert one node; record it if unsupported. Nodes whose inputs failed are skipped,
        but still checked for a converter, so one error lists every unsupported target."""
        try:
            converter = self._converter(node)
            if EAGER_META in node.meta:  # order_mutations: e.g. an in-place change of a model input
                raise Unsupported(node.meta[EAGER_META])
            if node_hooked(self.gm, node):
                raise Unsupported("the module has forward hooks, which run with it in eager PyTorch")
            if any(i in self.failed for i in node.all_input_nodes):
                self.failed.add(node)  # depends on an unsupported node, which is reported
                return
            args = fx.node.map_arg(node.args, lambda n: self.values[n])
            kwargs = fx.node.map_arg(node.kwargs, lambda n: self.values[n])
            eager = [v for v in (self.values.get(i) for i in node.all_input_nodes) if isinstance(v, EagerTensor)]
            if eager:
                raise Unsupported(eager[0].reason())
            inputs = [self.values.get(i) for i in node.all_input_nodes]
            problem = dtype_problem(converter, node, inputs, has_runtime_value((args, kwargs)))
            if problem is not None:
                raise Unsupported(problem)
            value = converter(self, node, *args, **kwargs)
        except Unsupported as e:
            self._unsupported(node, str(e))
            return
        except TypeError as e:  # a call form the converter does not take (extra args, unknown kwargs)
            self._unsupported(node, f"unsupported arguments ({e})")
            return
        if isinstance(value, SSAValue) and value.name_hint is None:
            value.name_hint = ssa_name(node.name)
        self.values[node] = value

    def _unsupported(self, node: fx.Node, reason: str) -> None:
        self.failed.add(node)
        self.unsupported.append(UnsupportedNode(node.name, describe_target(node, self.gm), reason))

    def _converter(self, node: fx.Node) -> Converter:
        """The converter for a node, as (importer, node, *args, **kwargs) -> SSAValue."""
        if node.op == "get_attr":
            return self._get_attr
        if node.op == "call_module":
            mod = self.gm.get_submodule(str(node.target))
            module_converter = MODULES.get(type(mod))
            if module_converter is None:
                raise Unsupported("no converter for this module type")
            convert = lambda imp, node, *args, **kwargs: module_converter(imp, node, mod, *args, **kwargs)  # noqa: E731
            convert.accepts_ints = getattr(module_converter, "accepts_ints", False)  # type: ignore[attr-defined]
            return convert
        if node.op == "call_method":
            converter, what = METHODS.get(str(node.target)), "tensor method"
        else:
            converter, what = function_converter(node.target), "function"
        if converter is None:
            raise Unsupported(f"no converter for this {what}")
        return converter

    @staticmethod
    def _get_attr(imp: FxImporter, node: fx.Node) -> SSAValue:
        t = _fetch_attr(imp.gm, str(node.target))
        if isinstance(t, torch.Tensor) and t.dtype in (torch.bool, torch.int64, torch.int32, torch.uint8):
            return t  # a mask or index buffer: a compile-time value, folded where it is used
        if _traced_scalar(str(node.target), t):
            return t  # a number tracing froze into a tensor: a literal (GPT-2's mask fill, a scale)
        if not isinstance(t, torch.Tensor) or id(t) not in imp.param_args:
            raise Unsupported("the attribute is not a float32 tensor")
        return imp.param_args[id(t)]

    def _outputs(self, node: fx.Node) -> tuple[list[SSAValue], bool, pytree.TreeSpec | None]:
        """The returned values (the output's tensors, flattened), whether they come back as a
        tuple, and the structure to rebuild from that tuple when it is not a flat one."""
        items, spec = pytree.tree_flatten(_plain(node.args[0]))
        values = []
        for item in items:
            if not isinstance(item, fx.Node):
                self.unsupported.append(
                    UnsupportedNode(node.name, "output", f"returns {type(item).__name__}; irc returns tensors")
                )
                continue
            if item in self.failed:
                continue
            v = self.values[item]
            if isinstance(v, EagerTensor):
                self.unsupported.append(UnsupportedNode(
                    node.name, "output", f"returns {v.what()}; irc returns float32, int64 and bool tensors"
                ))
            elif isinstance(v, SSAValue):
                values.append(v)
            else:
                self.unsupported.append(
                    UnsupportedNode(node.name, "output", f"returns {type(v).__name__} {item.name}; irc returns tensors")
                )
        if spec.is_leaf():
            return values, False, None
        if spec.type is tuple and all(c.is_leaf() for c in spec.children()):
            return values, True, None
        return values, True, spec


def _traced_scalar(name: str, t: Any) -> bool:
    """A 0-d float tensor torch.fx made of a value computed while tracing (`torch.full([], v)`
    in forward is evaluated then, and kept as `_tensor_constant<N>`): no weight of the model,
    so a literal in the IR rather than a parameter (fusion can then read it: the -inf of a mask)."""
    return (isinstance(t, torch.Tensor) and t.dim() == 0 and t.dtype == torch.float32
            and name.rsplit(".", 1)[-1].startswith("_tensor_constant"))


def _plain(out: Any) -> Any:
    """A graph's output with FX's immutable containers as the dict and list eager returns."""
    if isinstance(out, dict):
        return {k: _plain(v) for k, v in out.items()}
    if isinstance(out, list):
        return [_plain(v) for v in out]
    if type(out) is tuple:
        return tuple(_plain(v) for v in out)
    return out


def _fetch_attr(gm: fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


class _ShapeProp(ShapeProp):
    """torch's ShapeProp without its first-use import of sympy (about a second per process, most
    of a compile the pipeline cache serves): its `run_node` and `_extract_tensor_metadata`
    import torch's symbolic shapes for fake tensors, which irc's real example inputs never are.
    Under a fake mode it is ShapeProp as it is. It remembers the node it runs, to name it when
    the model fails there."""

    node: fx.Node | None = None

    def run_node(self, n: fx.Node) -> Any:
        self.node = n
        if self.fake_module is not None or self.fake_mode is not None:
            return super().run_node(n)
        result = fx.Interpreter.run_node(self, n)
        tensors = []

        def meta(v: Any) -> Any:
            if isinstance(v, torch.Tensor):
                tensors.append(v)
                return _tensor_metadata(v)
            return v

        metadata = map_aggregate(result, meta)
        if tensors:
            n.meta["tensor_meta"] = metadata
        n.meta["type"] = type(result)
        return result


def _tensor_metadata(t: torch.Tensor) -> TensorMetadata:
    """`_extract_tensor_metadata` for a real tensor (quantization parameters left empty)."""
    strided = t.layout == torch.strided
    formats = (torch.contiguous_format, torch.channels_last, torch.channels_last_3d)
    ranks = {torch.channels_last: 4, torch.channels_last_3d: 5}
    memory_format = next(
        (f for f in formats if strided and ranks.get(f, t.dim()) == t.dim() and t.is_contiguous(memory_format=f)), None
    )
    return TensorMetadata(
        t.shape, t.dtype, t.requires_grad, t.stride() if strided else (), memory_format, t.is_quantized, {}
    )


def _propagate_shapes(gm: fx.GraphModule, example_inputs: Sequence[torch.Tensor]) -> None:
    prop = _ShapeProp(gm)
    try:
        with torch.no_grad():  # on copies: a graph may change its inputs in place (x.mul_(2))
            prop.propagate(*(x.clone() if isinstance(x, torch.Tensor) else x for x in example_inputs))
    except Exception as e:  # the user's model failed on the user's inputs: say so plainly, with eager's reason
        cause: BaseException = e
        while cause.__cause__ is not None:  # ShapeProp wraps the model's own error
            cause = cause.__cause__
        where = f" at node {prop.node.name}" if prop.node is not None else ""
        raise IrcError(
            f"running the model on the example inputs failed{where} (eager PyTorch raises too): "
            f"{type(cause).__name__}: {cause}"
        ) from e


def import_fx(
    gm: fx.GraphModule, example_inputs: Sequence[torch.Tensor], func_name: str = "forward", dynamic: Sequence[dict] | None = None
) -> ImportedGraph:
    """Import a traced graph; raises UnsupportedOpError listing every node irc cannot compile.
    In-place mutations are first made data dependencies (`order_mutations`, rewriting `gm`).
    `dynamic`: the input dimensions that are symbolic sizes (see `FxImporter.run`)."""
    return FxImporter(order_mutations(gm)).run(example_inputs, func_name, dynamic)


def slice_requirements(module: ModuleOp) -> list[str]:
    """What every call must satisfy for the slices of symbolic sizes or offsets to stay inside
    their inputs (`SliceOp.call_time_requirements`), as size rules in Python over s0, s1, ...
    (the wrapper checks them with tracing's own: a call breaking one gets a version of its own)."""
    rules: list[str] = []
    for op in module.walk():
        if isinstance(op, SliceOp):
            for size, room in op.call_time_requirements():
                if not (isinstance(room, int) and room >= 0) and not (isinstance(size, int) and size <= 0):
                    rule = f"{format_dim(room)} >= 0"
                    rule = rule if isinstance(size, int) else f"{format_dim(size)} <= 0 or {rule}"
                    if rule not in rules:
                        rules.append(rule)
    return rules
