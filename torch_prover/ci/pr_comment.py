"""Which pull request, if any, gets the comment of a torch-prover run: the decision of the
comment workflow (docs/ci/torch-prover-comment.yml runs ``python -m
torch_prover.ci.pr_comment``; docs/ci.md, "The PR comment").

Why it is code and not the workflow's script: the comment job runs on ``workflow_run``
with a token that can write to every issue and PR of ONNX's repository, and everything in
the artifact it reads was written by the triggering run -- for a fork's PR, by the fork's
own copy of the workflow. So nothing in the artifact chooses where the comment goes. The
PR is the triggering run's: a run of the expected workflow file (``workflow_run.path``;
a fork can add a workflow of the same *name*, not change which file ran in the base
repository) for a ``pull_request`` event, whose head commit (``workflow_run.head_sha``)
and head repository are the PR's head now; the artifact's number is only a claim checked
against that (GitHub leaves ``workflow_run.pull_requests`` empty for a fork's PR, and a
same-repository PR must be among them). A mismatch (a forged number, a PR that has moved
on to a newer commit: a stale run), a run of another file or event, or an artifact without
a comment: no comment, and one line in the step summary saying why (a ``::warning`` for a
mismatch). The comment must fit GitHub's limit with the marker the workflow puts first.

Only the standard library and torch-prover's own light modules are imported: the comment
job installs torch-prover without its dependencies (``pip install --no-deps``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ..compat import StrEnum
from ..inputs import Bound, InputError, read_bytes
from ..output.inert import one_line, workflow_data
from ..output.markdown_limit import COMMENT_LIMIT, COMMENT_MARKER as MARKER

WORKFLOW = ".github/workflows/torch-prover.yml"
"""The file whose runs may comment (docs/ci/torch-prover.yml, copied there)."""

NUMBER_FILE, COMMENT_FILE = "pr-number", "pr-comment.md"


class Post(StrEnum):
    POST = "post"            # the comment goes to the PR of the triggering run
    NOTHING = "nothing"      # nothing to post (not a PR run, no comment written): fine
    REFUSED = "refused"      # the artifact or the run does not check out: a warning


@dataclass(frozen=True)
class Decision:
    post: Post
    why: str                     # one line: what the step summary says
    number: int | None = None    # the PR, when ``post`` is POST
    body: str | None = None      # the comment, when ``post`` is POST


FetchPr = Callable[[int], "Mapping[str, Any] | None"]
"""The PR of a number, as GitHub's REST API gives it (``GET /repos/R/pulls/N``), or None."""


def _full_name(repo: Any) -> str | None:
    return repo.get("full_name") if isinstance(repo, Mapping) else None


def _artifact_number(artifact: Path) -> int | Decision:
    try:
        raw = read_bytes(artifact / NUMBER_FILE, Bound.RECORD, follow=False, head=64)
    except InputError as exc:
        return Decision(Post.REFUSED, f"no comment: the artifact's {NUMBER_FILE}: {exc.problem}")
    text = raw.decode("ascii", "replace").strip()
    if not re.fullmatch(r"[1-9][0-9]{0,9}", text):
        return Decision(Post.REFUSED, f"no comment: the artifact's {NUMBER_FILE} is not a PR "
                                      f"number ({one_line(repr(text[:40]))})")
    return int(text)


def _comment(artifact: Path) -> str | Decision:
    path = artifact / COMMENT_FILE
    if not os.path.lexists(path):
        return Decision(Post.NOTHING, "no comment: the run wrote none (the PR changes no "
                                      "differentiability tag: nothing to prove)")
    try:
        body = read_bytes(path, Bound.REPORT, follow=False).decode("utf-8")
    except InputError as exc:
        return Decision(Post.REFUSED, f"no comment: the artifact's {COMMENT_FILE}: {exc.problem}")
    except UnicodeDecodeError:
        return Decision(Post.REFUSED, f"no comment: the artifact's {COMMENT_FILE} is not UTF-8")
    if len(body) > COMMENT_LIMIT:
        return Decision(Post.REFUSED, f"no comment: the artifact's {COMMENT_FILE} has "
                                      f"{len(body)} characters, over the {COMMENT_LIMIT} a "
                                      "comment has beside its marker")
    return body


