"""Read-side queries of the scheduling app (``get_*``, ``list_*``, ``build_*``)."""
