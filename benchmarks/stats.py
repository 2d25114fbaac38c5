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
