"""Tests for structkit.text: tokenisation, sentence splitting and CoNLL-U writing."""
from __future__ import annotations

import io
import random

import pytest

from structkit.errors import UserError
from structkit.io.conllx import read_conllx
from structkit.text import TOKENIZERS, iter_sentences, tokenize, write_conllu
from structkit.text.base import Sentence


def surface(text: str, split: str = "auto") -> list[list[str]]:
    """Sentences as lists of tokens, a multiword token written form{word+word}."""
    return [[t.form if len(t.words) == 1 else t.form + "{" + "+".join(t.words) + "}"
             for t in s.tokens] for s in tokenize(text, split=split)]


def flat(text: str) -> list[str]:
    return [t for s in surface(text) for t in s]


def check_offsets(text: str, sentences: list[Sentence]) -> None:
    """Every invariant of the offsets: forms are the text at their offsets, tokens are in
    order, hold no whitespace, and cover every non-space character; words spell the form;
    space_after and the sentences' text agree with the text."""
    pos = 0
    for sent in sentences:
        assert sent.tokens
        assert sent.start == sent.tokens[0].start and sent.end == sent.tokens[-1].end
        assert sent.text == text[sent.start:sent.end]
        for tok in sent.tokens:
            assert tok.start >= pos and text[pos:tok.start].strip() == ""
            assert tok.form == text[tok.start:tok.end] and tok.form
            assert not any(c.isspace() for c in tok.form)
            assert "".join(tok.words) == tok.form and all(tok.words)
            assert tok.space_after == (tok.end == len(text) or text[tok.end].isspace())
            pos = tok.end
    assert text[pos:].strip() == ""


# ----------------------------------------------------------------------------- tokens

def test_example_sentence():
    text = "Mr. O'Neil's dog, isn't it? It costs $3.50."
    sents = tokenize(text)
    assert surface(text) == [
        ["Mr.", "O'Neil's{O'Neil+'s}", "dog", ",", "isn't{is+n't}", "it", "?"],
        ["It", "costs", "$", "3.50", "."]]
    check_offsets(text, sents)
    dog = sents[0].tokens[2]
    assert (dog.start, dog.end, dog.space_after) == (13, 16, False)
    assert sents[1].text == "It costs $3.50." and sents[1].start == 28


