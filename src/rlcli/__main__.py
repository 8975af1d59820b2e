"""``python -m rlcli``: the same as the ``rlcli`` command."""

from rlcli.cli import main

main()
