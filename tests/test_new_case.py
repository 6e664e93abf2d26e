"""``new-case OP``: a case scaffold from the schema, refused until completed, then accepted
by the catalogue's own checks. Expectations come from onnx.defs (the schema's inputs,
type constraints and attribute defaults) and from HardSigmoid's math (max(0, min(1,
alpha*x + beta)): differentiable in X, almost everywhere)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import onnx.defs
import onnx.helper
import pytest

import torch_prover.cases as cases
from catalogue_checks import unexplained_parameters, verdict_problems
from docs_examples import assert_example
from torch_prover import cli
from torch_prover.engine.prove import prove_case


def _scaffold(op: str, capsys) -> str:
    assert cli.main(["new-case", op, "-o", "-"]) == 0
    return capsys.readouterr().out


def _reference(text: str) -> ast.FunctionDef:
    """The function the scaffold decorates with @reference_op."""
    return next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)
                and any("reference_op" in ast.unparse(d) for d in n.decorator_list))


def _case_call(text: str) -> ast.Call:
    cases_ = next(n for n in ast.parse(text).body if isinstance(n, ast.Assign)
                  and ast.unparse(n.targets[0]) == "CASES")
    return cases_.value.elts[0]


def test_the_scaffold_follows_the_schema(capsys):
    text = _scaffold("HardSigmoid", capsys)
    assert_example("new-case-hardsigmoid", "$ torch-prover new-case HardSigmoid -o -\n" + text)
    schema = onnx.defs.get_schema("HardSigmoid")
    ref = _reference(text)
    params = [a.arg for a in ref.args.args]
    assert params[:len(schema.inputs)] == [i.name for i in schema.inputs]
    defaults = dict(zip(params[-len(ref.args.defaults):], ref.args.defaults))
    for name, attr in schema.attributes.items():   # at the schema's default (float32)
        want = onnx.helper.get_attribute_value(attr.default_value)
        assert np.float32(ast.literal_eval(defaults[name])) == np.float32(want)
    call = _case_call(text)
    specs = [ast.unparse(e) for e in call.args[3].elts]
    assert specs == ["Float(2, 3)"]          # T allows floating types
    assert ast.literal_eval(call.args[4]) == tuple(i.name for i in schema.inputs)
    assert 'SCAFFOLD = "' in text and "raise NotImplementedError" in text


@pytest.mark.parametrize("op", ["Gemm", "RotaryEmbedding", "CumProd", "TopK"])
def test_optional_inputs_float32_and_the_raised_route_come_from_the_schema(op, capsys):
    text = _scaffold(op, capsys)
    compile(text, f"{op}.py", "exec")
    schema = onnx.defs.get_schema(op)
    ref = _reference(text)
    opt = onnx.defs.OpSchema.FormalParameterOption.Optional
    for i, formal in enumerate(schema.inputs):
        ann = ast.unparse(ref.args.args[i].annotation)
        assert ann == ("torch.Tensor | None" if formal.option == opt else "torch.Tensor"), ann
    types = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    floats = [types.get(f.type_str, {f.type_str}) for f in schema.inputs
              if types.get(f.type_str, {f.type_str}) & {"tensor(float)", "tensor(double)"}]
    no_double = bool(floats) and not any("tensor(double)" in t for t in floats)
    assert ("float_dtype=torch.float32" in text) == no_double
    raised = schema.since_version > 25   # newer than the exporter (case.DEFAULT_OPSET)
    assert (f'@reference_op("{op}", opset={schema.since_version})' in text) == raised
    for i, formal in enumerate(schema.inputs):   # an integer-only input gets an Int spec
        allowed = types.get(formal.type_str, {formal.type_str})
        spec = ast.unparse(_case_call(text).args[3].elts[i])
        if not allowed & {"tensor(float)", "tensor(double)", "tensor(float16)",
                          "tensor(bfloat16)"} and "tensor(int64)" in allowed:
            assert spec.startswith("Int(") and "torch.int64" in spec


@pytest.fixture
def catalogue_dir(tmp_path, monkeypatch):
    """An extra catalogue directory: modules in it are discovered as catalogue modules
    (``torch_prover.cases.<name>``), the catalogue's caches cleared before and after."""
    extra = tmp_path / "catalogue"
    extra.mkdir()
    monkeypatch.setattr(cases, "__path__", [*cases.__path__, str(extra)])

    _rediscover()
    yield extra
    _rediscover()


def _rediscover() -> None:
    """Discover the catalogue afresh, as a new process would (its caches, the modules)."""
    for fn in (cases.all_cases, cases.all_missing, cases._module_index):
        fn.cache_clear()
    for name in [m for m in sys.modules if m.startswith("torch_prover.cases.hard_sig")]:
        del sys.modules[name]


