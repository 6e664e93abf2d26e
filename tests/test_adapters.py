"""The adapters (engine/versions/adapters.py, engine/versions/adapter_table.py), one node at a time.

Each sample builds a node as an exporter writes it at a newer opset, relabels the model to
an older opset (``next_opset.relabel_opset``, which calls the adapters), and runs both in
onnxruntime at their own opsets: the adapted node must compute what the original computed
(the expectation is the original node's output, in the runtime that implements the newer
version). Refusals are checked from the schema's facts: a value where the versions differ,
a computed input, a read output.
"""
import numpy as np
import onnx
import onnx.defs
import onnx.helper as h
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP

from torch_prover.engine.versions import adapter_table
from torch_prover.engine.versions.adapters import AdaptError, Refusal
from torch_prover.errors import CaseError
from torch_prover.engine.versions.next_opset import relabel_opset

RNG = np.random.default_rng(0)
F32, F64, I64 = TP.FLOAT, TP.DOUBLE, TP.INT64
NP = {F32: np.float32, F64: np.float64, I64: np.int64, TP.BOOL: np.bool_}


def _model(opset, nodes, inputs, outputs, inits=()):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                     [h.make_tensor_value_info(n, t, None) for n, t in outputs],
                     initializer=list(inits))
    model = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=8)
    inferred = onnx.shape_inference.infer_shapes(model)   # the outputs' shapes, as exported
    del model.graph.output[:]
    model.graph.output.extend(inferred.graph.output)
    return model


def _const(name, value, dtype=I64):
    return h.make_tensor(name, dtype, np.shape(value), np.asarray(value).reshape(-1).tolist())


def _run(model, feeds):
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _feeds(inputs):
    out = {}
    for name, t, shape in inputs:
        out[name] = (RNG.uniform(0.5, 2.0, shape) if t in (F32, F64) else
                     RNG.integers(0, 2, shape)).astype(NP[t])
    return out


