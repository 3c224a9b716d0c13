#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlcenter.settings")
    from infra.event_loop import web_loop_install

    web_loop_install(sys.argv)  # before Django's apps: Daphne's would install its own
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
