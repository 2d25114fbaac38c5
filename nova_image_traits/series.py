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
"""The nova series this release supports, known without importing nova.

The support matrix of ``doc/source/install/index.rst`` in code: the
conductor hook names these series when it refuses a nova, and
``nova-image-traits-status upgrade check`` warns beside a nova outside
them. Only the installed distribution's metadata is read, so the command
line tools work on a host without nova.
"""

import collections
import importlib.metadata

#: One maintained series: its name and the major versions of its releases.
Series = collections.namedtuple('Series', ['name', 'nova', 'placement'])

#: Every series this release is tested on, oldest first.
SUPPORTED = (
    Series('2025.1', 31, 13),
    Series('2025.2', 32, 14),
    Series('2026.1', 33, 15),
    Series('2026.2', 34, 16),
)


def _major(version):
    try:
        return int(str(version).split('.', 1)[0])
    except ValueError:
        return None


def of_nova(version):
    """Return the :class:`Series` of a nova version, or None if unsupported.

    :param version: a nova version string, such as ``'31.3.1'``
    """
    major = _major(version)
    for series in SUPPORTED:
        if series.nova == major:
            return series
    return None


def installed_nova():
    """Return the version of the nova distribution installed, or None."""
    try:
        return importlib.metadata.version('nova')
    except importlib.metadata.PackageNotFoundError:
        return None


def describe(version):
    """``'31.3.1 (2025.1)'``, or the version alone outside the matrix."""
    series = of_nova(version)
    return '%s (%s)' % (version, series.name) if series else str(version)


def supported():
    """The supported series in words, for messages."""
    return 'nova %d to %d (%s)' % (
        SUPPORTED[0].nova, SUPPORTED[-1].nova,
        ', '.join(s.name for s in SUPPORTED))