# (id, source opset, target opset, nodes, graph inputs, graph outputs, initializers,
#  the adaptations' ops/boundaries expected from the table)
def _samples():
    x4 = [("x", F32, [1, 2, 4, 4])]
    y = [("y", F32)]
    yield ("argmax select_last_index", 18, 11,
           [h.make_node("ArgMax", ["x"], ["y"], axis=1, select_last_index=0)],
           [("x", F32, [3, 4])], [("y", I64)], [], {("ArgMax", 12)})
    yield ("averagepool ceil_mode dilations", 19, 9,
           [h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], ceil_mode=0,
                        dilations=[1, 1])], x4, y, [], {("AveragePool", 19), ("AveragePool", 10)})
    yield ("batchnormalization training", 15, 8,
           [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                        training_mode=1, momentum=0.875)],
           [("x", F32, [2, 3, 2, 2])] + [(n, F32, [3]) for n in "sbmv"],
           [("y", F32), ("rm", F32), ("rv", F32)], [], {("BatchNormalization", 14)})
    yield ("cast saturate", 19, 13, [h.make_node("Cast", ["x"], ["y"], to=F64, saturate=1)],
           [("x", F32, [3])], [("y", F64)], [], {("Cast", 19)})
    yield ("clip constant bounds", 18, 10,
           [h.make_node("Clip", ["x", "lo", "hi"], ["y"])], [("x", F32, [3, 4])], y,
           [_const("lo", 0.8, F32), _const("hi", 1.5, F32)], {("Clip", 11)})
    yield ("constant value_float", 18, 11,
           [h.make_node("Constant", [], ["c"], value_float=2.0),
            h.make_node("Mul", ["x", "c"], ["y"])], [("x", F32, [3])], y, [],
           {("Constant", 12)})
    yield ("depthtospace dcr", 18, 10,
           [h.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="DCR")],
           [("x", F32, [1, 8, 2, 3])], y, [], {("DepthToSpace", 11)})
    yield ("dropout ratio 0 training", 18, 9,
           [h.make_node("Dropout", ["x", "r", "t"], ["y"])], [("x", F32, [3, 4])], y,
           [_const("r", 0.0, F32), _const("t", True, TP.BOOL)], {("Dropout", 12)})
    yield ("gathernd batch_dims", 18, 11,
           [h.make_node("GatherND", ["x", "i"], ["y"], batch_dims=0)], [("x", F32, [4, 3])], y,
           [_const("i", [[1], [3]])], {("GatherND", 12)})
    yield ("lppool ceil_mode dilations", 18, 10,
           [h.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=2, ceil_mode=0,
                        dilations=[1, 1])], x4, y, [], {("LpPool", 18)})
    yield ("maxpool unread indices", 18, 7,
           [h.make_node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2], ceil_mode=0,
                        storage_order=0, dilations=[1, 1])], x4, y, [],
           {("MaxPool", 10), ("MaxPool", 8)})
    yield ("pad constant inputs", 18, 10,
           [h.make_node("Pad", ["x", "p", "c"], ["y"], mode="constant")], [("x", F32, [2, 3])],
           y, [_const("p", [0, 1, 1, 0]), _const("c", 0.5, F32)], {("Pad", 11)})
    yield ("reducemean axes", 18, 12,
           [h.make_node("ReduceMean", ["x", "a"], ["y"], keepdims=1, noop_with_empty_axes=0)],
           [("x", F32, [2, 3, 4])], y, [_const("a", [1])], {("ReduceMean", 18)})
    yield ("reducesum axes", 18, 12,
           [h.make_node("ReduceSum", ["x", "a"], ["y"], keepdims=0)], [("x", F32, [2, 3, 4])],
           y, [_const("a", [0, 2])], {("ReduceSum", 13)})
    yield ("reshape allowzero 1 without a 0", 18, 13,
           [h.make_node("Reshape", ["x", "s"], ["y"], allowzero=1)], [("x", F32, [2, 6])], y,
           [_const("s", [3, -1])], {("Reshape", 14)})
    yield ("softmax last axis", 18, 12, [h.make_node("Softmax", ["x"], ["y"])],
           [("x", F32, [2, 3, 4])], y, [], {("Softmax", 13)})
    yield ("logsoftmax axis before size-1 axes", 18, 12,
           [h.make_node("LogSoftmax", ["x"], ["y"], axis=1)], [("x", F32, [2, 3, 1])], y, [],
           {("LogSoftmax", 13)})
    yield ("shape whole", 18, 12, [h.make_node("Shape", ["x"], ["y"], start=0, end=9)],
           [("x", F32, [2, 3])], [("y", I64)], [], {("Shape", 15)})
    yield ("int constant at opset 8", 18, 8,
           [h.make_node("Constant", [], ["s"], value=_const("v", [3, 4])),
            h.make_node("Reshape", ["x", "s"], ["y"])], [("x", F32, [2, 6])], y, [],
           {("Constant", 9)})
    yield ("reshape allowzero", 18, 13,
           [h.make_node("Reshape", ["x", "s"], ["y"], allowzero=0)], [("x", F32, [2, 6])], y,
           [_const("s", [3, 4])], {("Reshape", 14)})
    yield ("resize nearest sizes to Resize-10", 18, 10,
           [h.make_node("Resize", ["x", "", "", "s"], ["y"], mode="nearest",
                        coordinate_transformation_mode="asymmetric", nearest_mode="floor",
                        antialias=0, keep_aspect_ratio_policy="stretch")],
           [("x", F32, [1, 1, 2, 3])], y, [_const("s", [1, 1, 4, 6])],
           {("Resize", 18), ("Resize", 13), ("Resize", 11)})
    yield ("resize linear to Resize-11", 18, 12,
           [h.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear",
                        coordinate_transformation_mode="half_pixel", antialias=0)],
           [("x", F32, [1, 1, 2, 3])], y, [_const("sc", [1.0, 1.0, 2.0, 2.0], F32)],
           {("Resize", 18), ("Resize", 13)})
    yield ("roialign output_half_pixel", 18, 15,
           [h.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=2, output_width=2,
                        sampling_ratio=2, spatial_scale=1.0,
                        coordinate_transformation_mode="output_half_pixel")],
           [("x", F32, [1, 2, 6, 6])], y,
           [_const("r", [[0.6, 0.7, 3.9, 4.2]], F32), _const("b", [0])], {("RoiAlign", 16)})
    yield ("scatterelements reduction none", 18, 13,
           [h.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0, reduction="none")],
           [("x", F32, [3, 2]), ("u", F32, [1, 2])], y, [_const("i", [[2, 0]])],
           {("ScatterElements", 16)})
    yield ("shape start", 18, 14, [h.make_node("Shape", ["x"], ["y"], start=0)],
           [("x", F32, [2, 3])], [("y", I64)], [], {("Shape", 15)})
    yield ("slice constant inputs", 18, 9,
           [h.make_node("Slice", ["x", "b", "e", "a", "st"], ["y"])], [("x", F32, [4, 5])], y,
           [_const("b", [1]), _const("e", [3]), _const("a", [1]), _const("st", [1])],
           {("Slice", 10)})
    yield ("split even num_outputs", 18, 12,
           [h.make_node("Split", ["x"], ["y", "z"], axis=1, num_outputs=2)],
           [("x", F32, [2, 4])], [("y", F32), ("z", F32)], [], {("Split", 18)})
    yield ("split constant sizes", 18, 12,
           [h.make_node("Split", ["x", "s"], ["y", "z"], axis=1)], [("x", F32, [2, 5])],
           [("y", F32), ("z", F32)], [_const("s", [2, 3])], {("Split", 13)})
    yield ("unsqueeze squeeze axes", 18, 12,
           [h.make_node("Unsqueeze", ["x", "a"], ["t"]), h.make_node("Squeeze", ["t", "a"], ["y"])],
           [("x", F32, [2, 3])], y, [_const("a", [1])], {("Unsqueeze", 13), ("Squeeze", 13)})
    yield ("topk constant k", 18, 9,
           [h.make_node("TopK", ["x", "k"], ["y", "i"], axis=1, largest=1, sorted=1)],
           [("x", F32, [2, 5])], [("y", F32), ("i", I64)], [_const("k", [2])],
           {("TopK", 11), ("TopK", 10)})
    yield ("upsample constant scales", 9, 7,
           [h.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest")],
           [("x", F32, [1, 1, 2, 3])], y, [_const("sc", [1.0, 1.0, 2.0, 2.0], F32)],
           {("Upsample", 9)})
    yield ("lstm layout", 18, 13,
           [h.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=2, layout=0)],
           [("x", F32, [3, 1, 2]), ("w", F32, [1, 8, 2]), ("r", F32, [1, 8, 2])], y, [],
           {("LSTM", 14)})
    yield ("quantizelinear axis", 18, 12,
           [h.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)],
           [("x", F32, [2, 3])], [("y", TP.UINT8)],
           [_const("s", 0.05, F32), _const("z", 3, TP.UINT8)], {("QuantizeLinear", 13)})


