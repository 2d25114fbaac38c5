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
"""``nova-image-traits audit``: would every server's image still pass?

For each server an administrator can see, the rebuild asked about is a
rebuild with its *current* image on its current host: are the traits that
image requires still satisfied there, under the strategy? That finds hosts
whose traits changed since their servers booted, and what switching
strategy would change.

Cost. The servers are listed once (paginated) and grouped by compute node.
Each node's resource provider is looked up once. A decision is then made
once per (node, image, flavor) and shared by every server of the node with
that combination, because every strategy but ``allocation_traits`` decides
from those alone (:func:`nova_image_traits.cli.can_share`).
``allocation_traits`` reads each server's own allocations; for it, the
allocations held on the node's providers and its shared pools are read once
per node (:mod:`nova_image_traits.cli.prefetch`), and provider traits once
per audit, so its cost too grows with nodes and their providers, not
servers.
"""

import collections
import dataclasses
import time

from cliff import lister
from openstack import exceptions as openstack_exc
from oslo_log import log as logging

from nova_image_traits import cli
from nova_image_traits.cli import cloud as nit_cloud
from nova_image_traits.cli import prefetch
from nova_image_traits import decision as nit_decision
from nova_image_traits import exception

LOG = logging.getLogger(__name__)

SKIPPED = 'skipped'
#: The Derived cell of a rebuild refused only by the derived requirements.
NEW_REFUSAL = 'new refusal'
#: The causes of refusals that only derived requirements make.
DERIVED_CAUSES = frozenset(['resources-not-held', 'refused-by-request-filter'])


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
    derived_only: int = 0


def _flavor_key(flavor):
    return (flavor.vcpus, flavor.memory_mb, flavor.root_gb,
            flavor.ephemeral_gb, flavor.swap,
            tuple(sorted(flavor.extra_specs.items())))


