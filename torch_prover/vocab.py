"""The words of a proof record, as enums: tags, evidence classes, witness outcomes, verdicts.

States are data. Code compares these members, never the text of a reason; the output
modules turn them into words. Each is a ``StrEnum`` whose value is the word a record
holds, so ``json.dumps`` writes the word and a record read back compares equal.
"""
from __future__ import annotations

from .compat import StrEnum


class Tag(StrEnum):
    """ONNX's differentiability category of a formal parameter (three explicit states)."""

    DIFF = "differentiable"
    NONDIFF = "non-differentiable"
    UNKNOWN = "unknown"


class Verdict(StrEnum):
    AGREE = "agree"            # the evidence supports the schema's tag, and could have not
    DISAGREE = "disagree"      # the evidence supports the other tag
    PROPOSED = "proposed"      # the tag is unknown; the evidence decides it
    INCONCLUSIVE = "inconclusive"  # not exercised, ambiguous, or the witnesses conflict


class Evidence(StrEnum):
    """What the case showed about one tensor (docs/design.md §1.1)."""

    GRAD = "grad"                  # nonzero gradient
    ZERO_GRAD = "zero-grad"        # gradient identically zero on every seed
    NO_GRAD = "no-grad"            # requires grad, autograd gives None
    UNSUPPORTED = "unsupported"    # PyTorch refuses: a gap in PyTorch, not math
    INTEGER = "integer"            # integer / bool dtype
    CONSTANT = "constant"          # folded into the graph
    ABSENT = "absent"              # optional input not given, or output reaching nothing
    DETACHED = "detached"          # an output autograd does not connect to any input
    UNTRACKED = "untracked"        # floating, but the case asks no gradient for it
    AMBIGUOUS = "ambiguous"        # cannot be attributed to one tensor


class AutogradOutcome(StrEnum):
    """The PyTorch witness, scoped: what autograd says about this node parameter."""

    GRAD = "grad"                  # nonzero gradient through value-preserving glue
    ZERO = "zero"                  # identically zero on every seed
    NONE = "none"                  # no gradient (None), no refusal
    DETACHED = "detached"          # output not connected, every floating node input tracked
    UNSUPPORTED = "unsupported"    # refusal ("not implemented"): decides nothing
    INTEGER = "integer"            # integer dtype: no gradient can exist
    NOT_EXERCISED = "not exercised"  # constant, untracked, absent, or via a computing op


class NumericOutcome(StrEnum):
    """The ONNX witness: the isolated node's own finite differences, per input index."""

    SMOOTH = "smooth"      # nonzero, stable as the step shrinks
    FLAT = "flat"          # zero at every point
    JUMP = "jump"          # grows like 1/step, or the output shape changes
    NONE = "none"          # no floating output to measure
    INTEGER = "integer"    # integer / bool input: not perturbed
    ABSENT = "absent"      # optional input or output not given
    NOT_RUN = "not run"    # could not run (the detail says why), or numeric checks off


class BodyOutcome(StrEnum):
    """The third witness: the op's ONNX function body, the primitive ops' tags pushed through
    it (``engine/bodies/function_body.py``). It decides nothing alone (``engine/rules/verdict.py``)."""

    DIFF = "differentiable"          # a path on which every step is tagged differentiable
    NONDIFF = "non-differentiable"   # no path a gradient can take
    UNKNOWN = "unknown"              # the only paths cross an unknown tag or a body-dependent graph
    NOT_APPLICABLE = "not applicable"  # no function body, a type that carries no gradient, absent
    NOT_BUILT = "not built"          # onnx could not build the body for this node


class ExportRoute(StrEnum):
    """How a case's model reaches its opset (``engine/versions/next_opset.py``)."""

    DIRECT = "direct"      # the exporter at the case's opset
    RAISED = "raised"      # exported at the exporter's newest opset, the node in a private
                           # domain, then moved into ai.onnx and the model raised
    LOWERED = "lowered"    # below the dynamo exporter's oldest opset (18): the node in a
                           # private domain, the model exported at 18 and relabelled down
                           # (deprecated ops: Upsample, Scatter); recorded as relabelled
    RELABELLED = "relabelled"  # a case variant no exporter reaches at its opset directly:
                               # exported at the case's own opset, the model moved to the
                               # variant's (engine/versions/next_opset.relabel_opset)


