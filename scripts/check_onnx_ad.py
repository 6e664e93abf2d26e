#!/usr/bin/env python
"""onnx-ad's reverse rules checked against the differentiability table (docs/table.md).

    pip install onnx-ad==0.3.0      # not a dependency of torch-prover: this script's only
    python scripts/check_onnx_ad.py [--json FILE] [--ops A,B] [--evidence]

onnx-ad (PyPI, MIT) differentiates ONNX graphs by a reverse rule per op type, with no schema
version. For every ONNX node test of an op it has a rule for (the installed onnx's
collector: one node, its inputs, at the test's opset) -- and with ``--evidence`` every
committed case's target node, cut out of its model.onnx with its recorded input values, at
the schema version its record names -- the one-node model is put through
``onnx_ad.reverse`` (every float input, every float output seeded) and run in onnxruntime
(onnx.reference where onnxruntime refuses the model). Per (op, schema version in force,
input) it records whether onnx-ad's adjoint is nonzero at any test point, whether the
op's own central finite difference there is, and whether the adjoint's VJP matches the
finite differences (<adj_x, v> against <adj_y, (f(x+hv) - f(x-hv)) / 2h>). Then against
the table's ``supports`` for that parameter:

- ``agree``: nonzero adjoint where the table says differentiable, none where it says
  non-differentiable;
- ``missing derivative``: the table says differentiable and the finite differences move,
  onnx-ad's adjoint is zero at every point;
- ``spurious derivative``: the table says non-differentiable, onnx-ad's adjoint is nonzero;
- ``wrong values``: the adjoint is nonzero but its VJP does not match the finite differences;
- ``not exercised``: neither onnx-ad nor the finite differences move at these points.

Disagreements are printed with the table's row (its rule, cases) and the numbers. Exit 0.
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections import defaultdict

import numpy as np
import onnx
import onnx.numpy_helper

FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
          onnx.TensorProto.BFLOAT16}
STEP, RTOL = 1e-3, 5e-2

MATH = {
    ("Det", "X"): "d det(X) / dX = det(X) X^-T (Jacobi's formula): nonzero wherever X is "
                  "invertible; onnx-ad lists Det among its zero-derivative ops",
    ("OneHot", "values"): "output = values[1] where the index is hot, values[0] elsewhere: "
                          "d output / d values[1] is the one-hot mask, d / d values[0] its "
                          "complement (both nonzero); onnx-ad lists OneHot as zero-derivative",
    ("Pad", "constant_value"): "each padded element equals constant_value: d output / d "
                               "constant_value is 1 on the padded region, so its adjoint is "
                               "the sum of adj_y there (nonzero whenever a pad is > 0); "
                               "onnx-ad's reverse Pad returns None for it",
    ("BatchNormalization", "input_mean"): "inference mode: Y = scale (X - mean) / sqrt(var + "
                                          "eps) + B, so dY/dmean = -scale / sqrt(var + eps) "
                                          "(nonzero); onnx-ad's rule gives no adjoint",
    ("BatchNormalization", "input_var"): "dY/dvar = -scale (X - mean) (var + eps)^(-3/2) / 2 "
                                         "(nonzero); onnx-ad's rule gives no adjoint",
    ("BatchNormalization", "mean"): "BatchNormalization-9 in inference mode: Y = scale (X - "
                                    "mean) / sqrt(var + eps) + B, so dY/dmean = -scale / "
                                    "sqrt(var + eps) (nonzero); onnx-ad's rule gives no adjoint",
    ("BatchNormalization", "var"): "dY/dvar = -scale (X - mean) (var + eps)^(-3/2) / 2 "
                                   "(nonzero); onnx-ad's rule gives no adjoint",
    ("Clip", "input"): "Clip-6 takes min and max as attributes: dY/dX is 1 inside [min, max] "
                       "and 0 where X is clipped; onnx-ad's rule reads the bounds from inputs "
                       "only, finds none, and passes adj_y through everywhere (wrong where "
                       "any element is clipped)",
    ("Range", "start"): "output[i] = start + i delta: d/dstart = 1 where the length "
                        "ceil((limit - start) / delta) does not change; the table's "
                        "non-differentiable is the shape-setting-input convention, not the "
                        "math: onnx-ad follows the math between the jumps",
    ("Range", "delta"): "output[i] = start + i delta: d/ddelta = i between the length's "
                        "jumps; the table's non-differentiable is the shape-setting-input "
                        "convention",
}
"""The math that decides each disagreement found (op, parameter): printed beside it."""
SEEDS = 2


def _is_float(vi: onnx.ValueInfoProto) -> bool:
    return vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type in FLOATS


def _session(model: onnx.ModelProto):
    """A callable feeds -> list of outputs: onnxruntime, else onnx.reference."""
    try:
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        sess = ort.InferenceSession(model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        return lambda feeds: sess.run(None, feeds), "onnxruntime"
    except Exception:   # noqa: BLE001 -- any refusal: the reference evaluator decides
        from onnx.reference import ReferenceEvaluator
        ref = ReferenceEvaluator(model)
        return lambda feeds: ref.run(None, feeds), "onnx.reference"


def check_test(test, rng) -> dict[int, dict] | str:
    """One of ONNX's node tests: its model and first data set."""
    return check_point(test.proto(), test.data_sets[0][0], test.name, rng)


