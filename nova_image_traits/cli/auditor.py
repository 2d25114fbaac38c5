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
"""The servers of one audit, node by node, and what was decided for them.

Decisions are shared by the servers of a node with the same image and
flavor, for every strategy that decides from those alone
(:func:`nova_image_traits.cli.can_share`).
"""

import dataclasses

from oslo_log import log as logging

from nova_image_traits import cli
from nova_image_traits.cli import cloud as nit_cloud
from nova_image_traits import decision as nit_decision
from nova_image_traits import exception

LOG = logging.getLogger(__name__)

SKIPPED = 'skipped'


@dataclasses.dataclass
class Stats:
    """What an audit did, for the summary line."""
    servers: int = 0
    nodes: int = 0
    failed: int = 0
    skipped: int = 0
    decisions: int = 0
    shared: int = 0
    requests: int = 0


def _flavor_key(flavor):
    return (flavor.vcpus, flavor.memory_mb, flavor.root_gb,
            flavor.ephemeral_gb, flavor.swap,
            tuple(sorted(flavor.extra_specs.items())))


class Auditor:
    """Audit servers under the strategies ``names``.

    :param cloud: a :class:`~nova_image_traits.cli.cloud.Cloud` whose
        client is a :class:`~nova_image_traits.cli.prefetch.CachingClient`
    :param conf: the ConfigOpts holding ``[image_traits]``
    :param names: the strategies to run
    """

    def __init__(self, cloud, conf, names):
        self.cloud = cloud
        self.conf = conf
        self.names = names
        self.stats = Stats()
        self._per_server = not all(cli.can_share(n, conf) for n in names)

    def node(self, node, servers, after_each=None):
        """Return the rows of the servers of one node.

        :param after_each: called after each server, for progress
        """
        if self._per_server:
            self._index(node)
        # Decisions shared by the servers of this node only.
        shared = {}
        rows = []
        for server in servers:
            rows.extend(self._audit(server, shared))
            self.stats.servers += 1
            if after_each is not None:
                after_each()
        return rows

    def _audit(self, server, shared):
        """Return the rows of one server, sharing decisions per node."""
        cloud, conf, names = self.cloud, self.conf, self.names
        try:
            target = cloud.target(server)
            if not target.host or not target.node:
                return self._skip(server, 'not on a host')
            if target.volume_backed:
                return self._skip(server,
                                  'boots from a volume: no image to check')
            try:
                image_id, props = cloud.images.get(target.image_id)
            except nit_cloud.ImageNotFound:
                return self._skip(server, 'its image %s was deleted: '
                                  'nothing to compare with'
                                  % target.image_id)
            request = cloud.request(target, props, props)
        except nit_cloud.ServiceUnavailable:
            # NOTE(founders): every further server would fail the same way.
            raise
        except Exception as e:
            # NOTE(founders): one unreadable server must not end a long audit;
            # it is reported as an error row and makes the exit code 1.
            LOG.warning('Cannot audit server %(s)s: %(e)s',
                        {'s': server.id, 'e': e})
            self.stats.failed += 1
            return self._rows(server, nit_decision.ERROR, str(e))
        rows, failed = [], False
        for name in names:
            key = None
            if cli.can_share(name, conf):
                key = (name, request.compute_node_uuid, image_id,
                       _flavor_key(target.flavor), target.volume_backed)
            decision = shared.get(key) if key else None
            if decision is None:
                decision = cli.decide(request, conf, cloud.client, name)
                self.stats.decisions += 1
                if key:
                    shared[key] = decision
            else:
                self.stats.shared += 1
            failed = failed or not decision.allowed
            rows.append((target.server_id, target.name, target.host,
                         image_id, name, decision.outcome,
                         cli.join(decision.missing),
                         cli.short_reason(decision)))
        self.stats.failed += 1 if failed else 0
        return rows

    def _index(self, node):
        """Read the allocations of a node's providers, for every server."""
        if not node:
            return
        cloud = self.cloud
        try:
            cloud.client.index_node(cloud.session(), cloud.node_provider(node))
        except (nit_cloud.LookupFailed, exception.PlacementError) as e:
            # NOTE(founders): each server's decision then reads placement
            # itself and reports the failure in its own row.
            LOG.warning('Cannot index the allocations of node %(n)s: %(e)s',
                        {'n': node, 'e': e})

    def _skip(self, server, why):
        self.stats.skipped += 1
        return self._rows(server, SKIPPED, why)

    def _rows(self, server, outcome, why):
        """The rows of a server no strategy judged."""
        return [(server.id, server.name, server.compute_host or '-',
                 getattr(server.image, 'id', None) or '-', name, outcome,
                 '-', why) for name in self.names]
