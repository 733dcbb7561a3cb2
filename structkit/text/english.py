"""English tokenisation and sentence splitting following UD English EWT (r2.14) conventions.

Tokens (what EWT does, and so what this does):

* punctuation is split off words (``dog ,``), a run of one punctuation character stays one
  token (``...``, ``!!!``, ``--``) and so does a run of ``.!?`` (``?!``);
* clitics are syntactic words of one surface token (a CoNLL-U multiword token):
  ``Google's`` = ``Google`` + ``'s``, ``I'm`` = ``I`` + ``'m``, ``isn't`` = ``is`` +
  ``n't``, ``can't`` = ``ca`` + ``n't``, also ``'re 've 'll 'd``, a plural possessive
  ``soldiers'`` = ``soldiers`` + ``'``, the spellings without apostrophe ``dont`` = ``do`` +
  ``nt``, ``im`` = ``i`` + ``m``, and ``cannot``, ``gonna``, ``wanna``, ``gotta``;
* a hyphen between words is its own token (``wheel - chair``, ``15 - year``) except after a
  prefix such as ``e-``, ``non-``, ``re-``, ``anti-`` (``e-mail``), in phone numbers and in
  dotted names; a slash likewise, except between digits (``01/24/2001``) and in ``b/c``;
* abbreviations keep their period (``Mr.``, ``U.S.``, ``etc.``, initials ``M.``), other words
  and numbers do not; numbers keep internal ``. , :`` (``3.50``, ``1,000``, ``11:21``) and
  lose a currency sign or a unit (``$ 3.50``, ``375 mm``);
* URLs, e-mail addresses, dotted names and file names (``alt.animals.cat``, ``a.doc``) and
  emoticons (``:-)``) are single tokens.

Sentences (see ``_starts_sentence``) end after ``.``, ``!``, ``?`` and runs of them, with
the closing quotes and brackets glued to them and a smiley after them, before any token; after
an ellipsis or a smiley before a token that is not lowercase; after an abbreviation (``etc.``)
or a colon before a capitalised function word (``The``, ``I``); titles (``Mr.``), initials
and ``P.S.`` never end one. A final abbreviation gives its period to the sentence
(``... in the U.S.`` -> ``U.S`` ``.``), as EWT does.

The token pattern is tried at one position at a time, and each of its alternatives either
matches or fails having read no further than the characters the successful alternative then
covers; everything after the match looks at that match and a few characters beyond it. So
tokenising is linear in the length of the text even on hostile input (a long line without
spaces, binary junk): no step rescans an unbounded stretch of text.
"""
from __future__ import annotations

import re
from itertools import pairwise
from typing import Iterator

from structkit.text.base import MAX_SENTENCE_TOKENS, Token, Tokenizer

__all__ = ["EnglishTokenizer"]

# Characters inside words: letters, digits, '_', combining accents, and characters that carry
# no punctuation meaning (soft hyphen, zero-width joiners, the byte-order mark, the
# replacement character, control characters) so that junk never splits a word into pieces.
_WORD_CHARS = (r"\w\u0300-\u036f\u00ad\u200b-\u200d\u2060\ufeff\ufffd"
               r"\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f")
_W = f"[{_WORD_CHARS}]"
_APOS = "'\u2019\u00b4`"          # ' ’ ´ ` as apostrophes inside words
# A joint: one character that may sit between two runs of word characters inside a token
# (whether the token is then cut there is decided afterwards, by _split_compound).
# '...@' is the "user...@example.com" of Google Groups addresses.
_JOINT = rf"(?:[.,:/&@+\-{_APOS}]|\.\.\.@)"
# Emoticons: ":)", ";-(", ":D" (not ":Do"), "(:", "^^", "^_^".
_EMO = rf"[:;=]-?(?:[()\[\]/\\|*]|[DPpOo](?!{_W}))++|\([:;]|\^[_-]?\^"
_OPENERS = "([{\"'\u201c\u2018\u00ab"
_CLOSERS = ")]}\"'\u201d\u2019\u00bb"
_CLOSER_SET = frozenset(_CLOSERS)
# The most joints one compound may have ("a,b,c" has two): a run of word characters and
# punctuation without end ("a,a,a,..." over a 10 MB line) is matched as compounds of at most
# this many joints, each cut into tokens with memory bounded by this, not by the line.
MAX_JOINTS = 100
_QUOTES = "'\u2019"        # single quotes, which are also apostrophes

