"""``torch-prover prove OP``: prove one op's tags from its catalogue case (or every case of
it), write the evidence, print each proof."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ... import preflight
from ...errors import EXIT_FINDING, EXIT_OK, CaseError, UsageError
from ...output import documents, report
from ...vocab import DocKind
from ..options import proof_options
from ..outputs import check_outputs, terminal_width
from ..settings import default_out

NAME = "prove"


def add_parser(sub) -> None:
    p = sub.add_parser("prove", help="prove one op's tags from its catalogue case")
    p.add_argument("op", help=(
        "ONNX op name, e.g. Reshape; an op of ai.onnx.ml, ai.onnx.preview.training or "
        "ai.onnx.preview (LinearRegressor, Momentum) runs its reference cases, as "
        "verify-all --domain does. No op name is in two domains, so the name says which"))
    p.add_argument("--case", help="case name (default: the op's first case)")
    p.add_argument("--all", action="store_true", help="prove every case of the op")
    p.add_argument("--opset", type=int, help="export opset (default: the case's)")
    p.add_argument("--seed", type=int, help="first seed (the probe uses it and the next one)")
    proof_options(p, ("text", "json", "markdown"))


def _domain_cases(op: str, domain: str) -> list:
    """The reference cases of an op of another domain (``cases/other_domains.py``): the
    ones ``verify-all --domain DOMAIN --ops OP`` proves."""
    from ...cases.other_domains import DOMAIN_CASES
    mine = [c for c in DOMAIN_CASES if c.op == op and c.domain == domain]
    if not mine:
        ops = sorted({c.op for c in DOMAIN_CASES if c.domain == domain})
        raise UsageError(f"no case for op {op} in domain {domain} (ops with cases: "
                         f"{', '.join(ops)}); `torch-prover coverage --domain {domain}` "
                         "shows how each is decided")
    return mine


def handle(args: argparse.Namespace) -> int:
    from ...batch.domains import DEFAULT, resolve
    from ...output.coverage import where_to_look
    from ...cases import cases_for, find_case
    from ...output.evidence import write_proof
    from ...engine.prove import prove_case
    op, domain = resolve(args.op)
    if args.all and args.case is not None:
        raise UsageError(f"--all proves every case of {op}; --case names one: give one of them")
    if domain != DEFAULT:
        if args.opset is not None:
            raise UsageError(f"--opset: {op} is an op of {domain}, whose reference cases run "
                             "at their own schema version")
        of_op = _domain_cases(op, domain)
        cases = of_op if args.all else [c for c in of_op if args.case in (None, c.name)][:1]
        if not cases:
            raise UsageError(f"op {op} has no case {args.case!r}; its cases: "
                             f"{', '.join(c.name for c in of_op)}")
    elif args.all:
        of_op = cases = cases_for(op)
        if not cases:
            raise UsageError(f"no case for op {op} in the catalogue; {where_to_look(op)}")
    else:
        of_op = cases_for(op)
        try:
            cases = [find_case(op, args.case)]
        except CaseError as exc:   # a name that is not in the catalogue: usage, not a bug
            raise UsageError(f"{exc}; {where_to_look(op)}") from None
    preflight.seed(args.seed)
    for case in cases:
        preflight.opset_for(case, args.opset)
    others = len(of_op) - 1
    notes = [f"note: {op} has {others + 1} cases; proving the first ({cases[0].name}); --all "
             f"proves every one, --case NAME another"] if not args.all and args.case is None \
        and others else []
    from ...batch.verify import exporter_mode
    scripted, cases, left_out = exporter_mode(None, cases)   # this torch's exporters
    if left_out:
        raise UsageError(f"{', '.join(left_out)} needs the TorchScript exporter, which this "
                         f"torch lacks, and declares no dynamo way")
    if args.opset is not None:   # the variant verify-all --versions proves at that opset
        from ...batch.versions import at_opset
        cases = [at_opset(c, args.opset, scripted) for c in cases]
    notes += [n for n in [default_out(args)] if n]
    check_outputs(args, cases)
    changes = {}
    if args.seed is not None:
        changes["seeds"] = (args.seed, args.seed + 1)
    tags, label, _ = preflight.tags_of(   # another domain's: its -ml docs
        preflight.load_docs(args.tags_from, "" if domain == DEFAULT else domain), args.tags_from)
    for note in notes:   # after every check: a bad argument is one line, never a note and it
        print(note, file=sys.stderr)
    records, worst, markdown = [], EXIT_OK, []
    for case in cases:
        proved = case.replace(**changes) if changes else case
        proof = prove_case(proved, numeric=not args.no_numeric, tags=tags, tag_source=label)
        rec = proof.record()
        records.append(rec)
        if not args.no_write:
            where = write_proof(Path(args.out), proof)
            if args.format == "text":
                print(f"evidence written to {where}", file=sys.stderr)
        if proof.failures:
            worst = EXIT_FINDING
        if args.format == "text":
            sys.stdout.write(report.proof_text(rec, terminal_width()))
        elif args.format == "markdown":
            from ...pr.gen import script_for
            markdown.append((rec, report.proof_markdown(rec, script=script_for(proved))))
    if args.format == "json":   # one shape, --all or not
        sys.stdout.write(report.to_json(documents.proofs_doc(DocKind.PROVE, records, worst)))
    elif markdown:   # GitHub's body limit (output/markdown_limit.py)
        from ...output.markdown_summary import proofs_on_stdout
        text, notes = proofs_on_stdout(markdown, f"`torch-prover prove {op} --case NAME "
                                                 "--format markdown` prints one case whole")
        sys.stdout.write(text)
        for note in notes:
            print(note, file=sys.stderr)
    return worst
