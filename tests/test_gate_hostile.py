"""What a fork controls cannot reach ONNX's bot unchecked (issue 40, item 3; docs/safety.md).

- The comment workflow's PR lookup (``ci.pr_comment``): the comment goes to the PR of the
  triggering run or nowhere, whatever number the artifact claims (a forged one, another
  PR's, a stale run's), and the step summary says why in one line. The module runs with
  torch-prover's dependencies absent (the comment job installs it with ``--no-deps``) and
  asks GitHub's REST API, here a local HTTP server, for the PR.
- Names a PR chooses (a node test's directory, a parameter, a waiver's reason, a path) are
  inert in the PR comment and the step summary -- rendered by markdown-it-py, a CommonMark
  implementation that is not ours: no link, image or HTML, no ``@mention``, ``#N`` or URL
  outside a code span -- and in the annotations, JUnit and a one-line error (no control
  character, no new line, nothing GitHub reads as a workflow command).
- A PR's node-test files that are a FIFO, a symlink to /dev/zero or a 3 GiB sparse file each
  give one line, in bounded memory, without a hang (a subprocess with a timeout and an
  address-space limit).
- The install steps refuse a torch-prover that is not named by its content, and zizmor
  (the auditor persona, offline) finds nothing in docs/ci/*.yml.
"""
from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from torch_prover import cli
from torch_prover.ci import pr_comment
from torch_prover.ci.github import annotations, Locator, summary_markdown
from torch_prover.ci.junit import junit_xml
from torch_prover.ci.outcomes import Grain, Result, Test, Why
from torch_prover.gate.comment import markdown, text
from torch_prover.output.markdown_limit import COMMENT_MARKER, PR_BODY_LIMIT

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / "docs" / "ci").glob("*.yml"))
REPO = "onnx/onnx"
HEAD = "a" * 40


# ----------------------------------------------------------------------------- the PR lookup
def _event(pull_requests=(), path=".github/workflows/torch-prover.yml", event="pull_request",
           head=HEAD, head_repo="fork/onnx"):
    return {"workflow_run": {"path": path, "event": event, "head_sha": head,
                             "repository": {"full_name": REPO},
                             "head_repository": {"full_name": head_repo},
                             "pull_requests": [{"number": n} for n in pull_requests]}}


def _pr(number, head=HEAD, head_repo="fork/onnx", state="open"):
    return {"number": number, "state": state,
            "head": {"sha": head, "repo": {"full_name": head_repo}}}


PRS = {7: _pr(7), 8: _pr(8, head="b" * 40, head_repo="someone/onnx"),
       9: _pr(9, head="c" * 40, head_repo="fork/onnx")}
"""GitHub's PRs: #7 is the fork's PR whose head the triggering run built; #8 is another
user's PR; #9 is the same fork's PR at another commit."""


def _artifact(tmp_path, number="7", comment="## torch-prover\n\nbody\n"):
    d = tmp_path / "torch-prover-pr"
    d.mkdir()
    if number is not None:
        (d / "pr-number").write_text(number + "\n")
    if comment is not None:
        (d / "pr-comment.md").write_text(comment, encoding="utf-8")
    return d


@pytest.mark.parametrize("event, number, comment, post, to, says", [
    # a fork's run: GitHub lists no PR, the artifact's number is checked against the PR's head
    (_event(), "7", "c", "post", 7, "goes to PR #7"),
    # forged: another user's PR, the same fork's other PR, one the repository lacks
    (_event(), "8", "c", "refused", None, "PR #8, whose head is not the triggering run's"),
    (_event(), "9", "c", "refused", None, "PR #9, whose head is not the triggering run's"),
    (_event(), "12345", "c", "refused", None, "PR #12345, which this repository does not have"),
    # a same-repository run lists its PR: the artifact must name it
    (_event([7], head_repo=REPO), "8", "c", "refused", None,
     "the artifact names PR #8, the triggering run is of PR #7"),
    # not a number; a number with a mention after it
    (_event(), "7 @everyone", "c", "refused", None, "is not a PR number"),
    (_event(), None, "c", "refused", None, "pr-number: no such file"),
    # a run of another workflow file (a fork can add one named torch-prover), another event
    (_event(path=".github/workflows/evil.yml"), "7", "c", "refused", None,
     "the triggering run is of .github/workflows/evil.yml"),
    (_event(event="push"), "7", "c", "nothing", None, "a push event, not a pull request"),
    # the PR moved on since the run: a stale run's comment would overwrite a newer one
    (_event(head="d" * 40), "7", "c", "refused", None, "or the PR has moved on since"),
    # nothing to say: the run wrote no comment (no tag changed)
    (_event(), "7", None, "nothing", None, "no comment on PR #7: the run wrote none"),
    # too long to post with the marker
    (_event(), "7", "x" * (PR_BODY_LIMIT - len(COMMENT_MARKER)), "refused", None,
     "over the 65514 a comment has beside its marker"),
])
def test_the_comment_goes_to_the_triggering_runs_pr_or_nowhere(tmp_path, event, number,
                                                                 comment, post, to, says):
    asked = []
    d = pr_comment.decide(event, _artifact(tmp_path, number, comment), REPO,
                          lambda n: asked.append(n) or PRS.get(n))
    assert (d.post, d.number) == (post, to), d
    assert says in d.why and "\n" not in d.why
    if d.post == "post":
        assert d.body == comment


