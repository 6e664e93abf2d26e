"""Control flow: If (torch.cond), Loop (torch while_loop, scripted for-loop), Scan (torch scan).

The tensors a branch or body reads from the enclosing scope are not formal inputs of
If/Loop; only what is passed explicitly (cond, M, loop-carried values, scan inputs) is.
"""
import torch
from torch._higher_order_ops import scan, while_loop

from ..case import Bool, Case, Float, Fixed
from ..conventions import Applies, Convention
from ..engine.versions.next_opset import PRIVATE_DOMAIN, PRIVATE_VERSION
from .reference import reference_op

_BODY = ("differentiable through this case's smooth body (both witnesses); the same node with "
         "a Floor body would be flat")


def if_cond_input(pred, x, y):
    return torch.cond(pred, lambda a, b: a * b, lambda a, b: a - b, (x, y))


def loop_while(x):
    return while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 1.5 + 0.25),
                      (torch.tensor(0), x))[1]


def loop_while_value_first(x):
    return while_loop(lambda v, i: i < 3, lambda v, i: (v * 1.5 + 0.25, i + 1),
                      (x, torch.tensor(0)))[0]


class LoopFor(torch.nn.Module):
    def forward(self, x, n):
        for _ in range(int(n)):
            x = torch.sin(x)
        return x


def loop_for_scripted():
    return torch.jit.script(LoopFor())


def _running_sum(carry, x):
    total = carry + x
    return total, total * 2.0


def scan_running_sum(init, xs):
    return scan(_running_sum, init, xs)


def _scan8_emit(initial_state: torch.Tensor, scan_input: torch.Tensor):
    """One Scan-8 node, sequence_lens absent, whose body is _running_sum's as ONNX nodes:
    total = state + x, out = total + total (2 * total). Scan's outputs are variadic, which
    an onnxscript call counts as one; so the node is appended to the exporter's tracer with
    its two outputs, as torch's own Scan translation does (its hop.call_op)."""
    from onnxscript import ir
    from onnxscript.ir import convenience
    from torch.onnx._internal.exporter import _core

    def value(name: str) -> ir.Value:
        return ir.Value(name=name, type=ir.TensorType(initial_state.dtype), shape=ir.Shape([3]))

    state, x = value("scan8_state_in"), value("scan8_x_in")
    add = ir.Node("", "Add", [state, x], num_outputs=1)
    add.outputs[0].name = "scan8_total"
    double = ir.Node("", "Add", [add.outputs[0], add.outputs[0]], num_outputs=1)
    double.outputs[0].name = "scan8_out"
    body = ir.Graph([state, x], [add.outputs[0], double.outputs[0]], nodes=[add, double],
                    name="scan8_running_sum")
    node = ir.Node(PRIVATE_DOMAIN, "Scan", [None, initial_state, scan_input],
                   convenience.convert_attributes({"body": body, "num_scan_inputs": 1}),
                   num_outputs=2, version=PRIVATE_VERSION)
    _core.current_tracer.nodes.append(node)
    return tuple(node.outputs)


@reference_op("Scan", emit=_scan8_emit, opset=8)
def scan8_running_sum(initial_state: torch.Tensor, scan_input: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Scan-8 with a leading batch axis (no sequence_lens: every sequence runs its full
    length T) over _running_sum: per batch b, the final state initial_state[b] +
    sum_t scan_input[b, t] and the scan output 2 * (initial_state[b] + cumsum_t
    scan_input[b, t])."""
    totals = initial_state.unsqueeze(1) + scan_input.cumsum(1)
    return totals[:, -1], 2.0 * totals


def scan8_batch_running_sum(init, xs):
    return scan8_running_sum(init, xs)


CASES = [
    Case("If", "if_torch_cond", if_cond_input, (Bool(), Float(2, 3), Float(2, 3)), ("pred", "x", "y"),
         conventions={"output 0": Applies(Convention.BODY_DEPENDENT, _BODY)},
         notes="torch.cond on a bool graph input; x and y are captured by both branches, "
               "so If's only formal input is cond"),
    Case("Loop", "loop_while_loop", loop_while, (Float(2, 3),), ("x",),
         conventions={k: Applies(Convention.BODY_DEPENDENT, _BODY)
                      for k in ("input 3", "output 1")},
         unexercised={"input 2": "the first loop-carried value is the int64 counter; x, the "
                                 "second, is variadic input 3",
                      "output 0": "the final int64 counter, which no graph output uses"},
         notes="torch while_loop with a constant counter: M is absent, cond and the counter "
               "are constants, x is the second loop-carried value"),
    Case("Loop", "loop_while_value_first", loop_while_value_first, (Float(2, 3),), ("x",),
         conventions={k: Applies(Convention.BODY_DEPENDENT, _BODY)
                      for k in ("input 2", "output 0")},
         unexercised={"input 3": "the second loop-carried value is the int64 counter",
                      "output 1": "the final int64 counter, which no graph output uses"},
         notes="loop_while_loop with the loop-carried values swapped: x is the first (Loop's "
               "input 2 and output 0, which loop_scripted_for reaches only through "
               "TorchScript), the int64 counter the second"),
    Case("Loop", "loop_scripted_for", loop_for_scripted, (Float(2, 3), Fixed(3)), ("x", "n"),
         exporter="torchscript",
         conventions={k: Applies(Convention.BODY_DEPENDENT, _BODY)
                      for k in ("input 2", "output 0")},
         notes="a scripted for-loop (torch.jit.script) over range(int(n)) exports Loop with "
               "the trip count M = graph input n; tracing, or a constant range, unrolls it"),
    Case("Scan", "scan_running_sum", scan_running_sum, (Float(3), Float(4, 3)), ("init", "xs"),
         fails_at={8: "Scan-8 has a batch axis and a sequence_lens input (and no "
                      "scan_input_directions): another signature than this module's scan"},
         conventions={k: Applies(Convention.BODY_DEPENDENT, _BODY)
                      for k in ("input 0", "input 1", "output 0", "output 1")},
         notes="torch scan: one state (init) and one scan input (xs); outputs are the final "
               "state and the stacked per-step outputs"),
    Case("Scan", "scan8_batch_running_sum", scan8_batch_running_sum, (Float(2, 3), Float(2, 4, 3)),
         ("init", "xs"), kind="reference", translation=scan8_running_sum.translation, opset=8,
         opsets=(8, 8),
         conventions={k: Applies(Convention.BODY_DEPENDENT, _BODY)
                      for k in ("input 1", "input 2", "output 0", "output 1")},
         notes="reference: Scan-8 has a leading batch axis and a sequence_lens input, which "
               "Scan-9 dropped (scan_running_sum@8 is refused: no adapter relabels one "
               "signature as the other); its node, with scan_running_sum's body, lowered from the "
               "dynamo exporter's opset 18. A batch of 2 sequences of length 4; sequence_lens "
               "absent (each runs its full length)"),
]
