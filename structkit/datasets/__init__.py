"""Public corpora: the registry (``registry``), where files are found (``paths``), and
fetching with checksums (``fetch``). ``structkit data list|fetch|path`` is the command line."""
from structkit.datasets.fetch import Fetched, fetch, status, summary
from structkit.datasets.paths import cache_dir, data_home, resolve, sample_dir, search_dirs
from structkit.datasets.registry import Corpus, Download, File, corpora, get, register, unregister

__all__ = ["Corpus", "Download", "File", "Fetched", "cache_dir", "corpora", "data_home", "fetch",
           "get", "register", "resolve", "sample_dir", "search_dirs", "status", "summary", "unregister"]
