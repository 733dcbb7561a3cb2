"""`structkit parse` options for the two parser kinds: --beam for beam parsers (the default),
--depth for lookahead parsers; each refuses the other's option in one line."""
from __future__ import annotations

from clitools import assert_one_line_error
from conftest import ROOT

SAMPLE = ROOT / "structkit" / "data" / "sample" / "ud"


def test_beam_and_depth_options(sk, tmp_path):
    beam, look = tmp_path / "beam.model", tmp_path / "look.model"
    assert sk("train", "--task", "parse", "--train", SAMPLE / "train.conllu", "--model", beam,
              "--epochs", "1", "-q").code == 0
    assert sk("train", "--task", "parse", "--algo", "lookahead", "--train", SAMPLE / "train.conllu",
              "--model", look, "--epochs", "1", "-q").code == 0
    out1, out2 = tmp_path / "b1.conllu", tmp_path / "b4.conllu"
    assert sk("parse", "--model", beam, "--beam", "1", SAMPLE / "test.conllu", "-o", out1).code == 0
    assert sk("parse", "--model", beam, "--beam", "4", SAMPLE / "test.conllu", "-o", out2).code == 0
    for out in (out1, out2):  # labelled: every word gets a DEPREL, not '_'
        rows = [ln.split("\t") for ln in out.read_text().splitlines() if ln and ln[0].isdigit()]
        words = [r for r in rows if "-" not in r[0] and "." not in r[0]]
        assert words and all(r[7] != "_" for r in words)
    assert sk("parse", "--model", beam, "--depth", "1", SAMPLE / "test.conllu").code == 0  # lookahead in the beam
    assert_one_line_error(sk("parse", "--model", beam, "--depth", "4", SAMPLE / "test.conllu"),
                          "--depth of a beam parser (lookahead inside the beam) is 0..3, got 4")
    assert_one_line_error(sk("parse", "--model", look, "--beam", "4", SAMPLE / "test.conllu"),
                          "--beam applies to beam parsers")
    assert_one_line_error(sk("parse", "--model", beam, "--beam", "0", SAMPLE / "test.conllu"),
                          "--beam must be an integer from 1 to 256")
    # The lookahead parser is unlabelled: its output's DEPREL is '_', not the input's.
    out3 = tmp_path / "l.conllu"
    assert sk("parse", "--model", look, SAMPLE / "test.conllu", "-o", out3).code == 0
    rows = [ln.split("\t") for ln in out3.read_text().splitlines() if ln and ln[0].isdigit()]
    assert all(r[7] == "_" for r in rows if "-" not in r[0] and "." not in r[0])


def test_two_roots_in_a_ud_training_tree(sk, tmp_path):
    """UD requires one root per tree: a CoNLL-U training tree with two is one file:line error."""
    bad = tmp_path / "two.conllu"
    bad.write_text("# sent_id = 1\n# text = a b\n1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n"
                   "2\tb\tb\tX\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    m = tmp_path / "m.model"
    assert_one_line_error(sk("train", "--task", "parse", "--train", bad, "--model", m),
                          f"{bad}:3:", "not a UD tree: 2 tokens have head 0 (the root); expected exactly 1")
    assert not m.exists()


def test_model_header_out_of_range_is_damaged(sk, tmp_path):
    """A beam model whose header asks for a 2^40-entry table is refused before any allocation."""
    from structkit.parse.parser import DependencyParser

    m = tmp_path / "m.model"
    assert sk("train", "--task", "parse", "--train", SAMPLE / "train.conllu", "--model", m,
              "--epochs", "1", "-q").code == 0
    parser = DependencyParser.load(str(m))
    parser.config.hash_bits = 40
    bad = tmp_path / "bad.model"
    parser.save(str(bad))
    assert_one_line_error(sk("parse", "--model", bad, SAMPLE / "test.conllu"),
                          f"{bad}: damaged model file:", "hash")


def test_check_search_options_says_what_parse_says(tmp_path):
    """The parse wing's check of `structkit parse --depth/--beam` (which the command calls):
    each parser kind takes its own options, checked, and refuses the other's with the model
    file as the place."""
    import pytest

    from structkit.errors import UserError
    from structkit.parse.parser import ParserConfig, check_search_options, train_parser

    beam = train_parser(ParserConfig(algo="beam", epochs=1), str(SAMPLE / "train.conllu"))
    look = train_parser(ParserConfig(algo="lookahead", epochs=1), str(SAMPLE / "train.conllu"))
    assert check_search_options(beam, None, None, "b.model") == (None, None)
    assert check_search_options(beam, 3, 4, "b.model") == (3, 4)
    assert check_search_options(look, 6, None, "l.model") == (6, None)
    for parser, depth, width, message in (
            (beam, 4, None, "--depth of a beam parser (lookahead inside the beam) is 0..3, got 4"),
            (look, None, 4, "--beam applies to beam parsers (--algo beam, the default)"),
            (beam, None, 0, "--beam must be an integer from 1 to 256"),
            (look, 7, None, "--depth")):
        with pytest.raises(UserError) as e:
            check_search_options(parser, depth, width, "m.model")
        assert e.value.message.startswith(message)
    with pytest.raises(UserError) as e:
        check_search_options(look, None, 4, "l.model")
    assert "l.model" in str(e.value)
