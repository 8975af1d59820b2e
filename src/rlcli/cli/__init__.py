"""The ``rlcli`` command: thin Typer wrappers over the library."""