def evidence_points(models, domains=("ai.onnx",)):
    """(op, schema version, model, inputs, name) per committed case directory of one of
    ``domains`` (a record without ``domain`` is ai.onnx's): the case's target node cut out
    of its model.onnx with its real input values (``engine.numeric.isolate``, the node
    witness's own step), every input a graph input."""
    from torch_prover.engine.numeric.isolate import isolate
    for rec_path in sorted(models.glob("*/*/proof.json")):
        rec = json.loads(rec_path.read_text())
        d = rec_path.parent
        if (rec.get("domain") or "ai.onnx") not in domains or rec.get("status") != "proved" \
                or not rec.get("witness"):
            continue
        model = onnx.load(d / "model.onnx")
        feeds = {vi.name: onnx.numpy_helper.to_array(onnx.load_tensor(str(d / "test_data_set_0" / f"input_{j}.pb")))
                 for j, vi in enumerate(model.graph.input)
                 if (d / "test_data_set_0" / f"input_{j}.pb").is_file()}
        index = next((i for i, n in enumerate(model.graph.node)
                      if n.name == rec["witness"].get("node")), None)
        if index is None:
            continue
        try:
            node = isolate(model, index, feeds)
        except Exception:   # noqa: BLE001 -- a node that cannot be cut out gives no point
            continue
        if not all(isinstance(node.point[a.name], np.ndarray) for a in node.lifted):
            continue
        yield (rec["op"], rec["schema_version"], node.model,
               [node.point[vi.name] for vi in node.model.graph.input], f"{d.parent.name}/{d.name}")