_TOKEN = re.compile(rf"""
    (?P<url>(?:(?:https?|ftp)://|www\d{{0,3}}\.)[^\s<>"]++)
  | (?P<emo>{_EMO})
  | (?P<year>[{_APOS}]\d\d(?!{_W}))
  | (?P<clitic>[{_APOS}](?i:s|m|d|ll|re|ve)(?!{_W}))
  | (?P<compound>{_W}++(?:{_JOINT}{_W}++){{1,{MAX_JOINTS}}}+)
  | (?P<word>{_W}++)
  | (?P<handle>@{_W}++(?:{_JOINT}{_W}++)*+)
  | (?P<final>[.!?\u2026]++)
  | (?P<rule>(?:-++=|=++-)[-=]*+)
  | (?P<run>(?P<char>[^\s{_WORD_CHARS}{re.escape(_OPENERS + _CLOSERS)}])(?P=char)*+)
  | (?P<single>\S)
""", re.VERBOSE)

_JOINT_SPLIT = re.compile(_JOINT)
_is_word_char = re.compile(_W).match
_ALL_DIGITS = re.compile(r"\d+")
_PHONE = re.compile(r"(?:\d{1,3}-){1,3}\d{4}")
_DATE = re.compile(r"\d{1,2}-[A-Za-z]{3}-\d{2,4}")
_UNIT = re.compile(r"(?P<num>\d[\d.,:]*+)(?<=\d)(?P<unit>(?:mm|cm|km|kg|mg|ml|lbs?|oz|hrs?|"
                   r"mins?|secs?|days?|yrs?|mph|kph|[ap]m|[kK]|p|gb|mb|kb|ghz|mhz))")

# Prefixes after which a hyphen does not split a word (e-mail, non-human, re-wording); the
# list of Stanford CoreNLP's English tokenizer for UD, which EWT's conventions follow.
_HYPHEN_PREFIXES = frozenset("""
    e a u x agro ante anti arch be bi bio co counter cross cyber de eco ex extra inter intra
    macro mega micro mid mini mis multi neo non over pan para peri post pre pro pseudo quasi re
    semi sub super tri ultra un uni vice""".split())
_HYPHEN_SUFFIXES = frozenset("esque ette fest fold gate itis less most rama wise".split())
_SLASH_WORDS = frozenset({"b/c", "w/o", "n/a"})

# Clitics written with an apostrophe (after it); "n't" is handled apart because it takes
# the 'n' before the apostrophe.
_CLITICS = frozenset({"s", "m", "d", "ll", "re", "ve"})
# Contractions written as one word, as EWT splits them: lowercase form -> cut positions.
_FUSED = {
    "cannot": (3,), "gonna": (3,), "wanna": (3,), "gotta": (3,), "outta": (3,),
    "gimme": (3,), "lemme": (3,), "dunno": (2, 3),
    "dont": (2,), "doesnt": (4,), "didnt": (3,), "cant": (2,), "wont": (2,), "isnt": (2,),
    "arent": (3,), "wasnt": (3,), "werent": (4,), "havent": (4,), "hasnt": (3,),
    "hadnt": (3,), "wouldnt": (5,), "couldnt": (5,), "shouldnt": (6,), "aint": (2,),
    "im": (1,), "ive": (1,), "youre": (3,), "theyre": (4,), "thats": (4,), "whats": (4,),
    "theres": (5,),
}
# ... and the one only capitalised ("lets" is a verb; sentence-initial "Lets" is "Let's").
_FUSED_EXACT = {"Lets": ("Let", "s")}

# Words that keep a following period: any case, then only as written (ambiguous words such
# as "sat." or "fig." are abbreviations only capitalised).
_ABBREVIATIONS = frozenset("""
    mr mrs ms dr prof sr jr st inc corp ltd co bros vs etc al approx dept est ext cf ps
    assn natl intl govt""".split())
