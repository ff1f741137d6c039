"""`irc-opt --verify-diagnostics`: check the errors a file produces against its annotations.

The annotations are MLIR's (`mlir-opt --verify-diagnostics`):

    %0 = irt.relu %x : tensor<4xf32>   // expected-error {{substring of the message}}
    // expected-error @+1 {{...}}        the error is on the next line (@-2: two lines up)
    // expected-error @below {{...}}     on the next line that holds no annotation (@above)
    // expected-error @unknown {{...}}   an error with no source location (a pass, a target)
    // expected-error-re {{shape {{[0-9]+}}x4}}   {{...}} inside the message is a regex

An error matches an annotation of its line whose text it contains. Every error must be
expected and every expectation met; what is not is reported as one of

    FILE:L:C: unexpected error: MESSAGE                       (no annotation for it)
    FILE:L: expected error "TEXT" was not produced            (no such error)
    FILE:L:C: error "MESSAGE" does not match the expected "TEXT" (line A)
    FILE:L:C: error "MESSAGE" was expected at line T (annotation at line A)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from irc.tools.locations import SourceLoc

_ANNOTATION = re.compile(
    r"//\s*expected-(?P<kind>error|warning|note|remark)(?P<re>-re)?"
    r"\s*(?:@(?P<at>[+-]\d+|above|below|unknown))?\s*\{\{(?P<text>.*)\}\}\s*$"
)
_DESIGNATOR = re.compile(r"//\s*expected-(?:error|warning|note|remark)")


@dataclass(frozen=True)
class Diagnostic:
    """An error irc-opt produced: where (None: no source location), what, and the context
    (the source line with a caret, or the module annotated at the failing op)."""

    loc: SourceLoc | None
    message: str
    context: str = ""
    kind: str = "error"

    def header(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc else self.message


@dataclass(frozen=True)
class Expectation:
    """One `expected-<kind>` annotation: written at `line`, about line `target` (None: @unknown)."""

    kind: str
    line: int
    target: int | None
    text: str
    regex: re.Pattern[str] | None

    def matches(self, d: Diagnostic) -> bool:
        return d.kind == self.kind and self.matches_text(d.message)

    def matches_text(self, message: str) -> bool:
        return bool(self.regex.search(message)) if self.regex else self.text in message


def _regex(text: str) -> re.Pattern[str]:
    """MLIR's `-re` text: literal text with `{{regex}}` parts."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return re.compile("".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def parse_expectations(text: str, first_line: int = 1) -> list[Expectation]:
    """The annotations in `text`, whose first line is line `first_line` of the file."""
    lines = text.splitlines()
    annotated = [bool(_DESIGNATOR.search(s)) for s in lines]
    found = []
    for i, source in enumerate(lines):
        if not (m := _ANNOTATION.search(source)):
            continue
        at, target = m["at"], i
        if at == "unknown":
            target = None
        elif at in ("above", "below"):
            step = -1 if at == "above" else 1
            target += step
            while 0 <= target < len(lines) and annotated[target]:
                target += step
        elif at:
            target += int(at)
        found.append(Expectation(
            m["kind"], first_line + i, None if target is None else first_line + target,
            m["text"], _regex(m["text"]) if m["re"] else None))
    return found


def check(diagnostics: list[Diagnostic], expectations: list[Expectation], file: str) -> list[str]:
    """What does not agree between the errors produced and the annotations; [] when all do."""
    diags, wants = list(diagnostics), list(expectations)

    def line_of(d: Diagnostic) -> int | None:
        return d.loc.line if d.loc else None

    for d in list(diags):  # exact matches first
        w = next((w for w in wants if w.target == line_of(d) and w.matches(d)), None)
        if w is not None:
            diags.remove(d)
            wants.remove(w)
    problems = []
    for d in list(diags):  # right line, wrong text
        w = next((w for w in wants if w.target == line_of(d) and w.kind == d.kind), None)
        if w is not None:
            problems.append(f"{d.loc or file}: {d.kind} \"{d.message}\" does not match the expected "
                            f"\"{w.text}\" (line {w.line})")
            diags.remove(d)
            wants.remove(w)
    for d in list(diags):  # right text, wrong line
        w = next((w for w in wants if w.matches(d)), None)
        if w is not None:
            where = "with no location" if w.target is None else f"at line {w.target}"
            problems.append(f"{d.loc or file}: {d.kind} \"{d.message}\" was expected {where} "
                            f"(annotation at line {w.line})")
            diags.remove(d)
            wants.remove(w)
    problems += [f"{d.loc or file}: unexpected {d.kind}: {d.message}" for d in diags]
    problems += [f"{file}:{w.line}: expected {w.kind} \"{w.text}\" was not produced" for w in wants]
    return problems
