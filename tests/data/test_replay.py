import multiprocessing as mp
import os
import signal

import numpy as np
import pytest
import torch

from planetrl.data import episodes as E
from planetrl.data.loader import Loader, dequantize, postprocess_image, preprocess_image
from planetrl.data.replay import Replay


def _episode(length, tag, size=4):
    steps = length + 1
    image = np.zeros((steps, size, size, 3), np.uint8)
    image[..., 0] = tag
    image[..., 1] = np.arange(steps)[:, None, None]
    return {
        "image": image,
        "action": np.full((steps, 1), tag, np.float32),
        "reward": np.arange(steps, dtype=np.float32),
        "is_first": np.arange(steps) == 0,
        "is_last": np.arange(steps) == steps - 1,
        "is_terminal": np.zeros(steps, bool),
    }


def _fill(directory, lengths):
    return [E.write_episode(directory, _episode(n, tag)) for tag, n in enumerate(lengths)]


def test_chunks_never_cross_episodes(tmp_path):
    _fill(tmp_path, [7, 12, 9, 30])
    replay = Replay(tmp_path, chunk_length=6)
    replay.refresh()
    batch = replay.sample(500, np.random.default_rng(0))
    tags = batch["image"][:, :, 0, 0, 0]
    assert (tags == tags[:, :1]).all()  # one episode per chunk
    steps = batch["image"][:, :, 0, 0, 1].astype(int)
    assert (np.diff(steps, axis=1) == 1).all()  # consecutive steps
    assert batch["is_first"][:, 1:].sum() == 0  # a reset can only be the first step


def test_short_episodes_are_counted_and_never_sampled(tmp_path):
    _fill(tmp_path, [3, 20, 2])
    replay = Replay(tmp_path, chunk_length=10)
    replay.refresh()
    assert replay.stats.short_episodes == 2
    tags = replay.sample(200, np.random.default_rng(0))["image"][:, 0, 0, 0, 0]
    assert set(tags.tolist()) == {1}
    only_short = tmp_path / "short"
    _fill(only_short, [3])
    empty = Replay(only_short, chunk_length=10)
    empty.refresh()
    with pytest.raises(RuntimeError, match="1 too short"):
        empty.sample(1, np.random.default_rng(0))


def test_cross_episode_chunks_learn_from_short_episodes_and_reset_at_each_start(tmp_path):
    lengths = [3, 4, 2, 5]  # every episode shorter than the chunk, as crashes are
    _fill(tmp_path, lengths)
    replay = Replay(tmp_path, chunk_length=8, cross_episodes=True)
    replay.refresh()
    assert replay.stats.short_episodes == 0
    stream_tags = np.concatenate([np.full(n + 1, tag) for tag, n in enumerate(lengths)])
    stream_steps = np.concatenate([np.arange(n + 1) for n in lengths])
    batch = replay.sample(400, np.random.default_rng(0))
    tags = batch["image"][:, :, 0, 0, 0].astype(int)
    steps = batch["image"][:, :, 0, 0, 1].astype(int)
    starts = set()
    for chunk_tags, chunk_steps, first in zip(tags, steps, batch["is_first"], strict=True):
        offset = next(i for i in range(len(stream_tags))
                      if stream_tags[i] == chunk_tags[0] and stream_steps[i] == chunk_steps[0])
        starts.add(offset)
        # the chunk is a window of the episodes in their order, and is_first marks exactly each episode start
        assert (stream_tags[offset:offset + 8] == chunk_tags).all()
        assert (stream_steps[offset:offset + 8] == chunk_steps).all()
        assert (first == (chunk_steps == 0)).all()
    assert starts == set(range(len(stream_tags) - 8 + 1))  # every start that has 8 steps after it, no other


def test_without_cross_episodes_the_same_short_episodes_hold_no_chunk(tmp_path):
    _fill(tmp_path, [3, 4, 2, 5])
    replay = Replay(tmp_path, chunk_length=8)
    replay.refresh()
    with pytest.raises(RuntimeError, match="4 too short"):
        replay.sample(1, np.random.default_rng(0))


def test_eviction_removes_oldest_first_and_keeps_the_bound(tmp_path):
    replay = Replay(tmp_path, chunk_length=2, max_episodes=3)
    for tag in range(6):
        E.write_episode(tmp_path, _episode(5, tag))
        replay.refresh()
        assert len(replay) <= 3
    held = {int(replay.sample(1, np.random.default_rng(i))["image"][0, 0, 0, 0, 0]) for i in range(100)}
    assert held == {3, 4, 5}
    assert replay.stats.evicted_episodes == 3
    by_steps = Replay(tmp_path, chunk_length=2, max_steps=13)  # 6 steps per episode: two fit
    by_steps.refresh()
    assert by_steps.stats.episodes == 2 and by_steps.stats.steps == 12


