"""``audio.best_part``: the part of a long clip the Clone tab's "Keep the best 10 s" keeps, on planted signals
(tone bursts for speech, faint noise for pauses) whose speech and pauses the test knows exactly."""

from __future__ import annotations

import numpy as np
import pytest

from omnivoice_demo.audio.best_part import PAUSE_KEPT_SECONDS, best_part
from tests.support.signals import DENSE_MIDDLE, bursts

RATE = 16000


def planted(layout, level: float = 0.3):
    return bursts(layout, RATE, level)


def burst_starts(mask: np.ndarray) -> list[int]:
    return list(np.flatnonzero(np.diff(np.concatenate([[False], mask]).astype(np.int8)) == 1))


@pytest.mark.parametrize("level", [0.3, 0.003])  # a quiet recording is read like a loud one
def test_the_densest_ten_seconds_are_kept_and_cut_in_pauses(level):
    audio, speech = planted(DENSE_MIDDLE, level)
    assert audio.shape[1] / RATE > 25
    part = best_part(audio, RATE, max_seconds=10.0)
    assert part.at_pauses
    assert 0 < part.end - part.start <= 10 * RATE
    # both cuts lie in pauses, with a little of the pause kept before and after the speech
    assert not speech[part.start] and not speech[part.end - 1]
    kept_pause = int(PAUSE_KEPT_SECONDS * RATE)
    assert not speech[part.start:part.start + kept_pause].any()
    assert not speech[part.end - kept_pause:part.end].any()
    # exactly the three long bursts: 9 s of speech, no burst cut, none of the short ones
    starts = burst_starts(speech)
    inside = [s for s in starts if part.start <= s < part.end]
    assert inside == starts[2:5]
    assert speech[part.start:part.end].sum() == 9 * RATE
    assert part.speech_seconds == pytest.approx(9.0, abs=0.05)


def test_a_shorter_limit_keeps_the_best_that_fits():
    audio, speech = planted(DENSE_MIDDLE)
    part = best_part(audio, RATE, max_seconds=7.0)
    assert part.at_pauses and part.end - part.start <= 7 * RATE
    assert speech[part.start:part.end].sum() == 6 * RATE  # two of the 3 s bursts, whole
    assert not speech[part.start] and not speech[part.end - 1]


def test_among_equal_speech_the_least_silence_is_kept():
    """Starting at the clip's start would also keep both bursts, with 1.9 s more of the leading pause."""
    audio, _ = planted([("p", 2.0), ("s", 3.0), ("p", 0.4), ("s", 3.0), ("p", 12.0)])
    part = best_part(audio, RATE, max_seconds=10.0)
    kept_pause = int(PAUSE_KEPT_SECONDS * RATE)
    assert (part.start, part.end) == (2 * RATE - kept_pause, int(8.4 * RATE) + kept_pause)
    assert part.speech_seconds == pytest.approx(6.0, abs=0.05)


def test_a_clip_without_pauses_falls_back_to_its_first_ten_seconds():
    audio, speech = planted([("s", 25.0)])
    part = best_part(audio, RATE, max_seconds=10.0)
    assert not part.at_pauses
    assert part.start == 0 and 9 * RATE <= part.end <= 10 * RATE


def test_speech_runs_longer_than_the_limit_fall_back_too():
    audio, _ = planted([("s", 12.0), ("p", 0.5), ("s", 12.0)])
    part = best_part(audio, RATE, max_seconds=10.0)
    assert not part.at_pauses and part.start == 0 and part.end <= 10 * RATE


def test_a_short_clip_is_kept_whole_and_channels_are_mixed():
    audio, _ = planted([("p", 0.5), ("s", 4.0), ("p", 0.5)])
    part = best_part(np.concatenate([audio, audio * 0.5]), RATE, max_seconds=10.0)
    assert (part.start, part.end, part.at_pauses) == (0, audio.shape[1], True)
    assert part.speech_seconds == pytest.approx(4.0, abs=0.05)
