"""The shared docs machinery: CommonMark's fence rule, and one-line errors for structural
surprises in either docs file (naming file, line and op), before the CLI does any work."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from torch_prover import cli
from torch_prover.tags.docs import load
from torch_prover.tags.markdown import DocsError, fence_closes, fence_open, unfenced

DATA = Path(__file__).parent / "data"
OPERATORS = DATA / "Operators.md"
CHANGELOG = DATA / "Changelog.md"


def _code(doc: str) -> list[str]:
    """The lines of ``doc`` that are outside fenced code blocks."""
    return [line for _, line in unfenced("x.md", doc.split("\n"))]


# CommonMark 0.31.2, section 4.5 "Fenced code blocks": each pair is (document, the lines
# that are NOT inside a fenced code block per the spec's rendering of that example).
@pytest.mark.parametrize("doc, outside", [
    ("```\n<\n >\n```", []),                                   # backtick fence
    ("~~~\n<\n >\n~~~", []),                                   # tilde fence
    ("``\nfoo\n``", ["``", "foo", "``"]),                      # two backticks: code span
    ("```\naaa\n~~~\n```", []),                                # ~~~ does not close ```
    ("~~~\naaa\n```\n~~~", []),                                # ``` does not close ~~~
    ("````\naaa\n```\n``````", []),                            # closing at least as long
    ("~~~~\naaa\n~~~\n~~~~", []),
    (" ```\n aaa\naaa\n```", []),                              # 1 space of indentation
    ("   ```\n   aaa\n    aaa\n  aaa\n   ```", []),            # 3 spaces: still a fence
    ("    ```\n    aaa\n    ```", ["    ```", "    aaa", "    ```"]),  # 4 spaces: not one
    ("```\naaa\n  ```", []),                                   # closing indented 2
    ("   ```\naaa\n  ```", []),
    ("``` ```\naaa", ["``` ```", "aaa"]),                      # info string with a backtick
    ("```x```", ["```x```"]),                                  # an inline span on one line
    ("~~~~~~\naaa\n~~~ ~~\n~~~~~~", []),                       # "~~~ ~~" does not close
    ("```ruby\ndef foo(x)\n  return 3\nend\n```", []),         # info string
    ("~~~~    ruby startline=3 $%@#$\ndef foo(x)\n~~~~~~~", []),
    ("~~~ aa ``` ~~~\nfoo\n~~~", []),                          # backticks fine after ~~~
    ("```\n``` aaa\n```", []),                                 # a closing fence has no info
    ("a\n```\nb\n```\nc", ["a", "c"]),
])
def test_commonmark_fences(doc, outside):
    assert _code(doc) == outside


def test_fence_rule_pieces():
    assert fence_open("  ```output[output-term] = reduce-sum( input1[term1] )```") is None
    assert fence_open("```python") == ("`", 3)
    assert fence_open("~~~~") == ("~", 4)
    assert fence_open("    ```") is None
    assert fence_closes("```` \t", "`", 4) and not fence_closes("```", "`", 4)
    assert not fence_closes("    ```", "`", 3) and not fence_closes("~~~", "`", 3)


def test_unclosed_fence_is_an_error():
    with pytest.raises(DocsError, match=r"^x\.md:2: unterminated ``` code block"):
        _code("a\n```\nb")


# ---------------------------------------------------------------------------- errors
def _edit(tmp_path: Path, src: Path, op_heading: str, old: str, new: str) -> tuple[Path, int]:
    """A copy of ``src`` with the first line starting with ``old`` in the section under
    ``op_heading`` replaced by ``new``; returns the path and the 1-based line edited."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith(op_heading))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("### "))
    i = next(i for i in range(start, end) if lines[i].startswith(old))
    lines[i] = new
    path = tmp_path / src.name
    path.write_text("".join(lines), encoding="utf-8")
    return path, i + 1


def _one_line(path: Path) -> str:
    with pytest.raises(DocsError) as info:
        load(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}:"), msg
    return msg


SECTIONS = [(OPERATORS, '### <a name="Reshape"></a>', "Reshape"),
            (CHANGELOG, '### <a name="Clip-13"></a>', "Clip")]


@pytest.mark.parametrize("src, heading, op", SECTIONS)
def test_misspelt_subsection_is_named(tmp_path, src, heading, op):
    path, no = _edit(tmp_path, src, heading, "#### Inputs", "#### Inptus\n")
    msg = _one_line(path)
    assert msg.startswith(f"{path}:{no}: {op}: unknown subsection heading '#### Inptus'"), msg
    assert "did you mean '#### Inputs'" in msg


