"""Issue 22's message findings: each bad input is one line on stderr and exit 2 (130 for an
interrupt), before any work, saying what is wrong -- never "internal error", a traceback,
or a wrong reason.

Expectations come from outside the code under test: ONNX's schema history (Relu's first
version), the exporters' documented opset ranges, the file kinds the test plants.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import onnx.defs
import pytest
from cli_lines import deadline
from fix_report import SRC

from torch_prover import cli

TOOL = Path(sys.executable).parent / "torch-prover"




def _one_line(capsys, code, *words, exit_code=2):
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == exit_code and len(lines) == 1, (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _main(capsys, argv, *words, exit_code=2):
    with deadline(60):
        code = cli.main(argv)
    return _one_line(capsys, code, *words, exit_code=exit_code)


# ----------------------------------------------------------------------------- interrupts
def test_ctrl_c_during_torchs_import_is_one_line(tmp_path):
    """torch's import takes seconds; a Ctrl-C 1 s in lands in it."""
    proc = subprocess.Popen([str(TOOL), "prove", "Relu", "--no-write"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() in ("interrupted", "torch-prover prove: interrupted"), err


# ----------------------------------------------------------------------------- internal errors
def test_deeply_nested_waivers_toml_is_one_line(tmp_path, capsys):
    w = tmp_path / "w.toml"
    w.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    _main(capsys, ["verify-all", "--ops", "Relu", "--no-write", "--no-cache", "--waivers", str(w)],
          "waivers", "nested")


@pytest.mark.usefixtures("no_work")
def test_deeply_nested_report_json_is_one_line(tmp_path, capsys):
    rep = tmp_path / "r.json"
    rep.write_text('{"cases": ' + "[" * 100000 + "]" * 100000 + "}")
    _main(capsys, ["fix-tags", "--onnx-src", str(SRC), "--report", str(rep),
                   "-o", str(tmp_path / "fix.patch")], "--report", "nested")


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("opset", ["99999", str(2 ** 70), "0", "-1", "1", "6", "29"])
def test_prove_opset_outside_the_exporters_range_is_usage(tmp_path, capsys, opset):
    """A case is proved at an opset some route reaches (``prove --opset`` takes the variant
    ``verify-all --versions`` proves there): 7, the oldest onnxruntime runs and the
    TorchScript exporter builds, up to the installed onnx's latest."""
    line = _main(capsys, ["prove", "Relu", "--no-write", "--opset", opset], f"--opset {opset}",
                 f"7..{onnx.defs.onnx_opset_version()}")
    assert "broken case" not in line


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("seed", [str(2 ** 63 - 1), str(2 ** 64), str(2 ** 70)])
def test_prove_seed_too_large_is_usage(capsys, seed):
    """The probe seeds torch with S and S+1: both must fit torch's int64 seed."""
    _main(capsys, ["prove", "Relu", "--no-write", "--seed", seed], f"--seed {seed}")


def test_tags_at_an_opset_before_the_ops_first_version(capsys):
    first = min(s.since_version for s in onnx.defs.get_all_schemas_with_history()
                if s.name == "Relu" and s.domain == "")
    line = _main(capsys, ["tags", "Relu", "--opset", "0"], "Relu", "opset 0",
                 f"first version is {first}")
    assert "did you mean" not in line and "unknown" not in line


def test_tags_at_a_huge_opset_is_usage(capsys):
    _main(capsys, ["tags", "Relu", "--opset", str(2 ** 70)], f"--opset {2 ** 70}")


# ----------------------------------------------------------------------------- files
@pytest.mark.usefixtures("no_work")
def test_a_directory_given_as_a_file_is_named_a_directory(tmp_path, capsys):
    line = _main(capsys, ["verify-all", "--ops", "Relu", "--no-write", "--no-cache",
                          "--tags-from", str(tmp_path)], "--tags-from", "directory")
    assert "no such file" not in line


@pytest.mark.usefixtures("no_work")
def test_waivers_naming_a_fifo_is_refused_not_read(tmp_path, capsys):
    fifo = tmp_path / "waivers.toml"
    os.mkfifo(fifo)
    line = _main(capsys, ["verify-all", "--ops", "Relu", "--no-write", "--no-cache",
                          "--waivers", str(fifo)], "--waivers", "FIFO")
    assert "no such file" not in line


def test_a_fifo_cc_under_onnx_defs_is_skipped_with_a_warning(tmp_path, capsys, real_report):
    src = tmp_path / "onnx-src"
    shutil.copytree(SRC, src)
    os.mkfifo(src / "onnx" / "defs" / "pipe.cc")
    rep = real_report("If,Relu")
    with deadline(60):
        code = cli.main(["fix-tags", "--onnx-src", str(src), "--report", str(rep),
                         "-o", str(tmp_path / "fix.patch")])
    err = capsys.readouterr().err
    assert code == 0 and "pipe.cc" in err and "not a regular file" in err, err
    assert (tmp_path / "fix.patch").is_file()


def test_a_non_utf8_cc_under_onnx_defs_is_a_warning(tmp_path, capsys, real_report):
    src = tmp_path / "onnx-src"
    shutil.copytree(SRC, src)
    (src / "onnx" / "defs" / "latin.cc").write_bytes(b"// caf\xe9\n")
    rep = real_report("If,Relu")
    code = cli.main(["fix-tags", "--onnx-src", str(src), "--report", str(rep),
                     "-o", str(tmp_path / "fix.patch")])
    err = capsys.readouterr().err
    assert code == 0 and "latin.cc" in err and "UTF-8" in err, err
    assert "internal error" not in err


def test_a_binary_script_is_one_line(tmp_path, capsys):
    script = tmp_path / "proof.py"
    script.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00\x00")
    line = _main(capsys, ["run", str(script)], str(script))
    assert "UnicodeDecodeError" not in line


def test_a_utf8_bom_in_waivers_is_accepted(tmp_path, capsys, monkeypatch):
    w = tmp_path / "w.toml"
    w.write_bytes(b"\xef\xbb\xbf" + b'[[waiver]]\nop = "Clip"\nparameter = "min"\n'
                  b'reason = "tracked"\n')
    from torch_prover.batch import waivers
    assert waivers.load(w) == [waivers.Waiver("Clip", "min", "tracked")]


# ----------------------------------------------------------------------------- arguments
@pytest.mark.parametrize("argv", [
    ["prove", "Relu", "--bogus"],
    ["verify-all", "--jobs", "x"],
    ["prove"],
    ["tags", "Relu", "--format", "yaml"],
])
def test_argparse_errors_are_one_line(capsys, argv):
    line = _main(capsys, argv, "torch-prover")
    assert "usage:" not in line or len(line) < 200


@pytest.mark.usefixtures("no_work")
def test_prove_all_with_case_is_refused(capsys):
    _main(capsys, ["prove", "Relu", "--all", "--case", "relu_basic", "--no-write"],
          "--all", "--case")


@pytest.mark.usefixtures("no_work")
def test_fix_tags_refuses_a_parameter_without_a_verdict(tmp_path, capsys, real_report):
    """A record without a schema version used to be skipped whole, verdicts unchecked: a
    report is validated against its schema before anything is read from it."""
    doc = json.loads(real_report("If,Relu").read_text())
    del doc["cases"][0]["parameters"][0]["verdict"]
    rep = tmp_path / "r.json"
    rep.write_text(json.dumps(doc))
    _main(capsys, ["fix-tags", "--onnx-src", str(SRC), "--report", str(rep),
                   "-o", str(tmp_path / "fix.patch")], "cases/0", "verdict")


# ----------------------------------------------------------------------------- outputs
def test_an_output_error_after_the_work_names_the_destination(tmp_path, capsys, monkeypatch):
    """The disk fills when the report is swapped in: the message names the report, not the
    temporary file beside it."""
    dest = tmp_path / "proof.py"
    real_rename = os.rename

    def full(src, dst, *a, **k):   # the commit's rename into place (output/commit.py)
        if Path(dst) == dest:
            raise OSError(28, "No space left on device", str(src), str(dst))
        return real_rename(src, dst, *a, **k)
    monkeypatch.setattr(os, "rename", full)
    line = _main(capsys, ["script", "Relu", "-o", str(dest)], str(dest), "No space left")
    assert ".torch-prover-" not in line
    assert sorted(os.listdir(tmp_path)) == []


def test_an_evidence_write_error_names_the_case_directory(tmp_path, capsys, monkeypatch):
    from torch_prover.output import evidence

    def full(d, proof):
        raise OSError(28, "No space left on device", str(d / "model.onnx"))
    monkeypatch.setattr(evidence, "_fill", full)
    out = tmp_path / "out"
    line = _main(capsys, ["prove", "Relu", "--out", str(out), "--no-numeric"],
                 str(out / "Relu" / "relu_basic"), "No space left")
    assert ".torch-prover-" not in line
    assert not any(p.name.startswith(".") for p in out.rglob("*"))


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("content, words", [
    ("{not json", ("proof.json", "damaged")),
    ('{"agenda": "tags"}', ("proof.json", "not a torch-prover record")),
    (json.dumps({"format": 2, "op": "Relu", "case": "relu_other", "parameters": []}),
     ("proof.json", "Relu/relu_other")),
])
def test_a_bad_proof_json_is_named_for_what_it_is(tmp_path, capsys, content, words):
    d = tmp_path / "out" / "Relu" / "relu_basic"
    d.mkdir(parents=True)
    (d / "proof.json").write_text(content)
    line = _main(capsys, ["verify-all", "--ops", "Relu", "--out", str(tmp_path / "out"),
                          "--no-cache"], *words)
    assert "did not write" not in line


def test_a_read_only_warm_cache_is_a_warning(tmp_path, capsys):
    cache = tmp_path / "cache"
    argv = ["verify-all", "--ops", "Relu", "--no-write", "--no-numeric", "--format", "json",
            "--cache-dir", str(cache), "--jobs", "1"]
    assert cli.main(argv) == 0
    capsys.readouterr()
    if subprocess.run(["chattr", "+i", str(cache)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here: no way to make a cache read-only as root")
    try:
        code = cli.main(argv)
    finally:
        subprocess.run(["chattr", "-i", str(cache)], check=True)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "warning" in captured.err and str(cache) in captured.err, captured.err
    assert json.loads(captured.out)["summary"]["cache_hits"] >= 1
