#!/usr/bin/env python
"""The function-body witness over every ai.onnx schema version with a body, against the tags.

    python scripts/function_bodies.py [--all]

For each schema version with a function body (static or context-dependent, expanded for
the node ``engine/bodies/body_survey.py`` makes), every parameter's derived outcome
(``engine/bodies/function_body.py``) against its declared tag: consistent, contradicting,
proposed (tag unknown, the body decides), undecided (the body's paths cross an unknown
tag or a graph not entered) or not applicable (a type that carries no gradient, not
given, no body built). Prints the rows that are not plain agreements (all with --all),
then the counts, whether a schema version's older bodies (MeanVarianceNormalization-13
has one for opset 13 and one for 18) derive the same, and the time taken. Figures, not assertions (tests/test_function_body.py
holds the expectations).
"""
from __future__ import annotations

import argparse
import collections
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="print every parameter's row")
    args = ap.parse_args()
    from torch_prover.engine.bodies.body_survey import (BodyCheck, schemas_with_body, survey,
                                                 survey_node)
    from torch_prover.engine.bodies.function_body import derive

    t0 = time.perf_counter()
    rows = survey()
    elapsed = time.perf_counter() - t0
    for r in rows:
        if args.all or r.check not in (BodyCheck.CONSISTENT, BodyCheck.NOT_APPLICABLE):
            print(f"{r.check:<15} {r.op}-{r.since_version} {r.io} {r.index} {r.name}: "
                  f"tag {r.tag}, body {r.finding.outcome} ({r.finding.detail})")
    counts = collections.Counter(r.check for r in rows)
    versions = schemas_with_body()
    print(f"\n{len(versions)} schema versions with a function body "
          f"({len({s.name for s in versions})} ops), {len(rows)} parameters:")
    for c in BodyCheck:
        print(f"  {c}: {counts[c]} parameters")
    print(f"derived in {elapsed:.2f} s")
    older, differ = 0, []
    for s in versions:
        bodies = sorted(set(s.function_opset_versions) |
                        set(s.context_dependent_function_opset_versions))
        node, types = survey_node(s)
        newest = derive(s.name, max(s.since_version, bodies[-1]), node, types)
        for v in bodies[:-1]:
            if v >= s.since_version:   # a body keyed below the version is never in force
                older += 1
                old = derive(s.name, v, node, types)
                if [f.outcome for f in old.inputs + old.outputs] != [
                        f.outcome for f in newest.inputs + newest.outputs]:
                    differ.append(f"{s.name}-{s.since_version} (opset {v})")
    print(f"older bodies of the same schema versions: {older} derived, "
          f"{len(differ)} differ from the newest" + (f": {', '.join(differ)}" if differ else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
