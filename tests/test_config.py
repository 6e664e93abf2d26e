"""``[tool.torch-prover]`` in pyproject.toml: found as ruff finds its settings, under the
flags, paths relative to the file, and every mistake one line (exit 2) before any work."""
from __future__ import annotations

from pathlib import Path

import pytest

from docs_examples import assert_example
from torch_prover import cli, config
from torch_prover.batch import verify
from torch_prover.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent


def _project(root: Path, table: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n[tool.torch-prover]\n{table}')
    return root


def test_torch_provers_own_pyproject_changes_nothing():
    """It has no [tool.torch-prover] table: passed over, as a ruff run would pass it over."""
    assert "[tool.torch-prover]" not in (ROOT / "pyproject.toml").read_text()
    assert config.find(ROOT) is None or config.find(ROOT)[0] != ROOT / "pyproject.toml"
    assert config.load(ROOT / "tests").get("jobs") is None


def test_the_nearest_file_with_the_table_wins_and_paths_resolve_against_it(tmp_path):
    top = _project(tmp_path / "repo", 'jobs = 3\ncache-dir = "cache"\nwaivers = "w.toml"\n'
                                      'tags-from = "docs/Changelog.md"\n')
    inner = top / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "inner"  # torch-prover: none\n')
    deep = inner / "a" / "b"
    deep.mkdir(parents=True)
    found = config.load(deep)
    assert found.path == top / "pyproject.toml"
    assert found.values == {"jobs": 3, "cache_dir": str(top / "cache"),
                            "waivers": str(top / "w.toml"),
                            "tags_from": str(top / "docs" / "Changelog.md")}
    assert config.load(tmp_path).path is None


@pytest.mark.parametrize("table, says", [
    ("job = 2\n", "[tool.torch-prover] unknown key 'job' (did you mean jobs?); the keys are "
                  "waivers, tags-from, jobs, cache-dir"),
    ('jobs = "2"\n', "[tool.torch-prover] jobs: must be an integer (parallel workers "
                     "(--jobs)), not '2'"),
    ("jobs = true\n", "[tool.torch-prover] jobs: must be an integer"),
    ("jobs = 0\n", "[tool.torch-prover] jobs = 0: must be at least 1"),
    ("waivers = 3\n", "[tool.torch-prover] waivers: must be a string, a path"),
    ('cache-dir = " "\n', "[tool.torch-prover] cache-dir: empty path"),
    ("changed-from = \"base.md\"\n", "unknown key 'changed-from'"),
    ("jobs = \n", "not valid TOML"),
])
def test_a_mistake_is_one_line_naming_file_and_key(tmp_path, table, says):
    root = _project(tmp_path, table)
    with pytest.raises(UsageError) as exc:
        config.load(root)
    line = str(exc.value)
    assert "\n" not in line and line.startswith(f"{root / 'pyproject.toml'}: ") and says in line


def test_another_projects_broken_pyproject_is_not_ours_to_judge(tmp_path):
    (tmp_path / "pyproject.toml").write_text("this is [not toml\n")
    assert config.load(tmp_path).path is None


def test_a_bad_file_stops_every_command_before_any_work(tmp_path, monkeypatch, capsys, no_work):
    _project(tmp_path, "job = 4\n")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["verify-all"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    shown = err.replace(str(tmp_path), "/work/onnx")
    assert_example("config-unknown-key", "$ torch-prover verify-all\n" + shown)
    assert cli.main(["prove", "Relu", "--format", "json"]) == 2
    assert '"reason": "' + str(tmp_path / "pyproject.toml") in capsys.readouterr().out


@pytest.fixture
def asked(monkeypatch):
    """The verify-all requests the CLI makes, each stopped before any work."""
    requests = []

    def stop(request):
        requests.append(request)
        raise UsageError("stopped")
    monkeypatch.setattr(verify, "prepare", stop)
    return requests


def test_flags_override_the_file(tmp_path, monkeypatch, asked):
    """What verify-all is asked for: the file's values, then each flag given over them."""
    root = _project(tmp_path, 'jobs = 3\ncache-dir = "c"\nwaivers = "w.toml"\n')
    (root / "w.toml").write_text("")
    monkeypatch.chdir(root)
    cli.main(["verify-all", "--no-write"])
    cli.main(["verify-all", "--no-write", "--jobs", "1", "--cache-dir", "flag",
              "--waivers", "mine.toml"])
    cli.main(["verify-all", "--no-write", "--no-cache"])
    file_, flags, no_cache = asked
    assert (file_.jobs, file_.cache_dir, file_.waivers) == (3, str(root / "c"),
                                                            str(root / "w.toml"))
    assert (flags.jobs, flags.cache_dir, flags.waivers) == (1, "flag", "mine.toml")
    assert no_cache.cache_dir is None


def test_without_a_file_the_defaults_are_todays(tmp_path, monkeypatch, asked):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cli.main(["verify-all", "--no-write"])
    assert asked[0].jobs == 2 and asked[0].cache_dir == str(tmp_path / "xdg" / "torch-prover")
    assert asked[0].waivers is None and asked[0].tags_from is None


def test_the_files_cache_dir_is_the_one_a_run_fills(tmp_path, monkeypatch, capsys):
    root = _project(tmp_path, 'cache-dir = "proofs-cache"\n')
    work = root / "sub"
    work.mkdir()
    monkeypatch.chdir(work)
    assert cli.main(["verify-all", "--ops", "Relu", "--no-write", "--jobs", "1"]) == 0
    capsys.readouterr()
    assert any((root / "proofs-cache").rglob("*.json"))
    assert not (work / "proofs-cache").exists()


def test_pr_mode_leaves_the_files_tag_source_aside(tmp_path, monkeypatch, capsys):
    """--changed-from gives the base; the PR's tags are an explicit --tags-from (its docs)
    or the installed onnx's: the file's tags-from does not apply, the command line's does."""
    from torch_prover.gate import command
    root = _project(tmp_path, 'tags-from = "docs/Changelog.md"\njobs = 3\n')
    monkeypatch.chdir(root)
    asked = []

    def stop(request):
        asked.append(request)
        raise UsageError("stopped")
    monkeypatch.setattr(command, "prepare", stop)
    assert cli.main(["verify-all", "--changed-from", "base.md"]) == 2
    assert "stopped" in capsys.readouterr().err
    assert asked[0].jobs == 3 and asked[0].changed_from == "base.md"
    assert asked[0].tags_from is None
    assert cli.main(["verify-all", "--changed-from", "base.md", "--tags-from", "x.md"]) == 2
    assert asked[1].tags_from == "x.md"
