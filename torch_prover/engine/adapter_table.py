"""The adapters' facts: for each schema change between two versions in force at opset 7 or
above, how a node of the newer version is brought to the older one, and when it may be.

Each :class:`Entry` names the op(s), the version that introduced the change (``since``),
the parameter, and its rule (``engine/adapters.py`` says what a rule may do). A change no
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
import onnx.numpy_helper

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


# ----------------------------------------------------------------------------- specials
def _batchnorm_training(edit: NodeEdit) -> None:
    """BatchNormalization-14's ``training_mode``: at 0 (default) dropped; at 1 the node has
    the 3 training outputs (Y, running_mean, running_var), which BatchNormalization-9 and
    -7 compute in their training form, named by its 5 outputs (Y, mean, var, saved_mean,
    saved_var: "Output case #1 ... training mode" in their schema): the two saved ones are
    added, unread."""
    mode = edit.value("training_mode")
    edit.drop_attribute("training_mode")
    if not mode:
        if mode is not None:
            edit.done.append("attribute training_mode=0 dropped (the default)")
        for i in (2, 1):
            if i < len(edit.node.output) and edit.node.output[i]:
                if edit.view.consumed(edit.node.output[i]):
                    edit.refuse(Refusal.OUTPUT_CONSUMED, "an inference-mode node's running "
                                "statistics are read")
                edit.node.output[i] = ""
        return
    if len(edit.node.output) != 3 or not all(edit.node.output):
        edit.refuse(Refusal.NO_ADAPTER, "training_mode=1 without its three outputs")
    edit.node.output.extend([edit.view.fresh_output("saved_mean"),
                             edit.view.fresh_output("saved_var")])
    edit.done.append(f"attribute training_mode=1 -> the training form of "
                     f"BatchNormalization-{edit.older} (5 outputs; saved_mean and saved_var "
                     f"added, unread)")


def _dropout_inputs(edit: NodeEdit) -> None:
    """Dropout-12 takes ``ratio`` and ``training_mode`` as inputs; Dropout-10 has the
    ``ratio`` attribute and no training mode of its own (the runtime's mode decides). A
    constant ratio becomes the attribute; training_mode goes when absent or constant false
    (inference, as Dropout-10 in a runtime) or when the ratio is 0, where training and
    inference both return the input (scale 1/(1-0)); ``seed`` only seeds a draw, and with
    no draw it is dropped."""
    ratio_name, mode_name = edit.input_name("ratio"), edit.input_name("training_mode")
    ratio = 0.5 if not ratio_name else edit.view.constant(ratio_name)
    if ratio is None:
        edit.refuse(Refusal.INPUT_NOT_CONSTANT, "input ratio is computed")
    mode = False if not mode_name else edit.view.constant(mode_name)
    if mode is None:
        edit.refuse(Refusal.INPUT_NOT_CONSTANT, "input training_mode is computed")
    ratio, mode = float(np.asarray(ratio).reshape(-1)[0]), bool(np.asarray(mode).reshape(-1)[0])
    if mode and ratio != 0.0:
        edit.refuse(Refusal.INPUT_VALUE, f"training_mode=true with ratio {ratio}: Dropout-"
                    f"{edit.older} has no training mode of its own")
    if mode and len(edit.node.output) > 1 and edit.view.consumed(edit.node.output[1]):
        edit.refuse(Refusal.OUTPUT_CONSUMED, f"the training mask is read; Dropout-{edit.older} "
                    f"defines no mask outside training (onnxruntime returns all false)")
    edit.remove_input("training_mode")
    edit.remove_input("ratio")
    if ratio_name:
        edit.set_attribute("ratio", ratio)
    seed = edit.value("seed")
    edit.drop_attribute("seed")
    edit.done.append(f"constant inputs ratio={ratio}, training_mode={mode} -> attribute "
                     f"ratio={ratio}" + (f", seed={seed} dropped" if seed is not None else "")
                     + (" (ratio 0: training returns the input, as inference does)" if mode
                        else " (inference)"))


def _dropout_mask(edit: NodeEdit) -> None:
    """Dropout-10's mask is bool; Dropout-7's has the input's type: a read mask cannot be
    moved, an unread one is dropped."""
    if len(edit.node.output) > 1 and edit.node.output[1]:
        if edit.view.consumed(edit.node.output[1]):
            edit.refuse(Refusal.OUTPUT_CONSUMED, f"the bool mask is read; Dropout-{edit.older}'s "
                        f"mask has the input's type")
        edit.node.output[1] = ""
        edit.done.append("unread output mask dropped (its type differs)")


def _split_num_outputs(edit: NodeEdit) -> None:
    """Split-18's ``num_outputs``: Split-13 without a ``split`` input splits into as many
    equal parts as it has outputs, which is what Split-18 does when the axis divides
    evenly (else its last part is smaller)."""
    n = edit.value("num_outputs")
    if n is None:
        return
    shape = edit.view.shape(edit.node.input[0])
    axis = edit.value("axis") or 0
    dim = shape[axis] if shape is not None and -len(shape) <= axis < len(shape) else None
    if dim is None:
        edit.refuse(Refusal.SHAPE_UNKNOWN, "num_outputs set and the split axis's size unknown")
    if dim % n or len(edit.node.output) != n:
        edit.refuse(Refusal.ATTRIBUTE_VALUE, f"num_outputs={n} over an axis of {dim}: the "
                    f"parts are unequal")
    edit.drop_attribute("num_outputs")
    edit.done.append(f"attribute num_outputs={n} dropped (the axis of {dim} splits evenly, as "
                     f"Split-{edit.older} splits into its {n} outputs)")


def _resize_required_inputs(edit: NodeEdit) -> None:
    """Resize-11 requires ``roi`` and ``scales``, which Resize-13 made optional: an absent
    one becomes an empty tensor, the form Resize-11's schema gives for 'not used' ("If
    'sizes' is needed, the user can use an empty string as the name of 'scales'" came only
    with Resize-13; Resize-11: "the user must set 'scales' to an empty tensor")."""
    filled = []
    for name in ("roi", "scales"):
        i = edit.input_index(name)
        while len(edit.node.input) <= i:
            edit.node.input.append("")
        if not edit.node.input[i]:
            edit.node.input[i] = edit.view.add_initializer(name, np.zeros(0, np.float32))
            filled.append(name)
    if filled:
        edit.done.append(f"absent {' and '.join(filled)} -> empty tensor (required in "
                         f"Resize-{edit.older})")


def _resize_10(edit: NodeEdit) -> None:
    """Resize-10 is Resize-11 with coordinate_transformation_mode 'asymmetric' and, for
    mode 'nearest', nearest_mode 'floor' (output size floor(input size x scale));
    ``cubic_coeff_a`` and ``extrapolation_value`` are read only by modes it lacks; ``roi``
    only by tf_crop_and_resize. Constant ``sizes`` over a static input shape become the
    scales sizes/input when floor(input x scale) gives the sizes back."""
    a = lambda n: edit.value(n)  # noqa: E731
    coord = a("coordinate_transformation_mode") or b"half_pixel"
    mode = a("mode") or b"nearest"
    if coord != b"asymmetric":
        edit.refuse(Refusal.ATTRIBUTE_VALUE, f"coordinate_transformation_mode="
                    f"{coord.decode()!r}; Resize-10 computes only 'asymmetric'")
    if mode == b"nearest" and (a("nearest_mode") or b"round_prefer_floor") != b"floor":
        edit.refuse(Refusal.ATTRIBUTE_VALUE, "nearest_mode is not 'floor', the one Resize-10 "
                    "computes")
    if a("exclude_outside"):
        edit.refuse(Refusal.ATTRIBUTE_VALUE, "exclude_outside=1")
    for n in ("coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
              "exclude_outside", "extrapolation_value"):
        edit.drop_attribute(n)
    sizes_name, scales_name = edit.input_name("sizes"), edit.input_name("scales")
    scales = None if not scales_name else edit.view.constant(scales_name)
    if sizes_name and (scales is None or scales.size == 0):
        sizes, shape = edit.view.constant(sizes_name), edit.view.shape(edit.node.input[0])
        if sizes is None or shape is None or None in shape or len(shape) != sizes.size:
            edit.refuse(Refusal.SHAPE_UNKNOWN, "sizes is not a constant over a static shape")
        scales = (sizes.astype(np.float32) / np.array(shape, np.float32)).astype(np.float32)
        if not np.array_equal(np.floor(np.array(shape, np.float32) * scales), sizes):
            edit.refuse(Refusal.INPUT_VALUE, "no float32 scales give these sizes back")
        scales_name = edit.view.add_initializer("scales", scales)
    edit.remove_input("sizes")
    while len(edit.node.input) < 3:
        edit.node.input.append("")
    edit.node.input[2] = scales_name
    edit.remove_input("roi")
    edit.done.append("coordinate_transformation_mode 'asymmetric' (and nearest_mode 'floor') "
                     "dropped, roi dropped (read only by tf_crop_and_resize), scales "
                     + (f"= sizes/input {[float(s) for s in scales]}" if sizes_name else "kept")
                     + " (Resize-10 computes so)")


def _reshape_allowzero(edit: NodeEdit) -> None:
    """Reshape-14's ``allowzero``: at 0 (default) Reshape-13's behaviour; at 1 it differs
    only for a 0 in ``shape`` ("if any value in the 'shape' input is set to zero, the zero
    value is honored"), so a constant shape without 0 computes the same."""
    value = edit.value("allowzero")
    if not value:
        if value is not None:
            edit.drop_attribute("allowzero")
            edit.done.append("attribute allowzero=0 dropped (the default)")
        return
    shape = edit.view.constant(edit.node.input[1])
    if shape is None or bool(np.any(shape == 0)):
        edit.refuse(Refusal.ATTRIBUTE_VALUE, "allowzero=1 over a shape that is computed or "
                    "holds a 0")
    edit.drop_attribute("allowzero")
    edit.done.append(f"attribute allowzero=1 dropped (the constant shape "
                     f"{[int(v) for v in shape.reshape(-1)]} holds no 0)")


def _shape_slice(edit: NodeEdit) -> None:
    """Shape-15's ``start`` and ``end``: Shape-13 returns every dimension, which is what
    start 0 and an end at or past the input's rank select."""
    start, end = edit.value("start"), edit.value("end")
    shape = edit.view.shape(edit.node.input[0])
    rank = None if shape is None else len(shape)
    if end is not None:
        if rank is None or (end + rank if end < 0 else end) < rank:
            edit.refuse(Refusal.ATTRIBUTE_VALUE, f"end={end} over an input of rank {rank}: a "
                        f"slice of the shape")
    if start not in (None, 0) and not (rank is not None and start == -rank):
        edit.refuse(Refusal.ATTRIBUTE_VALUE, f"start={start}: a slice of the shape")
    for name in ("start", "end"):
        if edit.value(name) is not None:
            edit.done.append(f"attribute {name}={edit.value(name)} dropped (every dimension "
                             f"of the rank-{rank} input, as Shape-{edit.older} returns)")
            edit.drop_attribute(name)


def _softmax_axis(edit: NodeEdit) -> None:
    """Softmax, LogSoftmax and Hardmax before 13 coerce the input to 2-D at ``axis`` (one
    normalization over every axis from it on); from 13 they normalize along ``axis`` alone
    (default -1, where version 11's default is 1). The two agree where every axis after
    ``axis`` has size 1: the last axis, given explicitly."""
    axis = edit.value("axis")
    axis = -1 if axis is None else axis
    shape = edit.view.shape(edit.node.input[0])
    if shape is None:
        edit.refuse(Refusal.SHAPE_UNKNOWN, "the input's rank is unknown")
    a = axis + len(shape) if axis < 0 else axis
    if any(d != 1 for d in shape[a + 1:]):
        edit.refuse(Refusal.ATTRIBUTE_VALUE, f"axis={axis} of a {shape} input: "
                    f"{edit.node.op_type}-{edit.older} normalizes over every axis from it on")
    edit.set_attribute("axis", a)
    edit.done.append(f"axis={axis} -> {a}: every later axis has size 1, so "
                     f"{edit.node.op_type}-{edit.older}'s 2-D coercion normalizes along it alone")


def _constant_type(edit: NodeEdit) -> None:
    """Constant-1 holds float tensors only; an int constant (a Reshape's shape, an index)
    becomes an initializer of the same name and value, which every opset has."""
    value = edit.view.constant(edit.node.output[0])
    if value is None:
        return
    allowed = onnx.defs.get_schema("Constant", edit.older, "").type_constraints[0]
    dtype = onnx.helper.tensor_dtype_to_string(
        onnx.helper.np_dtype_to_tensor_dtype(value.dtype)).removeprefix("TensorProto.")
    if f"tensor({dtype.lower()})" in allowed.allowed_type_strs:
        return
    edit.view.to_initializer(edit.node, value)
    edit.gone = True
    edit.done.append(f"a {dtype.lower()} constant -> an initializer (Constant-{edit.older} "
                     f"holds floats only)")


def _constant_value(edit: NodeEdit) -> None:
    """Constant-12's value_float(s)/value_int(s) are the tensor ``value`` of Constant-11."""
    for name, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)):
        v = edit.value(name)
        if v is not None:
            edit.drop_attribute(name)
            arr = np.array(v if isinstance(v, list) else v, dtype=dtype)
            edit.set_attribute("value", onnx.numpy_helper.from_array(arr))
            edit.done.append(f"attribute {name} -> the equal tensor value")