def decide(event: Mapping[str, Any], artifact: Path, repository: str, fetch_pr: FetchPr,
           workflow: str = WORKFLOW) -> Decision:
    """Where the comment of the run that triggered ``event`` goes, or why nowhere."""
    run = event.get("workflow_run") if isinstance(event, Mapping) else None
    if not isinstance(run, Mapping):
        return Decision(Post.REFUSED, "no comment: the event is not a workflow_run")
    if run.get("path") != workflow:
        return Decision(Post.REFUSED, f"no comment: the triggering run is of "
                                      f"{one_line(run.get('path'))}, not {workflow}")
    if run.get("event") != "pull_request":
        return Decision(Post.NOTHING, f"no comment: the triggering run was for a "
                                      f"{one_line(run.get('event'))} event, not a pull request")
    if _full_name(run.get("repository")) != repository:
        return Decision(Post.REFUSED, "no comment: the triggering run is of another repository")
    number = _artifact_number(artifact)
    if isinstance(number, Decision):
        return number
    listed = [p.get("number") for p in run.get("pull_requests") or () if isinstance(p, Mapping)]
    if listed and number not in listed:
        return Decision(Post.REFUSED, f"no comment: the artifact names PR #{number}, the "
                                      f"triggering run is of PR {', '.join(f'#{n}' for n in listed)}")
    pr = fetch_pr(number)
    if not isinstance(pr, Mapping):
        return Decision(Post.REFUSED, f"no comment: the artifact names PR #{number}, which "
                                      "this repository does not have")
    head = pr.get("head") if isinstance(pr.get("head"), Mapping) else {}
    if head.get("sha") != run.get("head_sha") or \
            _full_name(head.get("repo")) != _full_name(run.get("head_repository")):
        return Decision(Post.REFUSED, f"no comment: the artifact names PR #{number}, whose head "
                                      f"is not the triggering run's commit "
                                      f"{one_line(run.get('head_sha'))} (a forged number, or "
                                      "the PR has moved on since)")
    if pr.get("state") != "open":
        return Decision(Post.NOTHING, f"no comment: PR #{number} is {one_line(pr.get('state'))}")
    body = _comment(artifact)
    if isinstance(body, Decision):
        return Decision(body.post, body.why.replace("no comment:", f"no comment on PR "
                                                                   f"#{number}:", 1))
    return Decision(Post.POST, f"the comment goes to PR #{number} (the triggering run's, "
                               f"head {one_line(run.get('head_sha'))})", number, body)


def github_pr(repository: str, token: str, api: str = "https://api.github.com") -> FetchPr:
    """``fetch_pr`` from GitHub's REST API (the job's token: ``pull-requests`` read)."""
    def fetch(number: int) -> Mapping[str, Any] | None:
        req = urllib.request.Request(f"{api}/repos/{repository}/pulls/{number}", headers={
            "Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}",
            "X-GitHub-Api-Version": "2022-11-28"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                data = resp.read(Bound.RECORD.limit + 1)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise
        if len(data) > Bound.RECORD.limit:
            return None
        found = json.loads(data)
        return found if isinstance(found, Mapping) else None
    return fetch


def _append(path: str | None, line: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def main(argv: list[str] | None = None, fetch_pr: FetchPr | None = None) -> int:
    """Decide, then write ``number`` and ``body`` (a file) to ``$GITHUB_OUTPUT`` for the
    posting step, and the one line why to ``$GITHUB_STEP_SUMMARY``; exit 0 either way
    (no comment is not a failure of the PR's check), 2 on bad usage."""
    ap = argparse.ArgumentParser(prog="python -m torch_prover.ci.pr_comment")
    ap.add_argument("--artifact", required=True, help="the downloaded artifact's directory")
    ap.add_argument("--event", default=os.environ.get("GITHUB_EVENT_PATH"),
                    help="the workflow_run event (default: $GITHUB_EVENT_PATH)")
    ap.add_argument("--workflow", default=WORKFLOW, help=f"the file whose runs may comment "
                                                         f"(default: {WORKFLOW})")
    args = ap.parse_args(argv)
    repository = os.environ.get("GITHUB_REPOSITORY", "")
    try:
        event = json.loads(read_bytes(args.event or "", Bound.RECORD, "--event"))
    except (InputError, ValueError) as exc:
        print(f"pr_comment: {one_line(exc)}", file=sys.stderr)
        return 2
    fetch = fetch_pr or github_pr(repository, os.environ.get("GITHUB_TOKEN", ""),
                                  os.environ.get("GITHUB_API_URL", "https://api.github.com"))
    d = decide(event, Path(args.artifact), repository, fetch, args.workflow)
    if d.post is Post.REFUSED:
        print(f"::warning title=torch-prover comment::{workflow_data(d.why)}")
    print(f"torch-prover comment: {d.why}")
    _append(os.environ.get("GITHUB_STEP_SUMMARY"), f"torch-prover comment: {d.why}")
    if d.post is Post.POST and d.number is not None and d.body is not None:
        body = Path(args.artifact).parent / "torch-prover-comment-body.md"
        body.write_text(MARKER + "\n" + d.body, encoding="utf-8")
        _append(os.environ.get("GITHUB_OUTPUT"), f"number={d.number}\nbody={body}")
    return 0


if __name__ == "__main__":   # pragma: no cover - the workflow's entry
    sys.exit(main())
