"""A live debug run into which many kinds of bad episode files are dropped: it finishes, uses every real
episode, quarantines every bad file with its reason, and never puts a non-finite value into a batch."""

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from planetrl import config as C
from planetrl.data import replay as replay_lib
from planetrl.data.catalog import EpisodeSpec, read_checked
from planetrl.data.episodes import EpisodeError, episode_name, list_episodes
from planetrl.training import planet
from planetrl.training.updater import WorldModelUpdater

STEPS = 13  # the debug preset: 12 decisions and the reset step


def _episode(steps=STEPS, size=64, actions=2, state=True):
    rng = np.random.default_rng(steps)
    episode = {"image": rng.integers(0, 255, (steps, size, size, 3), dtype=np.uint8),
               "action": rng.uniform(-1, 1, (steps, actions)).astype(np.float32),
               "reward": rng.uniform(0, 1, steps).astype(np.float32),
               "is_first": np.arange(steps) == 0, "is_last": np.arange(steps) == steps - 1,
               "is_terminal": np.zeros(steps, bool)}
    if state:
        episode["state"] = rng.normal(size=(steps, 2)).astype(np.float32)
    return episode


def _npz(episode) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **episode)
    return buffer.getvalue()


def _with(**changes):
    return _npz({**_episode(), **changes})


def _without(key):
    episode = _episode()
    del episode[key]
    return _npz(episode)


def _flipped() -> bytes:
    data = bytearray(_npz(_episode()))
    for offset in range(len(data) // 3, len(data) // 3 + 40, 4):  # inside the compressed image
        data[offset] ^= 0xFF
    return bytes(data)


def _member_bytes(header_shape, dtype, payload: bytes) -> bytes:
    """An .npy member whose header claims `header_shape` but carries `payload`."""
    buffer = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
              "shape": header_shape}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + payload


def _custom_zip(replace: dict[str, bytes]) -> bytes:
    """A valid episode archive with some members swapped for raw bytes."""
    members = {}
    with zipfile.ZipFile(io.BytesIO(_npz(_episode()))) as archive:
        for info in archive.infolist():
            members[info.filename] = archive.read(info)
    members.update(replace)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


BAD_CONTENTS = {
    "flipped-bytes": _flipped,
    "scalar-reward": lambda: _with(reward=np.float32(1.0)),
    "string-reward": lambda: _with(reward=np.array(["a"] * STEPS)),
    "header-claims-1e15": lambda: _custom_zip({"image.npy": _member_bytes((10**15, 64, 64, 3), np.uint8, b"\0" * 64)}),
    "wrong-image-size": lambda: _npz(_episode(size=32)),
    "wrong-action-size": lambda: _npz(_episode(actions=3)),
    "inflates-to-gigabytes": lambda: _custom_zip(
        {"reward.npy": _member_bytes((STEPS,), np.float32, b"\0" * (64 * 2**20))}),
    "nan-reward": lambda: _with(reward=np.full(STEPS, np.nan, np.float32)),
    "inf-action": lambda: _with(action=np.full((STEPS, 2), np.inf, np.float32)),
    "empty": lambda: b"",
    "truncated": lambda: _npz(_episode())[:5000],
    "random-bytes": lambda: np.random.default_rng(0).bytes(4000),
    "pickled-object": lambda: _with(reward=np.array([object()] * STEPS, dtype=object)),
    "missing-is-terminal": lambda: _without("is_terminal"),
    "missing-image": lambda: _without("image"),
    "float-image": lambda: _with(image=np.zeros((STEPS, 64, 64, 3), np.float32)),
    "int-is-first": lambda: _with(is_first=(np.arange(STEPS) == 0).astype(np.int64)),
    "short-action": lambda: _with(action=np.zeros((STEPS - 1, 2), np.float32)),
    "one-step": lambda: _npz(_episode(steps=1)),
    "no-first-flag": lambda: _with(is_first=np.zeros(STEPS, bool)),
    "no-last-flag": lambda: _with(is_last=np.zeros(STEPS, bool)),
    "four-channels": lambda: _with(image=np.zeros((STEPS, 64, 64, 4), np.uint8)),
    "flat-action": lambda: _with(action=np.zeros(STEPS, np.float32)),
    "2d-reward": lambda: _with(reward=np.zeros((STEPS, 2), np.float32)),
    "complex-reward": lambda: _with(reward=np.zeros(STEPS, np.complex64)),
    "npy-not-npz": lambda: _member_bytes((STEPS,), np.float32, b"\0" * 4 * STEPS),
    "too-long": lambda: _custom_zip({"image.npy": _member_bytes((10**6, 64, 64, 3), np.uint8, b"\0" * 64)}),
    "header-too-big": lambda: _custom_zip({"reward.npy": b"\x93NUMPY\x01\x00" + b"\xff\xff" + b" " * 100}),
    "stored-flipped-byte": lambda: _stored_flipped(),
}