def check_point(model, inputs, test_name: str, rng) -> dict[int, dict] | str:
    """onnx-ad's adjoint of the one-node ``model`` at ``inputs`` (its graph inputs' values):
    per node input position of a float graph input, adj nonzero, fd nonzero, VJP ok."""
    import onnx_ad
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    node = graph.node[0]
    floats_in = [vi.name for vi in graph.input if _is_float(vi)]
    floats_out = [vi.name for vi in graph.output if _is_float(vi)]
    if not floats_in or not floats_out:
        return "no float input or output"
    if not all(vi.type.HasField("tensor_type") for vi in list(graph.input) + list(graph.output)):
        return "a sequence or optional input or output"
    feeds = {vi.name: x if isinstance(x, onnx.TensorProto) else np.asarray(x)
             for vi, x in zip(graph.input, inputs)}
    # the integer operands (pads, axes, indices) become constants: onnx-ad differentiates
    # with respect to the float inputs only, and some rules need their operands constant

    for vi in [vi for vi in graph.input if vi.name not in floats_in]:
        value = feeds.pop(vi.name)
        if isinstance(value, onnx.TensorProto):   # a type numpy lacks (float8, int4): as stored
            value = onnx.TensorProto.FromString(value.SerializeToString())
            value.name = vi.name
        else:
            value = onnx.numpy_helper.from_array(value, vi.name)
        graph.initializer.append(value)
        graph.input.remove(vi)
    try:
        rev = onnx_ad.reverse(model, inputs=floats_in, outputs=floats_out, layout="onnx")
    except Exception as exc:   # noqa: BLE001 -- onnx-ad's refusal is a finding of its own
        return f"onnx-ad refuses it: {type(exc).__name__}: {str(exc)[:160]}"
    try:
        primal, _ = _session(model)
        run_rev, runtime = _session(rev)
        ys = dict(zip([o.name for o in graph.output], primal(feeds)))
    except Exception as exc:   # noqa: BLE001
        return f"cannot run: {type(exc).__name__}: {str(exc)[:160]}"
    rev_in = [vi.name for vi in rev.graph.input]
    seeds = {}
    for name in floats_out:
        seed_name = next(n for n in rev_in if n.endswith(name) and n != name and n not in feeds)
        y = np.asarray(ys[name])
        seeds[seed_name] = rng.standard_normal(y.shape + (SEEDS,)).astype(y.dtype)
    try:
        outs = dict(zip([o.name for o in rev.graph.output], run_rev({**feeds, **seeds})))
    except Exception as exc:   # noqa: BLE001
        return f"its adjoint model does not run ({runtime}): {type(exc).__name__}: {str(exc)[:160]}"
    found = {}
    for name in floats_in:
        adj_name = next(n for n in outs if n.endswith(name) and n != name and n not in ys)
        adj = np.asarray(outs[adj_name], dtype=np.float64)
        x = np.asarray(feeds[name])
        v = rng.standard_normal(x.shape)
        h = STEP * max(1.0, float(np.max(np.abs(x))) if x.size else 1.0)
        plus = dict(zip([o.name for o in graph.output],
                        primal({**feeds, name: np.asarray(x + h * v, x.dtype)})))
        minus = dict(zip([o.name for o in graph.output],
                         primal({**feeds, name: np.asarray(x - h * v, x.dtype)})))
        fd_nonzero, vjp_ok = False, True
        if any(np.shape(plus[o]) != np.shape(ys[o]) or np.shape(minus[o]) != np.shape(ys[o])
               for o in floats_out):   # the input sets a shape: no derivative to compare
            for pos, inp in enumerate(node.input):
                if inp == name:
                    found[pos] = {"adj_nonzero": bool(np.any(np.abs(adj) > 1e-6)),
                                  "fd_nonzero": False, "vjp_ok": True, "runtime": runtime,
                                  "test": test_name, "shape_moves": True, "precise": False}
            continue
        for k in range(SEEDS):
            lhs = float(np.sum(adj[..., k] * v)) if adj.shape[:-1] == x.shape else float("nan")
            rhs = 0.0
            for out, seed in zip(floats_out, seeds.values()):
                fd = (np.asarray(plus[out], np.float64) - np.asarray(minus[out], np.float64)) / (2 * h)
                if fd.shape != seed.shape[:-1]:
                    rhs = float("nan")
                    break
                fd_nonzero |= bool(np.any(np.abs(fd) > 1e-4))
                rhs += float(np.sum(seed[..., k] * fd))
            if not (abs(lhs - rhs) <= RTOL * max(abs(lhs), abs(rhs), 1e-2)):
                vjp_ok = False
        for pos, inp in enumerate(node.input):
            if inp == name:
                found[pos] = {"adj_nonzero": bool(np.any(np.abs(adj) > 1e-6)),
                              "fd_nonzero": fd_nonzero, "vjp_ok": vjp_ok, "runtime": runtime,
                              "test": test_name,
                              "precise": x.dtype in (np.float32, np.float64)}
    return found


