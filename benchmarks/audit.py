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
"""The ``audit`` command's placement requests as servers and hosts grow.

The real command (``nova_image_traits.cli.audit.Audit``, a cliff lister)
runs against the benchmark placement. Nova's API and the image service
are stood in for by :class:`_Connection`, an openstacksdk-shaped object
that lists ``servers`` servers spread evenly over the first ``hosts``
background hosts, all booted from one image that requires a trait the
hosts have. Placement requests are counted by the server's recorder.

Before a size is audited with ``allocation_traits``, its servers get real
allocations (``MEMORY_MB`` on their host, written in bulk through
``POST /allocations``), so that the strategy reads them as in production.
These servers are separate from the ones :mod:`benchmarks.scenario` puts on
every background host.
The other strategies never read a server's allocations.
"""

import collections
import functools
import importlib
import io
import time
import types
import uuid as uuid_lib

from oslo_config import cfg

from nova_image_traits import conf as nit_conf
from nova_image_traits import placement

from benchmarks import scenario

IMAGE_ID = 'a3c1f1d2-6c3e-4bb0-9a55-3e0c1b2d4f60'
IMAGE_TRAIT = 'HW_CPU_X86_AVX2'
#: Server UUIDs are derived from the audit size and the server's index.
SERVER_NAMESPACE = uuid_lib.UUID('5f0a6d1e-2b7c-4e39-8d41-6a2f9c3b7e15')
#: Per audited server, on its host (beside the background servers).
SERVER_RESOURCES = {'MEMORY_MB': 128}


def _import_audit():
    """Return the audit module, or None when it is not there yet."""
    try:
        return importlib.import_module('nova_image_traits.cli.audit')
    except ImportError:
        return None


def _flavor():
    return types.SimpleNamespace(
        id='m1.small', name='m1.small', original_name='m1.small', vcpus=1,
        ram=512, disk=1, ephemeral=0, swap=0, extra_specs={})


def fake_servers(count, nodes):
    """Return ``count`` SDK-like servers spread over ``nodes``."""
    flavor = _flavor()
    image = types.SimpleNamespace(id=IMAGE_ID)
    size = '%d-%d' % (count, len(nodes))
    return [types.SimpleNamespace(
        id=str(uuid_lib.uuid5(SERVER_NAMESPACE, '%s-%d' % (size, index))),
        name='server-%d' % index, compute_host=nodes[index % len(nodes)],
        hypervisor_hostname=nodes[index % len(nodes)], image=image,
        flavor=flavor) for index in range(count)]


def allocate(cloud, servers, hosts):
    """Give the servers of one audit size allocations on their hosts."""
    uuids = dict(zip(cloud.background_names, cloud.background_uuids))
    scenario.bulk_allocate(cloud.builder, [
        (server.id, {uuids[server.compute_host]: SERVER_RESOURCES})
        for server in fake_servers(servers,
                                   cloud.background_names[:hosts])])


class _Compute:
    """``conn.compute``: lists the fake servers."""

    def __init__(self, servers):
        self._servers = servers

    def servers(self, details=True, all_projects=False, **query):
        return iter(self._servers)


class _Images:
    """``conn.image``: one image requiring :data:`IMAGE_TRAIT`."""

    def find_image(self, name_or_id, ignore_missing=True):
        if name_or_id != IMAGE_ID:
            return None
        return types.SimpleNamespace(
            id=IMAGE_ID, properties={'trait:%s' % IMAGE_TRAIT: 'required'})


class _Connection:
    """An SDK-shaped connection: stand-in nova and glance, real placement."""

    def __init__(self, placement_proxy, servers):
        self.placement = placement_proxy
        self.compute = _Compute(servers)
        self.image = _Images()

    def has_service(self, service_type):
        return service_type in ('compute', 'image', 'placement')


def _engine_conf(path):
    conf = cfg.ConfigOpts()
    nit_conf.register_opts(conf)
    conf(['--config-file', path], project='nova-image-traits',
         default_config_files=[], default_config_dirs=[])
    return conf


def run_once(module, cloud, path, strategy, servers, hosts):
    """Audit ``servers`` servers on ``hosts`` hosts with ``strategy``.

    :returns: a dict for the report
    """
    proxy = placement.build_adapter(_engine_conf(path))
    conn = _Connection(proxy, fake_servers(
        servers, cloud.background_names[:hosts]))
    app = types.SimpleNamespace(connection=conn, stderr=io.StringIO(),
                                stdout=io.StringIO(), argv=[],
                                NAME='nova-image-traits')
    command = module.Audit(app, None)
    parser = command.get_parser('nova-image-traits audit')
    args = parser.parse_args(['--strategy', strategy, '--config-file', path,
                              '--progress-every', '0'])
    cloud.recorded()
    started = time.perf_counter()
    _columns, rows = command.take_action(args)
    seconds = time.perf_counter() - started
    records = cloud.recorded()
    outcomes = collections.Counter(row[5] for row in rows)
    stats = command.stats
    return {'strategy': strategy, 'servers': servers, 'hosts': hosts,
            'requests': len(records), 'counted': stats.requests,
            'decisions': stats.decisions, 'seconds': seconds,
            'outcomes': dict(outcomes)}


def measure(cloud, plan):
    """Run the audit for every ``(strategy, servers, hosts)`` in ``plan``.

    :returns: a dict for the report; ``status`` is 'pending' when the
        command is missing or fails
    """
    module = _import_audit()
    if module is None:
        return {'status': 'pending',
                'detail': 'nova_image_traits.cli.audit does not exist yet'}
    path = cloud.placement_conf_file('audit.conf')
    allocated = functools.lru_cache(maxsize=None)(
        lambda servers, hosts: allocate(cloud, servers, hosts))
    runs = []
    for strategy, servers, hosts in plan:
        if strategy == 'allocation_traits':
            allocated(servers, hosts)
        try:
            runs.append(run_once(module, cloud, path, strategy, servers,
                                 hosts))
        except Exception as e:
            # NOTE(founders): the command is still being written; report, not
            # crash.
            return {'status': 'pending', 'runs': runs,
                    'detail': 'the audit command failed: %s: %s' % (
                        type(e).__name__, str(e).splitlines()[0][:200])}
    return {'status': 'measured', 'runs': runs}