_CAPITALISED_ABBREVIATIONS = frozenset("""
    Jan Feb Apr Jun Jul Aug Sep Sept Oct Nov Dec Mon Tue Tues Wed Thu Thur Thurs Fri Sat
    Mt Ft Gov Sen Rep Gen Col Capt Lt Sgt Cmdr Adm Rev Hon Pres Ave Blvd Rd Hwy Apt Ste
    Univ Calif Ont Sts Drs PVT LTD INC CORP CO""".split())
# Abbreviations that take a period only before a number ("No. 5", "Vol. 2").
_NUMBER_ABBREVIATIONS = frozenset({"no", "nos", "vol", "pp", "fig", "art", "p"})
# Abbreviations before a name (and the postscript's): a sentence never ends after them.
_NOT_FINAL = frozenset("""
    mr mrs ms dr drs prof st mt ft gov sen rep gen col capt lt sgt cmdr adm rev hon pres
    ps p.s""".split())
_NEXT_IS_NUMBER = re.compile(r"\s*\d")


def _is_abbreviation(form: str, text: str, after: int) -> bool:
    """Whether ``form``, followed by a period at ``after - 1``, keeps that period."""
    if len(form) == 1:
        return form.isupper()                      # an initial: "M."
    low = form.lower()
    if low in _ABBREVIATIONS or form in _CAPITALISED_ABBREVIATIONS:
        return True
    if low in _NUMBER_ABBREVIATIONS:
        return _NEXT_IS_NUMBER.match(text, after, after + 20) is not None
    # Letters separated by periods: "U.S", "a.m", "e.g", "Ph.D".
    parts = form.split(".")
    return len(parts) > 1 and all(p.isalpha() and len(p) <= 2 for p in parts)


def _fused_words(form: str) -> tuple[str, ...]:
    """The syntactic words of a word without internal punctuation ("dont" -> do, nt)."""
    if form in _FUSED_EXACT:
        return _FUSED_EXACT[form]
    cuts = _FUSED.get(form.lower())
    if cuts is None:
        return (form,)
    return tuple(form[a:b] for a, b in pairwise((0, *cuts, len(form))))


# A word needs a closer look (_word_tokens) when one of these follows it, when it starts
# with a digit (units), or when it is one of these (lowercased).
_AFTER_WORD_SPECIAL = frozenset(".'\u2019")
_SPECIAL_WORDS = frozenset(_FUSED) | {"its", "lets"}

# Words after which a web text's "its" is "it's" (it + s, as EWT splits it) and not the
# possessive: "its a shame", "its not", "its the best".
_AFTER_ITS_IS = frozenset("""
    a an the not no all your my our their his her this that what how so very too just
    really still also only always never been gonna going getting kind pretty ok okay like
    about because definitely probably actually""".split())
_NEXT_WORD = re.compile(r"\s++([A-Za-z]++)")


def _its_is_it_is(text: str, end: int) -> bool:
    """Whether "its" ending at ``end`` is a misspelt "it's", judged by the next word."""
    m = _NEXT_WORD.match(text, end)
    return m is not None and m.group(1).lower() in _AFTER_ITS_IS


Piece = tuple[int, int, tuple[str, ...] | None]   # start, end, words (None: just itself)


def _word_pieces(form: str, start: int) -> list[Piece]:
    """A word (or kept compound) as pieces: a number and its unit are two tokens, a fused
    contraction ("dont") one token of several words."""
    if form[0].isdigit():
        m = _UNIT.fullmatch(form)
        if m is not None:
            cut = start + m.end("num")
            return [(start, cut, None), (cut, start + len(form), None)]
    words = _fused_words(form)
    return [(start, start + len(form), None if len(words) == 1 else words)]


