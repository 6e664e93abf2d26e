"""PyTorch's gradient conventions named, torch.func credited, nodes labelled (issue 41 item 3).

Expectations from the math: Gather's derivative in its table is 1 at every looked-up row,
padding row included, so ``nn.Embedding(padding_idx=0)``'s zeroed row is PyTorch's
convention, not the op's; the table and the output are differentiable (both witnesses).
``a * b * c`` is differentiable in each of a, b, c wherever the others are nonzero.
"""
from __future__ import annotations

from test_script_runner import params, run, write

EMBEDDING = """
    \"\"\"Gather: an embedding lookup; the table is differentiable.\"\"\"
    import torch

    torch.manual_seed(0)


    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(5, 3, {options})

        def forward(self, idx):
            return self.emb(idx)


    m = M()
    idx = torch.tensor([[0, 2, 0], [4, 0, 1]])
    y = m(idx)
    y.backward(torch.randn_like(y))
    torch.onnx.export(m, (idx,), "emb.onnx", input_names=["idx"], dynamo=True)
"""


def test_padding_idx_is_named_and_the_witnesses_decide(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "gather_embedding.py", EMBEDDING.format(options="padding_idx=0"))
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert rec["op"] == "Gather" and rec["status"] == "proved"
    table = params(rec)["input", 0]
    assert (table["verdict"], table["rule"], table["vjp"]) == (
        "agree", "both witnesses", "explained by a PyTorch convention")
    assert "padding_idx=0" in table["reason"]
    assert "padding_idx=0" in rec["script"]["gradient_conventions"]["emb.weight"]
    assert params(rec)["output", 0]["verdict"] == "agree"
    code, _, out = run(tmp_path, monkeypatch, capsys, script, fmt="text")
    assert code == 0 and "gradient convention: emb.weight: padding_idx=0" in out.out


def test_scale_grad_by_freq_is_named(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "gather_freq.py",
                   EMBEDDING.format(options="scale_grad_by_freq=True"))
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert "scale_grad_by_freq" in rec["script"]["gradient_conventions"]["emb.weight"]
    assert params(rec)["input", 0]["verdict"] == "agree"


def test_without_a_convention_nothing_is_named(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "gather_plain.py", EMBEDDING.format(options=""))
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert rec["script"]["gradient_conventions"] == {}
    assert params(rec)["input", 0]["vjp"] == "passed"


FUNC = """
    \"\"\"Mul: every factor differentiable, shown with torch.func.\"\"\"
    import torch


    class M(torch.nn.Module):
        def forward(self, a, b, c):
            return a * b * c


    a, b, c = (torch.randn(2, 3) for _ in range(3))
    {call}
    torch.onnx.export(M(), (a, b, c), "m.onnx", input_names=["a", "b", "c"], dynamo=True)
"""


def test_torch_func_grad_credits_every_argnum(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "mul_func.py", FUNC.format(
        call="torch.func.grad(lambda a, b, c: M()(a, b, c).sum(), argnums=(0, 1, 2))(a, b, c)"))
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    s = rec["script"]
    assert [b["api"] for b in s["backward"]] == ["torch.func.grad"]
    assert set(s["gradients"]) == {"a", "b", "c"}
    assert all(g.startswith("nonzero") for g in s["gradients"].values())


def test_torch_func_vjp_credits_every_primal(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "mul_vjp.py", FUNC.format(
        call="y, fn = torch.func.vjp(M(), a, b, c)\n    fn(torch.ones_like(y))"))
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    s = rec["script"]
    assert [b["api"] for b in s["backward"]] == ["torch.func.vjp"]
    assert s["backward"][0]["targets"] == ["output 0 with a dy"]
    assert set(s["gradients"]) == {"a", "b", "c"}


def test_two_nodes_of_one_op_are_labelled_by_node(tmp_path, monkeypatch, capsys):
    """a * b * c exports two Mul nodes: each proof's case name carries its node index."""
    script = write(tmp_path, "mul_func.py", FUNC.format(
        call="torch.func.grad(lambda a, b, c: M()(a, b, c).sum(), argnums=(0, 1, 2))(a, b, c)"))
    code, _, out = run(tmp_path, monkeypatch, capsys, script, fmt="text")
    assert code == 0
    assert "Mul / mul_func_mul_0" in out.out and "Mul / mul_func_mul_1" in out.out
