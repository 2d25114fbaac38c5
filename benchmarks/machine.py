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
"""Describe the machine and software a benchmark ran on."""

import datetime
import importlib.metadata
import os
import platform
import sys


def _cpu_model():
    """Return the CPU model name from /proc/cpuinfo, if there is one."""
    try:
        with open('/proc/cpuinfo') as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or 'unknown'


def _version(dist):
    """Return an installed distribution's version, or 'not installed'."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return 'not installed'


def load_average():
    """Return the 1, 5 and 15 minute load averages, or None."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def describe():
    """Return a dict describing this machine and the software under test."""
    return {
        'date': datetime.datetime.now(datetime.timezone.utc).strftime(
            '%Y-%m-%d %H:%M UTC'),
        'nproc': os.cpu_count(),
        'cpu': _cpu_model(),
        'platform': platform.platform(),
        'python': platform.python_version(),
        'nova': _version('nova'),
        'openstack-placement': _version('openstack-placement'),
        'nova-image-traits': _version('nova-image-traits'),
        'command': ' '.join(['python -m benchmarks.run'] + sys.argv[1:]),
        'load_average_start': load_average(),
    }