SAMPLES = list(_samples())


@pytest.mark.parametrize("sample", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_the_adapted_node_computes_what_the_original_computed(sample):
    _, source, target, nodes, inputs, outputs, inits, boundaries = sample
    original = _model(source, nodes, inputs, outputs, inits)
    feeds = _feeds(inputs)
    want = _run(original, feeds)
    op = nodes[-1].op_type
    adapted, _, done = relabel_opset(original, source, target, op=op)
    assert {(a.op, a.source) for a in done} == boundaries
    got = _run(adapted, feeds)
    for w, g in zip(want, got):
        assert w.shape == g.shape and np.allclose(w, g, rtol=1e-6, atol=1e-6)
    for a in done:   # the record names each change and the versions it crossed
        assert a.change and a.source > a.target == _since(a.op, a.target)


def _since(op, opset):
    return onnx.defs.get_schema(op, opset, "").since_version


def _refused(source, target, nodes, inputs, outputs, inits=()):
    model = _model(source, nodes, inputs, outputs, inits)
    with pytest.raises(AdaptError) as exc:
        relabel_opset(model, source, target, op=nodes[-1].op_type)
    return exc.value.refusal


def test_an_attribute_where_the_versions_differ_is_refused():
    """DepthToSpace-1 is DCR only: a CRD node (F.pixel_shuffle's) cannot be moved there."""
    node = h.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")
    assert _refused(18, 10, [node], [("x", F32, [1, 8, 2, 3])], [("y", F32)]) \
        is Refusal.ATTRIBUTE_VALUE


def test_a_computed_input_is_not_made_an_attribute():
    nodes = [h.make_node("Neg", ["a"], ["s"]), h.make_node("Unsqueeze", ["x", "s"], ["y"])]
    assert _refused(18, 12, nodes, [("x", F32, [2, 3]), ("a", I64, [1])], [("y", F32)]) \
        is Refusal.INPUT_NOT_CONSTANT


def test_a_read_output_the_older_version_lacks_is_refused():
    """MaxPool-1 has no Indices: a graph that reads them cannot be moved to opset 7."""
    node = h.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2])
    assert _refused(18, 7, [node], [("x", F32, [1, 1, 4, 4])], [("y", F32), ("i", I64)]) \
        is Refusal.OUTPUT_CONSUMED


def test_dropout_training_with_a_read_mask_is_refused():
    """Outside training onnxruntime's Dropout-10 mask is all false; in training at ratio 0
    Dropout-12's is all true: a read mask cannot be moved."""
    node = h.make_node("Dropout", ["x", "r", "t"], ["y", "m"])
    inits = [_const("r", 0.0, F32), _const("t", True, TP.BOOL)]
    assert _refused(18, 11, [node], [("x", F32, [3])], [("y", F32), ("m", TP.BOOL)], inits) \
        is Refusal.OUTPUT_CONSUMED


def test_an_uneven_split_is_refused():
    node = h.make_node("Split", ["x"], ["y", "z"], axis=1, num_outputs=2)
    assert _refused(18, 12, [node], [("x", F32, [2, 5])], [("y", F32), ("z", F32)]) \
        is Refusal.ATTRIBUTE_VALUE


