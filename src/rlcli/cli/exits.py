"""Exit statuses of the ``rlcli`` command that more than one module gives (bad input, 2, is
``rlcli.cli.render.EXIT_BAD_INPUT``)."""

# 128 + SIGINT, what a shell reports for a process that Ctrl-C ended.
EXIT_INTERRUPTED = 130

# 128 + SIGTERM, what a shell reports for a process that a scheduler or `kill` ended.
EXIT_TERMINATED = 143