@pytest.mark.parametrize("text, tokens", [
    # Clitics are words of one surface token, as EWT's multiword tokens.
    ("I don't know", ["I", "don't{do+n't}", "know"]),
    ("can't won't ain't", ["can't{ca+n't}", "won't{wo+n't}", "ain't{ai+n't}"]),
    ("I'm we've they'll she'd you're", ["I'm{I+'m}", "we've{we+'ve}", "they'll{they+'ll}",
                                        "she'd{she+'d}", "you're{you+'re}"]),
    ("Google's plan", ["Google's{Google+'s}", "plan"]),
    ("the soldiers' guns", ["the", "soldiers'{soldiers+'}", "guns"]),
    ("gonna wanna cannot", ["gonna{gon+na}", "wanna{wan+na}", "cannot{can+not}"]),
    ("dont im", ["dont{do+nt}", "im{i+m}"]),
    ("its a pity, its colour", ["its{it+s}", "a", "pity", ",", "its", "colour"]),
    ("the 80's, '68", ["the", "80's", ",", "'68"]),
    ("rock'n'roll c'est", ["rock'n'roll", "c'est"]),
    # Hyphens and slashes split, except after prefixes, in numbers and in dates.
    ("a wheel-chair for 15-year-olds", ["a", "wheel", "-", "chair", "for", "15", "-", "year",
                                        "-", "olds"]),
    ("e-mail non-human re-wording", ["e-mail", "non-human", "re-wording"]),
    ("call 713-853-7906 or 3-5213", ["call", "713-853-7906", "or", "3-5213"]),
    ("and/or on 01/24/2001 b/c", ["and", "/", "or", "on", "01/24/2001", "b/c"]),
    # Numbers, currency, units, percentages.
    ("$3.50 for 1,000 at 11:21, 50%", ["$", "3.50", "for", "1,000", "at", "11:21", ",", "50",
                                        "%"]),
    ("375mm at 5:30pm, the 4th", ["375", "mm", "at", "5:30", "pm", ",", "the", "4th"]),
    # Abbreviations keep their period; other words do not.
    ("Mr. Smith, Dr. Who and etc. in the U.S. army", ["Mr.", "Smith", ",", "Dr.", "Who",
                                                      "and", "etc.", "in", "the", "U.S.",
                                                      "army"]),
    ("Jennifer M. Anderson, No. 5", ["Jennifer", "M.", "Anderson", ",", "No.", "5"]),
    ("CCNG, Inc.. Next", ["CCNG", ",", "Inc.", ".", "Next"]),
    # URLs, e-mail addresses, dotted names, emoticons, punctuation runs.
    ("see http://www.x.com/a?b=1&c=(2). Now", ["see", "http://www.x.com/a?b=1&c=(2)", ".",
                                                "Now"]),
    ("(www.google.com)", ["(", "www.google.com", ")"]),
    ("<john.smith@enron.com>, franz...@gmail.com", ["<", "john.smith@enron.com", ">", ",",
                                                    "franz...@gmail.com"]),
    ("alt.animals.cat Guaranty.doc", ["alt.animals.cat", "Guaranty.doc"]),
    ("great :) sad :-( wow", ["great", ":)", "sad", ":-(", "wow"]),
    ("Wait... what?! No!!! ----==", ["Wait", "...", "what", "?!", "No", "!!!", "----=="]),
    ("(\"Hi,\" he said.)", ["(", '"', "Hi", ",", '"', "he", "said", ".", ")"]),
])
def test_tokens_follow_ewt(text, tokens):
    assert flat(text) == tokens


def test_junk_characters_stay_inside_words():
    # Control characters and U+FFFD never split a word, and never vanish.
    text = "ab\x00cd \ufffd\ufffd e\x07"
    assert flat(text) == ["ab\x00cd", "\ufffd\ufffd", "e\x07"]


# ----------------------------------------------------------------------------- sentences

def test_sentence_splitting_of_running_text():
    text = ("Hello there. How are you? I'm fine! Mr. Smith agrees with Dr. Jones. "
            "They went to the U.S. Department of State. It was raining... but nobody cared. "
            "i came. then i left")
    assert [" ".join(s) for s in surface(text)] == [
        "Hello there .", "How are you ?", "I'm{I+'m} fine !",
        "Mr. Smith agrees with Dr. Jones .",
        "They went to the U.S. Department of State .",
        "It was raining ... but nobody cared .", "i came .", "then i left"]


def test_sentence_end_keeps_closing_quotes_and_smileys():
    text = 'He said "yes." Then he left (again.) I love it :) You too.'
    assert [" ".join(s) for s in surface(text)] == [
        'He said " yes . "', "Then he left ( again . )", "I love it :)", "You too ."]


def test_final_abbreviation_gives_up_its_period():
    # At the end of a sentence EWT writes "U.S." as U.S + '.'; inside one, as U.S.
    assert surface("They live in the U.S. The rest is history.") == [
        ["They", "live", "in", "the", "U.S", "."], ["The", "rest", "is", "history", "."]]
    assert surface("I like cats, dogs, etc.") == [["I", "like", "cats", ",", "dogs", ",",
                                                   "etc", "."]]


def test_paragraphs_and_line_breaks():
    text = "First one. Second\none.\n\n  \nThird para.\nStill third.\n"
    sents = tokenize(text)
    assert [s.text for s in sents] == ["First one.", "Second\none.", "Third para.",
                                       "Still third."]
    assert [s.new_par for s in sents] == [True, False, True, False]
    assert [s.new_doc for s in sents] == [True, False, False, False]
    check_offsets(text, sents)


