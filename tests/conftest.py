"""Test configuration shared by every suite: import paths, hypothesis profiles, and a private
on-disk compile cache (tests never read or write a developer's ~/.cache/tensorplay)."""
import os
import sys
import tempfile

if "TENSORPLAY_TEST_CACHE_DIR" not in os.environ:  # one fresh cache per test session, removed at exit
    import atexit
    import shutil

    os.environ["TENSORPLAY_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="tensorplay-test-cache-")
    atexit.register(shutil.rmtree, os.environ["TENSORPLAY_TEST_CACHE_DIR"], ignore_errors=True)
os.environ["TENSORPLAY_CACHE_DIR"] = os.environ["TENSORPLAY_TEST_CACHE_DIR"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # `import ir`, `import tests.prim_samples` without installing
# Tests run with --import-mode=importlib (test files in different folders may share a basename);
# shared helper modules (prim_samples, corpus, ...) are imported by bare name from these folders.
_TESTS = os.path.dirname(os.path.abspath(__file__))
for _dir in [_TESTS] + sorted(os.path.join(_TESTS, d) for d in os.listdir(_TESTS)
                             if os.path.isdir(os.path.join(_TESTS, d)) and not d.startswith((".", "_"))):
    if _dir not in sys.path:
        sys.path.append(_dir)

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("tensorplay", deadline=None, max_examples=30,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=500,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("TENSORPLAY_HYPOTHESIS_PROFILE", "tensorplay"))