class _Api(http.server.BaseHTTPRequestHandler):
    """GitHub's REST API, the one route the lookup asks: ``GET /repos/R/pulls/N``."""

    def do_GET(self):   # noqa: N802 (the stdlib's name)
        m = re.fullmatch(rf"/repos/{REPO}/pulls/(\d+)", self.path)
        pr = PRS.get(int(m[1])) if m else None
        ok = pr is not None and self.headers["Authorization"] == "Bearer t0ken"
        data = json.dumps(pr if ok else {"message": "Not Found"}).encode()
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


BLOCKED = "import sys; sys.modules.update(dict.fromkeys(" \
          "['torch', 'onnx', 'onnxruntime', 'onnxscript', 'numpy', 'junitparser', 'jsonschema']))"


@pytest.mark.parametrize("number, posted", [("7", True), ("8", False)])
def test_the_workflows_lookup_runs_without_torch_prover_dependencies(tmp_path, api, number,
                                                                      posted):
    """``python -m torch_prover.ci.pr_comment`` as the comment job runs it (torch, onnx,
    numpy unimportable): the forged #8 gets nothing, a warning and one summary line."""
    artifact = _artifact(tmp_path, number, "## torch-prover\n")
    (tmp_path / "event.json").write_text(json.dumps(_event()))
    out, summary = tmp_path / "output", tmp_path / "summary.md"
    env = {**os.environ, "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
           "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": "t0ken", "GITHUB_API_URL": api,
           "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", BLOCKED + "; import runpy; sys.argv[1:] = "
                           f"['--artifact', {str(artifact)!r}]; runpy.run_module("
                           "'torch_prover.ci.pr_comment', run_name='__main__')"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert summary.read_text().count("\n") == 1
    if posted:
        outputs = dict(x.split("=", 1) for x in out.read_text().splitlines())
        assert outputs["number"] == "7"
        body = Path(outputs["body"]).read_text()
        assert body == COMMENT_MARKER + "\n## torch-prover\n"
    else:
        assert not out.exists()
        assert done.stdout.startswith("::warning ") and "PR #8" in summary.read_text()


# ----------------------------------------------------------------------------- inert names
HOSTILE = ["@octocat", "[a link](https://evil.example/x)", "![img](https://evil.example/i.png)",
           "<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "x`y``z`",
           "`", "#1234 https://evil.example www.evil.example", "\x1b[31mred\x1b]8;;https://e\x07",
           "line\n::error::forged\r\n::add-mask::x", "a\\|b | c", "**bold** _i_ ~~s~~",
           "x\\|<img src=x onerror=alert(1)>", "\u202egnp.exe"]
"""Names a PR can choose: its node-test directories (any byte but / and NUL), its docs'
parameter names, its waivers' reasons."""


def _doc(name: str) -> dict:
    """A pr-gate document whose every PR-chosen string is ``name``."""
    witness = {"case": name, "opset": None, "verdict": "disagree",
               "supports": "non-differentiable", "rule": "case-free",
               "reason": f"case-free ({name}, {name})", "command": f"torch-prover prove {name}",
               "declared": None}
    param = {"io": "input", "index": 0, "name": name, "base": "differentiable",
             "pr": "differentiable", "base_name": name + "2", "inherited": None,
             "verdict": "waived", "supports": "non-differentiable",
             "why": f"the evidence supports non-differentiable; waived: {name}", "waiver": name,
             "witnesses": [witness, {**witness, "verdict": "inconclusive"}]}
    change = {"op": "Relu", "version": 14, "kind": "changed tags", "parameters": [param],
              "gaps": [{"case": name, "why": name}], "no_case": True, "unbuilt": True,
              "new_case": f"torch-prover new-case {name}"}
    return {"exit_code": 0, "reason": "1 changed tags, none refuted", "status": "ok",
            "base": {"path": name, "kind": "Changelog.md", "source": name, "latest_only": False},
            "pr": {"path": name, "onnx": "1.23.2", "source": name},
            "summary": {"versions_compared": 1}, "changes": [change],
            "failed": [{"case": name, "op": name, "status": "error", "error": name}],
            "also": [{"op": "Relu", "version": 14, "case": name, "io": "input", "index": 0,
                      "name": name, "tag": "differentiable", "supports": "non-differentiable",
                      "declared": False}],
            "removed": [name]}


def _inert_markdown(md: str, name: str) -> None:
    """``md`` rendered by markdown-it-py (CommonMark and GFM tables): no link, image or
    HTML of the name's; outside code spans, no mention, issue reference or URL; no
    control character and no line GitHub would read as a workflow command."""
    from markdown_it import MarkdownIt
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f]", md)
    assert not [line for line in md.splitlines() if line.lstrip().startswith("::")]
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    ours = ("<details>", "<summary>", "</details>", "<br>")
    for tok in tokens:
        assert tok.type != "html_block" or tok.content.strip().startswith(ours), tok.content
        for child in tok.children or ():
            assert child.type not in ("link_open", "image", "autolink"), child
            assert child.type != "html_inline" or child.content in ours, child.content
            if child.type == "text":
                assert not re.search(r"(?<!\w)@\w|#\d|https?://|www\.", child.content), \
                    child.content


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_names_a_pr_chose_are_inert_in_the_comment_and_its_text(name):
    doc = _doc(name)
    md = markdown(doc)
    _inert_markdown(md, name)
    for line in text(doc, width=None).splitlines():
        assert not line.startswith("::") and "\x1b" not in line and "\r" not in line


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_names_a_pr_chose_are_inert_in_annotations_junit_and_the_step_summary(name):
    found = [Test(Grain.PARAMETER, name, "", 14, "input", 0, name, Result.FAILED, Why.REFUTED,
                  f"the evidence supports {name}", (name,), f"torch-prover prove {name}")]
    for line in annotations(found, Locator(None)):
        assert "\n" not in line and "\r" not in line and "\x1b" not in line
        assert line.startswith("::error title=torch-prover%3A ")
    root = ET.fromstring(junit_xml(found, name).encode())
    case = next(root.iter("testcase"))
    for value in (case.get("name"), case.get("classname"), root.find("testsuite").get("name")):
        assert not re.search("[\x00-\x1f\x7f]", value)
    summary = summary_markdown(found, {"status": "failed", "reason": name}, f"verify {name}")
    _inert_markdown(summary, name)