def _word_tokens(text: str, start: int, end: int, compound: bool, quote_open: bool
                 ) -> tuple[list[Piece], int]:
    """The tokens of the word or compound matched at ``text[start:end]``, and where the next
    token starts: a period an abbreviation keeps, or the apostrophe of a plural possessive
    ("soldiers'") when no single quote is open, joins the last token."""
    form = text[start:end]
    if compound:
        pieces = _split_compound(form, start)
    elif form in ("its", "Its") and _its_is_it_is(text, end):
        pieces = [(start, end, (form[:2], "s"))]
    else:
        pieces = _word_pieces(form, start)
    if end == len(text):
        return pieces, end
    nxt = text[end]
    last_start, last_end, last_words = pieces[-1]
    if last_words is not None:
        return pieces, end
    if nxt == ".":
        if text[end + 1:end + 3] != ".." and _is_abbreviation(text[last_start:last_end],
                                                                text, end + 1):
            pieces[-1] = (last_start, end + 1, None)
            end += 1
    elif (nxt in _QUOTES and not quote_open and text[end - 1] in "sS"
          and (end + 1 == len(text) or not _is_word_char(text[end + 1]))):
        pieces[-1] = (last_start, end + 1, (text[last_start:end], nxt))
        end += 1
    return pieces, end


class EnglishTokenizer(Tokenizer):
    """Rule-based English tokenizer and sentence splitter (UD English EWT conventions)."""

    def tokens(self, text: str, offset: int = 0) -> Iterator[Token]:
        for tok, _ in _scan(text, offset):
            yield tok

    def sentences(self, text: str, offset: int = 0) -> Iterator[tuple[list[Token], bool]]:
        sent: list[Token] = []
        ended: str | None = None       # how the sentence so far may end (see _scan)
        for tok, how in _scan(text, offset):
            if ended is not None and sent:
                if how == "emo" or (how == "close" and not sent[-1].space_after):
                    # A smiley after the end, or a closing quote or bracket glued to it,
                    # still belongs to the sentence.
                    if len(sent) < MAX_SENTENCE_TOKENS:
                        sent.append(tok)
                        continue
                elif _starts_sentence(tok, ended):
                    yield _final_period(sent), False
                    sent = []
            if len(sent) == MAX_SENTENCE_TOKENS:
                yield sent, True   # no end in sight: cut here (see MAX_SENTENCE_TOKENS)
                sent = []
            sent.append(tok)
            ended = None if how == "close" else how
        if sent:
            yield _final_period(sent), False


def _scan(text: str, offset: int) -> Iterator[tuple[Token, str | None]]:
    """The tokens of ``text`` (offsets shifted by ``offset``), each with how a sentence may
    end at it: None (it may not), "stop" (. ! ? or a run of them), "dots" (an ellipsis),
    "abbr" (an abbreviation that kept its period), "colon", "emo" (a smiley), or "close"
    (a closing quote or bracket: as the token before it). _starts_sentence says what may
    follow each."""
    n = len(text)
    pos = 0
    quote_open = False       # an opening single quote waits for its closing one
    search = _TOKEN.search
    while True:
        m = search(text, pos)
        if m is None:
            return
        kind = m.lastgroup
        start, end = m.span()
        if kind == "word":
            form = text[start:end]
            nxt = text[end] if end < n else " "
            if (nxt not in _AFTER_WORD_SPECIAL and form.lower() not in _SPECIAL_WORDS
                    and not form[0].isdigit()):
                # The common case: a plain word, one token of one word.
                yield Token(form, start + offset, end + offset, (form,), nxt.isspace()), None
                pos = end
                continue
        if kind == "word" or kind == "compound":
            pieces, end = _word_tokens(text, start, end, kind == "compound", quote_open)
            for a, b, words in pieces:
                form = text[a:b]
                how = None
                if form[-1] == "." and words is None and len(form) > 1:
                    # An abbreviation kept its period: titles, initials and P.S. come
                    # before more of the sentence.
                    stem = form[:-1].lower()
                    how = None if len(stem) == 1 or stem in _NOT_FINAL else "abbr"
                yield Token(form, a + offset, b + offset, words or (form,),
                            b == n or text[b].isspace()), how
            pos = end
            continue
        how = None
        if kind == "final":
            how = "dots" if end - start > 1 and text[start:start + 2] == ".." or \
                text[start] == "\u2026" else "stop"
        elif kind == "single":
            c = text[start]
            if c in _CLOSER_SET:
                how = "close"
            if c in _QUOTES:
                # A single quote opens when it stands before a word after a space or an
                # opening bracket (then it is no closer); any other closes an open quote.
                before = text[start - 1] if start else " "
                quote_open = ((before.isspace() or before in _OPENERS) and end < n
                              and not text[end].isspace())
                if quote_open:
                    how = None
        elif kind == "emo":
            how = "emo"
        elif kind == "run":
            if end - start == 1 and text[start] == ":":
                how = "colon"
        elif kind == "url":
            end = _trim_url(text, start, end)
        form = text[start:end]
        yield Token(form, start + offset, end + offset, (form,),
                    end == n or text[end].isspace()), how
        pos = end