@pytest.mark.parametrize("src, heading, op", SECTIONS)
def test_unparsable_entry_is_named(tmp_path, src, heading, op):
    entry = {"Reshape": "<dt><tt>shape</tt> (non-differentiable) : tensor(int64)</dt>",
             "Clip": "<dt><tt>min</tt> (optional, non-differentiable) : T</dt>"}[op]
    path, no = _edit(tmp_path, src, heading, entry, entry.replace(" : ", " ") + "\n")
    assert _one_line(path).startswith(f"{path}:{no}: {op}: unreadable Inputs entry")


def _insert_fence(tmp_path: Path, src: Path, heading: str, before: str) -> tuple[Path, int]:
    """A copy of ``src`` with a stray ``` line inserted in the section under ``heading``,
    before its first line starting with ``before`` (the next op's ``### `` heading if
    ``before`` is "### "); returns the path and the 1-based line of the stray fence."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith(heading))
    at = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(before))
    lines.insert(at, "```\n")
    path = tmp_path / src.name
    path.write_text("".join(lines), encoding="utf-8")
    return path, at + 1


# Changelog.md has no examples, so a fence opened before Clip-13's "#### Version" swallows
# the rest of the section; in Operators.md one opened at the end of Reshape's examples does.
@pytest.mark.parametrize("src, heading, op, before", [
    (OPERATORS, '### <a name="Reshape"></a>', "Reshape", "### "),
    (CHANGELOG, '### <a name="Clip-13"></a>', "Clip", "#### Version")])
def test_unterminated_fence_is_named(tmp_path, src, heading, op, before):
    """A real fence left open runs into the next op's heading, which gen_doc never puts
    inside code: the error names the line that opened it and the op it opened in."""
    path, no = _insert_fence(tmp_path, src, heading, before)
    msg = _one_line(path)
    assert re.match(rf"^{re.escape(str(path))}:{no}: {op}: unterminated ``` code block: it "
                    r"runs into the op heading at line \d+$", msg), msg


def test_stray_fence_balanced_by_examples_is_named(tmp_path):
    """A fence opened before Reshape's "#### Version" in Operators.md is closed by the end
    of its first example (CommonMark: ```python does not close ```), so what follows
    parses; the section then lacks its Version, and that is the one-line error."""
    path, _ = _insert_fence(tmp_path, OPERATORS, '### <a name="Reshape"></a>', "#### Version")
    heading = 1 + next(i for i, ln in enumerate(OPERATORS.read_text(encoding="utf-8")
                                                .splitlines())
                       if ln.startswith('### <a name="Reshape"></a>'))
    assert _one_line(path) == (f"{path}:{heading}: Reshape: section has no '#### Version' "
                               "(truncated or malformed)")


@pytest.mark.parametrize("fraction", [0.0005, 0.01, 0.3, 0.61, 0.9, 0.99993])
def test_truncated_changelog_is_an_error(tmp_path, fraction):
    text = CHANGELOG.read_text(encoding="utf-8")
    path = tmp_path / "Changelog.md"
    path.write_text(text[:int(len(text) * fraction)], encoding="utf-8")
    _one_line(path)


def test_truncated_inside_an_example_names_the_op(tmp_path):
    """Operators.md cut inside Abs's first example: the fence never closes."""
    text = OPERATORS.read_text(encoding="utf-8")
    start = text.index('### <a name="Abs"></a>')
    cut = text.index("```python\n", start) + len("```python\nnode = ")
    path = tmp_path / "Operators.md"
    path.write_text(text[:cut], encoding="utf-8")
    no = text[:cut].count("\n")   # the ```python line
    assert _one_line(path) == (f"{path}:{no}: Abs: unterminated ``` code block "
                               "(truncated file?)")


def test_neither_kind_is_an_error(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# notes\n\n## Version 3 of my notes\n", encoding="utf-8")
    assert "neither an Operators.md" in _one_line(path)


@pytest.mark.parametrize("src, heading, op", SECTIONS)
def test_cli_refuses_before_any_work(tmp_path, capsys, src, heading, op):
    path, no = _edit(tmp_path, src, heading, "#### Inputs", "#### Inptus\n")
    out = tmp_path / "out"
    code = cli.main(["verify-all", "--ops", "Reshape", "--tags-from", str(path),
                     "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    captured = capsys.readouterr()
    assert code == 2
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and f"{path}:{no}: {op}: unknown subsection" in err[0], err
    assert captured.out == "" and not out.exists() and not (tmp_path / "cache").exists()
