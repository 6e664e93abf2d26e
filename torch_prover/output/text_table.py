"""Plain-text layout every text rendering shares: lines wrapped to a width, and tables
whose long column wraps under itself (or goes under its row when too narrow). Pure
functions of strings, no I/O; the CLI passes the terminal's width."""
from __future__ import annotations

import textwrap

DEFAULT_WIDTH = 100   # text width when the caller does not know a terminal's
_GAP = "  "           # between text table columns
_FLEX_MIN = 30        # narrower than this, a table's reason goes under its row instead


def _words(text: str) -> int:
    """The longest word of ``text``: the narrowest a column can be without breaking words."""
    return max((len(w) for w in text.split()), default=0)


def _wrap(text: str, width: int | None) -> list[str]:
    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(text, max(width, 1), break_long_words=True,
                         break_on_hyphens=False) or [""]  # "8e-11" stays whole


def wrap_line(text: str, width: int | None, indent: str = "  ") -> list[str]:
    """One logical line wrapped to ``width``, continuation lines indented."""
    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=True,
                         break_on_hyphens=False) or [""]


def _shrink(widths: list[int], floor: list[int], budget: int) -> list[int]:
    """Take width from the column with the most to spare (down to ``floor``) until the
    columns fit ``budget``; as close as the floors allow."""
    w = list(widths)
    while sum(w) > budget:
        spare = max(range(len(w)), key=lambda i: (w[i] - floor[i], w[i]))
        if w[spare] <= floor[spare]:
            break
        w[spare] -= 1
    return w


def _fit(natural: list[int], minimum: list[int], budget: int) -> list[int]:
    """Whole words if the budget allows, broken words (3 columns at least) if it does not."""
    w = _shrink(natural, minimum, budget)
    return w if sum(w) <= budget else _shrink(w, [min(n, 3) for n in natural], budget)


def _lines(cells: list[str], widths: list[int]) -> list[str]:
    """One table row, each cell wrapped in its column, as many lines as its tallest cell."""
    wrapped = [_wrap(c, w) for c, w in zip(cells, widths)]
    return [_GAP.join(f"{(col[k] if k < len(col) else ''):<{w}}"
                      for col, w in zip(wrapped, widths)).rstrip()
            for k in range(max(len(col) for col in wrapped))]


def table(rows: list[list[str]], header: list[str], width: int | None = None,
          flex: int | None = None) -> list[str]:
    """The plain-text table every text rendering uses, every line at most ``width`` long
    (None: no limit).

    Column ``flex`` (the long reason) takes what the others leave and wraps under itself;
    where that would be narrower than _FLEX_MIN it goes on lines of its own under its row
    instead, indented to the second column, so a row's facts stay on one line and its
    reason stays readable. Other columns wrap at spaces only when they alone overflow.
    """
    rows = [[str(c) for c in r] for r in rows]
    n = len(header)
    natural = [max(len(x) for x in [header[i]] + [r[i] for r in rows]) for i in range(n)]
    minimum = [max(_words(x) for x in [header[i]] + [r[i] for r in rows]) for i in range(n)]
    gaps = len(_GAP) * (n - 1)
    widths = natural
    if width is not None and sum(natural) + gaps > width:
        if flex is None:
            widths = _fit(natural, minimum, width - gaps)
        elif width - gaps - (sum(natural) - natural[flex]) >= _FLEX_MIN:
            widths = list(natural)
            widths[flex] = width - gaps - (sum(natural) - natural[flex])
        else:
            return _stacked(rows, header, width, flex, natural, minimum)
    out = _lines(header, widths) + [_GAP.join("-" * w for w in widths)]
    for r in rows:
        out += _lines(r, widths)
    return out


def _stacked(rows: list[list[str]], header: list[str], width: int, flex: int,
             natural: list[int], minimum: list[int]) -> list[str]:
    """The narrow layout of ``table``: column ``flex`` on lines of its own under each row."""
    keep = [i for i in range(len(header)) if i != flex]
    widths = _fit([natural[i] for i in keep], [minimum[i] for i in keep],
                  width - len(_GAP) * (len(keep) - 1))
    indent = " " * min(widths[0] + len(_GAP), width // 3)

    def row(cells: list[str]) -> list[str]:
        return _lines([cells[i] for i in keep], widths) + [
            indent + line for line in _wrap(cells[flex], width - len(indent))]

    out = row(header) + [_GAP.join("-" * w for w in widths)]
    for r in rows:
        out += row(r)
    return out
