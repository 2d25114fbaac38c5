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
"""The benchmark cloud: background hosts and compute nodes with N children.

Every background host carries the same :data:`COMMON_TRAITS`, as real
clouds do (CPU flags, a site-wide custom trait), and runs
:data:`SERVERS_PER_HOST` servers, so that placement's allocation tables grow
with the cloud as they do in production. Each measured compute node
has ``N`` nested children with ``CUSTOM_MAGIC`` inventory and a child
trait; one server is allocated on the root and, when ``N > 0``, on the
first child through a granular ``resources1:CUSTOM_MAGIC=1`` flavor.

The image requires one trait, placed by :data:`CASES`:

``root``
    on the compute node root (the common case);
``child``
    only on the child the server is allocated on. The trait is also on
    every background host, which is the worst case for any query that
    first finds every provider in the cloud with the trait;
``missing``
    nowhere in this tree, but on every background host;
``full``
    on the root of a second, identical compute node whose VCPU is used
    up, so that allocation candidates cannot tell a full host from
    missing traits and ``in_tree_candidates`` falls back.
"""

from concurrent import futures
import dataclasses
import os
import shutil
import tempfile
import typing as ty
import uuid as uuid_lib

from nova_image_traits import flavor as nit_flavor
from nova_image_traits import request as nit_request
from tests.functional.fixtures import builder as fixture_builder
from tests.functional.fixtures import server as placement_server

#: Traits of every background host.
COMMON_TRAITS = ('HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE42', 'CUSTOM_COMMON')
#: Traits of a measured compute node's root provider.
ROOT_TRAITS = ('HW_CPU_X86_AVX2', 'CUSTOM_BENCH_ROOT')
#: Traits of every child of a measured compute node.
CHILD_TRAITS = ('CUSTOM_BENCH_CHILD',)
#: The trait only the allocated child has (besides the background hosts).
ALLOCATED_CHILD_TRAIT = 'CUSTOM_COMMON'
#: Inventory of every child.
CHILD_INVENTORY = {'CUSTOM_MAGIC': 4}
#: Servers on every background host, and what each one uses.
SERVERS_PER_HOST = 4
SERVER_RESOURCES = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
#: Consumers per ``POST /allocations``.
ALLOCATION_BATCH = 500


@dataclasses.dataclass(frozen=True)
class Case:
    """Where the new image's required trait sits.

    :ivar name: the case's short name
    :ivar trait: the trait the new image requires
    :ivar full: whether the server's host has no free VCPU
    :ivar nested: whether the case needs children (N > 0)
    """
    name: str
    trait: str
    full: bool = False
    nested: bool = False


#: The measured cases, in report order.
CASES = (
    Case('root', 'HW_CPU_X86_AVX2'),
    Case('child', ALLOCATED_CHILD_TRAIT, nested=True),
    Case('missing', 'HW_CPU_X86_SSE42'),
    Case('full', 'HW_CPU_X86_AVX2', full=True),
)

PROJECT = str(uuid_lib.UUID(int=1))
USER = str(uuid_lib.UUID(int=2))


@dataclasses.dataclass
class Host:
    """A measured compute node and the server running on it."""

    n_children: int
    full: bool
    name: str
    root: str
    instance_uuid: str
    allocated: ty.Tuple[str, ...]
    flavor: nit_flavor.Flavor


def cases_for(n_children, names=None):
    """Return the cases that make sense with ``n_children`` children.

    :param names: case names to keep, or None for all
    """
    return [c for c in CASES
            if (n_children or not c.nested) and
            (names is None or c.name in names)]


def image_properties(case):
    """Return the new image's properties for a :class:`Case`."""
    return {'trait:%s' % case.trait: 'required'}


def rebuild_request(host, case):
    """Return the engine's rebuild request for ``host`` and a :class:`Case`.

    The current image required no trait, so the ``reject`` strategy
    refuses every new trait.
    """
    return nit_request.RebuildRequest(
        instance_uuid=host.instance_uuid,
        compute_node_uuid=host.root,
        image_properties=image_properties(case),
        flavor=host.flavor,
        original_image_properties={},
        host=host.name)


def bulk_allocate(builder, allocations, clear=False):
    """Write (or clear) many consumers' allocations, in batches.

    :param builder: a :class:`~tests.functional.fixtures.builder.CloudBuilder`
    :param allocations: a list of ``(consumer UUID, {rp UUID: {rc: n}})``
    :param clear: remove the allocations of consumers this module created
        (consumer generation 1) instead of writing them
    """
    for start in range(0, len(allocations), ALLOCATION_BATCH):
        body = {}
        for consumer, by_provider in allocations[
                start:start + ALLOCATION_BATCH]:
            body[consumer] = {
                'allocations': {} if clear else {
                    rp: {'resources': dict(resources)}
                    for rp, resources in by_provider.items()},
                'project_id': PROJECT, 'user_id': USER,
                'consumer_generation': 1 if clear else None}
            if builder.microversion >= (1, 38):
                body[consumer]['consumer_type'] = 'INSTANCE'
        builder.request('POST', '/allocations', body, expect=(204,))


