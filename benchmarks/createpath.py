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
"""The create (non-rebuild) path: the filter's cost per host.

``HOSTS`` real ``nova.scheduler.host_manager.HostState`` objects go
through nova's real filter handler
(``HostFilterHandler().get_filtered_objects``) once with
``ImageTraitsFilter`` and once with ``AllHostsFilter``, alternately, with a
boot ``RequestSpec`` whose image requires a trait. The cost per host is a
run's time divided by the number of hosts; the ratio compares medians.
"""

import time

from nova import objects
from nova.scheduler import filters
from nova.scheduler.filters import all_hosts_filter
from nova.scheduler import host_manager

from benchmarks import stats

CELL = '00000000-0000-0000-0000-0000000000c1'


def _import_filter():
    """Return our filter class, or None when it is not there yet."""
    try:
        from nova_image_traits.filters import image_traits_filter
    except ImportError:
        return None
    return image_traits_filter.ImageTraitsFilter


def host_states(count):
    """Return ``count`` nova ``HostState`` objects."""
    return [host_manager.HostState('host-%d' % i, 'node-%d' % i, CELL)
            for i in range(count)]


def boot_spec():
    """Return a boot (not rebuild) ``RequestSpec`` with image traits."""
    image = objects.ImageMeta.from_dict({
        'id': '6b1e2c34-9a0f-4c55-8d0e-1f2a3b4c5d6e',
        'properties': {'trait:HW_CPU_X86_AVX2': 'required'}})
    return objects.RequestSpec(
        instance_uuid='0d7b2a2c-3a53-4bb8-9d9e-5c4b3f7d2e10',
        image=image, scheduler_hints={'group': ['x']}, num_instances=1,
        flavor=objects.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                              extra_specs={}))


def _time_once(handler, host_filter, hosts, spec):
    start = time.perf_counter()
    passed = handler.get_filtered_objects([host_filter], hosts, spec)
    seconds = time.perf_counter() - start
    if len(passed) != len(hosts):
        raise AssertionError('%s removed hosts on a boot request'
                             % type(host_filter).__name__)
    return seconds


def measure(cloud, hosts=10000, runs=15):
    """Compare the filters' cost per host through nova's handler.

    :param cloud: the :class:`~benchmarks.scenario.Cloud` whose recorder
        must see no request
    :returns: a dict for the report, ``status`` 'pending' when the filter
        does not exist yet
    """
    ours_cls = _import_filter()
    if ours_cls is None:
        return {'status': 'pending',
                'detail': 'nova_image_traits.filters.image_traits_filter '
                          'is not importable'}
    handler = filters.HostFilterHandler()
    states = host_states(hosts)
    spec = boot_spec()
    ours, theirs = ours_cls(), all_hosts_filter.AllHostsFilter()
    for _i in range(2):
        _time_once(handler, ours, states, spec)
        _time_once(handler, theirs, states, spec)
    cloud.recorded()
    samples = {'ours': [], 'all_hosts': []}
    for index in range(runs):
        pair = [('ours', ours), ('all_hosts', theirs)]
        for key, host_filter in (pair if index % 2 else pair[::-1]):
            samples[key].append(_time_once(handler, host_filter, states,
                                           spec))
    requests = len(cloud.recorded())
    per_host = {key: stats.median(values) / hosts * 1e9
                for key, values in samples.items()}
    return {
        'status': 'measured',
        'hosts': hosts,
        'runs': runs,
        'ours_ns_per_host': per_host['ours'],
        'all_hosts_ns_per_host': per_host['all_hosts'],
        'ratio': stats.ratio(per_host['ours'], per_host['all_hosts']),
        'placement_requests': requests,
    }