def _stored_flipped() -> bytes:
    """An uncompressed archive with one byte of the image changed: only the CRC can tell."""
    buffer = io.BytesIO()
    np.savez(buffer, **_episode())
    data = bytearray(buffer.getvalue())
    data[len(data) // 2] ^= 0x01
    return bytes(data)


def _drop_bad_files(directory: Path, tag: str) -> list[str]:
    """Write every bad kind into `directory` under a valid episode name; returns the names."""
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for make in BAD_CONTENTS.values():
        name = episode_name(STEPS - 1)
        (directory / name).write_bytes(make())
        names.append(name)
    # a name whose length lies (1e40 steps), a dangling link, a link to a valid file, a FIFO, a directory
    liar = directory / episode_name(10**40)
    liar.write_bytes(_npz(_episode()))
    names.append(liar.name)
    for kind in ("dangling", "link", "fifo", "dir"):
        path = directory / episode_name(STEPS - 1)
        if kind == "dangling":
            path.symlink_to(directory / f"missing-{tag}.npz")
        elif kind == "link":
            target = directory.parent / f"valid-{tag}.npz"
            target.write_bytes(_npz(_episode()))
            path.symlink_to(target)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            path.mkdir()
        names.append(path.name)
    return names


def test_there_are_at_least_thirty_kinds_of_bad_file():
    assert len(BAD_CONTENTS) + 5 >= 30


@pytest.mark.parametrize("kind", sorted(BAD_CONTENTS))
def test_each_bad_file_is_refused_with_a_reason(tmp_path, kind):
    path = tmp_path / episode_name(STEPS - 1)
    path.write_bytes(BAD_CONTENTS[kind]())
    with pytest.raises(EpisodeError) as error:
        read_checked(path, EpisodeSpec(64, 2, max_steps=STEPS))
    assert str(error.value)


def test_a_missing_optional_key_is_fine_and_ignored(tmp_path):
    path = tmp_path / episode_name(STEPS - 1)
    path.write_bytes(_npz(_episode(state=False)))
    assert set(read_checked(path, EpisodeSpec(64, 2, max_steps=STEPS))) == {
        "image", "action", "reward", "is_first", "is_last", "is_terminal"}


def test_live_run_survives_every_bad_file_and_uses_every_real_episode(tmp_path, monkeypatch):
    run_dir = tmp_path / "run-00"
    cfg = C.build("debug")
    dropped: dict[str, list[str]] = {}
    batches = []

    original_open = planet.PlanetRun._open_catalogs

    def open_and_sabotage(self, action_size):
        original_open(self, action_size)
        dropped["train-early"] = _drop_bad_files(self.train_dir, "a")
        dropped["test-early"] = _drop_bad_files(self.test_dir, "b")

    refreshes = {"count": 0}
    original_refresh = replay_lib.Replay.refresh

    def refresh_and_sabotage(self):
        refreshes["count"] += 1
        if refreshes["count"] == 2:  # mid-run: after the first collected episode
            dropped["train-late"] = _drop_bad_files(self.directory, "c")
            dropped["test-late"] = _drop_bad_files(self.directory.parent / "test_episodes", "d")
        return original_refresh(self)

    original_update = WorldModelUpdater.update

    def checked_update(self, batch):
        batches.append(all(bool(torch.isfinite(v.float()).all()) for v in batch.values()))
        return original_update(self, batch)

    monkeypatch.setattr(planet.PlanetRun, "_open_catalogs", open_and_sabotage)
    monkeypatch.setattr(replay_lib.Replay, "refresh", refresh_and_sabotage)
    monkeypatch.setattr(WorldModelUpdater, "update", checked_update)
    planet.prepare_run_dir(run_dir, cfg, {})
    planet.PlanetRun(run_dir, cfg, progress=False).run()

    assert len(batches) == cfg.train.total_updates and all(batches)
    bad = {name for names in dropped.values() for name in names}
    quarantined = {p.name for p in (run_dir / "quarantine").rglob("*.npz")}
    assert bad == quarantined
    for name in quarantined:
        reason = next((run_dir / "quarantine").rglob(f"{name}.reason.txt")).read_text()
        assert reason.strip()
    # Every real episode is there and counted: the schedule collected as if no junk had arrived.
    real = list_episodes(run_dir / "train_episodes")
    assert len(real) == cfg.train.seed_episodes + cfg.train.total_updates // cfg.train.collect_every
    tests = planet.read_tests(run_dir)
    assert [t["updates"] for t in tests] == [8, 12]
    assert tests[-1]["env_steps"] == sum(int(p.name.rsplit("-", 1)[1].split(".")[0]) for p in real)
