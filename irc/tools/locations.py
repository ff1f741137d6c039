"""Source locations for IR parsed from text: every op remembers where it was written.

xDSL's parser attaches a location only when the text spells one (`loc(...)`), and reports an
undefined value at the end of the input. `LocatedParser` gives every parsed op a
`FileLineColLoc` at its name, as MLIR does, and reports an undefined value at its first use.
`failing_op` maps a verifier error back to the op that raised it, so `irc-opt` can say
`file:line:col` for verifier errors too.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

UNDEFINED_VALUES = "values used but not defined"  # the message xDSL's parse_module raises


@dataclass(frozen=True)
class SourceLoc:
    """A one-based line and column in a named input."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class LocatedParser(Parser):
    """An xDSL `Parser` that locates every op and every undefined value.

    `line_offset` is added to line numbers: a chunk of `--split-input-file` reports lines of
    the whole file.
    """

    def __init__(self, ctx, text: str | bytes, name: str = "<unknown>", line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.line_offset = line_offset
        self._name_spans: list[Span] = []  # op-name spans of the ops being parsed (nested)
        self._first_use: dict[str, Span] = {}  # forward-referenced value -> its first use
        self._counted = (0, 1)  # (offset, its line): where _line_col last counted to

    def _parse_op_result_list(self):
        results = super()._parse_op_result_list()
        self._name_spans.append(self._current_token.span)  # the op name follows its results
        return results

    def parse_operation(self) -> Operation:
        try:
            op = super().parse_operation()
        except VerifyException as e:  # an attribute verifies when built: locate it at its op
            raise self._error(str(e), self._name_spans[-1]) from None
        span = self._name_spans.pop()
        if not isinstance(op.location, FileLineColLoc):
            line, col = self._line_col(span.start)
            op.location = FileLineColLoc(StringAttr(span.input.name), IntAttr(line), IntAttr(col))
        return op

    def _line_col(self, pos: int) -> tuple[int, int]:
        """Line and column of offset `pos`, counting newlines only since the previous call
        (`Span.get_location` counts from the start: quadratic over a large file)."""
        text = self.lexer.input.content
        if pos < self._counted[0]:
            self._counted = (0, 1)
        start, line = self._counted
        line += text.count("\n", start, pos)
        self._counted = (pos, line)
        return line + self.line_offset, pos - (text.rfind("\n", 0, pos) + 1) + 1

    def resolve_operand(self, operand: UnresolvedOperand, type):
        name = operand.operand_name
        if name not in self.ssa_values:
            self._first_use.setdefault(name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        if allow_implicit_module and self._current_token.kind == MLIRTokenKind.EOF:
            return ModuleOp([])  # no ops (only comments): an empty module, as in MLIR
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as e:
            undefined = [n for n in self.forward_ssa_references if n in self._first_use]
            if not (e.msg.startswith(UNDEFINED_VALUES) and undefined):
                if e.span.start >= len(e.span.input.content.rstrip()):  # xDSL: " in block definition"
                    e.msg = f"unexpected end of input ({e.msg.strip()}): is a '}}' missing?"
                raise
            undefined.sort(key=lambda n: self._first_use[n].start)
            first, *others = undefined
            also = f" (also undefined: {', '.join('%' + n for n in others)})" if others else ""
            raise self._error(f"use of undefined value %{first}{also}", self._first_use[first]) from None

    def _error(self, msg: str, span: Span) -> ParseError:
        try:
            self.raise_error(msg, span)
        except ParseError as e:
            return e
        raise AssertionError("raise_error returned")  # pragma: no cover


def op_location(op: Operation | None) -> SourceLoc | None:
    """Where `op` (or, for an op a pass created, its nearest located ancestor) was written."""
    while op is not None:
        if isinstance(loc := op.location, FileLineColLoc):
            return SourceLoc(loc.filename.data, loc.line.data, loc.column.data)
        op = op.parent_op()
    return None


def failing_op(module: ModuleOp, error: VerifyException) -> Operation | None:
    """The op whose own verifier raised `error` (same message), else the innermost op that
    fails to verify (for checks of a region's structure, which name no op)."""
    message = str(error)
    innermost = None
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            if str(e) == message:
                return op
        except Exception:  # noqa: BLE001 - a broken op (erased operand, ...) is not the one
            pass
    for op in module.walk():
        try:
            op.verify()
        except VerifyException:
            innermost = op  # pre-order walk: the last failure is the innermost
        except Exception:  # noqa: BLE001
            pass
    return innermost
