"""Which op the script means, read from its own signals, against the op the run proves.

Why: the graph decides which node a run proves (:mod:`case`), but the graph is the
exporter's, not the author's. A script named ``einsum_proof.py`` whose graph ends in a
Sigmoid, or a script calling ``F.affine_grid`` whose exporter decomposed it into
Transpose/Mul/ReduceSum, would otherwise be "proved" as another op with exit 0, and the
contributor pastes that proof into the wrong PR. So the run reads what the script says it
is about -- its file name, docstring and comments, the op of a ``torch.onnx.ops`` call --
and what it calls (torch functions with an ai.onnx op of exactly their meaning: the
exporter's own map, :data:`CALLS`, and the module's ATen ops, ``folded.module_ops``), and
says in the report's first line when the proved op is not the one meant
(:class:`Target`): exit 2, "not proved as the op it names"; ``--op`` (or an ``op=``
directive) settles it.

A word in the text counts only where the script could mean it: an op the graph has or the
script calls (``exp_program_save.py`` says "exp" for "exported", and computes no Exp).
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Collection

import onnx

from ..compat import StrEnum
from .folded import ONNX_OF


def _ai_onnx_ops() -> dict[str, str]:
    """lowercase name -> ai.onnx op name, every op onnx.defs knows."""
    return {s.name.lower(): s.name for s in onnx.defs.get_all_schemas_with_history()
            if s.domain in ("", "ai.onnx")}


ALIASES = {"layernorm": "LayerNormalization", "batchnorm": "BatchNormalization",
           "groupnorm": "GroupNormalization", "instancenorm": "InstanceNormalization",
           "rmsnorm": "RMSNormalization", "rope": "RotaryEmbedding"}
"""Names PyTorch and its users write for an ai.onnx op (``nn.LayerNorm``, ``rmsnorm``)."""

WORDS = frozenset({
    "abs", "add", "and", "cast", "ceil", "compress", "constant", "det", "div", "equal",
    "exp", "expand", "floor", "greater", "identity", "if", "less", "log", "loop", "max",
    "mean", "min", "mod", "mul", "neg", "not", "or", "pad", "pow", "range", "round", "scan",
    "shape", "sign", "size", "slice", "split", "sub", "sum", "tile", "unique", "where",
    "xor", "gather", "flatten", "reshape", "transpose", "concat", "sin", "cos", "tan",
    "optional", "string"})
"""Op names that are also English words or abbreviations: in a docstring or comment
(not a file name) they name an op only written as the op is (``Where``, not "where")."""

CALLS: dict[str, str] = {
    **{k: v for k, v in ONNX_OF.items() if k not in ("mul", "div", "add", "sub", "matmul")},
    "einsum": "Einsum", "affine_grid": "AffineGrid", "grid_sample": "GridSample",
    "layer_norm": "LayerNormalization", "rms_norm": "RMSNormalization",
    "group_norm": "GroupNormalization", "instance_norm": "InstanceNormalization",
    "log_softmax": "LogSoftmax", "softmax": "Softmax",
    "topk": "TopK", "where": "Where", "clamp": "Clip", "clip": "Clip", "prelu": "PRelu", "cumsum": "CumSum",
    "pixel_shuffle": "DepthToSpace", "pixel_unshuffle": "SpaceToDepth",
    "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Hardswish": "HardSwish", "Softplus": "Softplus",
    "LayerNorm": "LayerNormalization", "RMSNorm": "RMSNormalization", "GELU": "Gelu",
    "LogSoftmax": "LogSoftmax", "Softmax": "Softmax",
    "PReLU": "PRelu", "Hardsigmoid": "HardSigmoid", "Mish": "Mish", "ELU": "Elu",
    "SELU": "Selu", "CELU": "Celu", "LeakyReLU": "LeakyRelu", "ReLU": "Relu",
    "Softsign": "Softsign", "GroupNorm": "GroupNormalization",
    "RNN": "RNN", "GRU": "GRU", "LSTM": "LSTM",   # nn's; dynamo writes RNN as MatMul/Tanh
}
"""torch function, method or ``nn`` class name -> the ai.onnx op it is exported as
(torch.onnx's own symbolic for it, where the op is exactly its meaning). Arithmetic
(``*``, ``.sum()``) is left out: a proof script's loss uses it around any op; so are
calls an exporter may drop (an eval ``dropout``). ``clamp`` is Clip: the dynamo exporter's
Max/Min for tensor bounds is another op, so a script meaning Clip is told so."""

ARITHMETIC = frozenset({"Mul", "Div", "Add", "Sub", "MatMul"})
"""Module ATen ops (``folded.ONNX_OF``) an exporter fuses into others (``x @ w + b`` as
Gemm): never "the op meant" by themselves."""


class TargetStatus(StrEnum):
    MEANT = "the op the script means"         # named or called, and proved
    UNNAMED = "not named"                     # the script names no op it could mean
    SETTLED = "settled"                       # --op or an op= directive chose the op
    OTHER_OP = "another op"                   # the named op is in the graph; another proved
    ABSENT = "not in the graph"               # the op meant is decomposed or folded away


@dataclass(frozen=True)
class Target:
    """The op the script means against the op the run proves (``script.target``)."""

    status: TargetStatus
    proved: str
    meant: tuple[str, ...]                    # ops the script names or calls, reachable
    signals: tuple[tuple[str, str], ...]      # (op, where: "file name", "docstring", ...)

    @property
    def refused(self) -> bool:
        """The proof is not of the op meant: exit 2 (docs/run.md, exit codes)."""
        return self.status in (TargetStatus.OTHER_OP, TargetStatus.ABSENT)

    def line(self) -> str | None:
        where = "; ".join(f"{op} ({', '.join(w for o, w in self.signals if o == op)})"
                          for op in self.meant)
        if self.status is TargetStatus.OTHER_OP:
            return (f"NOT PROVED AS MEANT: the script names {where}, but the run's target is "
                    f"{self.proved}; this is a proof of {self.proved}, not of "
                    f"{' or '.join(self.meant)}: pass --op {self.meant[0]} to prove it, or "
                    f"--op {self.proved} to keep this proof")
        if self.status is TargetStatus.ABSENT:
            return (f"NOT PROVED AS MEANT: the script means {where}, which the exported graph "
                    f"does not have (the exporter decomposed or folded it); the run proved "
                    f"{self.proved} instead: export a model that keeps "
                    f"{' or '.join(self.meant)}, or pass --op {self.proved} to keep this proof")
        return None

    def record(self) -> dict:
        return {"status": self.status.value, "proved": self.proved, "meant": list(self.meant),
                "signals": [list(s) for s in self.signals], "line": self.line()}


def _split(word: str) -> list[str]:
    """Tokens of a file stem: ``affine_grid-proof2`` -> affine, grid, proof2."""
    return [t for t in re.split(r"[^a-z0-9]+", word.lower()) if t]


def _file_ops(stem: str, ops: dict[str, str]) -> list[str]:
    """Ops a file name names: runs of tokens joined (``affine_grid`` -> AffineGrid),
    longest first, each token used once."""
    tokens, found, k = _split(stem), [], 0
    while k < len(tokens):
        for n in range(min(4, len(tokens) - k), 0, -1):
            joined = "".join(tokens[k:k + n])
            op = ops.get(joined) or ALIASES.get(joined)
            if op:
                found.append(op)
                k += n
                break
        else:
            k += 1
    return found


def _text(source: str) -> tuple[list[str], list[str]]:
    """(docstrings, comments) of the source; ([], []) when it does not tokenize."""
    docs, comments = [], []
    try:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    docs.append(doc)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT and not tok.string.lstrip("# ").startswith(
                    "torch-prover:"):
                comments.append(tok.string)
    except (SyntaxError, tokenize.TokenError, ValueError):
        pass
    return docs, comments


def _text_ops(text: str, ops: dict[str, str]) -> list[str]:
    """Ops a docstring or comment names: an op's name as a word (case-insensitive), an
    English word only as the op is written (``Where``)."""
    found = []
    for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", text):
        low = word.lower()
        op = ops.get(low) or ALIASES.get(low)
        if op and (low not in WORDS or word == op):
            found.append(op)
    return found


def _calls(source: str, ops: dict[str, str]) -> list[tuple[str, str]]:
    """(op, where) for every call the exporter writes as one ai.onnx op: ``torch.X``,
    ``F.X``, ``x.X()``, ``nn.X(...)`` (:data:`CALLS`), and ``torch.onnx.ops.X``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        chain = []
        while isinstance(f, ast.Attribute):
            chain.append(f.attr)
            f = f.value
        if isinstance(f, ast.Name):
            chain.append(f.id)
        if not chain:
            continue
        name, dotted = chain[0], ".".join(reversed(chain))
        if "onnx.ops." in dotted + ".":
            op = ops.get(name.replace("_", "").lower())
            if op:
                found.append((op, f"torch.onnx.ops call {dotted}"))
        elif name in CALLS:
            found.append((CALLS[name], f"calls {dotted}"))
    return found


def signals(source: str, path: Path) -> list[tuple[str, str]]:
    """(op, where) for every op the script names, in its file name, docstrings, comments
    and calls."""
    ops = _ai_onnx_ops()
    found = [(op, "file name") for op in _file_ops(path.stem, ops)]
    docs, comments = _text(source)
    found += [(op, "docstring") for d in docs for op in _text_ops(d, ops)]
    found += [(op, "comment") for c in comments for op in _text_ops(c, ops)]
    found += _calls(source, ops)
    return list(dict.fromkeys(found))


def target(source: str, path: Path, proved: str, graph_ops: Collection[str],
           module_ops: Collection[str], op_from: str) -> Target:
    """The run's target against what the script means. Ops it names (file name, docstring,
    comment, ``torch.onnx.ops``) count when the graph has them or the script calls them;
    without one, the ops it calls (:data:`CALLS`, the module's ATen ops) are what it means,
    and one of them missing from the graph is an op decomposed or folded away."""
    found = signals(source, path)
    called = list(dict.fromkeys([op for op, w in found if w.startswith("calls ")]
                                + [op for op in module_ops if op not in ARITHMETIC]))
    found += [(op, "module's ATen op") for op in called
              if op in module_ops and not any(o == op for o, _ in found)]
    reachable = set(graph_ops) | set(called)
    named = list(dict.fromkeys(op for op, w in found if op in reachable and not
                               w.startswith(("calls ", "module's"))))
    missing = [op for op in called if op not in graph_ops]
    if op_from in ("--op", "script directive"):
        status, meant = TargetStatus.SETTLED, named or called
    elif named:
        status = (TargetStatus.MEANT if proved in named else TargetStatus.OTHER_OP
                  if any(op in graph_ops for op in named) else TargetStatus.ABSENT)
        meant = named if status is not TargetStatus.OTHER_OP else [
            op for op in named if op in graph_ops]
    elif missing:
        status, meant = TargetStatus.ABSENT, missing
    else:
        status = TargetStatus.MEANT if proved in called else TargetStatus.UNNAMED
        meant = called
    return Target(status, proved, tuple(meant), tuple(s for s in found if s[0] in meant))
