# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Small statistics helpers: medians and percentiles of samples."""

import math
import statistics


def median(samples):
    """Return the median of ``samples`` (a non-empty sequence)."""
    return statistics.median(samples)


def percentile(samples, pct):
    """Return the nearest-rank ``pct`` percentile of ``samples``.

    :param samples: a non-empty sequence of numbers
    :param pct: a percentage in (0, 100]
    """
    ordered = sorted(samples)
    rank = max(1, int(math.ceil(pct / 100.0 * len(ordered))))
    return ordered[rank - 1]


def summarize(seconds):
    """Summarize latency samples given in seconds, in milliseconds.

    :returns: a dict with ``samples``, ``median_ms``, ``p95_ms``,
        ``min_ms`` and ``max_ms``
    """
    ms = [s * 1000.0 for s in seconds]
    return {
        'samples': len(ms),
        'median_ms': median(ms),
        'p95_ms': percentile(ms, 95),
        'min_ms': min(ms),
        'max_ms': max(ms),
    }


def ratio(numerator, denominator):
    """Return ``numerator / denominator``, or None when it is undefined."""
    if not denominator:
        return None
    return numerator / denominator


def paired_ratio(pairs):
    """Return the median of ``a / b`` over ``(a, b)`` pairs.

    Each pair is measured at one moment (a decision and its own bare
    replay, one right after the other), so a change of the machine's
    speed between pairs cancels out, which it does not in the ratio of the
    two sides' medians.

    :param pairs: a non-empty sequence of ``(a, b)`` with ``b`` non-zero
    """
    return median([a / b for a, b in pairs])


def balanced_order(cycles, first, second):
    """The phases of each cycle: ``first second``, then ``second first``...

    Over an even number of cycles each phase's slots have the same mean
    position, so a steady drift of the machine's speed during the run
    weighs on both phases alike. ``A B, A B`` puts every ``B`` later than
    its ``A``: on a virtual machine whose speed drifted, a strategy that
    sends placement nothing "grew" by 1.07x to 1.40x with the cloud.

    :returns: a list of ``cycles`` pairs
    """
    return [(first, second) if cycle % 2 == 0 else (second, first)
            for cycle in range(cycles)]
