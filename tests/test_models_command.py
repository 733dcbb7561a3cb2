"""`structkit models list | build`: the recipes of ready models (structkit.recipes). The build
test registers a tiny recipe over the shipped sample, so it trains in seconds."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from clitools import assert_one_line_error, leftovers

from structkit import card as cards
from structkit import recipes
from structkit.datasets.paths import sample_dir
from structkit.tasks import names as task_names

UD = sample_dir() / "ud"


@pytest.fixture
def tiny():
    r = recipes.Recipe("sample:ud/pos", "pos", None, "UPOS tagger on the shipped sample",
                       {"epochs": 3, "seed": 1},
                       {"train": "sample/ud/train.conllu", "dev": "sample/ud/dev.conllu",
                        "test": "sample/ud/test.conllu"})
    recipes.register(r)
    yield r
    recipes.unregister(r.name)


def test_builtin_recipes_name_registered_corpora_and_tasks():
    from structkit.datasets import corpora, get

    rs = recipes.recipes()
    names = [r.name for r in rs]
    assert "ud:English-ParTUT/pos" in names and "ud:English-ParTUT/parse" in names
    ud = [c for c in corpora() if c.ud is not None and any(f.split == "train" for f in c.files)]
    assert ud
    for c in ud:   # a tokenizer for every registered UD treebank with a training file
        assert f"ud:{c.ud[0]}/tokenize" in names
    for r in rs:
        assert r.task in task_names()
        assert get(r.corpus).licence
        assert set(recipes.files(r)) >= {"train"}
    assert len(set(names)) == len(names)
    # a recipe records its seed, so that a rebuild trains the same model
    assert all(r.options.get("seed") == 0 for r in rs)


def test_models_list(sk, tiny):
    r = sk("models", "list")
    assert r.code == 0, r
    for rec in recipes.recipes():
        assert rec.name in r.out
    assert "CC BY-NC-SA 4.0" in r.out   # English ParTUT's licence
    r = sk("models", "list", "--json")
    assert r.code == 0, r
    rows = [json.loads(line) for line in r.out.splitlines()]
    assert [row["name"] for row in rows] == [rec.name for rec in recipes.recipes()]
    mine = next(row for row in rows if row["name"] == tiny.name)
    assert mine["status"] == "here" and mine["options"] == {"epochs": 3, "seed": 1}
    assert mine["task"] == "pos" and mine["files"]["train"] == "sample/ud/train.conllu"


def test_models_build_tiny_recipe(sk, tmp_path, tiny):
    out = tmp_path / "tiny.model"
    r = sk("models", "build", tiny.name, "--output", out)
    assert r.code == 0, r
    assert f"wrote {out}" in r.err
    header, card = cards.read(str(out))
    assert card["recipe"] == {"name": tiny.name, "options": {"epochs": 3, "seed": 1}}
    assert card["options"]["epochs"] == 3 and card["options"]["seed"] == 1
    assert card["data"]["train"]["path"] == "sample/ud/train.conllu"
    assert card["data"]["train"]["sha256"] == hashlib.sha256((UD / "train.conllu").read_bytes()).hexdigest()
    # test scores are eval's on the model's output
    pred = tmp_path / "pred.conllu"
    assert sk("tag", "-m", out, UD / "test.conllu", "-o", pred).code == 0
    ev = sk("eval", "--task", "pos", "--json", UD / "test.conllu", pred)
    assert ev.code == 0, ev
    assert card["test"]["scores"]["accuracy"] == json.loads(ev.out)["accuracy"]
    r = sk("info", out)
    assert r.code == 0 and f"recipe:     {tiny.name}" in r.out


def test_models_build_default_name_in_output_dir(sk, tmp_path, tiny):
    folder = tmp_path / "models" / "here"
    r = sk("models", "build", tiny.name, "--output-dir", folder, "-q")
    assert r.code == 0, r
    assert r.err == ""
    assert (folder / tiny.default_output()).is_file()
    assert tiny.default_output() == "sample-ud.pos.model"


def test_models_bad_names_are_one_line(sk, tmp_path, tiny):
    assert_one_line_error(sk("models", "build", "nope"), "unknown model recipe 'nope'", "models list")
    # (a UD treebank's name alone builds its pipeline since issue 43: ud:English-ParTUT is one)
    line = assert_one_line_error(sk("models", "build", "UD:english-partut/pos"), "did you mean")
    assert "ud:English-ParTUT/pos" in line
    # every name checked before anything is trained
    out = tmp_path / "m.model"
    assert_one_line_error(sk("models", "build", tiny.name, "nope", "--output-dir", tmp_path), "nope")
    assert not list(tmp_path.iterdir())
    assert_one_line_error(sk("models", "build", tiny.name, tiny.name, "--output", out), "--output")
    assert not out.exists()


def test_models_build_missing_data_no_fetch(sk, tmp_path, monkeypatch):
    from structkit.datasets import registry

    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    registry.register(registry.Corpus("toymissing", "not here", "CC0",
                                      (registry.File("toymissing/train.conllu", "train"),)))
    recipes.register(recipes.Recipe("toymissing/pos", "pos", "toymissing", "needs data"))
    try:
        r = sk("models", "list")
        assert "needs `structkit data fetch toymissing`" in r.out
        out = tmp_path / "m.model"
        assert_one_line_error(sk("models", "build", "toymissing/pos", "--no-fetch", "--output", out),
                              "toymissing", "data fetch")
        assert not out.exists() and not leftovers(tmp_path)
    finally:
        recipes.unregister("toymissing/pos")
        registry.unregister("toymissing")


def test_models_build_from_a_local_treebank_folder_offline(sk, tmp_path, monkeypatch):
    """A corpus not here and no network: `--from DIR` trains on the files of a folder the user
    has (found by their file names), with no fetch; the card records those files; a folder
    without one of them is one line naming it."""
    from structkit.datasets import registry

    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mine = tmp_path / "UD_Tiny"
    mine.mkdir()
    tiny_ud = Path(__file__).resolve().parent / "fixtures" / "tiny_ud" / "train.conllu"
    (mine / "tiny-ud-train.conllu").write_bytes(tiny_ud.read_bytes())
    registry.register(registry.Corpus("tinybank", "not here", "CC0",
                                      (registry.File("ud-tiny/tiny-ud-train.conllu", "train"),
                                       registry.File("ud-tiny/tiny-ud-dev.conllu", "dev"))))
    recipes.register(recipes.Recipe("tinybank/pos", "pos", "tinybank", "a tagger", {"seed": 0}))
    try:
        out = tmp_path / "m.model"
        assert_one_line_error(sk("models", "build", "tinybank/pos", "--from", mine, "--output", out),
                              str(mine), "no dev file tiny-ud-dev.conllu")
        assert not out.exists()
        (mine / "tiny-ud-dev.conllu").write_bytes(tiny_ud.read_bytes())
        r = sk("models", "build", "tinybank/pos", "--from", mine, "--output", out, "-q")
        assert r.code == 0, r.err
        _, card = cards.read(str(out))
        assert card["data"]["train"]["sha256"] == hashlib.sha256(tiny_ud.read_bytes()).hexdigest()
        assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.conllu"))
    finally:
        recipes.unregister("tinybank/pos")
        registry.unregister("tinybank")


def test_models_build_says_when_the_files_here_are_not_the_registered_ones(sk, tmp_path, monkeypatch):
    """Issue 41, item 13: `models build --no-fetch` on a corpus whose file here was modified
    trained and exited 0 with no word of it; it now warns on stderr (even with -q), naming the
    file, and the card records "differs" (the build still runs: the user may mean it)."""
    from structkit.datasets import registry

    data = tmp_path / "data"
    (data / "ud-tiny").mkdir(parents=True)
    tiny_ud = Path(__file__).resolve().parent / "fixtures" / "tiny_ud" / "train.conllu"
    monkeypatch.setenv("STRUCTKIT_DATA", str(data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sha = hashlib.sha256(tiny_ud.read_bytes()).hexdigest()
    registry.register(registry.Corpus("tinyreg", "here", "CC0",
                                      (registry.File("ud-tiny/train.conllu", "train", sha256=sha),)))
    recipes.register(recipes.Recipe("tinyreg/pos", "pos", "tinyreg", "a tagger", {"seed": 0, "epochs": 2}))
    try:
        out = tmp_path / "m.model"
        (data / "ud-tiny" / "train.conllu").write_bytes(tiny_ud.read_bytes())
        r = sk("models", "build", "tinyreg/pos", "--no-fetch", "--output", out, "-q")
        assert r.code == 0 and "warning" not in r.err, r.err
        (data / "ud-tiny" / "train.conllu").write_bytes(tiny_ud.read_bytes().replace(b"\tNOUN\t", b"\tPROPN\t", 1))
        r = sk("models", "build", "tinyreg/pos", "--no-fetch", "--output", out, "-q")
        assert r.code == 0, r.err
        assert "warning" in r.err and "train file" in r.err and "sha256 differs" in r.err
        _, card = cards.read(str(out))
        assert card["data"]["train"]["registry_sha256"] == "differs"
    finally:
        recipes.unregister("tinyreg/pos")
        registry.unregister("tinyreg")


# ---- issue 43, item 1: a model from any UD treebank --------------------------------------------
def _treebank(folder: Path, splits=("train", "dev", "test"), prefix: str = "xx_tiny") -> Path:
    """A UD treebank folder as a release ships it, over the shipped sample's files."""
    folder.mkdir(parents=True)
    for split in splits:
        (folder / f"{prefix}-ud-{split}.conllu").write_bytes((UD / f"{split}.conllu").read_bytes())
    return folder


