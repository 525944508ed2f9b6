"""A child process that does nothing until its stdin closes: a real ``ChildClient`` child for tests that signal it."""

import sys

for _line in sys.stdin:
    pass