def _children(n, prefix):
    """Return the specs of ``n`` children named ``<prefix>-child-<i>``."""
    children = []
    for index in range(n):
        traits = list(CHILD_TRAITS)
        if index == 0:
            traits.append(ALLOCATED_CHILD_TRAIT)
        children.append({'name': '%s-child-%d' % (prefix, index),
                         'inventory': dict(CHILD_INVENTORY),
                         'traits': traits})
    return children


class Cloud:
    """A real placement on loopback, loaded with the benchmark cloud."""

    def __init__(self):
        self.server = placement_server.PlacementServer()
        self.builder = None
        self.background = 0
        self.background_names = []
        self.background_uuids = []
        self.background_servers = []
        self.hosts = {}
        self._tempdir = None

    def start(self):
        """Start placement (SQLite, 127.0.0.1, TCP_NODELAY)."""
        self.server.start()
        self.builder = fixture_builder.CloudBuilder(self.server.endpoint)
        self._tempdir = tempfile.mkdtemp(prefix='nit-bench-')
        return self

    def stop(self):
        """Stop placement and delete its database and config files."""
        self.server.stop()
        if self._tempdir:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None

    def host(self, n_children, case):
        """Return the :class:`Host` a :class:`Case` is measured on."""
        return self.hosts[(n_children, case.full)]

    def add_background(self, count):
        """Add ``count`` hosts with :data:`COMMON_TRAITS` and servers."""
        prefix = 'background-%d' % self.background
        added = self.builder.build_background(count, COMMON_TRAITS,
                                              name_prefix=prefix)
        servers = [(str(uuid_lib.uuid4()), {rp: SERVER_RESOURCES})
                   for rp in added for _i in range(SERVERS_PER_HOST)]
        bulk_allocate(self.builder, servers)
        self.background_uuids += added
        self.background_servers += servers
        self.background_names += ['%s-%d' % (prefix, index)
                                  for index in range(count)]
        self.background += count

    def remove_background(self, keep):
        """Delete every background host but the first ``keep``.

        Their servers' allocations are removed first.
        """
        doomed = self.background_uuids[keep:]
        servers = self.background_servers[keep * SERVERS_PER_HOST:]
        bulk_allocate(self.builder, servers, clear=True)
        del self.background_servers[keep * SERVERS_PER_HOST:]

        def delete(rp_uuid):
            self.builder.request('DELETE', '/resource_providers/%s' % rp_uuid,
                                 expect=(204,))

        with futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(delete, doomed))
        del self.background_uuids[keep:]
        del self.background_names[keep:]
        self.background = keep

    def add_host(self, n_children, full=False):
        """Create a compute node with ``n_children`` children and a server.

        :param full: use up the root's VCPU after placing the server
        :returns: the :class:`Host`
        """
        name = 'bench-cn-%d%s' % (n_children, '-full' if full else '')
        node = self.builder.create_compute_node(
            name, traits=ROOT_TRAITS, children=_children(n_children, name))
        allocations = {node.uuid: {'VCPU': 1, 'MEMORY_MB': 512,
                                   'DISK_GB': 1}}
        extra_specs = {}
        if n_children:
            allocations[node.children[name + '-child-0']] = {'CUSTOM_MAGIC': 1}
            extra_specs['resources1:CUSTOM_MAGIC'] = '1'
        instance = str(uuid_lib.uuid4())
        self.builder.allocate(instance, allocations, PROJECT, USER)
        if full:
            self.builder.fill(node.uuid, 'VCPU')
        host = Host(
            n_children=n_children, full=full, name=name, root=node.uuid,
            instance_uuid=instance, allocated=tuple(allocations),
            flavor=nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                                     extra_specs=extra_specs))
        self.hosts[(n_children, full)] = host
        return host

    def placement_conf_file(self, name, extra=''):
        """Write a config file pointing keystoneauth at this placement.

        :param name: the file's base name
        :param extra: more config text appended to the file
        :returns: the file's path
        """
        path = os.path.join(self._tempdir, name)
        with open(path, 'w') as conf:
            conf.write('[placement]\n'
                       'auth_type = admin_token\n'
                       'endpoint = %(ep)s\n'
                       'token = %(token)s\n'
                       'endpoint_override = %(ep)s\n'
                       # NOTE(founders): steady state: no renegotiation of the
                       # microversion during the run.
                       '[image_traits]\nplacement_version_ttl = 86400\n'
                       '%(extra)s' % {
                           'ep': self.server.endpoint,
                           'token': self.server.token, 'extra': extra})
        return path

    def recorded(self):
        """Return the requests served since the last reset, and reset."""
        records = list(self.server.recorder)
        self.server.reset_recorder()
        return records
