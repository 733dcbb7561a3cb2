"""The public corpora structkit can fetch: where each comes from, its licence, the files it
produces (with their sha256 and split) and how they are made from the downloads.

Checksums are of the files as structkit writes them, and (``source_sha256``) of an archive
member before a conversion where the conversion may change it. Archives themselves are not
checksummed where upstream may rebuild them (zip files of the NLTK data repository); their
members are. Universal Dependencies treebanks are named ``ud:Language-Name@release`` and read
from the treebank's GitHub repository, whose file listing gives each file's git blob id to
check; the pinned entries below add sha256 where we know it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from structkit.errors import UserError
from structkit.named import Table

NLTK = "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora"
NLTK_PINNED = ("https://raw.githubusercontent.com/nltk/nltk_data/"
               "5db857e6f7df11eabb5e5665836db9ec8df07e28/packages/corpora")
UD_ORG = "UniversalDependencies"
UD_DEFAULT_RELEASE = "r2.14"


@dataclass(frozen=True)
class File:
    """One file a corpus produces, relative to the data folder."""
    path: str
    split: str
    sha256: str | None = None         # of the file as written
    size: int | None = None           # bytes, as written
    source_sha256: str | None = None  # of the archive member it comes from, before conversion
    member: str | None = None         # the archive member (a name or a trailing path)
    source: int = 0                   # which download holds it
    git_sha1: str | None = None       # git blob id (UD: from the repository's listing)

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Download:
    """A file to download: the URL, then mirrors of the same bytes."""
    urls: tuple[str, ...]
    sha256: str | None = None
    git_sha1: str | None = None

    @property
    def url(self) -> str:
        return self.urls[0]

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1].split("?", 1)[0]


@dataclass(frozen=True)
class Corpus:
    name: str
    description: str
    licence: str
    files: tuple[File, ...]
    downloads: tuple[Download, ...] = ()
    convert: str = "copy"     # how files are made: a name in structkit.datasets.convert.CONVERTERS
    homepage: str = ""
    aliases: tuple[str, ...] = ()
    ud: tuple[str, str] | None = None   # (treebank, git ref) for a UD treebank
    notes: str = ""

    @property
    def folders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.path.split("/", 1)[0] for f in self.files))

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.split for f in self.files if f.split))

    @property
    def size(self) -> int:
        return sum(f.size or 0 for f in self.files)

    @property
    def size_known(self) -> bool:
        return all(f.size is not None for f in self.files)


def _f(path, split, sha256=None, size=None, **kw) -> File:
    return File(path, split, sha256, size, **kw)


def _conll2002() -> Corpus:
    table = [  # (file, split, sha256 of the NLTK member, our size or None)
        ("esp.train", "train", "a20d95cab7d88a19a86f8c1ad6329325c99fbd9529ed978cbd7e31d4b01b4008", 2970825),
        ("esp.testa", "dev", "85c17793b77881c53d19017d9d0f1e6fb98b7ddcab54a5f24b05ed1793103c87", 594058),
        ("esp.testb", "test", "1f8f7a392c6d4979a5592a5794eed43d7869b46da6851bbcde99714149f1d016", 575807),
        ("ned.train", "train", "0a419dcb356b62c8cff38515675550b3d5dbea9f45a1c4956328dbd5cc7fcdbc", None),
        ("ned.testa", "dev", "51259d4bfe52462f211d3d0b67173a7ecbfa296e199f6c6bd0895f4c78155057", None),
        ("ned.testb", "test", "2aa748edb82e6f9c4d82e57a4bed69ded18cfa4803122c75070335d513517488", None),
    ]
    files = []
    for name, split, sha, size in table:
        # The Spanish members are valid UTF-8 and kept byte for byte (our files are them); the
        # Dutch ones are checked as members and written as UTF-8, so their sha256 is recorded
        # at fetch time (SHA256SUMS) rather than known in advance.
        files.append(File(f"conll2002/{name}", split, sha if size else None, size,
                          source_sha256=sha, member=f"conll2002/{name}"))
    return Corpus(
        "conll2002", "CoNLL-2002 named entities, Spanish (esp.*) and Dutch (ned.*): word POS IOB2 "
                     "tag (PER ORG LOC MISC); testa is the development set",
        "research use only (the distribution's note)", tuple(files),
        (Download((f"{NLTK}/conll2002.zip", f"{NLTK_PINNED}/conll2002.zip")),),
        convert="utf8", homepage="https://www.clips.uantwerpen.be/conll2002/ner/")


def _hyporadise() -> Corpus:
    base = ("https://raw.githubusercontent.com/rithiksachdev/PostASR-Correction-SLT2024/"
            "b0eaa62d7f9be31ba8c121bd6035b48b51a50f0c/HyPoradise-v0")
    table = [
        ("train_atis.json", "train", "70e6dac0440f09fb3477e04eb21ca83a1914f0f7ab0ab4cc361ad5ac9eb69f57", 2366617),
        ("test_atis.json", "test", "68d9ff05df5a7a8e10b8fb1d0d530f42cb5f96bd53bdc14a54c93ec26abdafdf", 451009),
        ("test_chime4.json", "test", "f96d48af0b4a968a7e3b5cd9bf69bfff91b7d951f978db91cea77227fa9de6ed", 1620786),
        ("test_coraal.json", "test", "c38d83b100eb4174b4b35d77958e3d069387f02a5ff392cef6f1ad10b1145b38", 379756),
        ("test_cv.json", "test", "711929bfded988cafc1e990b1bd81dc1053e173023346dfd72e4380df085b95f", 1692744),
        ("test_lrs2.json", "test", "91b10e518deb3d49c1e7db922c67a6c4c818b6c778d6d83b1206748e6062cb42", 1181869),
        ("test_ls_clean.json", "test", "9923393a3cc73c4f6364f4f4fa2b95b3e6c3931916b26339500c79a0e1f7154b", 2122989),
        ("test_ls_other.json", "test", "be65d10b04fe7a25d2954f204be9080841b423565323a6073e34d467acd6a747", 2123791),
        ("test_swbd.json", "test", "8008590eb9d00c6bc75638251eabfd722d71f9bc70eedec8efbe2346feda0bcf", 2053195),
        ("test_td3.json", "test", "cdfe6125c5ca83aea83dc023e2f43ffea11d25b4cd7e5748101cbc9097579b8f", 1686942),
        ("test_wsj_score.json", "test", "0ecbded82d9fe8213ec2994042f786085b1e528ddd7e5343f9c592c59b204a57", 735824),
    ]
    files = tuple(File(f"hyporadise/{n}", s, sha, size, source=i) for i, (n, s, sha, size) in enumerate(table))
    downloads = tuple(Download((f"{base}/{n}",), sha256=sha) for n, _, sha, _ in table)
    return Corpus(
        "hyporadise", "HyPoradise v0 ASR 5-best lists with references: ATIS train/test and nine "
                      "test-only sets (CHiME-4, CORAAL, CommonVoice, LRS2, LibriSpeech, SWBD, TED-LIUM 3, WSJ)",
        "MIT (HyPoradise dataset card); the audio corpora keep their own licences", files, downloads,
        homepage="https://github.com/Hypotheses-Paradise/Hypo2Trans")


def _ud_pinned(treebank: str, ref: str, licence: str, description: str,
               known: list[tuple[str, str, str | None, int | None]]) -> Corpus:
    folder = ud_folder(treebank, ref, pinned=True)
    files = tuple(File(f"{folder}/{n}", split, sha, size) for n, split, sha, size in known)
    return Corpus(f"ud-{treebank.lower()}", description, licence, files, convert="ud",
                  ud=(treebank, ref), aliases=(f"ud:{treebank}",),
                  homepage=f"https://github.com/{UD_ORG}/UD_{treebank}")


def _builtin() -> tuple[Corpus, ...]:
    return (
        Corpus(
            "conll2000", "CoNLL-2000 chunking: WSJ sections 15-18 (train) and 20 (test), word POS "
                         "IOB chunk tag",
            "research use (shared-task data; WSJ text from the Penn Treebank, LDC)",
            (File("conll2000/train.txt", "train", "82033cd7a72b209923a98007793e8f9de3abc1c8b79d646c50648eb949b87cea",
                  2842164, member="conll2000/train.txt"),
             File("conll2000/test.txt", "test", "73b7b1e565fa75a1e22fe52ecdf41b6624d6f59dacb591d44252bf4d692b1628",
                  639396, member="conll2000/test.txt")),
            (Download((f"{NLTK}/conll2000.zip", f"{NLTK_PINNED}/conll2000.zip")),),
            homepage="https://www.clips.uantwerpen.be/conll2000/chunking/"),
        _conll2002(),
        Corpus(
            "ptb", "Penn Treebank WSJ 10% sample (NLTK dependency_treebank, wsj_0001-0199) as "
                   "unlabelled CoNLL-X trees (ptb-dep/) and word<TAB>POS (ptb-pos/), split by file: "
                   "train 0001-0139, dev 0140-0169, test 0170-0199",
            "non-commercial use (NLTK data's Penn Treebank sample, (c) LDC)",
            (File("ptb-dep/train.conll", "train", "0ea7ff6ff6c61ed2ac3a590ef44b3343d94ba8d01da147d34dbfcb23aaf4dc78", 2011769),
             File("ptb-dep/dev.conll", "dev", "aea83f8c341ff1301357fc41cd64ef7c2053fa67649ac0388e2023252880118a", 289033),
             File("ptb-dep/test.conll", "test", "554cdc28b40d7fad2eb6ad61f247087310ada3c2afa3834ef7e8396e2ca73b31", 262177),
             File("ptb-pos/train.txt", "train", "91504aebdcf794cd357fbd057cbfc189b67327c95ab15680d9b7d6ca3b0b67a1", 647438),
             File("ptb-pos/dev.txt", "dev", "148d88eb23c56eecdf3421cb9c1d7e9a7fc7dd195c598042d2bc28bff0a3d57d", 92968),
             File("ptb-pos/test.txt", "test", "05fa19233f59b5daa29e41b18fe731239286306ccada4e7cd0a72467fac8caba", 85104)),
            (Download((f"{NLTK}/dependency_treebank.zip", f"{NLTK_PINNED}/dependency_treebank.zip")),),
            convert="ptb", aliases=("ptb-dep", "ptb-pos"),
            homepage="https://www.nltk.org/nltk_data/"),
        Corpus(
            "jnlpba", "JNLPBA 2004 bio-entity recognition (GENIA 3.02): token<TAB>IOB2 tag, protein "
                      "DNA RNA cell_line cell_type; no official dev set",
            "CC BY 3.0 annotations (GENIA Project); abstracts under PubMed terms",
            (File("jnlpba/Genia4ERtask2.iob2", "train", "ba0d64663077e5d15313e7a653744ed9bda8d0b1437da47e2908e85c0980e0c9",
                  4918036, member="Genia4ERtask2.iob2", source=0),
             File("jnlpba/Genia4EReval2.iob2", "test", "4334602737eef0aa3a91c8d5b5122f23447baa85c276c27385f921cb228a1e7c",
                  999303, member="Genia4EReval2.iob2", source=1)),
            tuple(Download((f"https://raw.githubusercontent.com/wolfe-pack/wolfe/"
                            f"84fa659cb49374c99b8a7488af8adb17d5edd856/wolfe-examples/src/main/resources/"
                            f"ml/wolfe/datasets/genia/{n}",)) for n in ("Genia4ERtraining.tar.gz", "Genia4ERtest.tar.gz")),
            homepage="http://www.geniaproject.org/shared-tasks/bionlp-jnlpba-shared-task-2004"),
        _hyporadise(),
        _ud_pinned("English-EWT", "r2.14", "CC BY-SA 4.0",
                   "Universal Dependencies English Web Treebank r2.14 (CoNLL-U)",
                   [("en_ewt-ud-train.conllu", "train", None, None),
                    ("en_ewt-ud-dev.conllu", "dev", "dd514122385fd3374dd10051ddaf477c957d3da0bba48931d6f969820ece233f", 1764449),
                    ("en_ewt-ud-test.conllu", "test", "5e0044aa9b786bfb81dbd5687400583a61635a65839e747b59b2ec907c8ab662", 1765008),
                    ("LICENSE.txt", "", "b3d1b0f4c6ae151f7eb78738f46ebd5ee140f8a7f76501ba26af123140d35ae7", 20014),
                    ("README.md", "", "e212cc60d7a29ba4b1fc85af071432912e33a34403c0ff6fa5ba9470c5b47ffc", 14323)]),
        _ud_pinned("English-ParTUT", "bd9434bf851c0f33b883efaac57c00c25aab296a", "CC BY-NC-SA 4.0",
                   "Universal Dependencies English ParTUT (master at bd9434bf; CoNLL-U)",
                   [("en_partut-ud-train.conllu", "train", "d7f3fa31fd8a6536e5c1ddcf37911621e77b6d37e20e73dbad1f8fc65e56ef84", 2386094),
                    ("en_partut-ud-dev.conllu", "dev", "f52fe2eeedcbb916516a7cabaeda89a618e3832ade19750e30b4f514865cdb86", 152380),
                    ("en_partut-ud-test.conllu", "test", "fdc9c5a5fd95f9b426b98cbe43fecad011cd4c33f9bf211d4673d060ee9d0e96", 188121),
                    ("LICENSE.txt", "", "9930b4650148b5b8e49e1353bb88b758530745483b1edfe2291ee8bf7b07e460", 18694),
                    ("README.md", "", "16724d0bd9431d8a7566e85f9347486828d7e5ffdcf099ca0bf4fd58591bafc3", 4708)]),
        _ud_pinned("Italian-ParTUT", "5fcc2b37885c8609f2301358f55b18a62f90242b", "CC BY-NC-SA 4.0",
                   "Universal Dependencies Italian ParTUT (master at 5fcc2b37; CoNLL-U; multiword tokens)",
                   [("it_partut-ud-train.conllu", "train", "576ecef59bedbd740c6c8744af25726d5d279afac3555fa6a37c50ec7db1324d", 3148203),
                    ("it_partut-ud-dev.conllu", "dev", "c6542e547447df403e54f314a61ec9f4a5e1e0d770dbcbdedb5ea8edcb6758fc", 193727),
                    ("it_partut-ud-test.conllu", "test", "6a3f3437fd3ab383ba37122ec84cc1bd53662512f5ff1e80ed306c6b668eb6a2", 240199),
                    ("LICENSE.txt", "", "a4a4d0684313d94493e6e0ff0c33e58a1fc4b5a07900b09a009e8a1fa9cf061c", 18694),
                    ("README.md", "", "e70520330daa1156af84fc3895eec783bb9a5649d4478f9e51b193eb8b022f8c", 4925)]),
        _ud_pinned("Turkish-IMST", "bcd48daa9957794a9137d85a4e2a115cdcdd4b1a", "CC BY-NC-SA 3.0",
                   "Universal Dependencies Turkish IMST (master at bcd48daa; CoNLL-U)",
                   [("tr_imst-ud-train.conllu", "train", "8d8b8b581dab9362e6f2e4328aef77b9fabec1d189a199e320ba136710c7bd83", 3120510),
                    ("tr_imst-ud-dev.conllu", "dev", "3bdaab362b7a9af7cbf8944aee5c1c1d077970ad4bcafcf23c5c062d4cf93801", 894821),
                    ("tr_imst-ud-test.conllu", "test", "fc9269bd598489b942a025b678779557266ce0c054a843e47c7db386d76d6459", 841235),
                    ("LICENSE.txt", "", "446deff834665054c41eff659e9a7f22b62c00879574dde2aebb1d5db83b842b", 20746),
                    ("README.md", "", "a9c5e0a585ba2fcdb0ea49661f4311243d06c3d27d6f827fc933393de3d2b957", 4186)]),
        _ud_pinned("Vietnamese-VTB", "e8fa54835582fb5d0c767f19f0992675726fa084", "CC BY-SA 4.0",
                   "Universal Dependencies Vietnamese VTB (master at e8fa5483; CoNLL-U; words with spaces)",
                   [("vi_vtb-ud-train.conllu", "train", "1df180722db99b724f7368aca50597133bee28606de3394cd8d12a57da89978d", 946835),
                    ("vi_vtb-ud-dev.conllu", "dev", "0b779257b9225575b3b30e15d64cc4ef9945a77f8cceb9f92d794b483a2752dd", 1232268),
                    ("vi_vtb-ud-test.conllu", "test", "abc1b0ea98661bbb494a8c0da123ba2fe1a3ef71322c380fe66468884d9b4285", 538633),
                    ("LICENSE.txt", "", "df653272772ee86b0098bfc640b0ab583f6ecf59bb6254b82feaba3aed3ed93c", 20013),
                    ("README.md", "", "480326037a1b6cc6018556072fdd3cb6c4ccd0c1dea73bb78ee6259d39d4fbbe", 1317)]),
        _ud_pinned("Tamil-TTB", "afe55e0c8ee0e5bfdb2c1cdb287880a22d254b58", "CC BY-NC-SA 3.0",
                   "Universal Dependencies Tamil TTB (master at afe55e0c; CoNLL-U)",
                   [("ta_ttb-ud-train.conllu", "train", "39b9bfbe31027ddf27e323f2ef7bc07c73426d4cffa74479a43d99d06be1acb2", 1164229),
                    ("ta_ttb-ud-dev.conllu", "dev", "b89ee8b5196570d633b760683c2c492b14daae4222a24dc411f1cd64d3cb1298", 230759),
                    ("ta_ttb-ud-test.conllu", "test", "c7304e16335f5afc8d69a9632d984d537fedcf8afb6f89e6fc9bb29e4a186e69", 361454),
                    ("LICENSE.txt", "", "92e1967db93875b90f453b171263f29ae52504b84d93e4b779dd311cd88b4fff", 280),
                    ("README.md", "", "fe69dcde003773cf26147a5cd8e9e6a84856f86cd21e6517c93d08789a8ee13e", 4834)]),
        _ud_pinned("Chinese-GSDSimp", "eb3aed31ebb170897405ee5cd1db83a1a0b11864", "CC BY-SA 4.0",
                   "Universal Dependencies Chinese GSDSimp (master at eb3aed31; CoNLL-U; no spaces between words)",
                   [("zh_gsdsimp-ud-train.conllu", "train", None, None),
                    ("zh_gsdsimp-ud-dev.conllu", "dev", "342a2969df6d6d08bdc25dbc067c93c86ab3099bb054a9921ae7067cbc2c53ad", 1180003),
                    ("zh_gsdsimp-ud-test.conllu", "test", "573f59b799b499a920d2d5bdc0e3c1dbd7bcacf86bdece4334ecbd03e21b6150", 1120900),
                    ("LICENSE.txt", "", "899b1804a12ebc090b96339614eede1b64b686721b650a71430b55b5235f7f79", 202),
                    ("README.md", "", "ac036d793c868a0606dc170090edc21ac3bfd2cdf8b880cd0ed503d817755166", 2872)]),
        _ud_pinned("Finnish-TDT", "5e3a88a671ea673fa330e10cc59f54da587a95a7", "CC BY-SA 4.0",
                   "Universal Dependencies Finnish TDT (master at 5e3a88a6; CoNLL-U)",
                   [("fi_tdt-ud-train.conllu", "train", None, None),
                    ("fi_tdt-ud-dev.conllu", "dev", "f42cfdc427116b8152ee012541c2f99d95cbc734e629c4eb5c80e20dd67edc0c", 1504222),
                    ("fi_tdt-ud-test.conllu", "test", "3317528f16ab74333dce44051971e1ed0d115c8ffa1359a20f3bddb8e63498ee", 1727677),
                    ("LICENSE.txt", "", "d59ddaa61ea7bef197ae6de9301a5f7dd3f107744766f9049bf9da516d30419b", 25587),
                    ("README.txt", "", "df602de2a1be2a91693588e04bfb5b63bc98d4eff9f8bcddde337fa4c8b61c06", 5141)]),
    )


_TABLE: Table[Corpus] = Table(_builtin)
_table = _TABLE.items
corpora = _TABLE.all          # every one, in listing order
register = _TABLE.register   # add one (a later one with the same name replaces it): plugins, tests
unregister = _TABLE.unregister


# ---- Universal Dependencies ---------------------------------------------------------------------
_UD_NAME = re.compile(r"^ud:([A-Za-z][A-Za-z_]*-[A-Za-z0-9_]+)(?:@([A-Za-z0-9][A-Za-z0-9._-]*))?$")


def ud_folder(treebank: str, ref: str, pinned: bool = False) -> str:
    """``ud-english-ewt`` for a pinned release, ``ud-english-ewt@r2.15`` for another."""
    base = f"ud-{treebank.lower()}"
    return base if pinned else f"{base}@{ref}"


def ud_corpus(spec: str) -> Corpus:
    """The corpus for ``ud:Language-Name[@release]``: a pinned entry when it names one, else a
    corpus whose files are found in the treebank's GitHub listing at fetch time."""
    m = _UD_NAME.match(spec)
    if not m:
        raise UserError(f"{spec!r} is not a UD treebank name: write ud:Language-Name[@release], "
                        f"e.g. ud:English-EWT@{UD_DEFAULT_RELEASE}")
    treebank, ref = m.group(1), m.group(2)
    for c in corpora():
        if c.ud is not None and c.ud[0].lower() == treebank.lower() and ref in (None, c.ud[1]):
            return c
    ref = ref or UD_DEFAULT_RELEASE
    return Corpus(f"ud:{treebank}@{ref}", f"Universal Dependencies {treebank} at {ref} (CoNLL-U)",
                  "see the treebank's LICENSE.txt", (), convert="ud", ud=(treebank, ref),
                  homepage=f"https://github.com/{UD_ORG}/UD_{treebank}")


def get(name: str) -> Corpus:
    """A corpus by name, alias or ``ud:`` spec; an unknown name is a UserError listing them."""
    if name.startswith("ud:"):
        return ud_corpus(name)
    table = _table()
    if name in table:
        return table[name]
    for c in table.values():
        if name in c.aliases:
            return c
    raise UserError(f"unknown corpus {name!r}: known are {', '.join(table)}, "
                    f"or ud:Language-Name@release for a Universal Dependencies treebank "
                    f"(`structkit data list` describes them)")


def corpus_for_path(path: str) -> Corpus | None:
    """The registered corpus whose folder a relative path starts with, if any."""
    head = path.replace("\\", "/").lstrip("./").split("/", 1)[0]
    if not head:
        return None
    for c in corpora():
        if head in c.folders:
            return c
    return None
