"""A C++ reader just deep enough for ONNX's schema sources: tokens with their offsets, and calls.

fix-tags edits one argument of one call in a file that is mostly string literals (raw
``R"DOC(...)DOC"`` docs full of parentheses and commas), comments and lambdas. A regular
expression over that text finds ``Input(`` inside a doc string or splits an argument at a
comma in a literal; the lexer below never does: literals, comments and preprocessor lines
are consumed whole, and brackets are matched on tokens. Offsets are kept so an edit
replaces exactly the characters of one argument and leaves the rest of the file as it was.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from ..errors import ProverError


class CppSyntaxError(ProverError, ValueError):
    """Source the reader cannot tokenize or bracket-match; the message names file:line."""


class Kind(Enum):
    IDENT = "identifier"
    NUMBER = "number"
    STRING = "string"
    CHAR = "char"
    PUNCT = "punctuation"


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str
    start: int   # offset of the first character in the file's text
    end: int     # offset past the last character


_PREFIX = re.compile(r"(?:u8|u|U|L)?R?\"")
_RAW = re.compile(r"(?:u8|u|U|L)?R\"([^()\\\s]{0,16})\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_NUMBER = re.compile(r"\.?\d(?:[\w.]|'(?=\w)|[eEpP][+-])*")
_TWO = ("::", "->")
OPEN, CLOSE = "([{", ")]}"


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _skip_quoted(text: str, i: int, quote: str, where: str) -> int:
    """Offset past a ``"..."`` or ``'...'`` literal whose opening quote is at ``i``."""
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == quote:
            return j + 1
        if c == "\n":
            break
        j += 1
    raise CppSyntaxError(f"{where}:{line_of(text, i)}: unterminated {quote}-literal")


def tokenize(text: str, where: str = "<source>") -> list[Token]:
    """Every token of ``text``; comments, whitespace and preprocessor lines are dropped."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    line_start = True   # only whitespace since the last newline: a '#' starts a directive
    while i < n:
        c = text[i]
        if c == "\n":
            line_start, i = True, i + 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "#" and line_start:   # a directive runs to an unescaped newline
            while i < n and text[i] != "\n":
                i += 2 if text.startswith("\\\n", i) else 1
            continue
        line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise CppSyntaxError(f"{where}:{line_of(text, i)}: unterminated comment")
            i = end + 2
            continue
        raw = _RAW.match(text, i)
        if raw:
            close = text.find(")" + raw.group(1) + '"', raw.end())
            if close < 0:
                raise CppSyntaxError(f"{where}:{line_of(text, i)}: unterminated raw string")
            end = close + len(raw.group(1)) + 2
            tokens.append(Token(Kind.STRING, text[i:end], i, end))
            i = end
            continue
        lit = _PREFIX.match(text, i)
        if lit:
            end = _skip_quoted(text, lit.end() - 1, '"', where)
            tokens.append(Token(Kind.STRING, text[i:end], i, end))
            i = end
            continue
        m = _IDENT.match(text, i)
        if m:
            if text.startswith("'", m.end()) and m.group() in ("u8", "u", "U", "L"):
                end = _skip_quoted(text, m.end(), "'", where)
                tokens.append(Token(Kind.CHAR, text[i:end], i, end))
                i = end
                continue
            tokens.append(Token(Kind.IDENT, m.group(), i, m.end()))
            i = m.end()
            continue
        m = _NUMBER.match(text, i)
        if m:
            tokens.append(Token(Kind.NUMBER, m.group(), i, m.end()))
            i = m.end()
            continue
        if c == "'":
            end = _skip_quoted(text, i, "'", where)
            tokens.append(Token(Kind.CHAR, text[i:end], i, end))
            i = end
            continue
        width = 2 if text[i:i + 2] in _TWO else 1
        tokens.append(Token(Kind.PUNCT, text[i:i + width], i, i + width))
        i += width
    return tokens


def match_brackets(tokens: list[Token], where: str, text: str) -> dict[int, int]:
    """Index of each opening bracket -> index of its closing one (and back)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for k, tok in enumerate(tokens):
        if tok.kind is not Kind.PUNCT:
            continue
        if tok.text in OPEN:
            stack.append(k)
        elif tok.text in CLOSE:
            if not stack or OPEN.index(tokens[stack[-1]].text) != CLOSE.index(tok.text):
                raise CppSyntaxError(f"{where}:{line_of(text, tok.start)}: unbalanced "
                                     f"{tok.text!r}")
            opened = stack.pop()
            pairs[opened], pairs[k] = k, opened
    if stack:
        raise CppSyntaxError(f"{where}:{line_of(text, tokens[stack[-1]].start)}: "
                             f"{tokens[stack[-1]].text!r} never closed")
    return pairs


@dataclass(frozen=True)
class Span:
    """Tokens ``first`` .. ``last`` (inclusive) of a file: one argument, one body."""
    first: int
    last: int


class CppFile:
    """One source file: its text, tokens and bracket pairs, read once."""

    def __init__(self, path: str, text: str):
        self.path, self.text = path, text
        self.tokens = tokenize(text, path)
        self.pairs = match_brackets(self.tokens, path, text)

    def is_punct(self, k: int, text: str) -> bool:
        return 0 <= k < len(self.tokens) and self.tokens[k].kind is Kind.PUNCT \
            and self.tokens[k].text == text

    def is_ident(self, k: int, text: str | None = None) -> bool:
        return 0 <= k < len(self.tokens) and self.tokens[k].kind is Kind.IDENT \
            and (text is None or self.tokens[k].text == text)

    def source(self, span: Span) -> str:
        return self.text[self.tokens[span.first].start:self.tokens[span.last].end]

    def line(self, k: int) -> int:
        return line_of(self.text, self.tokens[k].start)

    def arguments(self, open_k: int) -> list[Span]:
        """The top-level comma-separated arguments between the bracket at ``open_k`` and its
        pair ([] for an empty list). Brackets nest; a comma inside a literal is no token."""
        close_k = self.pairs[open_k]
        spans, first, k = [], open_k + 1, open_k + 1
        while k < close_k:
            tok = self.tokens[k]
            if tok.kind is Kind.PUNCT and tok.text in OPEN:
                k = self.pairs[k] + 1
                continue
            if tok.kind is Kind.PUNCT and tok.text == ",":
                spans.append(Span(first, k - 1))
                first = k + 1
            k += 1
        if first <= close_k - 1:
            spans.append(Span(first, close_k - 1))
        return spans

    def int_literal(self, span: Span) -> int | None:
        """The value of an argument that is one decimal integer literal, else None."""
        tok = self.tokens[span.first]
        if span.first == span.last and tok.kind is Kind.NUMBER and tok.text.isdigit():
            return int(tok.text)
        return None

    def string_literal(self, span: Span) -> str | None:
        """The value of an argument made only of (adjacent) plain string literals, else None."""
        parts = []
        for k in range(span.first, span.last + 1):
            tok = self.tokens[k]
            if tok.kind is not Kind.STRING or not tok.text.startswith('"'):
                return None
            parts.append(tok.text[1:-1])
        return "".join(parts) if parts else None