def _files_sha256(*paths: Path) -> str:
    """The card's treebank checksum, computed here from its definition: a line "NAME<TAB>SHA256"
    per file, sorted, hashed."""
    lines = sorted(f"{p.name}\t{hashlib.sha256(p.read_bytes()).hexdigest()}\n" for p in paths)
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def test_models_build_from_any_treebank_folder(sk, tmp_path, monkeypatch):
    """`models build --from DIR` with no NAME builds from whichever UD treebank DIR holds,
    named after the folder; the card records the folder, the split trained on and one checksum
    over the files, and `info` prints the command that rebuilds it."""
    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tb = _treebank(tmp_path / "UD_Xx-Tiny")
    r = sk("models", "build", "--from", tb, "--task", "pos", "--output-dir", tmp_path / "out")
    assert r.code == 0, r.err
    out = tmp_path / "out" / "ud-xx-tiny.pos.model"
    assert f"wrote {out}" in r.err
    _, card = cards.read(str(out))
    assert card["recipe"]["name"] == "ud:Xx-Tiny/pos"
    facts = card["recipe"]["treebank"]
    assert facts["folder"] == str(tb) and facts["trained_on"] == "train" and facts["built_from"] == "folder"
    assert facts["files_sha256"] == _files_sha256(*sorted(tb.iterdir()))
    assert card["data"]["train"]["sha256"] == hashlib.sha256((UD / "train.conllu").read_bytes()).hexdigest()
    assert card["dev"]["during_training"] and card["test"]["scores"]["accuracy"] > 0
    info = sk("info", out)
    assert f"`structkit models build --from {tb}`" in info.out and "trained on its train file" in info.out


