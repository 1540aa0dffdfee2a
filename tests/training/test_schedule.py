import pytest

from planetrl.training.schedule import Phase, Schedule


def walk(schedule):
    """Follow the schedule from scratch, counting as the loop would."""
    updates = collected = tests = last_test = 0
    phases = []
    while (phase := schedule.next_phase(updates, collected, last_test)).name != "done":
        phases.append(phase)
        if phase.name == "train":
            updates += phase.updates
        elif phase.name == "collect":
            collected += 1
        else:
            tests += 1
            last_test = updates
    return phases, updates, collected, tests


def test_train_collect_test_cycle():
    phases, updates, collected, tests = walk(Schedule(total_updates=10, collect_every=4, test_every=6))
    assert [(p.name, p.updates) for p in phases] == [
        ("train", 4), ("collect", 0), ("train", 4), ("collect", 0), ("test", 0), ("train", 2),
    ]
    assert (updates, collected, tests) == (10, 2, 1)


def test_paper_schedule_collects_one_episode_per_100_updates():
    _, updates, collected, tests = walk(Schedule(total_updates=100_000, collect_every=100, test_every=10_000))
    assert (updates, collected, tests) == (100_000, 1000, 10)


def test_resume_after_a_lost_episode_collects_it_again():
    schedule = Schedule(total_updates=100, collect_every=10, test_every=50)
    # Killed during the collection after update 30: two episodes exist, the third was lost.
    assert schedule.next_phase(30, 2, 0) == Phase("collect")
    # Killed after the episode was written but before training went on: train, do not collect twice.
    assert schedule.next_phase(30, 3, 0) == Phase("train", 10)
    # Killed mid-training: the checkpoint says 34 updates; train up to the next boundary.
    assert schedule.next_phase(34, 3, 0) == Phase("train", 6)


def test_a_changed_test_interval_tests_at_its_multiples_from_the_last_recorded_test():
    # Tested at 500, 1000 and 1500 with test_every=500, then test_every raised to 1000 in config.yaml:
    # counting phases (3) would put the next test at 4000; the recorded ones put it at 2000.
    schedule = Schedule(total_updates=7000, collect_every=100, test_every=1000)
    assert schedule.next_phase(1900, 19, 1500) == Phase("train", 100)
    assert schedule.next_phase(2000, 20, 1500) == Phase("test")
    assert schedule.next_phase(2000, 20, 2000) == Phase("train", 100)
    # Lowered to 250 after a test at 1000: the next multiple beyond it, not one per missed multiple.
    lowered = Schedule(total_updates=7000, collect_every=100, test_every=250)
    assert lowered.next_phase(1200, 12, 1000) == Phase("train", 100)
    assert lowered.next_phase(1300, 13, 1000) == Phase("test")
    assert lowered.next_phase(1300, 13, 1300) == Phase("train", 100)


def test_bad_intervals_are_refused():
    with pytest.raises(ValueError, match="collect_every and test_every"):
        Schedule(10, 0, 5)