def test_softmax_over_a_middle_axis_is_refused():
    """Softmax-11 coerces to 2-D at axis: over axis 1 of [2, 3, 4] it normalizes 12 values."""
    node = h.make_node("Softmax", ["x"], ["y"], axis=1)
    assert _refused(18, 12, [node], [("x", F32, [2, 3, 4])], [("y", F32)]) \
        is Refusal.ATTRIBUTE_VALUE


def test_reshape_allowzero_over_a_zero_is_refused():
    node = h.make_node("Reshape", ["x", "s"], ["y"], allowzero=1)
    assert _refused(18, 12, [node], [("x", F32, [0, 3])], [("y", F32)], [_const("s", [3, 0])]) \
        is Refusal.ATTRIBUTE_VALUE


def test_resize_half_pixel_is_not_resize_10():
    node = h.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear")
    inits = [_const("sc", [1.0, 1.0, 2.0, 2.0], F32)]
    assert _refused(18, 10, [node], [("x", F32, [1, 1, 2, 3])], [("y", F32)], inits) \
        is Refusal.ATTRIBUTE_VALUE


def _changes():
    """Every signature change between consecutive ai.onnx versions in force at opset 7 or
    above and below 26: (op, since, what, name)."""
    by_op: dict[str, list[int]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx"):
            by_op.setdefault(s.name, []).append(s.since_version)
    for op, since in by_op.items():
        since = sorted(set(since))
        for old, new in zip(since, since[1:]):
            if new - 1 < 7 or new > 25:
                continue
            a, b = onnx.defs.get_schema(op, old, ""), onnx.defs.get_schema(op, new, "")
            for name in sorted(set(b.attributes) - set(a.attributes)):
                yield op, new, "attribute", name
            for p in b.inputs:
                if p.name not in [q.name for q in a.inputs]:
                    yield op, new, "input", p.name
            if len(b.outputs) > len(a.outputs):
                for p in b.outputs[len(a.outputs):]:
                    yield op, new, "output", p.name


def test_every_signature_change_has_an_adapter_or_a_reason():
    """The table is complete: each attribute, input or output a newer version added is
    covered by an entry at that boundary (by name; a special entry names what it covers),
    or refused with a reason. The reverse too: no entry names a change that is not one."""
    entries = {(op, e.since): e for e in adapter_table.ENTRIES for op in e.ops}
    named = {(op, e.since, n.strip()) for e in adapter_table.ENTRIES for op in e.ops
             for n in e.name.split(",")}
    missing = []
    for op, since, what, name in _changes():
        if (op, since, name) in named or (op, since, name) in adapter_table.REFUSED:
            continue
        if (op, since) in entries and entries[(op, since)].kind == "special" and \
                what == "input":   # a special entry owns the boundary's inputs (BN renames)
            continue
        missing.append(f"{op}-{since} {what} {name}")
    assert not missing, "no adapter and no reason: " + ", ".join(missing)
    assert all(reason for reason in adapter_table.REFUSED.values())


def test_a_deprecated_op_is_lowered_from_the_private_domain():
    """Upsample exists only up to opset 9: its reference emits the node in the private
    domain at opset 18, and relabelling moves it into ai.onnx at 9 (then, like any node,
    to Upsample-7's attribute form at 8). onnxruntime computes nearest upsampling: every
    pixel repeated twice along both spatial axes."""
    from torch_prover.engine.versions.next_opset import PRIVATE_DOMAIN
    node = h.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest", domain=PRIVATE_DOMAIN)
    g = h.make_graph([node], "g", [h.make_tensor_value_info("x", F32, [1, 1, 2, 3])],
                     [h.make_tensor_value_info("y", F32, [1, 1, 4, 6])],
                     initializer=[_const("sc", [1.0, 1.0, 2.0, 2.0], F32)])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 18),
                                           h.make_opsetid(PRIVATE_DOMAIN, 1)], ir_version=8)
    x = RNG.uniform(size=(1, 1, 2, 3)).astype(np.float32)
    want = x.repeat(2, axis=2).repeat(2, axis=3)
    nine, _, _ = relabel_opset(model, 18, 9, op="Upsample", lower=True)
    assert [i.domain for i in nine.opset_import] == [""] and nine.graph.node[0].domain == ""
    assert np.array_equal(_run(nine, {"x": x})[0], want)
    eight, _, done = relabel_opset(nine, 9, 8, op="Upsample")
    assert [(a.op, a.source, a.target) for a in done] == [("Upsample", 9, 7)]
    assert np.array_equal(_run(eight, {"x": x})[0], want)
    with pytest.raises(CaseError):   # without lower=True a private node is refused
        relabel_opset(model, 18, 9, op="Upsample")