def test_a_treebank_without_dev_or_train(sk, tmp_path, monkeypatch):
    """Without a dev file the model trains with no selection, and says so; without a training
    file the build is one line that points at --train-on dev, which trains on the dev file and
    records it in the card; two training files in one folder are one line."""
    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    nodev = _treebank(tmp_path / "nodev", ("train", "test"))
    out = tmp_path / "nodev.model"
    r = sk("models", "build", "--from", nodev, "--task", "pos", "-o", out)
    assert r.code == 0, r.err
    assert "no dev file, so no epoch selection" in r.err
    _, card = cards.read(str(out))
    assert "dev" not in card and "dev" not in card["data"] and card["test"]["scores"]

    notrain = _treebank(tmp_path / "notrain", ("dev", "test"))
    out = tmp_path / "notrain.model"
    assert_one_line_error(sk("models", "build", "--from", notrain, "--task", "pos", "-o", out),
                          "no training file", "--train-on dev")
    assert not out.exists() and not leftovers(tmp_path)
    r = sk("models", "build", "--from", notrain, "--task", "pos", "-o", out, "--train-on", "dev", "-q")
    assert r.code == 0, r.err
    _, card = cards.read(str(out))
    assert card["recipe"]["treebank"]["trained_on"] == "dev"
    assert card["data"]["train"]["sha256"] == hashlib.sha256((UD / "dev.conllu").read_bytes()).hexdigest()
    assert "dev" not in card["data"]
    assert "--train-on dev`" in sk("info", out).out

    two = _treebank(tmp_path / "two", ("train",))
    (two / "yy_other-ud-train.conllu").write_bytes((UD / "train.conllu").read_bytes())
    assert_one_line_error(sk("models", "build", "--from", two, "--task", "pos", "-o", out),
                          "two train files", "one treebank")
    assert_one_line_error(sk("models", "build", "--from", tmp_path / "empty-folder-not-here", "-o", out),
                          "not a folder")
    (tmp_path / "bare").mkdir()
    assert_one_line_error(sk("models", "build", "--from", tmp_path / "bare", "-o", out), "no treebank here")