def other_domains(rows, reverse, only) -> dict:
    """The domains beside ai.onnx (ai.onnx.ml, ai.onnx.preview.training, ai.onnx.preview):
    which of their ops onnx-ad has a reverse rule for (its rules are keyed by op type and
    apply to ai.onnx nodes), and what onnx_ad.reverse says of each committed case's node
    (models/, the case's one node of the domain). Gradient-1's rows rest on no node: no
    runtime runs it (batch/gradient_witness.py)."""
    import onnx_ad
    from pathlib import Path
    mine = [r for r in rows if r["domain"] != "ai.onnx"]
    domains = sorted({r["domain"] for r in mine})
    ops = sorted({r["op"] for r in mine})
    nodes = {}
    models = Path(__file__).resolve().parent.parent / "models"
    for op, version, model, _, name in evidence_points(models, domains):
        if only and op not in only:
            continue
        graph = model.graph
        try:
            onnx_ad.reverse(model, inputs=[vi.name for vi in graph.input if _is_float(vi)],
                            outputs=[vi.name for vi in graph.output if _is_float(vi)],
                            layout="onnx")
            nodes[f"{name} ({op}-{version})"] = "differentiated"
        except Exception as exc:   # noqa: BLE001 -- onnx-ad's refusal is the finding
            nodes[f"{name} ({op}-{version})"] = (f"{type(exc).__name__}: "
                                                 f"{str(exc).split(' (node')[0][:120]}")
    return {"domains": domains, "ops": len(ops), "rows": len(mine),
            "with_rule": sorted(set(ops) & set(reverse)), "nodes": nodes}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write every (op, version, input) result here")
    ap.add_argument("--ops", help="only these ops (comma-separated)")
    ap.add_argument("--evidence", action="store_true",
                    help="also every committed case's node (models/), cut out with its "
                         "input values: the schema versions ONNX's node tests do not reach")
    args = ap.parse_args(argv[1:])
    try:
        import onnx_ad
        from onnx_ad.rules import REVERSE
    except ImportError:
        sys.exit("check_onnx_ad.py needs onnx-ad, which torch-prover does not depend on: "
                 "pip install onnx-ad==0.3.0")
    from torch_prover.engine.onnx_points.source import NodeTest
    from torch_prover.engine.onnx_points.store import installed_tests
    from torch_prover.output import table
    doc = table.load()
    rows = {(r["op"], r["version"], r["io"], r["index"]): r for r in doc["rows"]
            if r["domain"] == "ai.onnx"}
    only = set(args.ops.split(",")) if args.ops else None
    tests, _ = installed_tests(None)
    per = defaultdict(list)
    refused = defaultdict(list)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in tests:
            if not isinstance(t, NodeTest) or t.op not in REVERSE or (only and t.op not in only):
                continue
            try:
                got = check_test(t, rng)
            except Exception as exc:   # noqa: BLE001 -- one test's failure is reported, not fatal
                got = f"check failed: {type(exc).__name__}: {str(exc)[:160]}"
            if isinstance(got, str):
                refused[(t.op, t.version)].append(f"{t.name}: {got}")
                continue
            for pos, res in got.items():
                per[(t.op, t.version, pos)].append(res)
        if args.evidence:   # every committed case's node, at the version its record names
            from pathlib import Path
            models = Path(__file__).resolve().parent.parent / "models"
            for op, version, model, inputs, name in evidence_points(models):
                if op not in REVERSE or (only and op not in only):
                    continue
                try:
                    got = check_point(model, inputs, name, rng)
                except Exception as exc:   # noqa: BLE001
                    got = f"check failed: {type(exc).__name__}: {str(exc)[:160]}"
                if isinstance(got, str):
                    refused[(op, version)].append(f"{name}: {got}")
                    continue
                for pos, res in got.items():
                    per[(op, version, pos)].append(res)
    others = other_domains(doc["rows"], REVERSE, only) if args.evidence else None
    results = []
    for (op, version, pos), res in sorted(per.items()):
        row = rows.get((op, version, "input", pos))
        if row is None:   # a variadic input's later positions: its formal's row
            row = next((rows[k] for k in sorted(rows, reverse=True)
                        if k[:3] == (op, version, "input") and k[3] < pos), None)
        adj = any(r["adj_nonzero"] for r in res)
        fd = any(r["fd_nonzero"] for r in res)
        # a point on a kink (LeakyRelu's example at 0) or a half-precision test fails a
        # central difference honestly: the values are wrong only if no float32/64 test matches
        checked = [r["vjp_ok"] for r in res if (r["adj_nonzero"] or r["fd_nonzero"])
                   and r["precise"]]
        vjp = any(checked) or not checked
        supports = row["supports"] if row else None
        if supports == "differentiable":
            state = ("agree" if vjp else "wrong values") if adj else \
                ("missing derivative" if fd else "not exercised")
        elif supports == "non-differentiable":
            state = "spurious derivative" if adj else "agree"
        else:
            state = f"table: {supports}"
        if state == "agree" and not vjp and adj:
            state = "wrong values"
        results.append({"op": op, "version": version, "input": pos,
                        "name": row["name"] if row else None, "supports": supports,
                        "onnx_tag": row["onnx_tag"] if row else None,
                        "rule": row["rule"] if row else None,
                        "convention": row["convention"] if row else None,
                        "state": state, "adj_nonzero": adj, "fd_nonzero": fd, "vjp_ok": vjp,
                        "tests": sorted({r["test"] for r in res})})
    counts = defaultdict(int)
    for r in results:
        counts[r["state"]] += 1
    print(f"onnx-ad {onnx_ad.__version__}: {len(REVERSE)} ops with a reverse rule; "
          f"{len(results)} (op, version, input) checked at ONNX's node tests against the "
          f"table of torch-prover {doc['provenance']['torch_prover']['version']} (onnx "
          f"{doc['provenance']['onnx']})")
    print("  " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    print(f"  {sum(len(v) for v in refused.values())} node tests onnx-ad or a runtime refused "
          f"({len(refused)} op versions)")
    if others is not None:
        refusals = defaultdict(set)
        for node, said in others["nodes"].items():
            if said != "differentiated":
                refusals[said.split(" for ")[0]].add(node.rsplit(" (", 1)[1].split("-")[0])
        said = "; ".join(f"{k} for {', '.join(sorted(v))}" for k, v in sorted(refusals.items()))
        print(f"  other domains ({', '.join(others['domains'])}): {others['ops']} ops in the "
              f"table, {len(others['with_rule'])} with an onnx-ad reverse rule; "
              f"{len(others['nodes'])} committed case nodes put through onnx_ad.reverse, "
              f"{sum(1 for v in others['nodes'].values() if v != 'differentiated')} refused "
              f"({said}); their {others['rows']} rows: no comparison")
    for r in results:
        if r["state"] in ("agree", "not exercised"):
            continue
        print(f"{r['op']}-{r['version']} input {r['input']} ({r['name']}): {r['state']}: "
              f"table supports {r['supports']} (ONNX tag {r['onnx_tag']}, rule {r['rule']}"
              f"{', convention ' + r['convention'] if r['convention'] else ''}); onnx-ad adjoint "
              f"{'nonzero' if r['adj_nonzero'] else 'zero'}, finite differences "
              f"{'move' if r['fd_nonzero'] else 'flat'}, VJP {'matches' if r['vjp_ok'] else 'does not match'} "
              f"[{', '.join(r['tests'][:3])}{' ...' if len(r['tests']) > 3 else ''}]")
        if (r["op"], r["name"]) in MATH:
            print(f"    math: {MATH[r['op'], r['name']]}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"onnx_ad": onnx_ad.__version__, "results": results,
                       "other_domains": others,
                       "refused": {f"{k[0]}-{k[1]}": v for k, v in sorted(refused.items())}},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
