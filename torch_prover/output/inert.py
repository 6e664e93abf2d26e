"""Text a pull request controls, made inert in every language the tool writes it into: the
one escaping (docs/safety.md, "Names a pull request controls").

In CI a PR chooses the names torch-prover prints: its node tests' directory names, its
docs' parameter names, its waivers' reasons, the paths a workflow passes. Each language
has its own way for such a name to act instead of being read:

- a terminal or a log: a control character (ESC starts an ANSI/OSC sequence that recolours,
  retitles or hides text; CR and LF start a line of their own) -- ``one_line`` shows each
  as its escape (``\\x1b``, ``\\n``), so every message stays one line of plain text;
- GitHub's workflow commands (``::error file=F::message``, read from a step's output):
  a new line starts a command of its own; GitHub's rules (actions/toolkit, ``command.ts``)
  escape ``%``, CR and LF in the message and also ``:`` and ``,`` in a property --
  ``workflow_data``, ``workflow_property`` (every other control as ``one_line`` shows it);
- Markdown on GitHub (the PR comment, the step summary): an ``@name`` notifies, ``#123``
  links another issue, a URL, ``[text](url)``, ``![](img)`` or HTML renders -- ``md_code``
  puts a name in a code span (a fence longer than any backtick run inside: GitHub renders
  nothing inside a code span, mentions and references included), ``md_text`` makes prose
  that carries such names inert (Markdown's punctuation backslash-escaped, a WORD JOINER
  after ``@`` and ``#`` and inside ``://`` and ``www.``, so no mention, reference or link
  forms);
- JUnit XML: XML 1.0 cannot hold most control characters -- ``xml_text`` replaces them
  (U+FFFD), a name on one line.
"""
from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
                      "\ud800-\udfff]")
"""C0, DEL and C1 controls (ESC and CSI start terminal escapes), the Unicode line and
paragraph separators, the bidirectional overrides (they reorder what a reader sees) and
lone surrogates (a file name's undecodable bytes)."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:   # surrogateescape: the file name's byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text: Any) -> str:
    """``text`` as one line of plain text: each control character shown as its escape."""
    return _CONTROL.sub(lambda m: _shown(m[0]), str(text))


# ----------------------------------------------------------------------------- workflow commands
def workflow_data(text: Any) -> str:
    """A workflow command's message: ``%``, CR, LF escaped (GitHub's rules: a line break
    stays in the message, never ends the line), every other control shown as its escape."""
    return one_line(str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def workflow_property(text: Any) -> str:
    """A workflow command's property value: the message's escapes plus ``:`` and ``,``."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


# ----------------------------------------------------------------------------- Markdown
def md_code(text: Any) -> str:
    """``text`` as one Markdown code span, whatever backticks it holds: its fence one
    longer than its longest run of backticks, padded with a space when it starts or ends
    with a backtick or a space (CommonMark strips one each side)."""
    t = one_line(text)
    longest = max((len(run) for run in re.findall("`+", t)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if not t or t[0] in "` " or t[-1] in "` " else ""
    return f"{fence}{pad}{t}{pad}{fence}"


_MD_PUNCT = re.compile(r"([\\`*_\[\]<>&!~])")
_JOIN = "\u2060"   # WORD JOINER: invisible, and no mention, reference or link spans it
_LINKISH = re.compile(r"([@#])|(:)(?=//)|(?<![\w.])(www)(?=\.)", re.IGNORECASE)


def md_text(text: Any) -> str:
    """Prose that may carry a PR's words, inert in Markdown: one line; backslash, backtick,
    emphasis, brackets, angle brackets, ``&``, ``!`` and ``~`` escaped (no code span, link,
    image, HTML or entity forms); a WORD JOINER after each ``@`` and ``#`` and inside
    ``://`` and ``www.`` (no mention, issue reference or autolink). A table cell's ``|``
    is ``output.report.md_cell``'s."""
    escaped = _MD_PUNCT.sub(r"\\\1", one_line(text))
    return _LINKISH.sub(lambda m: m[0] + _JOIN, escaped)


# ----------------------------------------------------------------------------- XML
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff\ud800-\udfff]")


def xml_text(text: Any, lines: bool = False) -> str:
    """Text XML 1.0 can hold: a name on one line (``one_line``); ``lines``: a detail
    whose line breaks are its own, every other character XML cannot hold replaced by
    U+FFFD (the file always parses)."""
    return _NOT_XML.sub("\ufffd", str(text)) if lines else one_line(text)