def test_models_build_any_ud_name_finds_the_treebank_here(sk, tmp_path, monkeypatch):
    """`ud:Language-Name[/task]`, a treebank the registry does not pin, is built from its folder
    in $STRUCTKIT_DATA (named without a release) with no fetch; the card says where the files
    were, since the folder does not say its release; a bad task is one line."""
    data = tmp_path / "data"
    _treebank(data / "ud-xx-tiny")
    monkeypatch.setenv("STRUCTKIT_DATA", str(data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    r = sk("models", "build", "ud:Xx-Tiny/pos", "--no-fetch", "--output-dir", tmp_path / "out", "-q")
    assert r.code == 0, r.err
    out = tmp_path / "out" / "ud-xx-tiny-r2.14.pos.model"
    _, card = cards.read(str(out))
    facts = card["recipe"]["treebank"]
    assert facts["folder"] == str(data / "ud-xx-tiny") and "release" not in facts
    assert facts["built_from"] == "name"
    assert "`structkit models build ud:Xx-Tiny@r2.14/pos`" in sk("info", out).out
    assert_one_line_error(sk("models", "build", "ud:Xx-Tiny/nope", "--no-fetch"), "unknown task 'nope'")
    assert_one_line_error(sk("models", "build", "ud:Zz-Absent/pos", "--no-fetch"),
                          "data fetch ud:Zz-Absent@r2.14")
    assert_one_line_error(sk("models", "build", "ud:Xx-Tiny/pos", "--task", "pos"), "--task goes with --from")


# ---- issue 43, item 2: many treebanks at once ----------------------------------------------------
def _root(tmp_path: Path) -> Path:
    """Three treebanks: two that build, one without a training file."""
    root = tmp_path / "treebanks"
    _treebank(root / "UD_Aa-One", prefix="aa_one")
    _treebank(root / "UD_Bb-Two", ("train", "test"), prefix="bb_two")
    _treebank(root / "UD_Cc-Three", ("dev", "test"), prefix="cc_three")
    (root / "not-a-treebank").mkdir()
    return root


def _models(folder: Path) -> dict[str, str]:
    from structkit.builds import fingerprint
    from structkit.model import load_model

    return {p.name: fingerprint(str(p)) for p in sorted(folder.glob("*.model"))}


def test_models_build_all_from_a_root(sk, tmp_path, monkeypatch):
    """`--all --from ROOT` builds every treebank folder under ROOT, each model with its card as
    JSON beside it; a treebank without a training file is skipped with the reason; the summary
    table (stdout and summary.md) has a row each; --jobs 2 builds the same models as --jobs 1."""
    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = _root(tmp_path)
    r = sk("models", "build", "--all", "--from", root, "--task", "pos", "--output-dir", tmp_path / "one",
           "--jobs", "1")
    assert r.code == 0, r.err
    one = tmp_path / "one"
    assert sorted(p.name for p in one.iterdir()) == [
        "summary.md", "ud-aa-one.pos.model", "ud-aa-one.pos.model.card.json",
        "ud-bb-two.pos.model", "ud-bb-two.pos.model.card.json"]
    _, card = cards.read(str(one / "ud-aa-one.pos.model"))
    assert json.loads((one / "ud-aa-one.pos.model.card.json").read_text()) == card
    table = (one / "summary.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ud:")]
    assert [row.split(" | ")[0] for row in rows] == ["| ud:Aa-One/pos", "| ud:Bb-Two/pos", "| ud:Cc-Three/pos"]
    assert rows[0].split(" | ")[1] == "built" and rows[1].split(" | ")[1] == "built"
    assert rows[2].split(" | ")[1].startswith("skipped: the treebank has no training file")
    assert f"{card['test']['scores']['accuracy']:.2f}" in rows[0]
    assert table.splitlines()[0] in r.out
    # the catalogue: what is built there, from the cards; a file that is not a model is a row
    (one / "junk.model").write_bytes(b"not a model")
    listing = sk("models", "list", "--built", one)
    assert listing.code == 0, listing.err
    lines = listing.out.splitlines()
    assert len(lines) == 3 and "junk.model  not a usable model" in lines[0]
    assert "ud-aa-one.pos.model  pos  ud:Aa-One/pos  test accuracy " + f"{card['test']['scores']['accuracy']:.2f}" in lines[1]
    assert card["created"] in lines[1]
    rows = [json.loads(line) for line in sk("models", "list", "--built", one, "--json").out.splitlines()]
    assert [row.get("recipe") for row in rows] == [None, "ud:Aa-One/pos", "ud:Bb-Two/pos"]
    assert rows[1]["bytes"] == (one / "ud-aa-one.pos.model").stat().st_size
    (one / "junk.model").unlink()
    r = sk("models", "build", "--all", "--from", root, "--task", "pos", "--output-dir", tmp_path / "two",
           "--jobs", "2", "-q")
    assert r.code == 0 and r.err == "", r.err
    assert _models(tmp_path / "two") == _models(one) and len(_models(one)) == 2


def test_models_build_all_goes_on_after_a_failure_and_resumes(sk, tmp_path, monkeypatch):
    """A treebank whose build fails is a line on stderr and a row; the others are built; the
    exit is 1. --skip-existing keeps what was built from the same files, rebuilds a model whose
    files changed, and builds what a stopped run did not: the same models as one whole run."""
    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = _root(tmp_path)
    bad = _treebank(root / "UD_Dd-Bad", prefix="dd_bad")
    (bad / "dd_bad-ud-train.conllu").write_text("1\tword\n\n", encoding="utf-8")   # 2 columns
    out = tmp_path / "out"
    r = sk("models", "build", "--all", "--from", root, "--task", "pos", "--output-dir", out, "-j", "1")
    assert r.code == 1
    failed = [line for line in r.err.splitlines() if "failed" in line]
    assert len(failed) == 2 and "ud:Dd-Bad/pos: failed" in failed[0] and "dd_bad-ud-train.conllu" in failed[0]
    assert "1 of 4 treebanks failed: ud:Dd-Bad/pos" in failed[1]
    whole = _models(out)
    assert sorted(whole) == ["ud-aa-one.pos.model", "ud-bb-two.pos.model"] and not leftovers(out)
    assert "| ud:Dd-Bad/pos | failed: " in (out / "summary.md").read_text()

    (out / "ud-bb-two.pos.model").unlink()   # as if the run had stopped before it
    before = (out / "ud-aa-one.pos.model").stat().st_mtime_ns
    r = sk("models", "build", "--all", "--from", root, "--task", "pos", "--output-dir", out, "-j", "1",
           "--skip-existing")
    assert r.code == 1
    assert "ud:Aa-One/pos: kept" in r.err and "ud:Bb-Two/pos: built" in r.err
    assert (out / "ud-aa-one.pos.model").stat().st_mtime_ns == before
    assert _models(out) == whole
    # a changed training file: the model is rebuilt, not kept
    train = root / "UD_Aa-One" / "aa_one-ud-train.conllu"
    train.write_bytes(train.read_bytes() + (UD / "dev.conllu").read_bytes())
    r = sk("models", "build", "--all", "--from", root, "--task", "pos", "--output-dir", out, "-j", "1",
           "--skip-existing", "-q")
    assert "ud:Aa-One/pos" not in r.err.replace("ud:Dd-Bad", "")
    assert _models(out)["ud-aa-one.pos.model"] != whole["ud-aa-one.pos.model"]


def test_a_stopped_run_begins_no_build_waiting_in_the_pools_queue(tmp_path, monkeypatch):
    """Ctrl-C during `--all --jobs 2`: the pool has already taken builds from the queue that
    ``cancel`` cannot take back; none of them may begin once the run is stopping (each trained
    in full before the run ended). Here the first finished build stops the run; the builds
    begun by then (that one, the slow second, and whatever the first's worker took next) are
    the most that ever begin, of eight. The pool has run or dropped every queued build by the time
    the interrupt leaves ``_on_processes`` (its shutdown waits for them)."""
    import time

    from structkit import builds

    started = tmp_path / "started"
    started.mkdir()

    def fake_build(recipe, output, train_on="train", fetch=True):
        (started / recipe).touch()
        time.sleep(0.05 if recipe == "r0" else 1.0)
        return builds.Built(recipe, output, "built")

    monkeypatch.setattr(builds, "build_one", fake_build)   # the forked workers inherit it

    def done(k, row):
        raise KeyboardInterrupt   # as Ctrl-C in the parent, on the first row

    names = [f"r{k}" for k in range(8)]
    with pytest.raises(KeyboardInterrupt):
        builds._on_processes(names, [str(tmp_path / n) for n in names], list(range(8)), 2, "train", False, done)
    begun = sorted(p.name for p in started.iterdir())
    assert "r0" in begun and set(begun) <= {"r0", "r1", "r2"}, begun   # r1 may not have begun yet


def test_models_build_all_from_a_list_and_its_errors(sk, tmp_path, monkeypatch):
    """--list FILE builds the folders and names it lists (comments and blank lines skipped);
    mistakes of the many-builds options are one line each, before anything is trained."""
    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = _root(tmp_path)
    listing = tmp_path / "list.txt"
    listing.write_text(f"# the one I want\n\n{root / 'UD_Aa-One'}\n", encoding="utf-8")
    r = sk("models", "build", "--list", listing, "--task", "pos", "--output-dir", tmp_path / "out", "-q")
    assert r.code == 0, r.err
    assert sorted(_models(tmp_path / "out")) == ["ud-aa-one.pos.model"]
    for args, words in [((), ("give NAMEs or those", )),
                        (("--output", tmp_path / "m.model"), ("--output-dir",)),
                        (("--jobs", "2", "--dask", "local:1"), ("give one",)),
                        (("--jobs", "x"), ("--jobs must be",))]:
        extra = ("ud:Aa-One/pos",) if not args else ()
        assert_one_line_error(sk("models", "build", "--all", "--from", root, *extra, *args), *words)
    assert_one_line_error(sk("models", "build", "--all", "--from", tmp_path / "empty-dir-absent"), "not a folder")
    (tmp_path / "nothing").mkdir()
    assert_one_line_error(sk("models", "build", "--all", "--from", tmp_path / "nothing"), "no UD treebank found")
    listing.write_text("# nothing\n", encoding="utf-8")
    assert_one_line_error(sk("models", "build", "--list", listing), "names no treebank")
    assert_one_line_error(sk("models", "build", "ud:Aa-One/pos", "--skip-existing"), "goes with --all")


def test_a_pipelines_fingerprint_is_its_parts_not_their_cards(sk, tmp_path, monkeypatch):
    """A pipeline's parts are model files with cards of their own (training times): two builds
    of the same pipeline differ byte for byte but have one fingerprint; a pipeline trained on
    other data has another."""
    from structkit.builds import fingerprint

    monkeypatch.setenv("STRUCTKIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tb = _treebank(tmp_path / "UD_Xx-Tiny")
    for name in ("a", "b"):
        r = sk("models", "build", "--from", tb, "-o", tmp_path / f"{name}.model", "-q")
        assert r.code == 0, r.err
    a, b = tmp_path / "a.model", tmp_path / "b.model"
    assert a.read_bytes() != b.read_bytes()
    assert fingerprint(str(a)) == fingerprint(str(b))
    r = sk("models", "build", "--from", tb, "-o", tmp_path / "c.model", "-q", "--train-on", "dev")
    assert r.code == 0, r.err
    assert fingerprint(str(tmp_path / "c.model")) != fingerprint(str(a))


def test_skip_existing_keeps_a_registered_recipes_model(sk, tmp_path, tiny):
    """A registered recipe's files are named relative to the data folders: --skip-existing
    finds them there to compare their checksum (it once read them from the working folder, so
    such a model was always rebuilt)."""
    listing = tmp_path / "list.txt"
    listing.write_text(tiny.name + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert sk("models", "build", "--list", listing, "--output-dir", out, "-q", "-j", "1").code == 0
    r = sk("models", "build", "--list", listing, "--output-dir", out, "-j", "1", "--skip-existing")
    assert r.code == 0, r.err
    assert f"{tiny.name}: kept" in r.err