@pytest.mark.parametrize("flag", ["--report", "--changed-from"])
def test_problem_09_a_path_with_a_new_line_is_one_line_on_stderr(tmp_path, capsys, flag):
    """Issue 42, problem 9: a path holding a new line, a workflow command and an ANSI
    escape is one line on stderr, the command shown, never a line GitHub reads."""
    base = tmp_path / "Changelog.md"
    base.write_text((ROOT / "tests" / "data" / "Changelog.md").read_text(encoding="utf-8"),
                    encoding="utf-8")
    parent = tmp_path / "a file\n::error::forged\x1b[31m"   # not a directory: refused
    parent.write_text("")
    hostile = str(parent / "r.md")
    args = {"--report": [str(base), "--report", hostile], "--changed-from": [hostile]}[flag]
    code = cli.main(["verify-all", "--changed-from", *args, "--no-write"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.endswith("\n"), err
    assert "\\n::error::forged\\x1b[31m" in err and "\x1b" not in err


# ----------------------------------------------------------------------------- node-test files
HOSTILE_FILES = r"""
import os, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (3 * 2 ** 30, 3 * 2 ** 30))
from torch_prover.engine.onnx_points import source
found = source.from_checkout(Path(sys.argv[1]))
for t in found:
    print(type(t).__name__, t.name, getattr(t, "detail", ""), sep="|")
print("maxrss_kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@pytest.mark.parametrize("kind, where, says", [
    ("fifo", "model.onnx", "model.onnx: is a FIFO, not a regular file"),
    ("dev-zero", "model.onnx", "model.onnx: is a symlink, not a regular file"),
    ("sparse", "model.onnx", "model.onnx: 3221225472 bytes, too large to be a node-test"),
    ("fifo", "test_data_set_0/input_0.pb", "input_0.pb: is a FIFO"),
    ("dev-zero", "test_data_set_0/output_0.pb", "output_0.pb: is a symlink"),
    ("sparse", "test_data_set_0/input_0.pb", "input_0.pb: 3221225472 bytes, too large"),
])
def test_a_prs_hostile_node_test_is_one_line_in_bounded_memory(tmp_path, kind, where, says):
    import shutil
    node = tmp_path / "onnx" / "backend" / "test" / "data" / "node"
    real = Path(__file__).parent / "data" / "onnx-node-tests" / "onnx" / "backend" / "test" \
        / "data" / "node" / "test_abs"
    shutil.copytree(real, node / "test_abs")
    shutil.copytree(real, node / "test_evil")
    target = node / "test_evil" / where
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    else:
        with open(target, "wb") as f:
            f.truncate(3 * 2 ** 30)
    done = subprocess.run([sys.executable, "-c", HOSTILE_FILES, str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    evil = [x for x in lines if x.split("|")[1:2] == ["test_evil"]]
    assert len(evil) == 1 and evil[0].startswith("Skipped|test_evil|") and says in evil[0]
    assert [x.split("|")[0] for x in lines if "|test_abs|" in x] == ["NodeTest"]
    assert int(lines[-1].split()[1]) < 1024 * 1024     # kB: under 1 GiB resident


# ----------------------------------------------------------------------------- the workflows
def _install_steps():
    from ruamel.yaml import YAML
    for path in WORKFLOWS:
        flow = YAML(typ="safe").load(path.read_text())
        for job in flow["jobs"].values():
            for step in job["steps"]:
                if "TORCH_PROVER_SPEC" in step.get("run", ""):
                    yield path, flow["env"], step["run"]


@pytest.mark.parametrize("spec, ok", [
    ("", False), ("torch-prover", False), ("torch-prover==1.0.0", False),
    ("torch-prover @ git+https://github.com/o/torch-prover@main", False),
    ("torch-prover @ https://example.org/torch_prover-1.0-py3-none-any.whl", False),
    ("torch-prover @ git+https://github.com/o/torch-prover@" + "0123456789" * 4, True),
    ("torch-prover @ https://example.org/torch_prover-1.0-py3-none-any.whl#sha256="
     + "ab" * 32, True),
])
def test_torch_prover_is_installed_only_by_its_content(tmp_path, spec, ok):
    """Each install step of both workflows (python stubbed: the check is what is tested)."""
    steps = list(_install_steps())
    assert len(steps) == 4
    for path, env, script in steps:
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               'python() { echo "python $*"; }\n' + script],
                              env={**os.environ, **{k: str(v) for k, v in env.items()},
                                   "TORCH_PROVER_SPEC": spec, "RUNNER_TEMP": str(tmp_path)},
                              capture_output=True, text=True, cwd=tmp_path)
        if ok:
            assert done.returncode == 0 and spec in done.stdout, (path, done.stdout)
        else:
            assert done.returncode == 1, (path, done.stdout)
            assert done.stdout.startswith("::error::TORCH_PROVER_SPEC must name torch-prover "
                                          "by its content") and "docs/ci.md" in done.stdout


def test_zizmor_finds_nothing_in_the_workflows():
    """zizmor, the auditor persona, offline: nothing, or each finding suppressed inline
    with its reason (``# zizmor: ignore[rule]`` after a comment saying why)."""
    done = subprocess.run([str(Path(sys.executable).parent / "zizmor"), "--persona",
                           "auditor", "--offline", "--no-progress", *map(str, WORKFLOWS)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr
    for path in WORKFLOWS:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "zizmor: ignore[" in line:
                assert lines[i - 1].lstrip().startswith("#"), (path, line)   # the reason


def test_the_comment_workflow_posts_only_where_the_lookup_says():
    """The comment job runs for the expected workflow file only, in one concurrency group
    per PR branch; the posting step runs only when the lookup named a PR and reads neither
    the artifact's number nor its comment (the lookup's checked copy); the full check on
    main is never cancelled, a PR's older run is."""
    from ruamel.yaml import YAML
    comment = YAML(typ="safe").load((ROOT / "docs/ci/torch-prover-comment.yml").read_text())
    job = comment["jobs"]["comment"]
    assert f"github.event.workflow_run.path == '{pr_comment.WORKFLOW}'" in job["if"]
    assert "head_branch" in comment["concurrency"]["group"]
    assert comment["concurrency"]["cancel-in-progress"] is False
    lookup, post = job["steps"][-2], job["steps"][-1]
    assert "python -m torch_prover.ci.pr_comment" in lookup["run"] and lookup["id"] == "target"
    assert post["if"] == "steps.target.outputs.number != ''"
    assert post["env"] == {"PR_NUMBER": "${{ steps.target.outputs.number }}",
                           "BODY": "${{ steps.target.outputs.body }}"}
    assert "pr-number" not in post["with"]["script"] and "pr-comment" not in post["with"]["script"]
    gate = YAML(typ="safe").load((ROOT / "docs/ci/torch-prover.yml").read_text())
    assert gate["concurrency"]["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"
    assert "github.run_id" in gate["concurrency"]["group"]
    builds = [s for j in gate["jobs"].values() for s in j["steps"]
              if re.search(r"pip (install|wheel) [^\n]*--no-deps -v", s.get("run", ""))]
    # the push path builds onnx once (build-onnx); the PR job's build step is its own path
    assert [s["name"] for s in builds] == [
        "Build the PR's onnx (only when it adds versions the installed onnx lacks)",
        "Build onnx's wheel"]