class Audit(cli.CommandMixin, lister.Lister):
    """Check whether every server's current image traits are still met.

    For each server of every project (on HOST only with --host), runs
    the strategy as if the server were rebuilt with its current image.
    Derived says what the requirements nova derives from the image's
    other properties (vTPM, secure boot, bus and model prefilters...)
    change: "new refusal" when only they refuse the rebuild, "met" or
    "unmet" when they are judged, "-" when the image asks none, "off"
    ([image_traits] judge_derived_requirements) or "unknown" where nova
    is not importable. Needs an administrator. Exits with 1 when any
    server fails or cannot be checked, 2 on bad input. Progress goes to
    stderr.
    """

    COLUMNS = ('Server', 'Name', 'Host', 'Image', 'Strategy', 'Outcome',
               'Missing', 'Derived', 'Reason')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='HOST',
                            help='Only the servers of this compute host')
        parser.add_argument(
            '--progress-every', metavar='N', type=int, default=100,
            help='Write a progress line to stderr every N servers '
                 '(default 100; 0 for none)')
        nit_cloud.add_command_options(parser, self.app.argv)
        return parser

    def take_action(self, parsed_args):
        self.conf, self.names, cloud = nit_cloud.open_cloud(
            'audit', self.app, parsed_args)
        cloud.client = prefetch.CachingClient(cloud.client)
        started = time.monotonic()
        self.cloud, self.stats = cloud, Stats()
        nodes = self._by_node(cloud, parsed_args.host)
        total = sum(len(group) for group in nodes.values())
        # Unscheduled servers (no host, no node) are not on a node.
        self.stats.nodes = len([key for key in nodes if key[1]])
        per_server = not all(cli.can_share(n, self.conf) for n in self.names)
        rows = []
        for (_host, node), servers in sorted(nodes.items()):
            if per_server and node:
                self._index(node)
            # Decisions shared by the servers of this node only.
            shared = {}
            for server in servers:
                rows.extend(self._audit(server, shared))
                self.stats.servers += 1
                self._progress(parsed_args.progress_every, total)
        s = self.stats
        s.requests = cloud.client.sent
        self.app.stderr.write(
            'audit: %d servers on %d nodes: %d failed, %d skipped; %d '
            'refused only with derived requirements; %d decisions made, '
            '%d shared; %d placement requests in %.1f s\n'
            % (s.servers, s.nodes, s.failed, s.skipped, s.derived_only,
               s.decisions, s.shared, s.requests,
               time.monotonic() - started))
        self.exit_status = 1 if s.failed else 0
        return self.COLUMNS, rows

    @staticmethod
    def _by_node(cloud, host):
        """The servers to audit, by (compute host, hypervisor hostname)."""
        if host:
            try:
                cloud.check_host(host)
            except nit_cloud.LookupFailed as e:
                raise cli.UsageError(str(e))
        nodes = collections.defaultdict(list)
        try:
            for server in cloud.servers(host):
                nodes[(server.compute_host or '',
                       server.hypervisor_hostname or '')].append(server)
        except openstack_exc.ForbiddenException as e:
            raise cli.UsageError(
                'audit reads the servers of every project and their hosts, '
                'which needs an administrator: the compute API answered '
                '403 (%s)' % e.details)
        return nodes

    def _audit(self, server, shared):
        """Return the rows of one server, sharing decisions per node."""
        cloud, conf = self.cloud, self.conf
        try:
            current = nit_cloud.image_id(server)
            if not server.compute_host or not server.hypervisor_hostname:
                return self._skip(server, 'not on a host')
            if current is None:
                return self._skip(server,
                                  'boots from a volume: no image to check')
            try:
                image_id, props = cloud.images.get(current)
            except nit_cloud.ImageNotFound:
                return self._skip(server, 'its image %s was deleted: '
                                  'nothing to compare with' % current)
            request = cloud.request(server, props, props, lookup=True)
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
        rows, failed, derived_only = [], False, False
        for name in self.names:
            # What the servers of the node alike share, or this one's own.
            if cli.can_share(name, conf):
                key = (name, request.compute_node_uuid, image_id,
                       _flavor_key(request.flavor))
            else:
                key = (name, server.id)
            decision = self._decide(shared, key, request, name)
            derived = decision.derived
            if derived == 'judged':
                derived = self._derived(shared, key, request, name, decision)
            derived_only = derived_only or derived == NEW_REFUSAL
            failed = failed or not decision.allowed
            rows.append((server.id, server.name, server.compute_host,
                         image_id, name, decision.outcome,
                         cli.join(decision.missing), derived,
                         cli.short_reason(decision)))
        self.stats.failed += 1 if failed else 0
        self.stats.derived_only += 1 if derived_only else 0
        return rows

    def _decide(self, shared, key, request, name, judge_derived=True):
        """The decision of ``key``, made once per node."""
        key += (judge_derived,)
        if key in shared:
            self.stats.shared += 1
            return shared[key]
        conf = self.conf
        if judge_derived:
            shared[key] = cli.decide(request, conf, self.cloud.client, name)
        else:
            conf.set_override('judge_derived_requirements', False,
                              'image_traits')
            try:
                shared[key] = cli.decide(request, conf, self.cloud.client,
                                         name)
            finally:
                conf.clear_override('judge_derived_requirements',
                                    'image_traits')
        self.stats.decisions += 1
        return shared[key]

    def _derived(self, shared, key, request, name, decision):
        """What judging the derived requirements changes, for the column.

        A refusal is judged again without them, to tell the new ones.
        """
        if not request.derived:
            return '-'
        if decision.allowed:
            return 'met'
        without = self._decide(shared, key, request, name,
                               judge_derived=False)
        if without.allowed:
            return NEW_REFUSAL
        unmet = decision.cause in DERIVED_CAUSES or any(
            r.derived for r in decision.unmet)
        return 'unmet' if unmet else 'met'

    def _index(self, node):
        """Read the allocations of a node's providers, for every server."""
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
                 nit_cloud.image_id(server) or '-', name, outcome,
                 '-', '-', why) for name in self.names]

    def _progress(self, every, total):
        done = self.stats.servers
        if every > 0 and done % every == 0 and done < total:
            self.app.stderr.write(
                'audit: %d/%d servers checked, %d failed, %d placement '
                'requests so far\n' % (
                    done, total, self.stats.failed, self.cloud.client.sent))
            self.app.stderr.flush()
