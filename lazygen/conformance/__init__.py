"""OpInfo conformance of a lazy backend: which of torch's OpInfo entries run lazily and
correctly on it, which fall back to eager, which are wrong, raise, or crash the process.

* ``entries``     the OpInfo entries (and ``conversions``' cases) a run can name;
* ``classify``    runs one entry lazily and eagerly in this process and classifies it;
* ``opmap``       which entries exercise the ops of a backend op list;
* ``worker``      the subprocess that runs a chunk of entries and streams one result each;
* ``runner``      chunks, subprocesses, crash isolation (a chunk killed by a signal is
  re-run entry by entry so the crash names its entry), timeouts, parallel jobs;
* ``report``      result lines, summaries and the JSON matrix.

``lazygen conformance`` (``lazygen/commands/conformance.py``) is the command line; the
repository's baseline suites (``tests/conformance``) classify with the same code.
"""