def test_bounded_rebuild_reads_only_the_newest_files_and_matches(tmp_path):
    _fill(tmp_path, [5] * 8)
    first = Replay(tmp_path, chunk_length=3, max_episodes=4)
    first.refresh()
    again = Replay(tmp_path, chunk_length=3, max_episodes=4)
    again.refresh()
    assert first.names == again.names == [p.name for p in E.list_episodes(tmp_path)][-4:]
    assert again.stats.loaded_files == 4  # the four older files were never opened
    a = first.sample(20, np.random.default_rng(5))
    b = again.sample(20, np.random.default_rng(5))
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def test_refresh_loads_only_new_files_and_skips_corrupt_ones(tmp_path):
    _fill(tmp_path, [5, 5])
    replay = Replay(tmp_path, chunk_length=3)
    assert replay.refresh() == 2
    assert replay.refresh() == 0
    (tmp_path / E.episode_name(5)).write_bytes(b"not a zip file")
    E.write_episode(tmp_path, _episode(5, 9))
    assert replay.refresh() == 1
    assert replay.stats.skipped_files == 1 and len(replay) == 3


def test_start_positions_are_uniform(tmp_path):
    # 16 and 36 stored steps give 12 and 32 valid starts: each of the 44 has probability 1/44.
    _fill(tmp_path, [15, 35])
    replay = Replay(tmp_path, chunk_length=5)
    replay.refresh()
    positions = replay.sample_positions(44_000, np.random.default_rng(0))
    counts = {}
    for name, start in positions:
        counts[(name, start)] = counts.get((name, start), 0) + 1
    assert len(counts) == 44
    observed = np.array(list(counts.values()))
    chi2 = ((observed - 1000) ** 2 / 1000).sum()
    assert chi2 < 71  # 43 degrees of freedom: the 99.5% quantile is about 70.6


def test_recency_mix_draws_from_the_newest(tmp_path):
    _fill(tmp_path, [10] * 10)
    replay = Replay(tmp_path, chunk_length=5, recent_fraction=0.5, recent_episodes=2)
    replay.refresh()
    tags = replay.sample(4000, np.random.default_rng(1))["image"][:, 0, 0, 0, 0]
    newest = np.isin(tags, [8, 9]).mean()
    assert newest == pytest.approx(0.5 + 0.5 * 0.2, abs=0.03)


def test_quantization_is_exact_and_inverts_to_the_same_bins():
    image = torch.arange(256, dtype=torch.uint8).reshape(1, 16, 16, 1).expand(2, 16, 16, 3).contiguous()
    for bits in (5, 8, 3):
        x = preprocess_image(image, bits, torch.Generator().manual_seed(0))
        assert x.min() >= -0.5 and x.max() < 0.5
        bins = 2**bits
        expected_bin = (image.long() >> (8 - bits)).float()
        # The noise stays inside the pixel's bin.
        np.testing.assert_array_equal(torch.floor((x + 0.5) * bins).numpy(), expected_bin.numpy())
        back = postprocess_image(x, bits)
        np.testing.assert_array_equal(back.numpy(), ((image.long() >> (8 - bits)) << (8 - bits)).numpy())
        clean = preprocess_image(image, bits, noise=False)
        assert len(torch.unique(clean)) == bins


def test_loader_dequantization_keeps_each_pixel_in_its_bin_with_the_bin_centre_as_mean():
    image = np.arange(256, dtype=np.uint8).reshape(1, 16, 16, 1).repeat(3, axis=-1)
    for bits in (5, 8, 3):
        bins = 2**bits
        x = dequantize(image, bits, np.random.default_rng(0))
        assert x.dtype == np.float32 and x.min() >= -0.5 and x.max() < 0.5
        np.testing.assert_array_equal(np.floor((x + 0.5) * bins), image >> (8 - bits))
        draws = np.stack([dequantize(image, bits, np.random.default_rng(seed)) for seed in range(400)])
        centre = preprocess_image(torch.from_numpy(image), bits, noise=False).numpy()
        np.testing.assert_allclose(draws.mean(0), centre, atol=4 * (1 / bins) / np.sqrt(12 * 400))
    with pytest.raises(ValueError, match=r"bits must be within 1\.\.8, got 9"):
        dequantize(image, 9, np.random.default_rng(0))


def test_loader_batches_are_reproducible_with_and_without_prefetch(tmp_path):
    _fill(tmp_path, [12, 20, 9])
    replay = Replay(tmp_path, chunk_length=4)
    replay.refresh()
    a = list(Loader(replay, batch_size=3, prefetch=2, seed=7).take(5))
    b = list(Loader(replay, batch_size=3, prefetch=0, seed=7).take(5))
    assert a[0]["image"].shape == (3, 4, 4, 4, 3) and a[0]["image"].dtype == torch.float32
    assert a[0]["is_first"].dtype == torch.bool and a[0]["action"].shape == (3, 4, 1)
    for x, y in zip(a, b, strict=True):
        for key in x:
            assert torch.equal(x[key], y[key])


def _write_forever(directory):
    big = _episode(400, 1, size=32)
    while True:
        E.write_episode(directory, big)


def test_killed_writer_leaves_no_partial_file(tmp_path):
    process = mp.get_context("spawn").Process(target=_write_forever, args=(tmp_path,))
    process.start()
    while len(E.list_episodes(tmp_path)) < 3:
        process.join(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.join()
    for path in E.list_episodes(tmp_path):
        assert E.try_read_episode(path) is not None, f"{path.name} is partial"
    leftovers = [p.name for p in tmp_path.iterdir() if E.parse_name(p) is None]
    assert all(name.startswith(".") and name.endswith(".tmp") for name in leftovers)
