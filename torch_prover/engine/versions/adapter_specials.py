"""The adapters that need the whole node (engine/versions/adapter_table.py lists when each runs):
each docstring says why its change computes what the newer version computed."""
from __future__ import annotations

import numpy as np
import onnx
import onnx.defs
import onnx.helper
import onnx.numpy_helper

from .adapters import NodeEdit, Refusal
from ..attribution.graph_values import LIST_VALUES, attribute_value


def batchnorm_training(edit: NodeEdit) -> None:
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


def dropout_inputs(edit: NodeEdit) -> None:
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


def dropout_mask(edit: NodeEdit) -> None:
    """Dropout-10's mask is bool; Dropout-7's has the input's type: a read mask cannot be
    moved, an unread one is dropped."""
    if len(edit.node.output) > 1 and edit.node.output[1]:
        if edit.view.consumed(edit.node.output[1]):
            edit.refuse(Refusal.OUTPUT_CONSUMED, f"the bool mask is read; Dropout-{edit.older}'s "
                        f"mask has the input's type")
        edit.node.output[1] = ""
        edit.done.append("unread output mask dropped (its type differs)")


def split_num_outputs(edit: NodeEdit) -> None:
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


def resize_required_inputs(edit: NodeEdit) -> None:
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


def resize_10(edit: NodeEdit) -> None:
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


def reshape_allowzero(edit: NodeEdit) -> None:
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


def shape_slice(edit: NodeEdit) -> None:
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


def softmax_axis(edit: NodeEdit) -> None:
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


def constant_type(edit: NodeEdit) -> None:
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


def constant_value(edit: NodeEdit) -> None:
    """Constant-12's value_float(s)/value_int(s) are the tensor ``value`` of Constant-11."""
    for name in LIST_VALUES:
        a = edit.attribute(name)
        if a is not None:
            arr = attribute_value(a)
            edit.drop_attribute(name)
            edit.set_attribute("value", onnx.numpy_helper.from_array(arr))
            edit.done.append(f"attribute {name} -> the equal tensor value")