class DocKind(StrEnum):
    """What a JSON document is: its ``kind`` field, beside its ``format`` (the version of
    that kind's shape). Each has a JSON Schema in ``torch_prover/schemas/<kind>.json``."""

    PROOF = "proof"                # one case's proof record (proof.json, a batch's cases)
    FAILED_CASE = "failed-case"    # a batch case that produced no proof (error, no tags)
    BATCH_REPORT = "batch-report"  # verify-all --format json / --report
    INDEX = "index"                # models/index.json
    COVERAGE = "coverage"          # coverage --format json
    TAGS = "tags"                  # tags --format json
    TAGS_VERSIONS = "tags-versions"  # tags OP --all-versions --format json
    TAGS_EXPLAIN = "tags-explain"  # tags OP --explain --format json
    CHECK_EVIDENCE = "check-evidence"  # check-evidence --format json
    PROVE = "prove"                # prove --format json: its proof records
    RUN = "run"                    # run --format json: the script's proof record
    FIX_TAGS = "fix-tags"          # fix-tags --format json
    NODE_TESTS = "node-tests"      # node-tests --format json, and OUT/node-tests.json
    PR_GATE = "pr-gate"            # verify-all --changed-from BASE --format json
    OUTPUTS = "outputs"            # .torch-prover-outputs.json: the single-file outputs written there
    ERROR = "error"                # any command's --format json when it ends on an error
    TABLE = "table"                # table --format json, and the shipped torch_prover/data/table.json


class Runtime(StrEnum):
    """The ONNX runtime that reproduces a case's outputs from its inputs (the one the
    numeric check ran): what a reviewer runs to re-check the evidence."""

    ONNXRUNTIME = "onnxruntime"
    REFERENCE = "onnx.reference"   # onnx.reference.ReferenceEvaluator: onnxruntime lacks
                                   # the op, the opset or the float64 kernel


class OutputCheck(StrEnum):
    """How a node-test runner should treat one ``output_<j>.pb`` of the evidence."""

    COMPARE = "compare"                   # within the record's forward tolerance
    RANDOM = "random draw"                # one sample of a random op: shape and dtype only
    DECLARED = "declared mismatch"        # the case declares the runtime computes otherwise


class EvidenceStatus(StrEnum):
    """What ``check-evidence`` found for one case directory."""

    MATCH = "match"              # every compared output (and re-checked gradient) agrees
    MISMATCH = "mismatch"        # an output or gradient differs from the record's claim
    NOT_COMPARED = "not compared"  # ran, but every output is a random draw or declared
    CANNOT_RUN = "cannot run"    # not evidence, unreadable, or no runtime can run it


class PointsState(StrEnum):
    """What ONNX's own node tests say about one decided cell (op, schema version, parameter):
    the ONNX-points witness (``engine/onnx_points``, docs/verdicts.md)."""

    AGREE = "agree"                  # D: smooth at an ONNX point; N: never smooth at one
    CONTRADICT = "contradict"        # called N, yet smooth and nonzero at an ONNX point
    NOT_EXERCISED = "not exercised"  # called D, flat (or irregular) at every ONNX point
    NOT_AVAILABLE = "not available"  # no usable node test gives the parameter a float


class PointsSkip(StrEnum):
    """Why one of ONNX's node tests gives no points (``engine/onnx_points/source.py``)."""

    MULTI_NODE = "multi-node"        # several nodes: which one is the op's is not its model
    EXPANDED = "expanded"            # the op's function body, expanded: not the op's node
    OTHER_DOMAIN = "other domain"    # not ai.onnx
    NOT_TENSOR = "not a tensor"      # a sequence, optional or map input or output
    RANDOM = "random"                # a sampling op (its schema has a seed attribute)
    NO_SCHEMA = "no schema"          # onnx.defs has no schema for the op at the test's opset
    UNREADABLE = "unreadable"        # a checkout's files could not be read
    MISMATCH = "runtime mismatch"    # the runtime does not give ONNX's expected outputs