def test_split_lines():
    text = "One. Two.\nthree four\n\nFive\n"
    sents = tokenize(text, split="lines")
    assert [s.text for s in sents] == ["One. Two.", "three four", "Five"]
    assert [s.new_par for s in sents] == [True, False, True]
    check_offsets(text, sents)


def test_iter_sentences_streams_lines_with_the_same_offsets():
    text = "A b. C d.\n\nE f?\r\nG h\n"
    lines = io.StringIO(text, newline="\n").readlines()
    streamed = list(iter_sentences(lines))
    assert [(s.start, s.end, s.text) for s in streamed] == \
        [(s.start, s.end, s.text) for s in tokenize(text)]
    assert [s.text for s in streamed] == ["A b.", "C d.", "E f?", "G h"]


def test_empty_and_blank_input():
    assert tokenize("") == []
    assert tokenize(" \n\n\t\n") == []
    assert tokenize("  \n", split="lines") == []


def test_unknown_language_and_mode():
    with pytest.raises(UserError, match="no tokenizer for language 'xx'; known: en"):
        tokenize("text", lang="xx")
    with pytest.raises(UserError, match="unknown sentence split mode 'words'"):
        tokenize("text", split="words")
    with pytest.raises(UserError, match="no tokenizer for language 'xx'"):
        iter_sentences(iter(["text"]), lang="xx")     # at the call, not at the first line
    assert "en" in TOKENIZERS


@pytest.mark.parametrize("split", ["auto", "lines"])
def test_offsets_on_random_text(split):
    # Random strings over letters, digits, punctuation, apostrophes, spaces and newlines.
    rng = random.Random(13)
    alphabet = "aZs t9.,'’-/:@$()\"!?…\n\n  _&;=)e"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        check_offsets(text, tokenize(text, split=split))


# ----------------------------------------------------------------------------- CoNLL-U

def read_back(conllu: str) -> list[tuple[str, str, list[str]]]:
    """(# text, text rebuilt from the surface tokens and SpaceAfter, words) per sentence."""
    out = []
    for block in conllu.strip("\n").split("\n\n"):
        text, rebuilt, words, skip_to = "", [], [], 0
        for line in block.split("\n"):
            if line.startswith("# text = "):
                text = line[len("# text = "):]
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            assert len(cols) == 10
            space = "" if "SpaceAfter=No" in cols[9] else " "
            if "-" in cols[0]:
                skip_to = int(cols[0].split("-")[1])
                rebuilt.append(cols[1] + space)
                continue
            words.append(cols[1])
            if int(cols[0]) > skip_to:
                rebuilt.append(cols[1] + space)
        out.append((text, "".join(rebuilt).rstrip(" "), words))
    return out


def test_write_conllu_layout():
    buf = io.StringIO()
    n = write_conllu(tokenize("I can't go.\n\nOK"), buf, upos=[["PRON", "AUX", "PART", "VERB",
                                                                "PUNCT"], ["INTJ"]],
                     sent_id_prefix="d1-", start=7)
    assert n == 2
    assert buf.getvalue() == (
        "# newdoc\n# newpar\n# sent_id = d1-7\n# text = I can't go.\n"
        "1\tI\t_\tPRON\t_\t_\t_\t_\t_\t_\n"
        "2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "2\tca\t_\tAUX\t_\t_\t_\t_\t_\t_\n"
        "3\tn't\t_\tPART\t_\t_\t_\t_\t_\t_\n"
        "4\tgo\t_\tVERB\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "5\t.\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n\n"
        "# newpar\n# sent_id = d1-8\n# text = OK\n"
        "1\tOK\t_\tINTJ\t_\t_\t_\t_\t_\t_\n\n")


def test_write_conllu_space_after_on_the_range_line():
    buf = io.StringIO()
    write_conllu(tokenize("(don't)"), buf)
    assert "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n2\tdo\t" in buf.getvalue()
    assert "3\tn't\t_\t_\t_\t_\t_\t_\t_\t_\n" in buf.getvalue()


