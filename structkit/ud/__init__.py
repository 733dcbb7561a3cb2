"""The ud task: `structkit eval --task ud`, the CoNLL 2018 shared task's metrics
(``structkit.eval.ud``). It scores files only: no model, no command, nothing to train."""