def _final_period(sent: list[Token]) -> list[Token]:
    """The sentence with the period of a final abbreviation as a token of its own: EWT
    writes "in the U.S." at the end of a sentence as ``U.S`` ``.``."""
    last = sent[-1]
    form = last.form
    if len(form) > 1 and form[-1] == "." and form[-2].isalpha() and len(last.words) == 1:
        stem = form[:-1]
        sent[-1:] = [Token(stem, last.start, last.end - 1, (stem,), False),
                     Token(".", last.end - 1, last.end, (".",), last.space_after)]
    return sent


# Capitalised words that after an abbreviation show a new sentence has begun ("... in the
# U.S. The ..."); a capitalised name after one ("U.S. Department", "J.M. Huber") does not.
_SENTENCE_OPENERS = frozenset("""
    The A An This That These Those It Its I We You He She They There Here What When Where
    Why How Who Which If But And So Or Then In On At For As After Before Please Thanks
    Thank My Our Your His Her Their All Some No Yes""".split())


def _starts_sentence(tok: Token, ended: str) -> bool:
    """Whether ``tok`` opens a new sentence after one that may end as ``ended`` says (see
    ``EnglishTokenizer.sentences``). Tuned on EWT dev: web text often starts a sentence in
    lowercase after . ! ?, but not after an ellipsis or a smiley; after an abbreviation or a
    colon a capitalised word is mostly a name, so only a few function words count."""
    form = tok.form
    if ended in ("abbr", "colon"):
        return tok.words[0] in _SENTENCE_OPENERS
    c = form[0]
    if ended == "emo":
        return c.isupper()
    if c.islower():
        return ended == "stop"
    return True


