"""Shared fixtures of the scene tests: real engine traces (computed once per session)."""
import pytest


@pytest.fixture(scope="session")
def k3_config():
    from compute.config import load_default

    return load_default()


@pytest.fixture(scope="session")
def engine():
    from compute.engine import ToyK3

    return ToyK3()


@pytest.fixture(scope="session")
def trace_a(engine):
    return engine.run("로봇이 컵을 집었다", max_new_tokens=2)


@pytest.fixture(scope="session")
def trace_b(engine):
    return engine.run("The robot lifted a red cup", max_new_tokens=2)

