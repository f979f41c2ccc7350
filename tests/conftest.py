"""Test configuration shared by every suite: import paths and hypothesis profiles."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # `import ir`, `import tests.prim_samples` without installing

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("tensorplay", deadline=None, max_examples=30,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=500,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("TENSORPLAY_HYPOTHESIS_PROFILE", "tensorplay"))
