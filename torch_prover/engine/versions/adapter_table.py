"""The adapters' facts: for each schema change between two versions in force at opset 7 or
above, how a node of the newer version is brought to the older one, and when it may be.

Each :class:`Entry` names the op(s), the version that introduced the change (``since``),
the parameter, and its rule (``engine/versions/adapters.py`` says what a rule may do). A change no
entry covers is refused (``adapters.Refusal.NO_ADAPTER``); tests/test_adapters.py checks
that every signature change between consecutive versions is either an entry here or in
:data:`REFUSED` with the reason, and runs one node per entry in onnxruntime at both opsets.

The value at which a dropped attribute makes the newer version compute as the older one
is the newer schema's documented default (``DEFAULT``), except where the newer schema's
own text says otherwise (``at=`` with ``why=``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import onnx.defs
import onnx.helper

from .adapter_specials import (batchnorm_training, constant_type, constant_value,
                               dropout_inputs, dropout_mask, reshape_allowzero, resize_10,
                               resize_required_inputs, shape_slice, softmax_axis,
                               split_num_outputs)
from .adapters import NodeEdit, Refusal, Rule


class _Default:
    def __repr__(self) -> str:
        return "the newer schema's default"


DEFAULT: Any = _Default()
ONES = "all ones"
"""A list attribute whose every element is 1 (dilations, steps): the newer schema's
description of it when absent."""


@dataclass(frozen=True)
class Entry:
    ops: tuple[str, ...]
    since: int        # the version that introduced the change
    kind: str         # "attribute" | "input" | "to attribute" | "output" | "special"
    name: str         # the parameter (the attribute, input or output name)
    rule: Rule
    why: str = ""     # where the coinciding value comes from, when not the default


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    return value


def _shown(value: Any) -> str:
    if isinstance(value, bytes):
        return repr(value.decode())
    if isinstance(value, float):
        return repr(float(np.float32(value)))
    return repr(value)


def _default(edit: NodeEdit, name: str) -> Any:
    a = onnx.defs.get_schema(edit.node.op_type, edit.newer, "").attributes[name]
    return onnx.helper.get_attribute_value(a.default_value) if a.default_value.name else None


def _at(edit: NodeEdit, name: str, value: Any, at: Any) -> bool:
    if at == ONES:
        return isinstance(value, list) and all(v == 1 for v in value)
    want = _default(edit, name) if at is DEFAULT else _norm(at)
    if isinstance(want, float) or isinstance(value, float):
        return want is not None and value is not None and np.float32(want) == np.float32(value)
    return value == want


def drop_attribute(ops: str, name: str, since: int, at: Any = DEFAULT, why: str = "") -> list[Entry]:
    def rule(edit: NodeEdit) -> None:
        value = edit.value(name)
        if value is None:
            return
        if not _at(edit, name, value, at):
            edit.refuse(Refusal.ATTRIBUTE_VALUE,
                        f"{name}={_shown(value)}; {edit.node.op_type}-{edit.older} computes as "
                        f"{edit.node.op_type}-{edit.newer} only at "
                        f"{name}={_shown(_default(edit, name)) if at is DEFAULT else at}")
        edit.drop_attribute(name)
        edit.done.append(f"attribute {name}={_shown(value)} dropped "
                         f"({why or 'the default: ' + edit.node.op_type + '-' + str(edit.newer) + ' computes as before it'})")
    return [Entry((op,), since, "attribute", name, rule, why) for op in ops.split()]


def to_attribute(ops: str, name: str, since: int, attribute: str | None = None,
                 absent_ok: bool = True) -> list[Entry]:
    """A constant input of version ``since`` that the older version takes as attribute
    ``attribute`` (same name unless given), typed as the older schema declares it."""
    attribute = attribute or name

    def rule(edit: NodeEdit) -> None:
        source = edit.input_name(name)
        if not source:
            if not absent_ok:
                edit.refuse(Refusal.INPUT_VALUE, f"{name} absent: its default differs from "
                            f"{edit.node.op_type}-{edit.older}'s {attribute}")
            edit.remove_input(name)
            return
        value = edit.view.constant(source)
        if value is None:
            edit.refuse(Refusal.INPUT_NOT_CONSTANT, f"input {name} ({source!r}) is computed")
        kind = onnx.defs.get_schema(edit.node.op_type, edit.older, "").attributes[attribute].type
        flat = value.reshape(-1)
        a = onnx.defs.OpSchema.AttrType
        converted = {a.INTS: lambda: [int(v) for v in flat],
                     a.FLOATS: lambda: [float(v) for v in flat],
                     a.INT: lambda: int(flat[0]),
                     a.FLOAT: lambda: float(flat[0])}[kind]()
        if kind in (a.INT, a.FLOAT) and flat.size != 1:
            edit.refuse(Refusal.INPUT_VALUE, f"input {name} holds {flat.size} values")
        edit.remove_input(name)
        edit.set_attribute(attribute, converted)
        edit.done.append(f"constant input {name} -> attribute {attribute}={_shown(converted)}")
    return [Entry((op,), since, "to attribute", name, rule) for op in ops.split()]


def drop_input(ops: str, name: str, since: int, at: Any, why: str) -> list[Entry]:
    """An input the older version lacks: dropped when absent, or constant at ``at``."""
    def rule(edit: NodeEdit) -> None:
        source = edit.input_name(name)
        if source:
            value = edit.view.constant(source)
            ok = value is not None and (
                bool(np.all(value == 1)) if at == ONES else bool(np.all(value == at)))
            if not ok:
                edit.refuse(Refusal.INPUT_VALUE, f"input {name} is not constant at {at} ({why})")
            edit.done.append(f"constant input {name} at {at} dropped ({why})")
        edit.remove_input(name)
    return [Entry((op,), since, "input", name, rule, why) for op in ops.split()]


def drop_output(ops: str, name: str, since: int) -> list[Entry]:
    """An output the older version lacks: dropped when nothing reads it."""
    def rule(edit: NodeEdit) -> None:
        names = [p.name for p in onnx.defs.get_schema(edit.node.op_type, edit.newer, "").outputs]
        i = names.index(name)
        if i >= len(edit.node.output) or not edit.node.output[i]:
            return
        if edit.view.consumed(edit.node.output[i]):
            edit.refuse(Refusal.OUTPUT_CONSUMED, f"output {name} is read")
        edit.node.output[i] = ""
        edit.done.append(f"unread output {name} dropped")
    return [Entry((op,), since, "output", name, rule) for op in ops.split()]


def special(ops: str, since: int, name: str, rule: Rule, why: str) -> list[Entry]:
    return [Entry((op,), since, "special", name, rule, why) for op in ops.split()]


_SCAN = "Scan-8's batch axis and sequence_lens have no counterpart in Scan-9's axes"
REDUCE = ("ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin "
          "ReduceProd ReduceSumSquare")
RNNS = "GRU LSTM RNN"


_ROI_ALIGN = ("RoiAlign-16's schema: use 'output_half_pixel' \"for a backward-compatible "
              "behavior\" (RoiAlign-10 shifts no pixel)")
_ONLY_FLOAT8 = "read only in conversions to float8/float4 types, which the older version lacks"

ENTRIES: tuple[Entry, ...] = tuple(
    drop_attribute("ArgMax ArgMin", "select_last_index", 12)
    + drop_attribute("Attention", "left_window_size", 25)
    + drop_attribute("Attention", "right_window_size", 25)
    + drop_attribute("AveragePool", "ceil_mode", 10)
    + drop_attribute("AveragePool", "dilations", 19, ONES, "absent means 1 on every axis")
    + special("BatchNormalization", 14, "training_mode", batchnorm_training,
              "training_mode=1 is the 5-output training form of BatchNormalization-9/-7")
    + drop_attribute("Cast CastLike", "saturate", 19, why=_ONLY_FLOAT8)
    + drop_attribute("Cast CastLike", "round_mode", 24, why=_ONLY_FLOAT8)
    + to_attribute("Clip", "min", 11) + to_attribute("Clip", "max", 11)
    + special("Constant", 12, "value_float, value_floats, value_int, value_ints", constant_value, "value_float(s)/value_int(s) as a tensor")
    + drop_attribute("DepthToSpace", "mode", 11)
    + to_attribute("DFT", "axis", 20, absent_ok=False)
    + drop_attribute("DequantizeLinear QuantizeLinear", "axis", 13)
    + drop_attribute("DequantizeLinear QuantizeLinear", "block_size", 21)
    + drop_attribute("DequantizeLinear", "output_dtype", 23)
    + drop_attribute("QuantizeLinear", "output_dtype", 21)
    + drop_attribute("QuantizeLinear", "saturate", 19, why=_ONLY_FLOAT8)
    + drop_attribute("QuantizeLinear", "precision", 23)
    + special("Dropout", 12, "ratio, training_mode, seed", dropout_inputs,
              "ratio 0 or no training: the output is the input")
    + special("Dropout", 10, "mask", dropout_mask, "an unread mask")
    + drop_attribute("GatherND", "batch_dims", 12)
    + drop_attribute(RNNS, "layout", 14)
    + drop_attribute("LpPool", "ceil_mode", 18)
    + drop_attribute("LpPool", "dilations", 18, ONES, "absent means 1 on every axis")
    + drop_attribute("MaxPool", "ceil_mode", 10)
    + drop_attribute("MaxPool", "dilations", 10, ONES, "absent means 1 on every axis")
    + drop_attribute("MaxPool", "storage_order", 8)
    + drop_output("MaxPool", "Indices", 8)
    + to_attribute("Pad", "pads", 11) + to_attribute("Pad", "constant_value", 11, "value")
    + drop_input("Pad", "axes", 18, None, "absent: every axis")
    + to_attribute(REDUCE, "axes", 18) + drop_attribute(REDUCE, "noop_with_empty_axes", 18)
    + to_attribute("ReduceSum", "axes", 13)
    + drop_attribute("ReduceSum", "noop_with_empty_axes", 13)
    + special("Reshape", 14, "allowzero", reshape_allowzero,
              "allowzero=1 differs only for a 0 in shape")
    + special("Softmax LogSoftmax Hardmax", 13, "axis", softmax_axis,
              "the 2-D coercion of version 11 normalizes along the last axis alone")
    + special("Constant", 9, "value", constant_type, "an int constant as an initializer")
    + drop_attribute("Resize", "antialias", 18)
    + drop_attribute("Resize", "keep_aspect_ratio_policy", 18)
    + special("Resize", 13, "roi, scales", resize_required_inputs,
              "Resize-11's empty tensor for an unused roi or scales")
    + special("Resize", 11, "coordinate_transformation_mode, cubic_coeff_a, exclude_outside, "
              "extrapolation_value, nearest_mode, roi, sizes", resize_10,
              "Resize-10 is 'asymmetric' (nearest: 'floor')")
    + drop_attribute("RoiAlign", "coordinate_transformation_mode", 16, "output_half_pixel",
                     _ROI_ALIGN)
    + drop_attribute("ScatterElements ScatterND", "reduction", 16)
    + special("Shape", 15, "start, end", shape_slice, "the whole shape")
    + to_attribute("Slice", "starts", 10) + to_attribute("Slice", "ends", 10)
    + to_attribute("Slice", "axes", 10)
    + drop_input("Slice", "steps", 10, ONES, "Slice-1 steps by 1")
    + to_attribute("Split", "split", 13)
    + special("Split", 18, "num_outputs", split_num_outputs, "an even split")
    + to_attribute("Squeeze Unsqueeze", "axes", 13, absent_ok=True)
    + to_attribute("TopK", "K", 10, "k")
    + drop_attribute("TopK", "largest", 11) + drop_attribute("TopK", "sorted", 11)
    + to_attribute("Upsample", "scales", 9)
)

REFUSED: dict[tuple[str, int, str], str] = {
    ("Attention", 24, "nonpad_kv_seqlen"): "when given, it masks keys Attention-23 cannot "
                                           "mask (absent, the slot is simply trimmed)",
    ("Constant", 11, "sparse_value"): "a sparse constant has no dense form in Constant-9",
    ("Constant", 12, "value_string"): "no exported graph holds a string constant",
    ("Constant", 12, "value_strings"): "no exported graph holds a string constant",
    ("GroupNormalization", 21, "stash_type"): "GroupNormalization-18 is deprecated (onnx."
                                              "checker refuses it at every opset)",
    ("Resize", 18, "axes"): "resizing a subset of axes: Resize-13's roi, scales and sizes "
                            "span every axis, and a computed roi cannot be rewritten",
    ("Scan", 9, "scan_input_axes"): _SCAN, ("Scan", 9, "scan_input_directions"): _SCAN,
    ("Scan", 9, "scan_output_axes"): _SCAN, ("Scan", 9, "scan_output_directions"): _SCAN,
}
"""Changes with no adapter, and why: a node that has them is refused (NO_ADAPTER)."""


def rules() -> dict[tuple[str, int], list[Rule]]:
    """(op, since) -> the rules to apply across that boundary, in table order."""
    out: dict[tuple[str, int], list[Rule]] = {}
    for e in ENTRIES:
        for op in e.ops:
            out.setdefault((op, e.since), []).append(e.rule)
    return out
