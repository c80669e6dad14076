"""The end-to-end benchmark (``python -m console.bench_e2e``; see ``__main__``)."""
