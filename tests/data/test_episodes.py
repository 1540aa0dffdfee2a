import logging
import os
from pathlib import Path

import numpy as np
import pytest

from planetrl.data import episodes as E


def _episode(length=5, size=8):
    steps = length + 1
    return {
        "image": np.random.default_rng(0).integers(0, 255, (steps, size, size, 3), dtype=np.uint8),
        "action": np.zeros((steps, 2), np.float32),
        "reward": np.arange(steps, dtype=np.float32),
        "is_first": np.eye(1, steps, 0, dtype=bool)[0],
        "is_last": np.eye(1, steps, steps - 1, dtype=bool)[0],
        "is_terminal": np.zeros(steps, bool),
    }


def test_write_read_round_trip_and_name(tmp_path):
    path = E.write_episode(tmp_path, _episode(5))
    assert E.parse_name(path)[1] == 5
    loaded = E.read_episode(path)
    for key, value in _episode(5).items():
        np.testing.assert_array_equal(loaded[key], value)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind


def test_invalid_episode_is_refused():
    bad = _episode()
    bad["reward"] = bad["reward"][:-1]
    with pytest.raises(E.EpisodeError, match="reward"):
        E.validate(bad)


def test_corrupt_and_foreign_files_are_skipped_with_a_warning(tmp_path, caplog):
    good = E.write_episode(tmp_path, _episode())
    truncated = tmp_path / E.episode_name(5)
    truncated.write_bytes(good.read_bytes()[:200])
    foreign = tmp_path / E.episode_name(3)
    np.savez(foreign, x=np.zeros(3))
    with caplog.at_level(logging.WARNING):
        assert E.try_read_episode(truncated) is None
        assert E.try_read_episode(foreign) is None
    assert E.try_read_episode(good) is not None
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2
    assert truncated.name in warnings[0] and foreign.name in warnings[1] and "lacks keys" in warnings[1]


def test_writer_assembles_steps_per_env(tmp_path):
    writer = E.EpisodeWriter(tmp_path)
    image = np.zeros((8, 8, 3), np.uint8)
    for index in (0, 1):
        writer(index, dict(image=image, action=np.zeros(2), reward=0.0, is_first=True, is_last=False,
                           is_terminal=False))
    for index, length in ((0, 2), (1, 3)):
        for t in range(length):
            last = t == length - 1
            path = writer(index, dict(image=image + t, action=np.ones(2), reward=1.0, is_first=False,
                                      is_last=last, is_terminal=False))
            assert (path is not None) == last
    lengths = sorted(E.parse_name(p)[1] for p in E.list_episodes(tmp_path))
    assert lengths == [2, 3]


def _open_files() -> set[str]:
    fds = Path("/proc/self/fd")
    return {os.path.realpath(fd) for fd in fds.iterdir() if fd.is_symlink()}


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists open files through /proc")
def test_a_damaged_file_is_closed_when_it_is_refused(tmp_path):
    """np.load left a truncated file open for as long as its error was referenced (the logged warning's
    record holds it), and then the garbage collector closed it with a ResourceWarning."""
    good = E.write_episode(tmp_path, _episode())
    truncated = tmp_path / E.episode_name(5)
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(E.EpisodeError) as refused:
        E.read_episode(truncated)
    assert "BadZipFile" in str(refused.value)
    assert str(truncated.resolve()) not in _open_files()
