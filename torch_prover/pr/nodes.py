"""An op the script uses more than once: every node of it proved, one verdict per parameter.

Why: a two-sided clamp written with two ``torch.where`` exports two Where nodes, and a proof
of "the" Where node has no one node to be about. ``run`` proves each node in context (as
``--all-ops`` does, restricted to the target op) and reports, per ONNX parameter, one
verdict over the nodes: the same verdict on every node is the verdict; different verdicts
are listed per node with each one's reason, so the reader sees where the nodes differ and
why. ``--node N`` proves one node only. Pure functions of the proofs' records.
"""
from __future__ import annotations

from typing import Any, Sequence


def over_nodes(op: str, proved: Sequence[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """The ``script.nodes`` section from (node index, proof record) pairs: the proved nodes
    and, per parameter, the verdict they share (``verdict``) or null and each node's verdict
    and reason (``per_node``)."""
    params: list[dict[str, Any]] = []
    first = proved[0][1]["parameters"]
    for k, p in enumerate(first):
        each = [(n, r["parameters"][k]) for n, r in proved]
        verdicts = {q["verdict"] for _, q in each}
        same = verdicts.pop() if len(verdicts) == 1 else None
        params.append({"io": p["io"], "index": p["index"], "name": p["name"], "verdict": same,
                       "per_node": [] if same is not None else [
                           {"node": n, "verdict": q["verdict"], "reason": q["reason"]}
                           for n, q in each]})
    return {"op": op, "nodes": [n for n, _ in proved], "parameters": params}


def node_lines(section: dict[str, Any] | None) -> list[str]:
    """The text lines of ``script.nodes``: what was proved, then one line per parameter."""
    if not section:
        return []
    nodes = ", ".join(f"#{n}" for n in section["nodes"])
    lines = [f"  {section['op']} is used by {len(section['nodes'])} nodes ({nodes}): each is "
             "proved below, in context; per parameter over the nodes (--node N proves one):"]
    for p in section["parameters"]:
        head = f"    {p['io']} {p['index']} {p['name']}: "
        if p["verdict"] is not None:
            lines.append(head + f"{p['verdict']} on every node")
        else:
            lines.append(head + "; ".join(f"node #{q['node']} {q['verdict']} ({q['reason']})"
                                          for q in p["per_node"]))
    return lines