_ADDRESS = re.compile(r"""(?:(?:https?|ftp)://|www\d{0,3}\.)[^\s<>"]++"""
                      r"|(?:mailto:)?[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# The same, with an e-mail's local part starting only where a run of [\w.+-] starts: tried at
# each position of a run with no "@" after it, _ADDRESS reads the run to its end every time,
# quadratic in the run (a 200,000-letter line without a space took 2 minutes). _ADDRESS
# finds a local part inside a run only where its search starts (``addresses``).
_ADDRESS_AT_RUN = re.compile(r"""(?:(?:https?|ftp)://|www\d{0,3}\.)[^\s<>"]++"""
                             r"|(?:mailto:)?(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def addresses(text: str) -> list[tuple[int, int]]:
    """The web and e-mail addresses of ``text`` as (start, end) character spans, without
    trailing punctuation (``_trim_url``): what every tokenizer keeps whole, as one token (UD
    treebanks hardly have any, so a learnt tokenizer would cut them at '.', '/' and '@').

    The matches of ``_ADDRESS.finditer``, in linear time: a local part that starts inside a
    run (of word characters, ".", "+" and "-") ends where one starting at the run's previous
    character does, so past the first position a search tries, ``_ADDRESS`` and
    ``_ADDRESS_AT_RUN`` match at the same places; that first position (after an e-mail
    address, one can follow from a "." or "+") is tried with ``_ADDRESS`` itself
    (tests/tokenizer/test_addresses.py checks this against ``finditer`` on random text)."""
    out = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _ADDRESS.match(text, pos) if pos > 0 else None
        if m is None:
            m = _ADDRESS_AT_RUN.search(text, pos)
            if m is None:
                break
        end = _trim_url(text, m.start(), m.end())
        if end - m.start() > 1:
            out.append((m.start(), end))
        pos = m.end()
    return out


def _trim_url(text: str, start: int, end: int) -> int:
    """End of a URL matched from ``start`` to ``end``, without trailing punctuation (and a
    closing bracket only when it has no opening one inside the URL)."""
    opens = closes = -1      # counted lazily, once
    while end > start + 1:
        c = text[end - 1]
        if c in ".,;:!?'\"":
            end -= 1
        elif c in ")]}":
            if opens < 0:
                url = text[start:end]
                opens = url.count("(") + url.count("[") + url.count("{")
                closes = url.count(")") + url.count("]") + url.count("}")
            if closes <= opens:
                break
            closes -= 1
            end -= 1
        else:
            break
    return end


def _split_compound(form: str, start: int) -> list[Piece]:
    """Cut a compound (word runs joined by single punctuation characters) into tokens.

    Returns (start, end, words) pieces; ``words`` is None for a piece that is one word.
    """
    if "@" in form:
        return [(start, start + len(form), None)]           # an e-mail address
    joints = [(m.start(), m.end()) for m in _JOINT_SPLIT.finditer(form)]
    chars = {form[a] for a, _ in joints}
    if chars <= {".", "&"}:
        return _word_pieces(form, start)                    # dotted name, number, AT&T
    if _PHONE.fullmatch(form) or _DATE.fullmatch(form):
        return [(start, start + len(form), None)]
    # Runs of word characters between the joints.
    bounds = [0] + [b for a, b in joints]
    ends = [a for a, b in joints] + [len(form)]
    segments = [form[a:b] for a, b in zip(bounds, ends)]
    dotted = any(form[a] == "." and segments[k].isalpha() and segments[k + 1].isalpha()
                 for k, (a, _) in enumerate(joints))
    pieces: list[Piece] = []
    tok_start = 0                 # start of the token being built (relative to form)
    word_cuts: list[int] = []     # clitic boundaries inside it
    for k, (a, b) in enumerate(joints):
        left, right = segments[k], segments[k + 1]
        c = form[a]
        if c in _APOS:
            if right.lower() in _CLITICS and not _ALL_DIGITS.fullmatch(left):
                word_cuts.append(a)
            elif right.lower() == "t" and left[-1:] in ("n", "N") and len(left) > 1:
                word_cuts.append(a - 1)
            continue                          # the apostrophe stays inside the token
        if _keeps_joint(c, left, right, dotted):
            continue
        pieces.extend(_token_pieces(form, start, tok_start, a, word_cuts))
        pieces.append((start + a, start + b, None))
        tok_start = b
        word_cuts = []
    pieces.extend(_token_pieces(form, start, tok_start, len(form), word_cuts))
    return pieces


def _keeps_joint(c: str, left: str, right: str, dotted: bool) -> bool:
    """Whether the punctuation ``c`` between word runs ``left`` and ``right`` stays inside
    the token (True) or becomes a token of its own."""
    if c in ".&":
        return True
    if c in ",:":
        return left[-1].isdigit() and right[0].isdigit()          # 1,000  11:21
    if c == "/":
        if left[-1].isdigit() and right[0].isdigit():
            return True                                            # 01/24/2001
        return f"{left}/{right}".lower() in _SLASH_WORDS
    if c == "-":
        return (dotted or left.lower() in _HYPHEN_PREFIXES
                or right.lower() in _HYPHEN_SUFFIXES)
    return False


def _token_pieces(form: str, start: int, a: int, b: int, cuts: list[int]
                  ) -> list[Piece]:
    """The token ``form[a:b]``, as one multiword piece when ``cuts`` splits it into words."""
    if not cuts:
        return _word_pieces(form[a:b], start + a)
    words = tuple(form[x:y] for x, y in pairwise((a, *cuts, b)) if y > x)
    return [(start + a, start + b, words if len(words) > 1 else None)]
