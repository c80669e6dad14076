#!/usr/bin/env python
"""Django's command-line utility for the console.

``manage.py place ...`` is answered by the pure placement core before Django starts: the
what-if command needs no database, so it must not start (or wait for) one.
"""

import os
import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "place":
        from scheduling.placement.place import main as place_main

        sys.argv[0] = "manage.py place"
        raise SystemExit(place_main(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.base")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