def test_write_conllu_checks_tags():
    sents = tokenize("I can't.")
    with pytest.raises(ValueError, match="sentence 1: xpos has 2 tags for 4 words"):
        write_conllu(sents, io.StringIO(), xpos=[["PRP", "MD"]])
    with pytest.raises(ValueError, match="upos has 0 sentences"):
        write_conllu(sents, io.StringIO(), upos=[])
    with pytest.raises(ValueError, match="upos has more sentences than the 1 written"):
        write_conllu(sents, io.StringIO(), upos=[["A", "B", "C", "D"], ["E"]])
    with pytest.raises(ValueError, match="whitespace"):
        write_conllu(sents, io.StringIO(), upos=[["A B", "C", "D", "E"]])


def test_round_trip_rebuilds_text(tmp_path):
    text = ("Mr. O'Neil's dog, isn't it?  It costs $3.50.\nSee http://x.org (now)!\n\n"
            "\"Quoted,\" she said... the soldiers' e-mail:) ok\tthen\n")
    sents = tokenize(text)
    buf = io.StringIO()
    write_conllu(sents, buf)
    back = read_back(buf.getvalue())
    assert len(back) == len(sents)
    for sent, (comment, rebuilt, words) in zip(sents, back):
        assert rebuilt == comment == " ".join(sent.text.split())
        assert words == [w for t in sent.tokens for w in t.words]
    # The project's reader takes the file as parser input: no heads, words and ranges kept.
    path = tmp_path / "out.conllu"
    path.write_text(buf.getvalue(), encoding="utf-8")
    read = list(read_conllx(str(path)))
    assert [s.forms for s in read] == [[w for t in s.tokens for w in t.words] for s in sents]
    assert all(s.heads is None for s in read)
    assert read[0].multiword == [(2, 3, "O'Neil's"), (6, 7, "isn't")]


@pytest.mark.parametrize("split", ["auto", "lines"])
def test_round_trip_random_text(split):
    rng = random.Random(5)
    alphabet = "ab Cn't.,'-:)\"( \n\ts!?"
    for _ in range(100):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 50)))
        buf = io.StringIO()
        write_conllu(tokenize(text, split=split), buf)
        for comment, rebuilt, _ in read_back(buf.getvalue()) if buf.getvalue() else []:
            assert rebuilt == comment


# ----------------------------------------------------------------------------- hostile input
# A quadratic step (a regex backtracking over the rest of a line, a rescan per token) turns
# these inputs of a megabyte or so into hours; linear code takes about a second each. The
# sentences are streamed and checked as they come, so memory stays small.

def check_streamed(text: str) -> int:
    """Stream the sentences of ``text``, checking offsets and coverage; return the tokens."""
    pos = count = 0
    for sent in iter_sentences(text):
        for tok in sent.tokens:
            assert tok.start >= pos and text[pos:tok.start].strip() == ""
            assert text.startswith(tok.form, tok.start) and tok.end == tok.start + len(tok.form)
            pos = tok.end
            count += 1
    assert text[pos:].strip() == ""
    return count


def test_hostile_line_without_spaces():
    n = 100_000
    pieces = ["a." * n + "@!",                  # an e-mail that never comes
              "a-." * n + "@!",                 # ... with short tokens all the way
              "x-" * n, "1," * n, "b'" * n,
              "http://" + "a)" * n,            # a URL whose trailing brackets are trimmed
              ":" * n + ")", "-=" * n, "A.b" * n + ".", "'s" * n,
              "s'" * n]                          # one token of n clitics
    text = "".join(pieces)
    assert check_streamed(text) > n


def test_hostile_binary_junk():
    rng = random.Random(0)
    text = rng.randbytes(1_000_000).decode("utf-8", errors="replace")
    assert check_streamed(text) > 100_000