def test_an_unwritten_scaffold_is_refused_and_a_written_one_accepted(catalogue_dir, capsys,
                                                                     monkeypatch):
    text = _scaffold("HardSigmoid", capsys)
    module = catalogue_dir / "hard_sigmoid.py"
    module.write_text(text)
    _rediscover()
    monkeypatch.chdir(catalogue_dir)
    assert cli.main(["prove", "HardSigmoid"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "new-case scaffold not yet completed" in err
    assert_example("new-case-refused", "$ torch-prover prove HardSigmoid\n" + err)

    written = text.replace('SCAFFOLD = "', '# was SCAFFOLD: "').replace(
        '    raise NotImplementedError("TODO: HardSigmoid\'s function (a new-case scaffold)")',
        "    return torch.clamp(alpha * X + beta, 0.0, 1.0)")
    assert written != text
    module.write_text(written)
    _rediscover()
    mine = [c for c in cases.all_cases() if c.op == "HardSigmoid"
            and cases.module_of(c) == "torch_prover.cases.hard_sigmoid"]
    assert len(mine) == 1
    proofs = {c.name: prove_case(c) for c in mine}
    assert verdict_problems(mine[0], proofs[mine[0].name]) == []
    assert unexplained_parameters(mine, proofs.__getitem__) == []
    assert {(p.io, p.verdict) for p in proofs[mine[0].name].parameters} == {
        ("input", "agree"), ("output", "agree")}   # X and Y: differentiable, as tagged


def _checkout(root: Path) -> Path:
    (root / "torch_prover" / "cases").mkdir(parents=True)
    (root / "models").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "torch-prover"\n')
    return root


def test_in_a_checkout_it_writes_into_the_catalogue_never_over_a_file(tmp_path, monkeypatch,
                                                                      capsys):
    root = _checkout(tmp_path / "checkout")
    monkeypatch.chdir(root)
    assert cli.main(["new-case", "HardSigmoid"]) == 0
    assert cli.main(["new-case", "HardSigmoid"]) == 0
    written = sorted(p.name for p in (root / "torch_prover" / "cases").iterdir())
    assert written == ["hard_sigmoid.py", "hard_sigmoid_2.py"]
    out = capsys.readouterr().out
    assert "wrote torch_prover/cases/hard_sigmoid.py: a case scaffold for HardSigmoid-" in out
    mine = root / "mine.py"
    mine.write_text("keep me\n")
    assert cli.main(["new-case", "HardSigmoid", "-o", "mine.py"]) == 2
    assert mine.read_text() == "keep me\n"
    assert "-o mine.py: exists; new-case writes a new file only" in capsys.readouterr().err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert cli.main(["new-case", "HardSigmoid"]) == 2
    assert "not in a torch_prover checkout" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []
    assert cli.main(["new-case", "Relux"]) == 2
    assert "did you mean Relu" in capsys.readouterr().err


def test_every_ops_scaffold_is_a_module_the_reference_machinery_accepts():
    """Each non-deprecated op's scaffold, run as a module, passes reference_op's checks of
    its signature against the schema (inputs, attribute names and types). In a child
    process: the ~200 reference ops it registers stay out of this one."""
    import subprocess
    code = (
        "import onnx.defs\n"
        "from torch_prover.gate.scaffold import render\n"
        "from torch_prover.tags.schema import all_ops\n"
        "bad = []\n"
        "ops = [op for op in all_ops() if not onnx.defs.get_schema(op).deprecated]\n"
        "for op in ops:\n"
        "    try:\n"
        "        exec(compile(render(op)[0], op, 'exec'), {'__name__': 'scaffold_' + op})\n"
        "    except Exception as exc:\n"
        "        bad.append(f'{op}: {type(exc).__name__}: {exc}'.splitlines()[0])\n"
        "print(len(ops)); print('\\n'.join(bad))\n")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    count, *bad = done.stdout.strip().split("\n")
    assert int(count) == len([s for s in onnx.defs.get_all_schemas() if s.domain == ""
                              and not s.deprecated])
    assert bad == [], bad


def test_next_lines_say_where_a_case_must_live_and_to_commit_its_evidence(tmp_path, capsys):
    """Outside a checkout's torch_prover/cases/ the scaffold is no case yet: the next lines
    say to move it there (issue 34: they named a case that did not exist), and always to
    regenerate and commit models/."""
    from torch_prover import cli
    assert cli.main(["new-case", "Softplus", "-o", str(tmp_path / "sp.py")]) == 0
    out = capsys.readouterr().out
    assert "move it there first" in out
    assert "verify-all --versions all && torch-prover verify-all" in out
    assert "models/" in out
