"""Whether a probe point selected an exporter's guard around the target node.

Why: the dynamo exporter writes ``F.softplus`` as ``Where(x * beta > threshold, x,
Softplus(x))`` (``engine/attribution/mapping.py: Guard``). The bypass does not invalidate the case --
the node's own finite differences decide its parameters -- but a reviewer must know whether
the whole model's checks (forward, VJP) went through the node or around it. So the guard's
condition is computed on the model at each probe seed's inputs, in the reference evaluator
(any opset, any op), and the record says whether any element took the bypass.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

from .mapping import Guard


def bypass_taken(model: onnx.ModelProto, guard: Guard, feeds: Sequence[Mapping[str, Any]]
                 ) -> bool | None:
    """Whether the guard's condition selects the bypass for any element at any of ``feeds``
    (None: the condition could not be computed)."""
    from onnx.reference import ReferenceEvaluator
    cond = model.graph.node[guard.where].input[0]
    probe = copy.deepcopy(model)
    del probe.graph.output[:]
    probe.graph.output.append(onnx.ValueInfoProto(name=cond))
    try:
        ev = ReferenceEvaluator(probe)
        values = [np.asarray(ev.run(None, dict(f))[0]) for f in feeds]
    except Exception:   # the reference evaluator raises many types: say it is unknown
        return None
    return any(bool(v.any() if guard.bypass_slot == 1 else (~v.astype(bool)).any())
               for v in values)


def guard_note(model: onnx.ModelProto, guard: Guard, feeds: Sequence[Mapping[str, Any]],
               seeds: Sequence[int]) -> str:
    """The record's line about one guard: what it is, and whether a probe point took it."""
    taken = bypass_taken(model, guard, feeds)
    at = f"seed{'s' if len(seeds) != 1 else ''} {', '.join(map(str, seeds))}"
    said = ("its condition could not be computed at the probe's points" if taken is None
            else f"the probe's points ({at}) selected the bypass for some elements, so the "
                 "whole model's checks there went around the node" if taken
            else f"no element of the probe's points ({at}) selected the bypass")
    return f"{guard.text}; {said}"
