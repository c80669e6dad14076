#!/usr/bin/env python
"""Django's command-line utility for the console.

``manage.py place ...`` is answered by the HAMi what-if (:mod:`scheduling.kube.hami.cli`,
pure) before Django starts: the what-if command needs no database, so it must not start (or
wait for) one.
"""

import os
import sys

from django.core.management import execute_from_command_line

from scheduling.kube.hami.cli import main as place_main


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "place":
        sys.argv[0] = "manage.py place"
        raise SystemExit(place_main(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.base")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
