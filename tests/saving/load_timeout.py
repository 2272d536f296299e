"""A time limit on a load, shared by the hostile-file tests and the loaders' fuzzer."""
import contextlib
import signal


class LoadHangs(Exception):
    """Raised in a load that runs too long: not one of the errors a load turns into a
    ModelFileError (errors._FILE_ERRORS), so it fails the test."""


@contextlib.contextmanager
def within(seconds):
    """Fails the test if the block runs longer than `seconds` (a hang)."""
    def timeout(signum, frame):
        raise LoadHangs('no answer in %d s' % seconds)
    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
