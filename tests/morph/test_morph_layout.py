"""A morph model (and a pos-task model over candidate lattices) records the morph feature layout
its hashed weights were trained with; a file with another layout, or none (trained before the
layout was recorded), is refused in one line instead of tagging silently wrong."""
from __future__ import annotations

import pytest
from test_morph_task import data, trained  # noqa: F401 (the small inflecting treebank and its model)

from structkit.errors import UserError
from structkit.model import load_model, save_model
from structkit.lattice.features import layout
from structkit.morph.task import MorphModel


def test_the_layout_is_saved_and_checked(sk, trained, tmp_path):  # noqa: F811
    header, arrays = load_model(str(trained), ("morph",))
    assert header["layout"] == layout()
    MorphModel.load(str(trained))
    for name, edit in (("none", lambda h: h.pop("layout")),
                       ("other", lambda h: h["layout"]["own"].append("s9"))):
        h = {k: v for k, v in header.items() if k not in ("format", "version", "checksum", "structkit")}
        h["layout"] = {k: list(v) for k, v in layout().items()}
        edit(h)
        bad = tmp_path / f"{name}.model"
        save_model(str(bad), h, arrays)
        with pytest.raises(UserError) as ei:
            MorphModel.load(str(bad))
        msg = ei.value.message
        assert "morphological features" in msg and "retrain" in msg and "\n" not in msg
        r = sk("morph", "-m", bad, "-", stdin=b"1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
        assert r.code == 1 and len(r.err.splitlines()) == 1 and "retrain" in r.err, r.err
