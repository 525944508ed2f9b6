"""The one error type the CLI turns into a single line and exit code 2."""


class KafkalabError(Exception):
    """A problem the user can fix: the message names what is wrong and what to do."""

    exit_code = 2
