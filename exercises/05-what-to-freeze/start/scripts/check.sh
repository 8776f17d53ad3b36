#!/bin/sh
# The project's test runner: the one command CI and the goal run. Its flags decide which tests
# run, so it matters as much as the tests themselves.
exec python3 -B -m unittest discover -s tests -v