_ROI_ALIGN = ("RoiAlign-16's schema: use 'output_half_pixel' \"for a backward-compatible "
              "behavior\" (RoiAlign-10 shifts no pixel)")
_ONLY_FLOAT8 = "read only in conversions to float8/float4 types, which the older version lacks"

ENTRIES: tuple[Entry, ...] = tuple(
    drop_attribute("ArgMax ArgMin", "select_last_index", 12)
    + drop_attribute("Attention", "left_window_size", 25)
    + drop_attribute("Attention", "right_window_size", 25)
    + drop_attribute("AveragePool", "ceil_mode", 10)
    + drop_attribute("AveragePool", "dilations", 19, ONES, "absent means 1 on every axis")
    + special("BatchNormalization", 14, "training_mode", _batchnorm_training,
              "training_mode=1 is the 5-output training form of BatchNormalization-9/-7")
    + drop_attribute("Cast CastLike", "saturate", 19, why=_ONLY_FLOAT8)
    + drop_attribute("Cast CastLike", "round_mode", 24, why=_ONLY_FLOAT8)
    + to_attribute("Clip", "min", 11) + to_attribute("Clip", "max", 11)
    + special("Constant", 12, "value_float, value_floats, value_int, value_ints", _constant_value, "value_float(s)/value_int(s) as a tensor")
    + drop_attribute("DepthToSpace", "mode", 11)
    + to_attribute("DFT", "axis", 20, absent_ok=False)
    + drop_attribute("DequantizeLinear QuantizeLinear", "axis", 13)
    + drop_attribute("DequantizeLinear QuantizeLinear", "block_size", 21)
    + drop_attribute("DequantizeLinear", "output_dtype", 23)
    + drop_attribute("QuantizeLinear", "output_dtype", 21)
    + drop_attribute("QuantizeLinear", "saturate", 19, why=_ONLY_FLOAT8)
    + drop_attribute("QuantizeLinear", "precision", 23)
    + special("Dropout", 12, "ratio, training_mode, seed", _dropout_inputs,
              "ratio 0 or no training: the output is the input")
    + special("Dropout", 10, "mask", _dropout_mask, "an unread mask")
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
    + special("Reshape", 14, "allowzero", _reshape_allowzero,
              "allowzero=1 differs only for a 0 in shape")
    + special("Softmax LogSoftmax Hardmax", 13, "axis", _softmax_axis,
              "the 2-D coercion of version 11 normalizes along the last axis alone")
    + special("Constant", 9, "value", _constant_type, "an int constant as an initializer")
    + drop_attribute("Resize", "antialias", 18)
    + drop_attribute("Resize", "keep_aspect_ratio_policy", 18)
    + special("Resize", 13, "roi, scales", _resize_required_inputs,
              "Resize-11's empty tensor for an unused roi or scales")
    + special("Resize", 11, "coordinate_transformation_mode, cubic_coeff_a, exclude_outside, "
              "extrapolation_value, nearest_mode, roi, sizes", _resize_10,
              "Resize-10 is 'asymmetric' (nearest: 'floor')")
    + drop_attribute("RoiAlign", "coordinate_transformation_mode", 16, "output_half_pixel",
                     _ROI_ALIGN)
    + drop_attribute("ScatterElements ScatterND", "reduction", 16)
    + special("Shape", 15, "start, end", _shape_slice, "the whole shape")
    + to_attribute("Slice", "starts", 10) + to_attribute("Slice", "ends", 10)
    + to_attribute("Slice", "axes", 10)
    + drop_input("Slice", "steps", 10, ONES, "Slice-1 steps by 1")
    + to_attribute("Split", "split", 13)
    + special("Split", 18, "num_outputs", _split_num_outputs, "an even split")
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
