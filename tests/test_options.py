"""One type check for option values: the command line, a config file and the Python API refuse
the same wrong value with the same message (the command line naming the flag, ``--epochs``)."""
from __future__ import annotations

from pathlib import Path

import pytest

import structkit
from clitools import assert_one_line_error
from structkit.errors import UserError
from structkit.options import check, kinds_of

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHUNK_TRAIN = str(FIXTURES / "chunk_train.txt")


@pytest.mark.parametrize("flag, toml_value, value, api_value, message", [
    ("--epochs", '"ten"', "ten", "ten", "epochs must be an integer, got 'ten'"),
    ("--seed", "1.5", "1.5", 1.5, "seed must be an integer, got {v}"),
    ("--C", '"big"', "big", "big", "C must be a number, got 'big'"),
    ("--dev-split", '"half"', "half", "half", "dev_split must be a number, got 'half'"),
])
def test_cli_config_and_api_say_the_same(sk, tmp_path, flag, toml_value, value, api_value, message):
    key = flag[2:].replace("-", "_")
    model = tmp_path / "m.npz"
    # the command line: the flag's spelling; a string the flag cannot read is shown as given
    cli_message = "--" + message.format(v="'1.5'").replace("_", "-")
    r = sk("train", "--task", "chunk", "--algo", "kbest-pa", "--train", CHUNK_TRAIN, "--model", model,
           flag, value)
    assert_one_line_error(r, cli_message)
    # a config file: the same words, after the file's name
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'task = "chunk"\nalgo = "kbest-pa"\n{key} = {toml_value}\n')
    r = sk("train", "--config", cfg, "--train", CHUNK_TRAIN, "--model", model)
    line = assert_one_line_error(r, f"{cfg}: " + message.format(v="1.5"))
    assert line.endswith(message.format(v="1.5"))
    # the API: the same words, after the object's name
    with pytest.raises(UserError) as e:
        structkit.Tagger("chunk", algo="kbest-pa", **{key: api_value}).fit([[["a", "B-NP"]]])
    assert str(e.value) == "Tagger: " + message.format(v="1.5")
    assert not model.exists()


def test_kinds_come_from_the_config_annotations():
    assert kinds_of("str | list[str] | None") == ("str", "list[str]")
    assert kinds_of("int | None") == ("int",)
    check("epochs", 3)
    check("templates", ["w[0]", "w[-1]"])
    check("templates", "chunk")
    with pytest.raises(UserError, match=r"^templates must be a string or a list of strings, got \[1\]$"):
        check("templates", [1])
    with pytest.raises(UserError, match=r"^topic_levels must be a list of integers, got \['a'\]$"):
        check("topic_levels", ["a"])
    with pytest.raises(UserError, match=r"^refit must be true or false, got 'yes'$"):
        check("refit", "yes")
    with pytest.raises(UserError, match=r"^epochs must be an integer, got True$"):
        check("epochs", True)
